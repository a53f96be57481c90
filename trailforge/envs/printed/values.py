"""The values of printed results: ``Reading`` (one result before it is named), printed numbers with their
resolution, the lines whose numbers are about the run (noise), and the readings of a list or table, which
are summarised when it is large. See the package docstring for the rules."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

MAX_SUMMARY_COLUMNS = 4  # numeric columns a summary aggregates
SELECTED_ROWS = 5  # rows a summary quotes from each end (pandas shows 5 at each end of an elided print)


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
    line: int | None = None  # the stdout line it was named by (``sites.stdout_names``); None: named by its text


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


_IDENTIFIER = re.compile(r"(?:^|[_\s.-])(?:id|ids|idx|index|key|code|accession|entrez)$|^(?:id|idx|index)[_\s.-]",
                         re.IGNORECASE)
_CAMEL_ID = re.compile(r"[a-z]I[Dd]$")  # SampleID, geneId; not "valid" or "grid"


def is_identifier_column(name: str, column: list[float], position: int) -> bool:
    """Whether a numeric column names rows rather than measures them: its header says so (``gene_id``,
    ``SampleID``, ``index``), or it is the first column and holds distinct whole numbers (a row key). The
    mean of Entrez gene ids is no result."""
    if _IDENTIFIER.search(str(name).strip()) or _CAMEL_ID.search(str(name).strip()):
        return True
    return position == 0 and len(column) > 1 and all(float(v).is_integer() for v in column) \
        and len(set(column)) == len(column)


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
        numeric = [k for k in range(len(columns)) if cells and all(isinstance(r[k], float) for r in cells)
                   and not is_identifier_column(columns[k], [r[k] for r in cells], k)]
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
    for word, rows, rows_res, cut in (("first", cells[:shown_first], res[:shown_first], shown_first),
                                      ("last", cells[len(cells) - shown_last:], res[len(res) - shown_last:],
                                       len(cells) - shown_last)):
        if not rows:
            continue
        if not lists and not rows_settled(cells, cut, first):
            continue  # which rows end up at this end depends on how ties were broken: not a result
        label = f"{desc}, {word} {len(rows)} {'values' if lists else 'rows'} of {total}"
        if lists:
            out.append(Reading((*parts, word, "values"), "number_list", [r[0] for r in rows], label,
                               resolution=_coarsest(rows_res), resolutions=[r[0] for r in rows_res]))
        else:
            out.append(Reading((*parts, word, "rows"), "table", {"columns": columns, "rows": rows}, label,
                               checked=checked, resolution=_coarsest(rows_res), resolutions=rows_res))
    return out


# ---------------------------------------------------------------------------------------------------- row order

# The first or last rows of a large table are a result only when every correct analysis puts the same rows
# there. A table sorted on a column with ties (pySeqDiff sorts 39,376 genes by a corrected p-value, 17,223 of
# them at 1.0) leaves the order within each tie to the sort algorithm, so another correct program (or pandas
# version) puts other genes last. From the printed rows alone, the rule is: a column that is monotonic over the
# printed rows may be the order's key, and the cut between the selected rows and the rest is settled when some
# such key differs across it (the rows on each side are told apart by their key, whatever broke its ties).
# Where the row just beyond the cut was elided, the key must be strictly monotonic over every printed row
# (no tie anywhere in sight). A row counter (whole numbers in steps of one: an index after ``reset_index``)
# is monotonic in whatever order the rows were put, so it settles the cut only when no other monotonic,
# non-constant column ties across it (the sort key the counter was numbered after). A number list needs none
# of this: tied values are equal, so its first and last values are the same in any order of the ties.


def rows_settled(cells: list[list], cut: int, head: int) -> bool:
    """Whether the rows before ``cut`` of the printed rows ``cells`` are the same rows in every order the table's
    columns allow (the rule above). ``head`` is the number of rows printed before an elision (``len(cells)``
    when every row was printed): rows ``head - 1`` and ``head`` are not neighbours in the table."""
    if cut <= 0 or cut >= len(cells):
        return True  # the whole table: nothing was cut
    visible = cut != head  # the row on the other side of the cut was printed next to the selected rows
    keys, ties = [], []
    for k in range(len(cells[0])):
        column = _ordered_values(r[k] for r in cells)
        if column is None or not _monotonic(column, strict=False):
            continue
        if visible and column[cut - 1] != column[cut] or not visible and _monotonic(column, strict=True):
            keys.append(column)
        elif len(set(column)) > 1:
            ties.append(column)
    return any(not _is_counter(key, head) for key in keys) or bool(keys) and not ties


def _ordered_values(cells) -> list | None:
    """A column as values its order can be read on: numbers (also printed index labels such as ``"12"``), or
    text; None for a column that mixes them (a missing value among numbers)."""
    cells = list(cells)
    if all(isinstance(c, float) for c in cells):
        return cells
    if not all(isinstance(c, str) for c in cells):
        return None
    numbers = [_number(c) for c in cells]
    return [n.value for n in numbers] if all(n is not None for n in numbers) else cells


def _monotonic(column: list, strict: bool) -> bool:
    pairs = list(zip(column, column[1:]))
    if strict:
        return all(a < b for a, b in pairs) or all(a > b for a, b in pairs)
    return all(a <= b for a, b in pairs) or all(a >= b for a, b in pairs)


def _is_counter(column: list, head: int) -> bool:
    """Whole numbers in steps of one, within the printed rows before and after an elision."""
    if not all(isinstance(v, float) and v.is_integer() for v in column):
        return False
    steps = {b - a for part in (column[:head], column[head:]) for a, b in zip(part, part[1:])}
    return steps in ({1.0}, {-1.0})
