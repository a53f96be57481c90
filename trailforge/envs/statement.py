"""Deterministic task statements, written from the program's structure and its outputs.

Without a model, a statement can only say what is certain: which data files the
analysis reads (with their shape), which library operations it uses in which order,
the named constants that parameterise it, and exactly which fields to report, with
types, units and printed precision. Repository text (docstrings, comments) is never
copied in: it is untrusted and may carry instructions aimed at a model.
"""
from __future__ import annotations

import ast
import csv
import io
import json
import re
from pathlib import PurePosixPath

from ..io import AnswerField, FileEntry

_BORING_CALLS = {
    "print", "len", "range", "str", "int", "float", "list", "dict", "set", "tuple", "sorted", "enumerate", "zip",
    "round", "format", "isinstance", "min", "max", "abs", "sum", "append", "items", "keys", "values", "get", "join",
    "split", "strip", "startswith", "endswith", "replace", "lower", "upper", "makedirs", "dump", "write", "exists",
    "setdefault", "extend", "update", "add", "pop", "open", "iter", "next", "map", "filter", "any", "all", "rstrip",
    "lstrip", "to_csv", "to_json", "savetxt", "save",
}
_TYPE_WORDS = {
    "number": "a number", "integer": "an integer", "string": "a string", "boolean": "true or false",
    "number_list": "a list of numbers", "table": "a table: {\"columns\": [...], \"rows\": [[...], ...]}",
}


def describe_data_file(entry: FileEntry, data: bytes) -> str:
    suffix = PurePosixPath(entry.path).suffix.lower()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"`{entry.path}` (binary, {entry.size} bytes)"
    if suffix in (".csv", ".tsv"):
        rows = list(csv.reader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ","))
        rows = [r for r in rows if r]
        if rows:
            header = ", ".join(_clean(c) for c in rows[0][:20])
            return f"`{entry.path}` (table, {len(rows) - 1} rows; columns: {header})"
    if suffix == ".json":
        try:
            data_obj = json.loads(text)
        except ValueError:
            data_obj = None
        if isinstance(data_obj, dict):
            return f"`{entry.path}` (JSON object; keys: {', '.join(_clean(k) for k in list(data_obj)[:20])})"
        if isinstance(data_obj, list):
            return f"`{entry.path}` (JSON list of {len(data_obj)} items)"
    if suffix in (".fasta", ".fa", ".fna", ".faa"):
        return f"`{entry.path}` (FASTA, {text.count('>')} records)"
    return f"`{entry.path}` (text, {len(text.splitlines())} lines)"


def _clean(text: str, limit: int = 40) -> str:
    return re.sub(r"[^\w .%/()+-]", "", str(text))[:limit]


def operations(source: str) -> list[str]:
    """Library calls in order of first appearance, with import aliases resolved."""
    module = ast.parse(source)
    aliases = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    # In a chain such as df.groupby(...).mean() both calls start at the same place; the inner one
    # (shorter) runs first.
    calls = sorted((n for n in ast.walk(module) if isinstance(n, ast.Call)),
                   key=lambda n: (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset))
    seen: list[str] = []
    for call in calls:
        name = _call_name(call.func, aliases)
        if name and name.split(".")[-1] not in _BORING_CALLS and name not in seen:
            seen.append(name)
    return seen[:30]


def _call_name(func, aliases) -> str | None:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        root = aliases.get(func.id)
        if root:
            return ".".join([root, *reversed(parts)])
        if not parts:
            return None  # a function the program defines itself
    return "." + parts[0] if parts else None


def literal_values(source: str) -> set:
    """Every constant written in the program (numbers and strings)."""
    values = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and not isinstance(node.value, bool):
            values.add(node.value)
    return values


def stable_repr(value) -> str:
    """repr() with sets sorted, so a statement never depends on hash randomisation."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(stable_repr(v) for v in value)) + "}" if value else "set()"
    if isinstance(value, tuple):
        inner = ", ".join(stable_repr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(stable_repr(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{stable_repr(k)}: {stable_repr(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _only_safe_strings(value) -> bool:
    """Strings from a repository are untrusted: only short identifier-like ones reach a statement."""
    if isinstance(value, str):
        return re.fullmatch(r"[\w.+/-]{1,30}", value) is not None
    if isinstance(value, (set, frozenset, tuple, list)):
        return all(_only_safe_strings(v) for v in value)
    if isinstance(value, dict):
        return all(_only_safe_strings(k) and _only_safe_strings(v) for k, v in value.items())
    return True


def constants(source: str) -> list[str]:
    """Module-level UPPER_CASE constants with literal values (parameters of the analysis)."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper():
                try:
                    value = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
                shown = stable_repr(value)
                if len(shown) <= 80 and _only_safe_strings(value):
                    found.append(f"{name} = {shown}")
    return found


def field_line(field: AnswerField) -> str:
    parts = [f"- `{field.name}`: {_TYPE_WORDS[field.type]}"]
    origin = "printed as" if field.source == "stdout" else "reported as"
    parts.append(f"; {origin} \"{_clean(field.label, 120)}\"")
    if field.unit:
        parts.append(f"; unit: {_clean(field.unit)}")
    if field.decimals:
        parts.append(f"; the original analysis reports {field.decimals} decimal places")
    return "".join(parts)


def reproduction_statement(repo_id: str, discipline: str, script: str, data: list[str], program_sources: list[str],
                           schema: list[AnswerField]) -> str:
    ops: list[str] = []
    params: list[str] = []
    for source in program_sources:
        ops += [op for op in operations(source) if op not in ops]
        params += constants(source)
    field_name = discipline.replace("_", " ")
    article = "An" if field_name[:1].lower() in "aeiou" else "A"
    lines = [
        f"# Reproduce an analysis from `{repo_id}` ({field_name})",
        "",
        f"{article} {field_name} analysis (originally the script `{script}`) reads the data below. "
        "Reproduce it from the data alone and report its results.",
        "",
        "## Input data (in your working directory)",
        *[f"- {d}" for d in data],
    ]
    if ops:
        lines += ["", "## How the original analysis proceeds", "It uses these operations, in this order of first use:",
                  ", ".join(f"`{op}`" for op in ops) + "."]
    if params:
        lines += ["", "## Parameters of the original analysis", *[f"- `{p}`" for p in params]]
    lines += [
        "",
        "## What to report",
        "Write `answer.json` in your working directory: one JSON object with exactly these fields.",
        *[field_line(f) for f in schema],
        "",
        "Numbers are graded with a small relative tolerance: report them at full precision, without rounding further "
        "than the original analysis does. Strings must match exactly. Tables may list rows in any order.",
    ]
    return "\n".join(lines) + "\n"
