"""Structured prints found in stdout: DataFrame, Series and numpy prints, aligned and comma tables.
Each becomes a ``_Block`` that claims its lines and knows its readings (see the package docstring)."""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import Any

from .values import Reading, _NUMBER_TEXT, _Number, _cell, _list_readings, _number, _table_readings, is_noise

MAX_BLOCK_LINES = 200_000  # a block longer than this is not read (it would cost more than it is worth)


# ---------------------------------------------------------------------------------------------------- blocks


@dataclass
class _Block:
    start: int  # first line (an inline label line counts as part of the block)
    stop: int  # one past the last line
    kind: str  # "table", "list", or "unreadable" (claimed so that no line of it is misread)
    readings_of: Any = None  # callable(name parts, description) -> list[Reading]
    inline_label: str | None = None


def find_blocks(lines: list[str], max_table_rows: int) -> list[_Block]:
    """The structured prints in ``lines``, in order, not overlapping."""
    blocks, i = [], 0
    while i < len(lines):
        block = _array_at(lines, i, max_table_rows) or _series_at(lines, i, max_table_rows) \
            or _table_at(lines, i, max_table_rows) or _csv_at(lines, i, max_table_rows)
        if block is None:
            i += 1
            continue
        if blocks and block.start < blocks[-1].stop:  # a Series found backwards may reach into a block
            i += 1
            continue
        blocks.append(block)
        i = block.stop
    return blocks


# numpy arrays and lists ---------------------------------------------------------------------------------

_ARRAY_START = re.compile(r"^\s*(?:(?P<label>[A-Za-z][^\[\]\n]{0,200}?)(?:\s*[:=]\s*|\s+))?(?P<body>(?:array\()?\[.*)$")
_ARRAY_TOKEN = re.compile(r"\[|\]|\.\.\.|[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?|,|\S+")


def _array_at(lines: list[str], i: int, max_rows: int) -> _Block | None:
    match = _ARRAY_START.match(lines[i])
    if not match or is_noise(lines[i]):
        return None
    label = match.group("label")
    if label and _NUMBER_TEXT.search(label):
        return None  # "x 1 [2 3]": not a labelled array
    text, depth, stop = match.group("body"), 0, i
    body = []
    for j in range(i, min(len(lines), i + MAX_BLOCK_LINES)):
        chunk = text if j == i else lines[j]
        body.append(chunk)
        depth += chunk.count("[") - chunk.count("]")
        stop = j + 1
        if depth <= 0:
            break
    if depth != 0:
        return None
    joined = " ".join(body).strip()
    numpy_style = "," not in joined
    joined = re.sub(r"^array\(", "", joined)
    joined = re.sub(r"\)$", "", re.sub(r",\s*dtype=[\w.]+\)?$", "", joined))
    tokens = _ARRAY_TOKEN.findall(joined)
    if "..." in tokens:
        return _Block(i, stop, "unreadable")  # numpy elided elements and does not print how many
    nested = _nest(tokens)
    if nested is None:
        return None
    if all(isinstance(v, str) for v in nested):
        values = [_number(v) for v in nested]
        if not 2 <= len(values) or None in values:
            return None
        shape = "list"
        rows = [values]
    elif all(isinstance(v, list) for v in nested) and nested and all(
            len(r) == len(nested[0]) and r and all(isinstance(c, str) for c in r) for r in nested):
        rows = [[_number(c) for c in r] for r in nested]
        if any(c is None for r in rows for c in r):
            return None
        shape = "table"
    else:
        return None
    resolutions = _array_resolutions(rows, numpy_style)
    if shape == "list":
        values, res = [n.value for n in rows[0]], resolutions[0]
        return _Block(i, stop, "list", lambda parts, desc: _list_readings(parts, desc, values, res, max_rows),
                      inline_label=label)
    columns = [str(k) for k in range(len(rows[0]))]
    cells = [[n.value for n in r] for r in rows]
    return _Block(i, stop, "table", lambda parts, desc: _table_readings(
        parts, desc, columns, cells, resolutions, max_rows, total=len(cells)), inline_label=label)


def _nest(tokens: list[str]) -> list | None:
    stack: list[list] = [[]]
    for token in tokens:
        if token == "[":
            if len(stack) > 3:
                return None
            stack.append([])
        elif token == "]":
            if len(stack) < 2:
                return None
            done = stack.pop()
            stack[-1].append(done)
        elif token == ",":
            continue
        elif _NUMBER_TEXT.fullmatch(token):
            stack[-1].append(token)
        else:
            return None  # text, nan, inf, True: not a numeric array
    if len(stack) != 1 or len(stack[0]) != 1 or not isinstance(stack[0][0], list):
        return None
    return stack[0][0]


def _array_resolutions(rows: list[list[_Number]], numpy_style: bool) -> list[list[float | None]]:
    if not numpy_style:
        return [[None if n.integer else n.resolution for n in r] for r in rows]
    decimals = max(n.decimals for r in rows for n in r)  # numpy's maxprec: fewer digits means exact
    return [[None if n.integer else 0.5 * 10.0 ** (n.exponent - decimals) for n in r] for r in rows]


# pandas Series -----------------------------------------------------------------------------------------------

_SERIES_FOOTER = re.compile(r"^(?:Freq: [^,]+, )?(?:Name: (?P<name>.*?), )?(?:Length: (?P<length>\d+), )?dtype: \w+\s*$")


def _series_at(lines: list[str], i: int, max_rows: int) -> _Block | None:
    """A Series print is recognised at its footer and read backwards to its first row."""
    match = _SERIES_FOOTER.match(lines[i])
    if not match:
        return None
    rows, elided, j = [], False, i - 1
    while j >= 0 and lines[j].strip():
        line = lines[j].rstrip()
        if line.strip() == "...":
            elided = True
        else:
            parts = re.split(r"\s{2,}", line.strip())
            if len(parts) != 2:
                break
            rows.append((parts[0], parts[1]))
        j -= 1
    rows.reverse()
    index_name = None
    if j >= 0 and lines[j].strip() and len(lines[j].split()) == 1 and lines[j] == lines[j].lstrip() and rows:
        index_name, j = lines[j].strip(), j - 1
    if not rows:
        return None
    name = match.group("name")
    total = int(match.group("length")) if match.group("length") else len(rows)
    if elided and not match.group("length"):
        return None
    index = [r[0] for r in rows]
    values = [_cell(r[1]) for r in rows]
    range_index = index_name is None and _is_row_numbers(index)
    if range_index and not elided and all(isinstance(v, float) for v, _ in values):
        cells, res = [v for v, _ in values], [r for _, r in values]
        block = _Block(j + 1, i + 1, "list", lambda parts, desc: _list_readings(parts, desc, cells, res, max_rows))
        return block
    columns = [index_name or "", name if name is not None else "value"]
    if range_index:
        columns = columns[1:]
    cells = [([v] if range_index else [_cell(k)[0], v]) for k, (v, _) in zip(index, values)]
    res = [([r] if range_index else [None, r]) for _, r in values]
    head = len(rows) if not elided else _head_length(lines, j + 1, i)
    return _Block(j + 1, i + 1, "table", lambda parts, desc: _table_readings(
        parts, desc, columns, cells, res, max_rows, total=total, head=head if elided else None))


def _head_length(lines, start, stop) -> int:
    """How many rows a Series print shows before its ``...`` line."""
    count = 0
    for line in lines[start:stop]:
        if line.strip() == "...":
            return count
        if len(re.split(r"\s{2,}", line.strip())) == 2:
            count += 1
    return count


def _is_row_numbers(index: list[str]) -> bool:
    """Whether an unnamed index is pandas' row numbering: integers in increasing order, whether a fresh
    range, a filtered one (1, 2, 4, 8), one shifted by ``index += 1`` or one left by interleaving (0, 2, 4).
    They tell where a row sat in the program's frame, not what it is, so they are never graded; an index of
    counts in count order (``value_counts``) is not increasing and stays."""
    if not index or not all(re.fullmatch(r"-?\d+", k) for k in index):
        return False
    numbers = [int(k) for k in index]
    return all(a < b for a, b in zip(numbers, numbers[1:]))


# whitespace tables and pandas DataFrames ------------------------------------------------------------------

_FRAME_FOOTER = re.compile(r"^\[(?P<rows>\d+) rows x (?P<columns>\d+) columns\]\s*$")


def _table_at(lines: list[str], i: int, max_rows: int) -> _Block | None:
    header = lines[i].rstrip()
    if len(header.split()) < 1 or is_noise(header) or _FRAME_FOOTER.match(header):
        return None
    j, rows, footer = i + 1, [], None
    header_cells = re.split(r"\s{2,}", header.strip())
    # at least as many columns as the header names (an index under a blank header adds one, which is not
    # counted: a right-aligned first header also starts with a blank)
    expected = max(2, len(header_cells))
    filled: list[bool] = []
    width: tuple[int, int] | None = None  # cells per row, as the first row with two or more has them
    while j < len(lines) and j - i < MAX_BLOCK_LINES:
        line = lines[j].rstrip()
        if not line.strip():
            if j + 1 < len(lines) and _FRAME_FOOTER.match(lines[j + 1].strip()):  # pandas: a blank, then the footer
                footer, j = _FRAME_FOOTER.match(lines[j + 1].strip()), j + 2
            break
        if _FRAME_FOOTER.match(line.strip()):
            footer = _FRAME_FOOTER.match(line.strip())
            j += 1
            break
        if is_noise(line) or _ARRAY_START.match(line):
            break
        if not rows:
            filled = _filled([header])
        candidate = _filled([line], filled)
        if _span_count(candidate) < expected:
            break  # this line runs across the table's columns: the table ended on the line before
        # cells split at two or more blanks ("New York" is one) and at any blank (pandas' index=False prints
        # put one blank between columns): a row must match the first data row in one of the two counts
        shape = (len(re.split(r"\s{2,}", line.strip())), len(line.split()))
        if width is None and shape[1] >= 2:
            width = shape
        elif width is not None and shape[0] != width[0] and shape[1] != width[1]:
            break  # a sentence or a line of another shape after the table: the table ended on the line before
        elif width is None and rows:
            break  # only the first line under a header may be one cell (a named index's name)
        filled = candidate
        rows.append(line)
        j += 1
    if header.endswith("\\"):  # pandas wrapped the columns over several blocks: not read
        while j < len(lines) and lines[j].strip() and not _FRAME_FOOTER.match(lines[j].strip()):
            j += 1
        return _Block(i, min(j + 1, len(lines)), "unreadable") if rows else None
    for count in (len(rows), len(rows) - 1):  # a label line may follow the table without a blank line
        if count < 1:
            break
        parsed = _parse_aligned(header, rows[:count], footer if count == len(rows) else None)
        if parsed is not None:
            columns, cells, res, total, head = parsed
            stop = i + 1 + count + (1 if footer is not None and count == len(rows) else 0)
            return _Block(i, stop, "table", lambda parts, desc: _table_readings(
                parts, desc, columns, cells, res, max_rows, total=total, head=head))
    return None


def _filled(lines: list[str], filled: list[bool] | None = None) -> list[bool]:
    """Which character positions are not blank on some line (adding to ``filled``)."""
    width = max([len(line) for line in lines] + [len(filled or [])])
    out = list(filled or []) + [False] * (width - len(filled or []))
    for line in lines:
        for k, ch in enumerate(line):
            if ch != " ":
                out[k] = True
    return out


def _span_count(filled: list[bool]) -> int:
    return sum(1 for k, full in enumerate(filled) if full and (k == 0 or not filled[k - 1]))


def _spans(lines: list[str]) -> list[tuple[int, int]]:
    filled = _filled(lines)
    spans, start = [], None
    for k, full in enumerate(filled + [False]):
        if full and start is None:
            start = k
        elif not full and start is not None:
            spans.append((start, k))
            start = None
    return spans


def _extent(line: str, a: int, b: int) -> tuple[int, int] | None:
    text = line[a:b]
    if not text.strip():
        return None
    return a + len(text) - len(text.lstrip()), a + len(text.rstrip())


def _parse_aligned(header: str, rows: list[str], footer):
    if "\t" in header or any("\t" in r for r in rows):
        return None
    index_name = None
    lines = [header, *rows]
    spans = _spans(lines)
    # pandas prints a named index's name on the line under the header, alone
    if len(rows) >= 2 and _extent(rows[0], *spans[0]) and all(
            _extent(rows[0], a, b) is None for a, b in spans[1:]) and _extent(header, *spans[0]) is None:
        index_name, rows = rows[0].strip(), rows[1:]
        lines = [header, *rows]
    spans = _merge(header, rows, spans)
    if spans is None or len(spans) < 2:
        return None
    header_cells = [header[a:b].strip() for a, b in spans]
    has_index = header_cells[0] == "" or index_name is not None
    if not has_index and len(rows) < 2:
        return None
    if any(c == "" for c in header_cells[1:]):
        return None
    body = []
    elided_at = None
    for r in rows:
        cells = [r[a:b].strip() if a < len(r) else "" for a, b in spans]
        if all(c == "..." for c in cells):
            if elided_at is not None:
                return None
            elided_at = len(body)
            continue
        if any(c == "" for c in cells) or "..." in cells:
            return None  # a MultiIndex, an elided column or a ragged line: not read
        body.append(cells)
    if not body:
        return None
    # each column's cells share an edge, and its header shares it too (a heading over label/value lines does not)
    for k, (a, b) in enumerate(spans):
        extents = [_extent(r, a, b) for r in rows if r[a:b].strip() not in ("", "...")]
        left = len({e[0] for e in extents}) == 1
        right = len({e[1] for e in extents}) == 1
        head = _extent(header, a, b)
        if head is None:
            if not (k == 0 and left):
                return None
            continue
        if not ((left and head[0] == extents[0][0]) or (right and head[1] == extents[0][1])):
            return None
    values = [[_cell(c) for c in row] for row in body]
    numeric = [k for k in range(len(spans)) if (k > 0 or not has_index)
               and all(isinstance(row[k][0], float) for row in values)]
    if not numeric:
        return None
    numeric_headers = all(_number(h) is not None for h in header_cells[1 if has_index else 0:])
    if any(_number(h) is not None for h in header_cells) and not (has_index and numeric_headers):
        return None  # a header made of numbers is a row: this is not a table
    total = int(footer.group("rows")) if footer else len(body)
    if elided_at is not None and footer is None:
        return None
    columns = header_cells
    cells = [[v for v, _ in row] for row in values]
    res = [[r for _, r in row] for row in values]
    if has_index:
        columns = [index_name or "", *header_cells[1:]]
        index = [row[0] for row in body]
        if index_name is None and _is_row_numbers(index):
            columns, cells, res = columns[1:], [c[1:] for c in cells], [r[1:] for r in res]
        else:
            for row, raw in zip(cells, body):
                row[0] = raw[0]  # an index label stays as printed text
            for row in res:
                row[0] = None
    if len(set(columns)) != len(columns):
        return None
    return columns, cells, res, total, elided_at


def _merge(header: str, rows: list[str], spans: list[tuple[int, int]]):
    """Join spans that are parts of one column: a header word with no cells under it ("mean" of "mean
    depth") or cells with no header over them ("New" of "New York", right-aligned under "site")."""
    out = list(spans)
    k = 0
    while k < len(out):
        a, b = out[k]
        no_cells = all(_extent(r, a, b) is None for r in rows)
        no_header = _extent(header, a, b) is None
        if (no_cells or (no_header and k > 0)) and k + 1 < len(out):
            out[k:k + 2] = [(a, out[k + 1][1])]
            continue
        if no_cells:
            return None
        k += 1
    return out


# comma-separated tables ------------------------------------------------------------------------------------


def _csv_at(lines: list[str], i: int, max_rows: int) -> _Block | None:
    header = lines[i]
    if header.count(",") < 1 or is_noise(header):
        return None
    commas, j = header.count(","), i + 1
    while j < len(lines) and lines[j].count(",") == commas and lines[j].strip() and j - i < MAX_BLOCK_LINES:
        j += 1
    if j - i < 3:
        return None
    rows = list(csv.reader(io.StringIO("\n".join(lines[i:j]))))
    head = [h.strip() for h in rows[0]]
    if any(not h or _number(h) for h in head) or len(set(head)) != len(head) or any(len(r) != len(head) for r in rows):
        return None
    values = [[_cell(c) for c in r] for r in rows[1:]]
    if not any(all(isinstance(r[k][0], float) for r in values) for k in range(len(head))):
        return None
    cells = [[v for v, _ in r] for r in values]
    res = [[x for _, x in r] for r in values]
    return _Block(i, j, "table", lambda parts, desc: _table_readings(parts, desc, head, cells, res, max_rows,
                                                                      total=len(cells)))
