"""Subflow: the backward slice that computes an intermediate result; it is run, and the value it saves must
equal the value the traced run of the whole program observed."""
from __future__ import annotations

import ast
import math


from ...io import AnswerField, TaskRow
from ..mutations import OPERATORS, apply_mutation, find_mutations
from ..parsing import parse_python
from ..slicing import REPORT_FUNCTION, SliceError, slice_program
from ..outline import MAX_STEPS, program_outline
from .statement import subflow_statement
from ..workflow import Unit
from .answer import raw_statistic_fields, still_fields
from .compare import differences, is_number
from .context import (
    SeedContext, allowed_operators, derived_numbers, parameter_lines, task_id_for, without_stated_fields,
)


def build_subflows(ctx: SeedContext) -> list[TaskRow]:
    targets = list(ctx.workflow.targets)
    if ctx.cfg.subflow.max_per_seed == 0 or not targets:
        return []
    ctx.rng("subflow").shuffle(targets)
    units = {(u.path, u.line): u for u in ctx.program.units()}
    tasks = []
    for target in targets:
        if len(tasks) >= ctx.cfg.subflow.max_per_seed:
            ctx.recorder.count("subflow_targets_over_cap")
            continue
        task = _subflow(ctx, target, units[(target["path"], target["line"])])
        if task is not None:
            tasks.append(task)
    return sorted(tasks, key=lambda t: t.task_id)


def _subflow(ctx: SeedContext, target: dict, unit: Unit) -> TaskRow | None:
    name = target["name"]
    # Targets of the entry script keep the ids they always had; another file's name its path.
    where = f"{target['line']}" if target["path"] == ctx.seed.script else f"{target['path']}:{target['line']}"
    item = task_id_for(ctx.seed.seed_id, f"subflow:{name}@{where}")
    try:
        sliced = slice_program(ctx.program, ctx.sources, unit, name)
    except SliceError as exc:
        ctx.recorder.reject(item, exc.reason, exc.message)
        return None
    program = {**ctx.sources, **sliced.files}
    reporter = sliced.target_path or ctx.seed.script  # the file whose slice saves the target
    # The statement states the slice step by step; one nobody can follow is no task, and costs no run.
    outline = program_outline(program, ctx.seed.script, skip=frozenset({REPORT_FUNCTION}))
    if outline.steps > MAX_STEPS:
        ctx.recorder.reject(item, "procedure_too_long", f"the slice for {name} has {outline.steps} steps; a Subflow "
                            f"statement states at most {MAX_STEPS}")
        return None
    result = ctx.run(program)
    if not result.ok:
        tail = (result.stderr.strip().splitlines() or [""])[-1]
        ctx.recorder.reject(item, "slice_fails", f"the sliced program ended with {result.reason}: {tail[:300]}")
        return None
    schema, answer = ctx.answer_of(result, "result_files")
    if not schema:
        ctx.recorder.reject(item, "slice_no_result", f"the sliced program saved no readable value for {name}")
        return None
    schema = [_result_label(f, name) for f in schema]
    mismatch = _mismatch(target["value"], schema, answer)
    if mismatch:
        ctx.recorder.reject(item, "slice_mismatch", f"the slice's {name} differs from the traced run: {mismatch}")
        return None
    if ctx.cfg.data_dependence.enabled:
        # A target computed from the program's own constants (a grid step, a seed) does not move with the data.
        moved = _moves_with_data(ctx, program, schema, answer)
        if moved is not True:
            ctx.recorder.reject(item, *(moved or ("not_data_dependent",
                                                  f"{name} does not change when the data are perturbed")))
            return None
    raw = raw_statistic_fields(schema, answer, ctx.data)
    if raw and len(raw) == len(schema):
        ctx.recorder.reject(item, "subflow_raw_statistic", f"{name} is a plain statistic of one input column (its "
                            "minimum, maximum, sum, mean or median): reading the file gives it")
        return None
    negatives = [{"name": "incomplete", "entrypoint": ctx.seed.script,
                  "files": {**program, reporter: _without_target(program[reporter], name)}}]
    defective = _defective_slice(ctx, program, schema, answer, reporter)
    if defective:
        negatives.append(defective)
    local = list(dict.fromkeys([ctx.sources[ctx.seed.script], ctx.sources[reporter]]))
    steps = [(defined, tuple(r for r in read if r not in ctx.modules), ops) for defined, read, ops in sliced.steps]
    statement, schema, answer = without_stated_fields(
        lambda s, a: subflow_statement(ctx.seed.repo_id, ctx.seed.discipline, ctx.seed.script, ctx.data_lines, name,
                                       target["value"], steps, local, s, a, outline.lines),
        schema, answer, ctx.data_text, ctx.recorder)
    if statement is None:
        ctx.recorder.reject(item, "answer_in_statement", f"the statement gives the value of {name} itself")
        return None
    return ctx.base_task(
        "subflow", f"{name}@{where}",
        statement=statement, answer_schema=schema, reference_answer=answer,
        reference_program=program, answer_from="result_files", negative_programs=negatives,
        construction={"target": name, "path": target["path"], "line": target["line"], "kind": target["kind"],
                      "upstream_operations": target["upstream_operations"], "slice_statements": sliced.statements,
                      # where the slice's code lies outside the entry script (a helper module's statements)
                      **({"slice_spans": [[p, a, b] for p, a, b in sliced.spans if p != ctx.seed.script]}
                         if reporter != ctx.seed.script else {})},
        derived_values=derived_numbers(ctx.workflow, set(sliced.lines), ctx.literals),
    )


def _moves_with_data(ctx: SeedContext, program: dict[str, str], schema, answer) -> bool | tuple[str, str] | None:
    """True when the program's result moves on perturbed data; a ``(reason, message)`` when that cannot be
    checked; None when it stays put."""
    still, why = still_fields(ctx.seed, program, schema, answer, ctx.rng_seed, ctx.cfg.data_dependence.jitter,
                              (ctx.max_fields, ctx.max_rows), ctx.sandbox, ctx.cache, ctx.env, ctx.recorder,
                              answer_from="result_files")
    if still is None:
        return why[0], f"the data dependence of the result cannot be checked: {why[1]}"
    return True if len(still) < len(schema) else None


def _result_label(field: AnswerField, target: str) -> AnswerField:
    """Name a saved result by what it is (``bray['A|B']``), not by the file the reference program used."""
    key = field.source.partition("#")[2]
    label = f"{target}[{key!r}]" if key else target
    return field.model_copy(update={"label": label, "source": "result"})


def _mismatch(summary: dict, schema: list[AnswerField], answer: dict) -> str | None:
    values = list(answer.values())
    if summary.get("type") in ("float", "int"):
        if len(values) != 1 or not is_number(values[0]):
            return "not a single number"
        expected = summary["value"]
        return None if math.isclose(values[0], expected, rel_tol=1e-9, abs_tol=1e-12) else f"{values[0]!r} != {expected!r}"
    if summary.get("type") in ("Series", "ndarray", "list", "tuple"):
        size = summary.get("shape", [summary.get("len")])[0]
        value = values[0] if len(values) == 1 else None
        got = len(value["rows"]) if isinstance(value, dict) else len(value) if isinstance(value, list) else None
        if got != size:
            return f"{got} values instead of {size}"
        # The traced run kept the first few values: a slice that lost a step the length does not show differs there.
        for index, expected in enumerate(summary.get("preview") or []):
            if isinstance(value, list) and is_number(expected) and index < len(value) and is_number(value[index]) \
                    and not math.isclose(value[index], expected, rel_tol=1e-9, abs_tol=1e-12):
                return f"value {index} is {value[index]!r}, not {expected!r}"
        return None
    if summary.get("type") == "DataFrame":
        value = values[0] if len(values) == 1 else None
        rows = len(value["rows"]) if isinstance(value, dict) else None
        return None if rows == summary["shape"][0] else f"{rows} rows instead of {summary['shape'][0]}"
    if summary.get("type") == "dict":
        return None if len(values) == summary.get("len") else f"{len(values)} entries instead of {summary.get('len')}"
    return "unsupported value type"


def _without_target(text: str, name: str) -> str:
    """The slice without its last computing statement: it can only report a stale or missing value."""
    call = f"report_result({name!r}, {name})"
    lines = text.splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.strip() == call)
    indent = lines[index][:len(lines[index]) - len(lines[index].lstrip())]
    return "".join(lines[:index]) + f"{indent}raise NotImplementedError({name!r})\n" + "".join(lines[index + 1:])


def _defective_slice(ctx: SeedContext, program: dict[str, str], schema, answer, path: str) -> dict | None:
    """A mutant of the slice (of ``path``, the file that reports the target) whose result differs."""
    text = program[path]
    helper_lines = _helper_lines(text) | parameter_lines(ctx, path, text)
    candidates = [m for m in find_mutations(text, path, allowed_operators(ctx)) if m.line not in helper_lines]
    scientific = [m for m in candidates if OPERATORS[m.operator].scientific]
    for mutation in (scientific or candidates)[:3]:
        files = {**program, path: apply_mutation(text, mutation)}
        result = ctx.run(files)
        if not result.ok:
            continue
        _, got = ctx.answer_of(result, "result_files")
        if differences(schema, answer, got):
            return {"name": "defective", "entrypoint": ctx.seed.script, "files": files,
                    "mutation": {"operator": mutation.operator, "line": mutation.line}}
    return None


def _helper_lines(text: str) -> set[int]:
    for node in parse_python(text, "<slice>").body:
        if isinstance(node, ast.FunctionDef) and node.name == "report_result":
            return set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return set()
