"""What a task must not give away: the answer or the values it is derived from (in the statement, a field's
label or a workspace file), the reference program, the removed code of a Completion or the fix of a Correction."""
from __future__ import annotations

import hashlib
import re

from ...io import TaskRow
from ..tasks.statement import contains_number as _contains_number, field_needles, prose as _prose
from .rejected import Rejected


def leak_needles(task: TaskRow, workspace_text: str) -> list[str]:
    """Strings whose presence would reveal a reference value."""
    needles = set()
    for field in task.answer_schema:
        needles.update(field_needles(field, task.reference_answer[field.name], workspace_text))
    return sorted(needles)


def significant_forms(value: float) -> list[str]:
    """Printed forms of an intermediate value that would identify it (three or more significant digits)."""
    forms = {repr(value)}
    for decimals in range(2, 7):
        text = f"{value:.{decimals}f}"
        if len(re.sub(r"[^0-9]", "", text).lstrip("0")) >= 3:
            forms.add(text)
    return sorted(f for f in forms if len(re.sub(r"[^0-9]", "", f).lstrip("0")) >= 3)


def _code_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if len(line.strip()) >= 12 and not line.strip().startswith("#")]


def check_construction(task: TaskRow) -> None:
    """What makes a derived task a task: the hole is really empty, the defect really there, nothing given away."""
    prose = _prose(task.statement)
    for value in task.derived_values:
        for form in significant_forms(value):
            if _contains_number(prose, form):
                raise Rejected("answer_leak", f"the statement contains the intermediate value {form}")
    info = task.construction
    if task.task_type == "completion":
        stub = info.get("stub", "")
        given = task.workspace_program.get(info["path"], "")
        if not stub or stub not in given or given == task.reference_program.get(info["path"]):
            raise Rejected("hole_missing", "the workspace program does not carry the stub in place of the step")
        for line in _code_lines(info.get("removed", "")):
            if line in stub:
                raise Rejected("hole_leak", "the stub contains code of the removed step")
            if line in task.statement:
                raise Rejected("hole_leak", "the statement contains code of the removed step")
    if task.task_type == "correction":
        if task.workspace_program == task.reference_program:
            raise Rejected("defect_missing", "the workspace program is the reference program")
        original = info.get("original", "").strip()
        if original and original in task.statement:
            raise Rejected("fix_leak", "the statement contains the original line")
        mutated = task.workspace_program.get(info["path"], "")
        if info.get("mutated", "").strip() not in mutated:
            raise Rejected("defect_missing", "the defective line is not in the workspace program")


# A word of a label or a snake_case name: ``max_parallax``, ``depth, maximum of column d`` (not ``climax``).
_ORDER_STATISTIC = re.compile(r"(?<![a-z])(min|max|minimum|maximum)(?![a-z])", re.IGNORECASE)


def selects_a_value(field) -> bool:
    """True for a field that picks one of the values it is computed over (a minimum or maximum): its value
    may stand in the data it was picked from."""
    anchor = field.source.rpartition("#")[2]
    return anchor.rpartition(".")[2] in ("min", "max") or any(
        _ORDER_STATISTIC.search(text) for text in (field.label, field.name))


def check_isolation(task: TaskRow, workspace: dict[str, bytes]) -> None:
    program_hashes = {hashlib.sha256(t.encode("utf-8")).hexdigest() for t in task.reference_program.values()}
    for path, data in workspace.items():
        if path in task.reference_program or hashlib.sha256(data).hexdigest() in program_hashes:
            raise Rejected("program_leak", f"workspace file {path} is part of the reference program")
    texts = {path: data.decode("utf-8", errors="replace") for path, data in workspace.items()}
    needles = leak_needles(task, "\n".join(texts.values()))
    # Field labels may legitimately name other values (a JSON key that is a year, say); the
    # rest of the statement, and each field's own label, must not contain its value.
    prose = _prose(task.statement)
    for needle in needles:
        if _contains_number(prose, needle):
            raise Rejected("answer_leak", f"the statement contains the reference value {needle!r}")
    for field in task.answer_schema:
        own = field_needles(field, task.reference_answer[field.name], "")
        if any(_contains_number(field.label, n) for n in own):
            raise Rejected("answer_leak", f"the label of field {field.name} contains its own value")
    # The minimum or maximum of values the program read is one of those values: finding it in the data is
    # what the question asks for, not evidence of a results file (a plotted raw column, a GC-skew table).
    joined = "\n".join(texts.values())
    computed = sorted({n for field in task.answer_schema if not selects_a_value(field)
                       for n in field_needles(field, task.reference_answer[field.name], joined)})
    for path, text in texts.items():
        # Integers in input data are usually years, counts or ids the answer picks among: only
        # non-integer values count as evidence of a results file.
        found = [n for n in computed if re.search(r"\d[.eE]", n) and _contains_number(text, n)]
        digits = [len(re.sub(r"\D", "", n).lstrip("0")) for n in found]
        # One short number can match input data by chance; a long one, or several, means a results file.
        if any(d >= 6 for d in digits) or sum(d >= 4 for d in digits) >= 2:
            raise Rejected("answer_leak", f"workspace file {path} contains reference values {found[:3]}")
    for source in task.reference_program.values():
        body = [line.strip() for line in source.splitlines() if len(line.strip()) > 40]
        for path, text in texts.items():
            if body and sum(line in text for line in body) >= max(3, len(body) // 2):
                raise Rejected("program_leak", f"workspace file {path} contains the reference program's code")
