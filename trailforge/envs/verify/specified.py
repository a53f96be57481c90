"""What a task must state: every number its answer may depend on (in the statement or a workspace file), and
every text the reference compares against (in the statement); else ``underspecified``."""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ...io import TaskRow
from ..outline import unreachable_definitions
from ..slicing import REPORT_FUNCTION
from ..analysis import analysis_numbers
from ..tasks.statement import contains_number as _contains_number
from .rejected import Rejected


def unstated_numbers(task: TaskRow, workspace: dict[str, bytes]) -> list[tuple[float, str, int, str]]:
    """Numbers of the reference program that can change the answer and that neither the statement nor a
    workspace file gives: ``(value, path, line, code)``. An agent that sees no code (Reproduction, Subflow)
    cannot know them; where the workspace carries the program (Completion, Correction) it can read them, all
    but those of a Completion's removed step."""
    texts = [task.statement, *(d.decode("utf-8", errors="replace") for d in workspace.values())]
    if task.task_type == "completion":
        return _unstated_removed_numbers(task, texts)
    if task.workspace_program:
        return []
    missing = []
    for path, source, kept in _answer_code(task):
        try:
            found = analysis_numbers(source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for value, line, context in found:
            if not kept(line) or context in task.statement:
                continue
            if not any(_contains_number(text, form) for form in _number_forms(value) for text in texts):
                missing.append((value, path, line, context))
    return missing


def _unstated_removed_numbers(task: TaskRow, texts: list[str]) -> list[tuple[float, str, int, str]]:
    """The numbers of a Completion's removed step that neither the statement nor the workspace (the program
    with its hole, the data) gives: the agent writes that step without ever seeing it."""
    path, lines = task.construction.get("path"), task.construction.get("removed_lines")
    if not lines or path not in task.reference_program:
        return []
    texts = [*texts, *task.workspace_program.values()]
    try:
        found = analysis_numbers(task.reference_program[path])
    except (SyntaxError, ValueError, RecursionError):
        return []
    return [(value, path, line, context) for value, line, context in found
            if lines[0] <= line <= lines[1]
            and not any(_contains_number(text, form) for form in _number_forms(value) for text in texts)]


def _answer_code(task: TaskRow) -> Iterator[tuple[str, str, Callable[[int], bool]]]:
    """``(path, source, kept(line))`` of the code the answer comes from. A Subflow's is its slice: the entry
    script's cut text, and the kept statements of a helper module. Functions and classes nothing run from the
    entry names are left out, as the statement's outline leaves them out (``outline.unreachable_definitions``)."""
    spans: dict[str, list] = {}
    for path, first, last in task.construction.get("slice_spans", []) if task.task_type == "subflow" else ():
        spans.setdefault(path, []).append((first, last))
    paths = [task.entrypoint, *spans] if task.task_type == "subflow" else list(task.reference_program)
    unused = unreachable_definitions(task.reference_program, task.entrypoint)
    for path in paths:
        if path in task.reference_program:
            ranges = spans.get(path)
            dropped = [(first, last) for _, first, last in unused.get(path, [])]
            yield path, task.reference_program[path], (
                lambda line, ranges=ranges, dropped=dropped:
                    (not ranges or any(first <= line <= last for first, last in ranges))
                    and not any(first <= line <= last for first, last in dropped))


def unstated_choices(task: TaskRow) -> list[tuple[str, str, int]]:
    """Text the reference program compares against (``animal == 'C2R'``, ``x.isin(['a', 'b'])``) that the
    statement does not give: ``(text, path, line)``. Which category an analysis keeps is a choice the data
    cannot tell, even when the category is in them, so only the statement counts (Reproduction, Subflow)."""
    if task.workspace_program:
        return []
    missing = []
    for path, source, kept in _answer_code(task):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        # The slice's own report helper compares a type name; it is ours, not the analysis's.
        tree.body = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == REPORT_FUNCTION)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(isinstance(o, ast.Name) and o.id == "__name__" for o in operands):
                    continue  # the main guard
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "isin":
                operands = list(node.args)
            else:
                continue
            for operand in operands:
                items = operand.elts if isinstance(operand, (ast.List, ast.Tuple, ast.Set)) else [operand]
                for item in items:
                    if (isinstance(item, ast.Constant) and isinstance(item.value, str) and item.value.strip()
                            and kept(node.lineno) and item.value not in task.statement
                            and repr(item.value)[1:-1] not in task.statement):
                        missing.append((item.value, path, node.lineno))
    return missing


def _number_forms(value: float) -> list[str]:
    forms = {repr(value), str(value)}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    return sorted(forms)


def check_specified(task: TaskRow, workspace: dict[str, bytes]) -> None:
    """Every number the answer may depend on is stated or readable in the data, and every text it compares against
    is stated (else ``underspecified``)."""
    missing = unstated_numbers(task, workspace)
    if missing:
        value, path, line, context = missing[0]
        raise Rejected("underspecified", f"{len(missing)} number(s) of the reference program are given neither by "
                       f"the statement nor by the data, e.g. {value!r} in `{context}` ({path} line {line})",
                       unstated=len(missing))
    choices = unstated_choices(task)
    if choices:
        text, path, line = choices[0]
        raise Rejected("underspecified", f"{len(choices)} text(s) the reference program compares against are not "
                       f"in the statement, e.g. a {len(text)}-character text ({path} line {line})",
                       unstated=len(choices))
