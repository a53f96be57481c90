"""Names for bare numbers on stdout, from the ``print()`` call that printed each one.

A research script often prints a result with nothing around it: ``print(calc_gc(seq))`` puts ``0.4521``
on a line of its own, which no reading of the text alone can name. The tracer records every ``print()``
call the program's own files make onto stdout (file, line, the text printed; ``sandbox/trace_runner.py``).
``stdout_names`` lines those records up with stdout and names each line that is one number by the source
of the expression that was printed, ``calc_gc(seq)``; a call that printed several such lines (in a loop)
names them ``calc_gc(seq) (value 1)``, ``(value 2)``, ... in the order printed.

The names are keyed by stdout line, so the same program run again (on perturbed data, mutated, by a
re-check) is read with the reference run's names: the answer reader takes them from the reference schema
(``line_names``). A record is lined up with the first stdout lines after the previous one's that hold its
text; one stdout does not show (a masked scratch path) names nothing. Nothing is named for a call that
printed anything but one expression, for one that printed more than ``MAX_VALUES_PER_CALL`` numbers (a
dump, not a result), and for any line after a ``print(..., end="")`` (lines no longer match calls). Whether a name is a safe label is the answer reader's rule, not this one's.
"""
from __future__ import annotations

import ast
import re

from ..parsing import UnparseableSource, parse_python
from .values import _NUMBER_TEXT

MAX_VALUES_PER_CALL = 12
LOOK_AHEAD = 200  # stdout lines a record is looked for past the previous one
MAX_EXPRESSION_CHARS = 48
LINE_SOURCE = "stdout@"  # an answer field's source when its name comes from the print call of that stdout line
_BARE_NUMBER = re.compile(rf"\s*{_NUMBER_TEXT.pattern}\s*")


def is_bare_number(line: str) -> bool:
    return bool(_BARE_NUMBER.fullmatch(line))


def printed_expressions(source: str) -> dict[int, str]:
    """For each line of ``source`` holding a ``print(<one expression>)`` call: that expression's source."""
    try:
        tree = parse_python(source)
    except UnparseableSource:
        return {}
    found: dict[int, str] = {}
    calls = [node for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]
    shared = {line for line in (n.lineno for n in calls) if sum(c.lineno == line for c in calls) > 1}
    for node in calls:
        if node.lineno in shared:
            continue  # `print(a); print(b)`: the record's line cannot tell the two calls apart
        if len(node.args) != 1 or isinstance(node.args[0], (ast.Starred, ast.Constant, ast.JoinedStr)):
            continue  # a label printed next to the value, or text: the text reader's
        if any(k.arg in ("sep", "end", "file") for k in node.keywords):
            continue
        text = ast.get_source_segment(source, node.args[0])
        if not text:
            continue
        text = " ".join(text.split())
        if len(text) <= MAX_EXPRESSION_CHARS:
            found.setdefault(node.lineno, text)
    return found


def stdout_names(stdout: str, prints: list, sources: dict[str, str]) -> dict[int, str]:
    """``{stdout line index: name}`` for the lines that are one number printed by ``print(<expression>)``."""
    lines = stdout.splitlines()
    expressions: dict[str, dict[int, str]] = {}
    at = 0
    by_call: dict[tuple[str, int], list[int]] = {}
    for record in prints:
        if not (isinstance(record, list) and len(record) in (3, 4) and isinstance(record[2], str)):
            return {}
        path, line, text = record[:3]
        cut = len(record) == 4
        if not cut and not text.endswith("\n"):
            break  # print(..., end="") joins lines: positions cannot be trusted past it
        printed = text.splitlines() or [""]
        found = _find(lines, printed, at, partial_last=cut)
        if found is None:
            continue  # stdout shows it otherwise (a scratch path masked): the records after it still line up
        whole = record[3] if cut and isinstance(record[3], int) and record[3] >= len(printed) else len(printed)
        at = found + whole  # a cut text: every line it printed, as the record counts them
        if len(printed) == 1 and is_bare_number(printed[0]) and isinstance(path, str) and isinstance(line, int):
            by_call.setdefault((path, line), []).append(found)
    names: dict[int, str] = {}
    for (path, line), indices in by_call.items():
        if path not in sources or len(indices) > MAX_VALUES_PER_CALL:
            continue
        if path not in expressions:
            expressions[path] = printed_expressions(sources[path])
        expression = expressions[path].get(line)
        if expression is None:
            continue
        for number, index in enumerate(indices, start=1):
            names[index] = expression if len(indices) == 1 else f"{expression} (value {number})"
    return names


def _find(lines: list[str], printed: list[str], start: int, partial_last: bool = False) -> int | None:
    """The first index from ``start`` where ``printed`` stands in ``lines`` (its last line only the start of
    one with ``partial_last``), or None."""
    width = len(printed)
    whole, last = (printed[:-1], printed[-1]) if partial_last else (printed, None)
    # Looked for a little way ahead only: text between two calls is what the program wrote otherwise (rare),
    # and a record stdout does not show must not cost a scan of all of it.
    for index in range(start, min(len(lines) - width + 1, start + LOOK_AHEAD)):
        if lines[index:index + len(whole)] == whole and (last is None or lines[index + width - 1].startswith(last)):
            return index
    return None


def line_names_of(schema) -> dict[int, str]:
    """The stdout line names a reference schema's fields were read with (their ``source`` is ``stdout@<line>``)."""
    names = {}
    for field in schema or ():
        source = getattr(field, "source", "")
        if source.startswith(LINE_SOURCE) and source[len(LINE_SOURCE):].isdigit():
            names[int(source[len(LINE_SOURCE):])] = field.label
    return names
