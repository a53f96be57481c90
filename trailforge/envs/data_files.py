"""One line per input file, for the statement's data section: its format, shape and column names.

A statement tells the agent what it is given without copying the data: a table's delimiter, row count and
header (plain names only, the ones the analysis uses first), a JSON file's keys, a FASTA file's record count.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import math
import re
from pathlib import PurePosixPath

from ..io import FileEntry
from .analysis import MAX_PARAMETERS
from .answers import label_problem
from .untrusted_text import clean, inline_code

MAX_NAMES = 20  # column names or keys listed for one input file; the rest are counted

_SAMPLE_ROWS = 50  # rows that decide an input file's delimiter

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")

# Delimiters tried, in order, on a text file that may be a table (None: runs of whitespace, as ``str.split``).
_TEXT_DELIMITERS = ("\t", ",", ";", None)

_DELIMITER_WORDS = {",": "comma", "\t": "tab", ";": "semicolon", None: "whitespace"}

_TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t", ".txt": None, ".dat": None}  # suffix -> delimiter it implies


def _plain_names(names: list, limit: int = MAX_NAMES, used: set | None = None) -> str:
    """Column names or JSON keys of an input file: plain names as before, any other only counted.

    A header is repository text like any other; one that is not a plain label (``answers.label_problem``)
    could carry a sentence aimed at a model, so it is not shown. At most ``limit`` names are listed, in file
    order; when some must be left out, those in ``used`` (named by the analysis's code) come first, all of
    them. The count at the end is every name not listed.
    """
    safe = [str(n) for n in names if label_problem(str(n)) is None]
    if used and len(safe) > limit:
        first = [n for n in safe if n in used]
        safe, limit = first + [n for n in safe if n not in used], max(limit, len(first))
    shown = [clean(n) for n in safe[:limit]]
    hidden = len(names) - len(shown)
    return ", ".join(shown) + (f"{'; ' if shown else ''}{hidden} not shown" if hidden else "")


def _is_number(cell: str) -> bool:
    return _NUMBER.fullmatch(cell.strip()) is not None


def _rows(text: str, delimiter: str | None) -> list[tuple[int, list[str]]]:
    """The non-blank rows of ``text`` with the line each ends on; None splits on runs of whitespace."""
    if delimiter is None:
        return [(number, line.split()) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    return [(reader.line_num, row) for row in reader if row]


def _consistent(rows: list[tuple[int, list[str]]]) -> bool:
    """A header and at least one row after it, all with the same number (two or more) of fields."""
    return len(rows) >= 2 and len(rows[0][1]) >= 2 and all(len(row) == len(rows[0][1]) for _, row in rows)


def _delimiter(text: str, suffix: str) -> str | None | bool:
    """How the fields of a table file are separated, or False when the file is no table.

    A ``.csv`` is comma-separated unless its first row has a single field while semicolons or tabs split
    every sampled row alike; a ``.txt`` or ``.dat`` is a table when one delimiter (tab, comma, semicolon,
    whitespace, in that order) splits its first rows into equally many fields, some of them numbers.
    """
    if suffix == ".tsv":
        return "\t"
    sample = "\n".join(text.splitlines()[:4 * _SAMPLE_ROWS])
    try:
        if suffix == ".csv":
            rows = _rows(sample, ",")[:_SAMPLE_ROWS]
            if rows and len(rows[0][1]) == 1:
                return next((d for d in (";", "\t") if _consistent(_rows(sample, d)[:_SAMPLE_ROWS])), ",")
            return ","
        for delimiter in _TEXT_DELIMITERS:
            rows = _rows(sample, delimiter)[:_SAMPLE_ROWS]
            if _consistent(rows) and any(_is_number(cell) for _, row in rows[1:] for cell in row):
                return delimiter
    except csv.Error:
        pass
    return False


def _column_names(cells: list[str], used: set) -> tuple[list[str], set[str]]:
    """The names of a header row as a statement shows them (an empty cell, which pandas calls ``Unnamed: k``,
    as ``unnamed column k``), and those of them the analysis's code names."""
    names, named = [], set()
    for k, cell in enumerate(cells):
        name = cell.strip() or f"unnamed column {k}"
        names.append(name)
        if ({cell, name} if cell.strip() else {f"Unnamed: {k}"}) & used:
            named.add(name)
    return names, named


def _describe_table(text: str, suffix: str, used: set) -> str | None:
    """``table, ...`` for a file ``_delimiter`` reads as one, else None."""
    delimiter = _delimiter(text, suffix)
    if delimiter is False:
        return None
    try:
        rows = _rows(text, delimiter)
    except csv.Error:
        return None
    if not rows:
        return None
    shape = ["table"]
    if delimiter != _TABLE_SUFFIXES[suffix] or suffix in (".txt", ".dat"):
        shape.append(f"{_DELIMITER_WORDS[delimiter]}-separated")
    line, header = rows[0]
    width = len(header)
    if suffix in (".txt", ".dat") and (any(map(_is_number, header)) or not any(c.strip() for c in header)):
        return f"{', '.join(shape)}, no header row, {len(rows)} rows; {width} columns"
    shape.append(f"{len(rows) - 1} rows")
    if any(cell.strip() for cell in header):
        names, named = _column_names(header, used)
        return f"{', '.join(shape)}; {width} columns: {_plain_names(names, used=named)}"
    # Every cell of the header is empty (pandas names them all ``Unnamed: k``): a later row may name them.
    columns = f"{width} columns, all unnamed (line {line} is empty)"
    for name_line, cells in rows[1:1 + _SAMPLE_ROWS]:
        if not any(map(_is_number, cells)) and 2 * sum(1 for c in cells if c.strip()) >= width:
            names, named = _column_names(cells, used)
            return f"{', '.join(shape)}; {columns}; line {name_line} names them: {_plain_names(names, used=named)}"
    return f"{', '.join(shape)}; {columns}"


def describe_data_file(entry: FileEntry, data: bytes, parameters: bool = False, used: set | None = None) -> str:
    """One line on an input file: its path, format and shape. ``parameters``: the file holds the analysis's
    numeric parameters, which the original script set in its code (``envs/parameters.py``); the line says so
    and names them, since their names are all that tells what each number is. ``used``: the program's
    string literals (``literal_values``); columns and keys they name are listed first, however many."""
    suffix = PurePosixPath(entry.path).suffix.lower()
    path = inline_code(entry.path)
    used = {v for v in used or () if isinstance(v, str)}
    try:
        text = data.decode("utf-8-sig")  # a leading byte-order mark is no part of the first name (as in pandas)
    except UnicodeDecodeError:
        return f"{path} (binary, {entry.size} bytes)"
    if parameters:
        try:
            names = list(json.loads(text))
        except (ValueError, TypeError):
            names = []
        return (f"{path} (JSON object: the numeric parameters of the analysis, one per key, named as in the "
                f"original code; keys: {_plain_names(names, MAX_PARAMETERS)}). Read them from this file.")
    if suffix in _TABLE_SUFFIXES:
        table = _describe_table(text, suffix, used)
        if table:
            return f"{path} ({table})"
    if suffix == ".json":
        try:
            data_obj = json.loads(text)
        except ValueError:
            data_obj = None
        if isinstance(data_obj, dict):
            return f"{path} (JSON object; {len(data_obj)} keys: {_plain_names(list(data_obj), used=used)})"
        if isinstance(data_obj, list):
            return f"{path} (JSON list of {len(data_obj)} items)"
    if suffix in (".fasta", ".fa", ".fna", ".faa"):
        return f"{path} (FASTA, {text.count('>')} records)"
    return f"{path} (text, {len(text.splitlines())} lines)"


MAX_STATISTIC_BYTES = 5_000_000  # larger tables are not summarised (reading them whole costs too much)


@functools.lru_cache(maxsize=32)  # each Subflow target of a seed asks again; callers only read the result
def column_statistics(path: str, data: bytes) -> tuple[tuple[float, ...], tuple[list[float], ...]]:
    """``(statistics, columns)`` of a text table: the count of its data rows and, for every column with two or
    more numbers, its minimum, maximum, sum, mean and median; and the columns themselves. What a program
    gets by reading a file and reducing one column: an answer made only of these tests reading, not
    analysis. ``((), ())`` for a file that is no table (``_delimiter``), or too large to read here."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix not in _TABLE_SUFFIXES or len(data) > MAX_STATISTIC_BYTES:
        return (), ()
    try:
        text = data.decode("utf-8-sig")
        delimiter = _delimiter(text, suffix)
        rows = [] if delimiter is False else [cells for _, cells in _rows(text, delimiter)]
    except (UnicodeDecodeError, csv.Error):
        return (), ()
    if len(rows) < 2:
        return (), ()
    header = 0 if any(map(_is_number, rows[0])) else 1  # a first row of names is no data
    statistics: list[float] = [float(len(rows) - header)]
    columns = []
    for k in range(max(len(r) for r in rows)):
        column = [float(r[k]) for r in rows[header:] if k < len(r) and _is_number(r[k])]
        if len(column) < 2:
            continue
        ordered = sorted(column)
        middle = len(ordered) // 2
        median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        statistics += [ordered[0], ordered[-1], math.fsum(column), math.fsum(column) / len(column), median]
        columns.append(column)
    return tuple(statistics), tuple(columns)
