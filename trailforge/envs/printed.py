"""Read results from what a program printed beyond ``Label: value`` lines.

``answers.extract_answer`` reads ``Label: value`` lines itself and hands the rest of stdout here. This module
only parses text: it returns ``Reading`` objects whose raw labels the caller turns into field names with
``answers.field_name`` (so every label is checked there, refused ones counted, none rewritten).

What is read, in stdout order:

- **Blocks** (claimed before any line is read on its own):
  pandas DataFrame prints (header line, optional index-name line, index column, ``...`` elision rows and
  the ``[N rows x M columns]`` footer) and whitespace-aligned tables (header plus rows, columns found from
  the character positions that are blank on every line, each header aligned with its column's cells);
  pandas Series prints (ending in ``[Name: x, ][Length: n, ]dtype: t``);
  numpy array prints and Python lists of numbers (``[0.1 0.2\\n 0.3]``, ``[[1. 2.]\\n [3. 4.]]``,
  ``array([...])``), 1-D read as a ``number_list`` and 2-D as a ``table`` with columns ``"0"``, ``"1"``, ...;
  and comma-separated tables. A block is named by the line printed just before it when that line is a
  label (``print("Coefficients:")``), or by the label in front of an inline array (``Coefficients [1 2]``),
  else positionally: ``printed_table_1``, ``printed_list_1``, ... in stdout order.
- **Lines** not in a block and not a ``Label: value`` line: every standalone number is named by the words
  just before it (``RMSE 0.1234``, ``The fitted slope is 2.31 m/s with R^2 = 0.98`` gives ``fitted slope``
  = 2.31 with unit ``m/s`` and ``R^2`` = 0.98). A short unit token right after the number (or ``(unit)``
  right before it) becomes the field's unit.

Conservative by design, because the same reader reads the reference runs in verify and a field that is
not a result makes a bad task: progress and log lines (tqdm bars, ``Epoch 3/10``, ``WARNING ...``,
``took 1.2 s``, lines naming files, versions, seeds or line numbers) give nothing; a number with no label
words before it, a number followed by a counted noun (``5721 rows``) or by another number, and a
whole number that reads as a year give nothing; numpy's ``...`` elision makes an array unreadable (its
length is not printed).

Large outputs are summarised, never pretended complete. A table or list with more rows than
``max_table_rows``, or a pandas print with elided rows, becomes at most ``3 + 3 * MAX_SUMMARY_COLUMNS``
fields: ``<name>_rows`` (the row count, from the footer when rows were elided), then for a completely
printed one ``<name>_<column>_mean``, ``_min`` and ``_max`` for its first ``MAX_SUMMARY_COLUMNS`` numeric
columns, then ``<name>_first_rows`` and ``<name>_last_rows`` (the first and last ``SELECTED_ROWS`` rows that
were printed). Aggregates are over the printed values; their resolution is the column's coarsest
printed resolution (min and max: that cell's). ``summarise_table`` applies the same rule to large CSV/TSV
files.

Precision: every number keeps its printed resolution (half a unit in the last printed place). A list or
table field's ``resolution`` is the coarsest of its elements'; ``Reading.resolutions`` keeps each
element's (``None`` for text cells). numpy prints every element of an array with the same number of
decimals unless fewer digits represent it exactly (``floatmode="maxprec"``), so within a numpy print each
element's resolution follows the most decimals printed (``1.`` next to ``0.12345679`` is known to 8
places), not its own digits.
"""
from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from typing import Any

MAX_SUMMARY_COLUMNS = 4  # numeric columns a summary aggregates
SELECTED_ROWS = 5  # rows a summary quotes from each end (pandas shows 5 at each end of an elided print)
MAX_BLOCK_LINES = 200_000  # a block longer than this is not read (it would cost more than it is worth)


@dataclass(frozen=True)
class Reading:
    """One result read from printed text, before it is named.

    ``labels`` are the raw label parts the caller passes to ``field_name``; ``checked`` are the other raw
    texts quoted with the field (column headers, the unit), each of which must be a safe label too.
    """

    labels: tuple[str, ...]
    kind: str
    value: Any
    label: str
    checked: tuple[str, ...] = ()
    unit: str | None = None
    decimals: int | None = None
    resolution: float | None = None
    resolutions: Any = None


# ---------------------------------------------------------------------------------------------------- numbers

_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")


@dataclass(frozen=True)
class _Number:
    value: float
    integer: bool  # printed without a point or exponent
    decimals: int
    exponent: int

    @property
    def resolution(self) -> float:
        return 0.5 * 10.0 ** (self.exponent - self.decimals)  # the rule of answers.resolution


def _number(text: str) -> _Number | None:
    text = text.strip()
    if not _NUMBER_TEXT.fullmatch(text):
        return None
    value = float(text)
    if not math.isfinite(value):
        return None
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return _Number(value, "." not in mantissa and not exponent, decimals, int(exponent) if exponent else 0)


def _cell(text: str) -> tuple[Any, float | None]:
    """A table cell as the CSV reader keeps it (a float, or the stripped text) and its resolution."""
    number = _number(text)
    if number is None:
        return text.strip(), None
    return number.value, None if number.integer else number.resolution


def _coarsest(resolutions) -> float | None:
    flat = [r for r in _flatten(resolutions) if r is not None]
    return max(flat) if flat else None


def _flatten(values):
    for value in values:
        if isinstance(value, list):
            yield from _flatten(value)
        else:
            yield value


# ---------------------------------------------------------------------------------------------------- noise

# Lines whose numbers are about the run, not its results.
# Words that open a log line ("WARNING: ...", "[INFO] ..."): the numbers after them are no results.
_LOG_WORDS = r"warning|warn|error|info|debug|critical|note|traceback|exception"
_NOISE = [re.compile(p, re.IGNORECASE) for p in (
    rf"^\s*\[?\s*({_LOG_WORDS})\b",
    r"\w*(warning|error)\s*:",  # UserWarning: ..., ValueError: ...
    r"\d+\s*%\s*\|", r"\|\s*\d+\s*/\s*\d+", r"\b(it/s|s/it)\b", r"\r",  # tqdm bars
    r"\b(epoch|epochs|iter|iters|iteration|iterations|step|steps|batch|batches|generation|gen|round|sweep)\b"
    r"\s*[#:=]?\s*\d",  # progress counters
    r"\d+\s*/\s*\d+\s*(\]|\)|$|\s)",  # "3/10"
    r"\b(took|elapsed|runtime|run time|wall time|cpu time|time taken|seconds|completed in|finished in|done in)\b",
    r"\b\d+(\.\d+)?\s*(ms|sec|secs)\b(?![\^/*-])",  # a duration (ms^-2 is no duration)
    r"\b(version|python|seed|random state|random_state|line|lines|pid|port)\s*[#:=]?\s*v?\d",
    r"\b[\w.-]+\.(csv|tsv|txt|json|png|jpe?g|pdf|svg|py|npy|npz|pkl|pickle|h5|hdf5|nc|dat|xlsx?|parquet|log)\b",
    r"(^|\s)\.{0,2}/[\w.-]+/",  # a path
    r"^\s*(loading|reading|writing|saving|saved|wrote|loaded|downloading|processing)\b",
    r"^\s*\d{4}-\d\d-\d\d[ T]\d\d:\d\d",  # a logging timestamp
    r"\b(done|finished|complete)\b\s*[.!]*\s*$",
)]


def is_noise(line: str) -> bool:
    return any(p.search(line) for p in _NOISE)


def is_log_label(label: str) -> bool:
    """Whether a ``Label: value`` line's label is a log level or a warning class (``UserWarning``)."""
    return re.fullmatch(rf"(?:{_LOG_WORDS}|\w+(?:warning|error))", label.strip(), re.IGNORECASE) is not None


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
    range_index = index_name is None and _is_range(index, total, elided)
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


def _is_range(index: list[str], total: int, elided: bool) -> bool:
    if not all(re.fullmatch(r"\d+", k) for k in index):
        return False
    numbers = [int(k) for k in index]
    if not elided:
        return numbers == list(range(len(numbers)))
    head = [n for n in numbers if n < total - len(numbers)] if numbers else []
    return numbers == list(range(len(head))) + list(range(total - (len(numbers) - len(head)), total))


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
        if index_name is None and _is_range(index, total, elided_at is not None):
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


# ---------------------------------------------------------------------------------------------------- readings


def _list_readings(parts, desc, values, res, max_rows) -> list[Reading]:
    if len(values) <= max_rows:
        return [Reading(parts, "number_list", values, desc, resolution=_coarsest(res), resolutions=res)]
    cells = [[v] for v in values]
    return _summary(parts, desc, ["value"], cells, [[r] for r in res], len(values), None, max_rows, lists=True)


def _table_readings(parts, desc, columns, cells, res, max_rows, total, head=None) -> list[Reading]:
    """A whole table when it is small and complete, else its summary."""
    if head is None and len(cells) <= max_rows:
        table = {"columns": list(columns), "rows": cells}
        return [Reading(parts, "table", table, desc, checked=tuple(columns), resolution=_coarsest(res),
                        resolutions=res)]
    return _summary(parts, desc, columns, cells, res, total, head, max_rows)


def summarise_rows(parts, desc, header: list[str], rows: list[list[str]], max_rows: int) -> list[Reading]:
    """The summary of a large table read from a file (header and text cells), by the module's rule."""
    values = [[_cell(c) for c in r] for r in rows]
    cells = [[v for v, _ in r] for r in values]
    res = [[x for _, x in r] for r in values]
    return _summary(parts, desc, header, cells, res, len(cells), None, max_rows)


def _summary(parts, desc, columns, cells, res, total, head, max_rows, lists: bool = False) -> list[Reading]:
    """Row count, aggregates of a completely printed table's numeric columns, and its first and last rows.

    ``head`` is the number of rows printed before an elision (None when every row was printed): an elided
    print has no aggregates, and its selected rows are taken from the printed rows at each end only.
    """
    columns = list(columns)
    checked = tuple(columns) if not lists else ()
    size = "length" if lists else "rows"
    out = [Reading((*parts, size), "integer", total, f"{desc}, number of {'values' if lists else 'rows'}")]
    if head is None:
        numeric = [k for k in range(len(columns)) if cells and all(isinstance(r[k], float) for r in cells)]
        for k in numeric[:MAX_SUMMARY_COLUMNS]:
            column = [r[k] for r in cells]
            col_res = [r[k] for r in res]
            key = () if lists else (columns[k],)
            what = "" if lists else f" of column {columns[k]}"
            out.append(Reading((*parts, *key, "mean"), "number", math.fsum(column) / len(column),
                               f"{desc}, mean{what} over all {total} {size}", checked=key,
                               resolution=_coarsest(col_res)))
            for word, pick in (("min", min), ("max", max)):
                at = pick(range(len(column)), key=lambda n: column[n])
                out.append(Reading((*parts, *key, word), "number", column[at], f"{desc}, {word}imum{what}",
                                   checked=key, resolution=col_res[at]))
    first = head if head is not None else len(cells)
    shown_first = min(SELECTED_ROWS, max_rows, first)
    shown_last = min(SELECTED_ROWS, max_rows, len(cells) - first if head is not None else len(cells))
    for word, rows, rows_res in (("first", cells[:shown_first], res[:shown_first]),
                                 ("last", cells[len(cells) - shown_last:], res[len(res) - shown_last:])):
        if not rows:
            continue
        label = f"{desc}, {word} {len(rows)} {'values' if lists else 'rows'} of {total}"
        if lists:
            out.append(Reading((*parts, word, "values"), "number_list", [r[0] for r in rows], label,
                               resolution=_coarsest(rows_res), resolutions=[r[0] for r in rows_res]))
        else:
            out.append(Reading((*parts, word, "rows"), "table", {"columns": columns, "rows": rows}, label,
                               checked=checked, resolution=_coarsest(rows_res), resolutions=rows_res))
    return out


# ---------------------------------------------------------------------------------------------------- lines

_TOKEN = re.compile(
    r"(?P<num>(?<![\w.^/\-,])[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?(?![\w^/\-]|[.,:]\d))"
    r"|(?P<word>[A-Za-z][\w^'/+-]*(?:\.\w+)*)"
    r"|(?P<other>\S)"
)
# Words between a label and its number ("slope is 2.3", "R^2 = 0.9").
_LINKS = frozenset({"is", "are", "was", "were", "be", "equals", "equal", "of", "to", "at", "approximately",
                    "about", "around", "roughly", "~", "=", ":", "\u2248", "reached", "becomes", "gives"})
# Words that end a label on its left ("with R^2", "and the slope").
_STOPS = frozenset({
    "a", "an", "and", "or", "but", "with", "without", "we", "i", "it", "its", "this", "that", "these", "those",
    "is", "are", "was", "were", "be", "been", "has", "have", "had", "which", "where", "when", "then", "so",
    "after", "before", "from", "to", "at", "by", "on", "using", "gives", "gave", "yields", "yielded", "found",
    "got", "get", "estimated", "computed", "obtained", "equals", "while", "whereas", "than", "as", "vs",
    "versus", "over", "under", "between", "into", "total", "there", "here", "our", "their", "his", "her",
    "if", "not", "no", "all", "each", "every", "per", "out",
})
# Words allowed inside a label but not at its ends ("depth of the lake").
_EDGES = frozenset({"the", "of", "in", "for", "on", "at", "a", "an"})
_UNITS = frozenset({
    "s", "ms", "us", "ns", "min", "h", "hr", "hrs", "d", "yr", "m", "cm", "mm", "km", "nm", "um", "g", "kg", "mg",
    "ug", "K", "C", "degC", "degF", "Pa", "kPa", "MPa", "GPa", "hPa", "bar", "mbar", "atm", "J", "kJ", "MJ", "eV",
    "keV", "MeV", "W", "kW", "MW", "V", "mV", "A", "mA", "Hz", "kHz", "MHz", "GHz", "L", "mL", "uL", "mol",
    "mmol", "umol", "nmol", "M", "mM", "uM", "nM", "pM", "N", "kN", "ppm", "ppb", "dB", "rad", "deg", "sr", "T",
    "Ohm", "ohm", "nt", "bp", "kb", "kbp", "Mb", "Da", "kDa", "px", "AU", "au", "cal", "kcal", "Bq", "Gy", "Sv",
    "ha", "mph", "kt", "pc", "kpc", "Mpc", "ly", "sigma", "dex", "mag",
})
# One factor of a unit: a known unit with an optional power (s, s^-1, m2); factors join with / * or .
_UNIT_FACTOR = re.compile(r"(?P<name>[A-Za-z]{1,5})(?:\^?-?\d)?")


def _is_unit(token: str) -> bool:
    if token in _UNITS:
        return True
    factors = re.split(r"[/*.]", token)
    return len(factors) <= 4 and all(
        f.isdigit() and len(factors) > 1 or bool((m := _UNIT_FACTOR.fullmatch(f)) and m.group("name") in _UNITS)
        for f in factors)


def _is_year(number: _Number) -> bool:
    return number.integer and 1800 <= number.value <= 2100


def line_readings(line: str) -> list[Reading]:
    """Every number in one printed line that words just before it name."""
    if is_noise(line):
        return []
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(_PLUS_MINUS.sub(" \u00b1 ", line))]
    out = []
    for k, (kind, text) in enumerate(tokens):
        if kind != "num":
            continue
        number = _number(text)
        before = tokens[k - 1] if k else None
        if before and before[1] == "\u00b1":
            continue  # the uncertainty of the number before it: read with that number
        uncertainty = None
        if k + 2 < len(tokens) and tokens[k + 1][1] == "\u00b1" and tokens[k + 2][0] == "num":
            uncertainty, tokens_after = _number(tokens[k + 2][1]), k + 3  # "9.98 +- 0.83 ms^-2"
        else:
            tokens_after = k + 1
        after = tokens[tokens_after] if tokens_after < len(tokens) else None
        if number is None or _is_year(number):
            continue
        if (before and before[0] == "num") or (after and after[0] == "num"):
            continue  # "x 1 2": which number the label names is not certain
        if after and after[1] == "," and k + 2 < len(tokens) and tokens[k + 2][0] == "num":
            continue  # "1, 2, 3": a list
        unit, j = None, k - 1
        if after and after[0] == "word" and after[1].lower() not in _STOPS and after[1].lower() not in _LINKS:
            if not _is_unit(after[1]):
                continue  # "5721 rows", "3 species": a count of things, not a named result
            unit = after[1]
        elif after and after[1] == "%":
            unit = "%"
        while j >= 0 and (tokens[j][1].lower() in _LINKS):
            j -= 1
        j = _before_aside(tokens, j)
        if j >= 2 and tokens[j][1] == ")" and tokens[j - 2][1] == "(" and tokens[j - 1][0] == "word" and unit is None:
            unit, j = tokens[j - 1][1], j - 3
            while j >= 0 and tokens[j][1].lower() in _LINKS:
                j -= 1
        words = []
        while j >= 0 and tokens[j][0] == "word" and tokens[j][1].lower() not in _STOPS:
            words.insert(0, tokens[j][1])
            j -= 1
        while words and words[0].lower() in _EDGES:
            words.pop(0)
        while words and words[-1].lower() in _EDGES:
            words.pop()
        if not words:
            continue
        if j >= 0 and tokens[j][0] == "num":
            continue  # "3 mean 2.5": the words may belong to the number before them
        label = " ".join(words)
        kind_, value = ("integer", int(text)) if number.integer else ("number", number.value)
        out.append(Reading((label,), kind_, value, label, checked=(unit,) if unit else (), unit=unit,
                           decimals=number.decimals, resolution=None if number.integer else number.resolution))
        if uncertainty is not None:
            value = int(uncertainty.value) if uncertainty.integer else uncertainty.value
            out.append(Reading((label, "uncertainty"), "integer" if uncertainty.integer else "number", value,
                               f"uncertainty of {label}", checked=(unit,) if unit else (), unit=unit,
                               decimals=uncertainty.decimals,
                               resolution=None if uncertainty.integer else uncertainty.resolution))
    return out


# "+-", "+/-", "±" and TeX's "\pm" between a value and its uncertainty, read as one token.
_PLUS_MINUS = re.compile(r"\s*(?:\+/-|\+-|\u00b1|\\pm)\s*")


def _before_aside(tokens: list[tuple[str, str]], j: int) -> int:
    """Skip an aside between commas just before a value ("g, calculated from the gradient, is 9.8"):
    the label is the words before it. Only an aside of a few plain words is skipped."""
    if j < 0 or tokens[j][1] != ",":
        return j
    i = j - 1
    while i >= 0 and tokens[i][0] == "word" and j - i <= 8:
        i -= 1
    if i >= 1 and i < j - 1 and tokens[i][1] == ",":
        return i - 1
    return j


_LABEL_LINE = re.compile(r"^\s*(?P<label>[A-Za-z][^\n]*?)\s*[:=]\s*$")


def block_label(line: str | None) -> str | None:
    """The label a line printed just before a block gives it (``Coefficients:``), or None."""
    if line is None or not line.strip() or is_noise(line) or _NUMBER_TEXT.search(line):
        return None
    match = _LABEL_LINE.match(line)
    if match:
        return match.group("label").strip()
    text = line.strip()
    if len(text.split()) <= 6 and re.fullmatch(r"[A-Za-z][\w ()/%^'+-]*", text):
        return text
    return None


def read_printed(lines: list[str], blocks: list[_Block], taken: set[int], max_table_rows: int) -> list[Reading]:
    """Readings of the blocks and of the lines in neither a block nor ``taken``, in stdout order."""
    out: list[tuple[int, list[Reading]]] = []
    in_block = {n for b in blocks for n in range(b.start, b.stop)}
    counters = {"table": 0, "list": 0}
    label_lines = set()  # lines read as a block's name, so not read again on their own
    for block in blocks:
        if block.kind == "unreadable":
            continue
        counters[block.kind] += 1
        previous = lines[block.start - 1] if block.start and block.start - 1 not in in_block | taken else None
        label = block.inline_label.strip() if block.inline_label else block_label(previous)
        if label and not block.inline_label:
            label_lines.add(block.start - 1)
        if label:
            parts, desc = (label,), f"{'list' if block.kind == 'list' else 'table'} printed after {label}"
        else:
            name = f"printed_{block.kind}_{counters[block.kind]}"
            parts, desc = (name,), f"{'list' if block.kind == 'list' else 'table'} number {counters[block.kind]} printed"
        out.append((block.start, block.readings_of(parts, desc)))
    for n, line in enumerate(lines):
        if n in in_block or n in taken or n in label_lines:
            continue
        out.append((n, line_readings(line)))
    return [r for _, readings in sorted(out, key=lambda item: item[0]) for r in readings]
