"""Turn what a program printed and wrote into a typed, structured answer.

Recognised results:
- printed lines ``Label: value`` or ``Label (unit): value`` (numbers, booleans, short strings);
- JSON files: scalar leaves (up to three levels deep) and short numeric lists;
- small CSV/TSV tables (header row plus at most ``max_table_rows`` rows).

The same extractor reads the reference program's runs in ``verify``, so "the answer" always
means exactly the same thing.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import PurePosixPath
from typing import Any

from ..io import AnswerField

_LINE = re.compile(
    r"^\s*(?P<label>[A-Za-z][^:=\n]{0,100}?)\s*(?:\((?P<unit>[^()]{1,40})\))?\s*[:=]\s*(?P<value>\S.{0,80}?)\s*$"
)
RESULT_DIR = "result"  # where a Subflow reference program saves its target
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_STRING = re.compile(r"^[\w][\w .+/%-]{0,59}$")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "value"


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
    def __init__(self, max_fields: int):
        self.max_fields = max_fields
        self.fields: list[AnswerField] = []
        self.values: dict[str, Any] = {}
        self.dropped = 0

    def add(self, name: str, kind: str, value: Any, label: str, source: str, unit=None, decimals=None,
            resolution=None) -> None:
        if len(self.fields) >= self.max_fields:
            self.dropped += 1
            return
        base, n = slug(name), 2
        name = base
        while name in self.values:
            name, n = f"{base}_{n}", n + 1
        self.fields.append(AnswerField(name=name, type=kind, label=label[:120], unit=unit, source=source,
                                       decimals=decimals, resolution=resolution))
        self.values[name] = value


def extract_answer(stdout: str, files: dict[str, str | None], max_fields: int = 24,
                   max_table_rows: int = 50) -> tuple[list[AnswerField], dict[str, Any], int]:
    """Return ``(schema, answer, fields dropped over the cap)``."""
    out = _Collector(max_fields)
    for line in stdout.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        parsed = parse_scalar(match.group("value"))
        if parsed is None:
            continue
        kind, value, decimals = parsed
        label = match.group("label").strip()
        unit = (match.group("unit") or "").strip() or None
        res = resolution(match.group("value").strip().rstrip(".,;")) if kind == "number" else None
        out.add(label, kind, value, label, "stdout", unit=unit, decimals=decimals, resolution=res)
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
            _add_json(out, stem, data, path, [], max_table_rows)
        elif suffix in (".csv", ".tsv"):
            table = parse_table(text, "\t" if suffix == ".tsv" else ",", max_table_rows)
            if table is not None:
                table, res = table
                out.add(stem, "table", table, f"table written to {path}", f"file:{path}", resolution=res)
    return out.fields, out.values, out.dropped


def answer_from_run(result, answer_from: str, max_fields: int, max_rows: int):
    """``(schema, answer)`` of one sandbox run: everything it printed and wrote (``outputs``), or only
    the files it saved under ``result/`` (``result_files``, Subflow)."""
    texts = {}
    for path, data in result.files.items():
        if answer_from == "result_files" and not path.startswith(RESULT_DIR + "/"):
            continue
        try:
            texts[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            texts[path] = None
    stdout = result.stdout if answer_from == "outputs" else ""
    schema, answer, _ = extract_answer(stdout, texts, max_fields, max_rows)
    return schema, answer


def _add_json(out: _Collector, stem: str, data: Any, path: str, keys: list[str], max_rows: int) -> None:
    name = ".".join([stem, *keys])
    source = f"file:{path}" + (f"#{'.'.join(keys)}" if keys else "")
    label = f"{'/'.join(keys) or 'value'} in {path}"
    if isinstance(data, dict) and len(keys) < 3:
        for key in sorted(data, key=str):
            _add_json(out, stem, data[key], path, [*keys, str(key)], max_rows)
    elif isinstance(data, bool):
        out.add(name, "boolean", data, label, source)
    elif isinstance(data, int):
        out.add(name, "integer", data, label, source)
    elif isinstance(data, float) and math.isfinite(data):
        out.add(name, "number", data, label, source, resolution=resolution(repr(data)))
    elif isinstance(data, str) and _STRING.match(data):
        out.add(name, "string", data, label, source)
    elif isinstance(data, list) and 0 < len(data) <= max_rows and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in data
    ):
        res = max((resolution(repr(v)) for v in data if isinstance(v, float)), default=None)
        out.add(name, "number_list", [float(v) for v in data], label, source, resolution=res)


def parse_table(text: str, delimiter: str, max_rows: int) -> tuple[dict[str, Any], float | None] | None:
    """The table and the coarsest printed resolution of its numeric cells."""
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    rows = [r for r in rows if r]
    if len(rows) < 2 or len(rows) - 1 > max_rows:
        return None
    header = [h.strip() for h in rows[0]]
    if len(set(header)) != len(header) or any(len(r) != len(header) for r in rows[1:]):
        return None
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
