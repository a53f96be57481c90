"""Turn what a program printed and wrote into a typed, structured answer.

Recognised results:
- printed lines ``Label: value`` or ``Label (unit): value`` (numbers, booleans, short strings);
- JSON files: scalar leaves (up to three levels deep) and short numeric lists;
- CSV/TSV tables: whole when they have at most ``max_table_rows`` rows, else summarised (``printed``); a
  ``.txt``/``.dat``/``.tab``/``.out`` file (or one with no suffix) is read as one when every line splits on
  tabs (or commas) into the same cells, as ``DataFrame.to_csv(path, sep="\t")`` writes it;
- what matplotlib figures showed, as the plot recorder saw it (``plots.py``);
- everything else a program prints that reads as a result: ``label value`` lines, numbers in sentences,
  pandas DataFrame and Series prints, numpy arrays and aligned or comma-separated tables (``printed``
  describes what it reads and how it bounds large outputs). These come after the ``Label: value`` lines
  and the files, so that their names and the cap never change those; plotted fields come last.

The same extractor reads the reference program's runs in ``verify``, so "the answer" always
means exactly the same thing.

A program is untrusted, and its labels become field names that task.md and model prompts quote.
``field_name`` is the one place a raw label becomes a name: a label that is too long, uses other
characters than those of plain quantity names, or reads like a sentence is refused (counted with its
reason), never rewritten.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import Counter
from pathlib import PurePosixPath
from typing import Any

from ..io import AnswerField
from ..sandbox import PLOTS_FILE
from . import printed

# The label may run longer than any label that is accepted, so that an over-long one is seen and counted
# as refused rather than silently not matched.
_LINE = re.compile(
    r"^\s*(?P<label>[A-Za-z][^:=\n]{0,400}?)\s*(?:\((?P<unit>[^()]{1,40})\))?\s*[:=]\s*(?P<value>\S.{0,80}?)\s*$"
)
# Any line shaped like ``Label: value``, also where the label does not start with a letter.
_LABELLED = re.compile(r"^\s*(?P<label>[^:=\n]{1,400}?)\s*[:=]\s*(?P<value>\S.{0,80}?)\s*$")
# A log level or a warning's or exception's class name, as a label: the line is a log line.
# A number with a point in a label means the line is a sentence carrying results, not a label.
_SENTENCE_NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")
# A value that is a number and more ("3.25 m", "12 stations", "2.5 +/- 0.1 m/s") is a quantity, not a category:
# with one word after it, the word is its unit; anything longer is left to the printed reader.
_MEASURED = re.compile(r"^(?P<number>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)\s+"
                       r"(?:(?P<word>[A-Za-z%][\w/^%-]{0,19})\s*$)?")
RESULT_DIR = "result"  # where a Subflow reference program saves its target
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_STRING = re.compile(r"^[\w][\w .+/%-]{0,59}$")


# What a label (a printed name, its unit, a JSON key, a column header, a part of an output path) may
# be. These are the characters the names of quantities and units use (the bundled examples need
# letters, digits, space and ``_ - . / % ^ |``; ``( ) , + '`` are as plain: "Young's modulus"), and
# nothing that carries Markdown or prompt structure: no backtick, double quote, ``#``, ``*``, ``<``,
# ``[``, ``:``, newline or control character. ASCII only: non-ASCII letters would let look-alike and
# invisible characters (a Hangul filler reads as a space but is a letter) through the word checks below.
# Empty is allowed: it is the header pandas writes over an unnamed index column.
_LABEL_CHARACTERS = re.compile(r"[A-Za-z0-9 _.,()/%+^|'-]*")
MAX_LABEL_CHARS = 64  # the longest label in the examples has 36 characters
MAX_LABEL_WORDS = 8  # the most words of a label in the examples is 6; a sentence has more
# Words that address a reader rather than name a quantity ("ignore previous instructions and ...").
_INSTRUCTION_WORDS = frozenset({
    "ignore", "disregard", "forget", "instruction", "instructions", "reveal", "pretend", "jailbreak", "assistant",
    "you", "your", "please",
})


# What a run leaves behind that is not a result of the analysis: the sandbox's HOME is the scratch
# folder, so library caches and config (matplotlib's font list under ``.cache/``, ``.config/``,
# ``.local/``, IPython's profile) land next to the outputs, as do bytecode and our own ``.tf_*`` files.
# A hidden path component or a bytecode file is never an answer.
_NOT_RESULT_SUFFIXES = (".pyc", ".pyo")


def is_result_file(path: str) -> bool:
    """Whether an output file may hold results (``False`` for caches, config, bytecode, hidden files)."""
    parts = PurePosixPath(path).parts
    return not (any(part.startswith(".") or part == "__pycache__" for part in parts)
                or path.endswith(_NOT_RESULT_SUFFIXES))


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "value"


def label_problem(text: str) -> str | None:
    """None when ``text`` may be (part of) an answer field's label, else the reason it may not."""
    if len(text) > MAX_LABEL_CHARS:
        return "unsafe_label_length"
    if not _LABEL_CHARACTERS.fullmatch(text):
        return "unsafe_label_characters"
    if len(text.split()) > MAX_LABEL_WORDS:
        return "unsafe_label_words"
    if has_instruction_words(text):
        return "unsafe_label_instructions"
    return None


def has_instruction_words(text: str) -> bool:
    """Whether ``text`` speaks to the reader (``ignore``, ``answer``, ...), whatever its length."""
    return bool(_INSTRUCTION_WORDS.intersection(re.findall(r"[a-z]+", text.lower())))


def field_name(*parts: str) -> tuple[str | None, str | None]:
    """``(name, None)`` for the raw label of one result, else ``(None, reason)``.

    ``parts`` is a printed label, or a file's stem and the JSON keys that lead to the value. Every
    part must be a safe label as it is: the name is derived from the parts, the parts are not cleaned.
    """
    for part in parts:
        problem = label_problem(part)
        if problem:
            return None, problem
    return slug(".".join(parts)), None


def _path_problem(path: str) -> str | None:
    """An output file's path is quoted in its fields' labels, so each of its parts must be a safe label."""
    return next(filter(None, (label_problem(part) for part in PurePosixPath(path).parts)), None)


def parse_scalar(text: str) -> tuple[str, Any, int | None] | None:
    """``(type, value, printed decimals)`` of a printed value, or None if it is not a result."""
    text = text.strip().rstrip(".,;")
    if text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return None  # not a result anyone can grade
    if _INT.match(text):
        return "integer", int(text), 0
    if _FLOAT.match(text):
        value = float(text)
        if not math.isfinite(value):
            return None
        mantissa = text.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return "number", value, decimals
    if text in ("True", "False", "true", "false"):
        return "boolean", text.lower() == "true", None
    if _STRING.match(text):
        return "string", text, None
    return None


def resolution(text: str) -> float:
    """Half a unit in the last printed place: how far a correctly rounded value may be off."""
    mantissa, _, exponent = text.strip().lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** ((int(exponent) if exponent else 0) - decimals)


class _Collector:
    def __init__(self, max_fields: int, skipped: Counter):
        self.max_fields = max_fields
        self.fields: list[AnswerField] = []
        self.values: dict[str, Any] = {}
        self.dropped = 0
        self.skipped = skipped

    def add(self, base: str | None, problem: str | None, kind: str, value: Any, label: str, source: str, unit=None,
            decimals=None, resolution=None) -> str | None:
        """Add a field named ``base`` (from ``field_name``), or count why its label was refused; its name."""
        if problem:
            self.skipped[problem] += 1
            return None
        if len(self.fields) >= self.max_fields:
            self.dropped += 1
            return None
        name, n = base, 2
        while name in self.values:
            name, n = f"{base}_{n}", n + 1
        self.fields.append(AnswerField(name=name, type=kind, label=label[:120], unit=unit, source=source,
                                       decimals=decimals, resolution=resolution))
        self.values[name] = value
        return name

    def add_reading(self, reading: printed.Reading, source: str, precision: dict | None) -> None:
        """Add what ``printed`` read; every raw label part and quoted text is checked here."""
        name, problem = field_name(*reading.labels)
        problem = problem or next(filter(None, (label_problem(t) for t in reading.checked)), None)
        added = self.add(name, problem, reading.kind, reading.value, reading.label, source, unit=reading.unit,
                         decimals=reading.decimals, resolution=reading.resolution)
        if added and precision is not None and reading.resolutions is not None:
            precision[added] = reading.resolutions


def extract_answer(stdout: str, files: dict[str, str | None], max_fields: int = 24, max_table_rows: int = 50,
                   skipped: Counter | None = None, plots: dict | None = None,
                   precision: dict[str, Any] | None = None, line_names: dict[int, str] | None = None,
                   ) -> tuple[list[AnswerField], dict[str, Any], int]:
    """Return ``(schema, answer, fields dropped over the cap)``.

    ``line_names`` names the stdout lines that hold one bare number, by index (``printed.stdout_names`` on the
    seed run; ``printed.line_names_of`` a reference schema for any later run); such a field's source is
    ``stdout@<index>``.

    Results whose label was refused are counted by reason into ``skipped`` when it is given. ``precision``,
    when given, receives the resolution of each element of list and table fields (their ``resolution`` is
    the coarsest), by field name: a list, or a list of rows with None for text cells.
    """
    out = _Collector(max_fields, Counter() if skipped is None else skipped)
    lines = stdout.splitlines()
    blocks = printed.find_blocks(lines, max_table_rows)
    in_block = {n for block in blocks for n in range(block.start, block.stop)}
    taken: set[int] = set()  # the Label: value lines, read here and by nothing else
    for n, line in enumerate(lines):
        if n in in_block:
            continue
        loose = _LABELLED.match(line)
        if loose and _SENTENCE_NUMBER.search(loose.group("label")):
            continue  # "The slope is 2.31 m/s with R^2 = 0.98" is a sentence: printed reads it
        measured = _MEASURED.match(loose.group("value")) if loose else None
        if measured and not measured.group("word"):
            continue  # "slope = 2.5 +/- 0.1 m/s": a measured number, which printed reads with its unit
        if loose and parse_scalar(loose.group("value")) is not None:
            taken.add(n)  # a Label: value line even where _LINE refuses its label ("95% CI: 9.6"): as before
        match = _LINE.match(line)
        if not match or printed.is_log_label(match.group("label")):
            continue  # "WARNING: step size 0.01 too big" is a log line, not a result
        parsed = parse_scalar(match.group("value"))
        if parsed is None:
            continue
        kind, value, decimals = parsed
        if kind == "string" and not measured and len(value.split()) > 1 and re.search(r"\d", value):
            # "Hit count for condition = long adjusted to 19": the rest of a sentence after an "=", words
            # and numbers the print's format joined, is no result; grading it grades the wording.
            out.skipped["sentence_fragment"] += 1
            continue
        label = match.group("label").strip()
        unit = (match.group("unit") or "").strip() or None
        if measured and kind == "string":  # "Mean depth: 3.25 m": the number, and the word is its unit
            kind, value, decimals = parse_scalar(measured.group("number"))
            unit = unit or measured.group("word")
        name, problem = field_name(label)
        problem = problem or (label_problem(unit) if unit else None)  # the unit is quoted next to the label
        shown = measured.group("number") if measured else match.group("value").strip().rstrip(".,;")
        res = resolution(shown) if kind == "number" else None
        out.add(name, problem, kind, value, label, "stdout", unit=unit, decimals=decimals, resolution=res)
    for path in sorted(files):
        text = files[path]
        if text is None:
            continue
        suffix = PurePosixPath(path).suffix.lower()
        stem = PurePosixPath(path).stem
        if suffix == ".json":
            try:
                data = json.loads(text)
            except ValueError:
                continue
            _add_json(out, stem, data, path, _path_problem(path), [], max_table_rows)
        elif (delimiter := table_delimiter(path, text)) is not None:
            table = parse_table(text, delimiter, max_table_rows)
            if table is not None:
                table, res = table
                name, problem = field_name(stem)
                # The columns are the answer's shape and are quoted in the statement: all must be safe.
                problem = problem or _path_problem(path) or next(
                    filter(None, (label_problem(c) for c in table["columns"])), None)
                out.add(name, problem, "table", table, f"table written to {path}", f"file:{path}", resolution=res)
            else:
                _summarise_file_table(out, text, delimiter, path, stem, max_table_rows, precision)
    for reading in printed.read_printed(lines, blocks, taken, max_table_rows, line_names):
        out.add_reading(reading, "stdout" if reading.line is None else f"{printed.LINE_SOURCE}{reading.line}",
                        precision)
    if plots:  # the recorder's record of the figures (read_plots), after every printed and written result
        from .plots import plot_fields  # plots.py builds on this module's label rules

        for candidate in plot_fields(plots, max_table_rows):
            out.add(**candidate)
    return out.fields, out.values, out.dropped


def _summarise_file_table(out: _Collector, text: str, delimiter: str, path: str, stem: str, max_rows: int,
                          precision: dict | None) -> None:
    """A well-formed table with more rows than ``max_rows``: its summary (``printed.summarise_rows``)."""
    rows = _table_rows(text, delimiter)
    if rows is None or len(rows) - 1 <= max_rows:
        return
    problem = _path_problem(path) or next(filter(None, (label_problem(c) for c in rows[0])), None)
    if problem:
        out.skipped[problem] += 1
        return
    for reading in printed.summarise_rows((stem,), f"table written to {path}", rows[0], rows[1:], max_rows):
        out.add_reading(reading, f"file:{path}", precision)


def answer_from_run(result, answer_from: str, max_fields: int, max_rows: int, precision: dict | None = None,
                    cwd: str = ".", like=None):
    """``(schema, answer)`` of one sandbox run: everything it printed and wrote (``outputs``), or only
    the files it saved under ``result/`` of its working folder ``cwd`` (``result_files``, Subflow; the
    run's file paths are relative to the scratch root). The plot recorder's file is read as figures,
    never as a JSON result. ``like``: the reference schema, whose stdout line names the run is read with."""
    from .plots import read_plots

    texts, plots = {}, {}
    results = RESULT_DIR + "/" if cwd in ("", ".") else f"{cwd.strip('/')}/{RESULT_DIR}/"
    for path, data in result.files.items():
        if path == PLOTS_FILE:
            plots = read_plots(data) if answer_from == "outputs" else {}
            continue
        if answer_from == "result_files" and not path.startswith(results) or not is_result_file(path):
            continue
        try:
            texts[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            texts[path] = None
    stdout = result.stdout if answer_from == "outputs" else ""
    schema, answer, _ = extract_answer(stdout, texts, max_fields, max_rows, plots=plots, precision=precision,
                                       line_names=printed.line_names_of(like))
    return schema, answer


def _add_json(out: _Collector, stem: str, data: Any, path: str, path_problem: str | None, keys: list[str],
              max_rows: int) -> None:
    name, problem = field_name(stem, *keys)
    problem = problem or path_problem
    source = f"file:{path}" + (f"#{'.'.join(keys)}" if keys else "")
    label = f"{'/'.join(keys) or 'value'} in {path}"
    if isinstance(data, dict) and len(keys) < 3:
        for key in sorted(data, key=str):
            _add_json(out, stem, data[key], path, path_problem, [*keys, str(key)], max_rows)
    elif isinstance(data, bool):
        out.add(name, problem, "boolean", data, label, source)
    elif isinstance(data, int):
        out.add(name, problem, "integer", data, label, source)
    elif isinstance(data, float) and math.isfinite(data):
        out.add(name, problem, "number", data, label, source, resolution=resolution(repr(data)))
    elif isinstance(data, str) and _STRING.match(data):
        out.add(name, problem, "string", data, label, source)
    elif isinstance(data, list) and 0 < len(data) <= max_rows and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in data
    ):
        res = max((resolution(repr(v)) for v in data if isinstance(v, float)), default=None)
        out.add(name, problem, "number_list", [float(v) for v in data], label, source, resolution=res)


TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t"}
TEXT_TABLE_SUFFIXES = (".txt", ".dat", ".tab", ".out", "")  # plain-text files a table is often written to


def table_delimiter(path: str, text: str) -> str | None:
    """The delimiter a written file's table uses, or None when it is no table: ``.csv``/``.tsv`` by name, a
    plain-text file only when its first line has a tab (or a comma) and every line splits on it into as many
    cells, at least two (``_table_rows``: unique headers, equal rows)."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in TABLE_SUFFIXES:
        return TABLE_SUFFIXES[suffix]
    if suffix not in TEXT_TABLE_SUFFIXES:
        return None
    first = text.split("\n", 1)[0]
    for delimiter in ("\t", ","):
        if delimiter in first:
            rows = _table_rows(text, delimiter)
            if rows is not None and len(rows[0]) >= 2:
                return delimiter
    return None


def parse_table(text: str, delimiter: str, max_rows: int) -> tuple[dict[str, Any], float | None] | None:
    """The table and the coarsest printed resolution of its numeric cells."""
    rows = _table_rows(text, delimiter)
    if rows is None or len(rows) - 1 > max_rows:
        return None
    header = rows[0]
    body, coarsest = [], None
    for row in rows[1:]:
        cells = []
        for cell in row:
            parsed = parse_scalar(cell) if cell.strip() else None
            if parsed and parsed[0] in ("integer", "number"):
                cells.append(float(parsed[1]))
                if parsed[0] == "number":
                    coarsest = max(coarsest or 0.0, resolution(cell))
            else:
                cells.append(cell.strip())
        body.append(cells)
    return {"columns": header, "rows": body}, coarsest


def _table_rows(text: str, delimiter: str) -> list[list[str]] | None:
    """Header (stripped) and rows of a well-formed table: unique headers, every row as long as the header."""
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if r]
    if len(rows) < 2:
        return None
    header = [h.strip() for h in rows[0]]
    if len(set(header)) != len(header) or any(len(r) != len(header) for r in rows[1:]):
        return None
    return [header, *rows[1:]]


# ---------------------------------------------------------------------------------------------------- missing values

# The eval grades missing values as one class (``templates/eval.py``, standalone, so it keeps its own copy; a test
# keeps the two equal): where a number belongs, the text a program prints for a missing one stands for it.
MISSING_TEXTS = frozenset({"", "nan", "na", "<na>", "nat", "none", "null"})


def is_missing(value: Any, numeric: bool = True) -> bool:
    """Null or NaN anywhere; one of ``MISSING_TEXTS`` only where a number belongs (``numeric``)."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return True
    return numeric and isinstance(value, str) and value.strip().lower() in MISSING_TEXTS


def _is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def numeric_columns(rows: list[list]) -> list[bool]:
    """Per column: every cell a number or a missing value, one at least a number (the eval's rule)."""
    width = max((len(row) for row in rows), default=0)
    cells = [[row[c] for row in rows if c < len(row)] for c in range(width)]
    return [any(_is_finite_number(v) for v in column) and all(_is_finite_number(v) or is_missing(v) for v in column)
            for column in cells]


def missing_places(field_type: str, value: Any) -> list[tuple[int, ...]]:
    """Where a reference value is missing as the eval grades it: ``()`` for a number field, ``(i,)`` in a
    number list, ``(row, column)`` in a table (a column that holds numbers elsewhere, or a null/NaN cell)."""
    if field_type == "number":
        return [()] if is_missing(value) else []
    if field_type == "number_list" and isinstance(value, list):
        return [(i,) for i, v in enumerate(value) if is_missing(v)]
    if field_type == "table" and isinstance(value, dict) and isinstance(value.get("rows"), list):
        numeric = numeric_columns(value["rows"])
        return [(r, c) for r, row in enumerate(value["rows"]) for c, v in enumerate(row) if is_missing(v, numeric[c])]
    return []


def with_missing_as(field_type: str, value: Any, replacement: Any) -> Any:
    """``value`` with each of its missing places (``missing_places``) written as ``replacement``."""
    places = missing_places(field_type, value)
    if places == [()]:
        return replacement
    if field_type == "number_list":
        return [replacement if (i,) in places else v for i, v in enumerate(value)]
    if field_type == "table":
        rows = [list(row) for row in value["rows"]]
        for r, c in places:
            rows[r][c] = replacement
        return {**value, "rows": rows}
    return value


def missing_value_answers(schema: list[AnswerField], answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Answers that write the reference's missing values as JSON null, and as NaN (what ``json.dump`` writes for
    a float NaN, and ``json.load`` reads), by name; none when the answer has no missing value."""
    fields = [f for f in schema if missing_places(f.type, answer[f.name])]
    if not fields:
        return {}
    return {name: {**answer, **{f.name: with_missing_as(f.type, answer[f.name], written) for f in fields}}
            for name, written in (("missing_values_as_null", None), ("missing_values_as_nan", float("nan")))}
