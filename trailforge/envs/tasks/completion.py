"""Completion: a function body or a statement on the answer's dependency slice is replaced by a line that
raises; the hole must be needed and must feed a graded field."""
from __future__ import annotations

import ast
import functools
import math


from ...io import TaskRow
from ..parsing import parse_python
from ..analysis import analysis_numbers
from .statement import completion_statement
from ..workflow import WRITE_CALLS, Unit, observations, unit_runs
from .compare import differences
from .context import SeedContext, feeds_output, parameter_lines, round_robin, task_id_for, without_stated_fields


def completion_holes(ctx: SeedContext) -> list[dict]:
    """Functions and statements whose removal leaves a gradable gap, in a deterministic order."""
    calls = {(c["path"], c["line"]): c for c in ctx.workflow.trace.get("calls", [])}
    runs = unit_runs(ctx.workflow.trace)
    values = observations(ctx.workflow.trace)
    holes = []
    for name, (path, def_line) in sorted(ctx.program.functions.items()):
        call = calls.get((path, def_line))
        body = ctx.program.scopes[(path, def_line)]
        hole = _function_hole(ctx, name, path, def_line, body, call)
        if hole:
            holes.append(hole)
    # Every file of the program: an entry script that only calls a module's function (ZLS92's two-line driver
    # around def_gnss_sql.gnss_sql) has all its steps there. The hole must still change a graded field.
    for (path, scope_line), units in sorted(ctx.program.scopes.items()):
        generated = parameter_lines(ctx, path)
        for unit in units:
            if unit.line in generated:
                continue  # the lines that read a parameters file are plumbing, not a step of the analysis
            hole = _block_hole(ctx, unit, units, runs, values)
            if hole:
                holes.append(hole)
    return holes


def _function_hole(ctx, name, path, def_line, body: list[Unit], call) -> dict | None:
    if not call or call["count"] < 1 or not body:
        return None
    docstring = body[0] if body[0].kind == "Expr" and not body[0].calls and not body[0].uses else None
    statements = body[1:] if docstring else body
    if not statements or len(statements) > ctx.cfg.completion.max_body_statements:
        return None
    if any("print" in u.calls or set(c.split(".")[-1] for c in u.calls) & WRITE_CALLS for u in statements):
        return None  # a function that reports is part of the workflow's skeleton, not a step
    tree = parse_python(ctx.sources[path], path)
    node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)
    if not any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node)):
        return None
    nested = sum(isinstance(n, ast.stmt) for n in ast.walk(node)) - 1 - (1 if docstring else 0)
    if not docstring and nested > ctx.cfg.completion.max_undocumented_statements:
        return None  # andrehchu's calculate_p_values (17 statements: shrinkage, NB or Poisson, two-sided) untold
    if not feeds_output(ctx.graph, f"return:{path}:{name}"):
        return None
    lines = ctx.sources[path].splitlines(keepends=True)
    first_body = statements[0].line
    if body[0].line <= node.lineno:
        return None  # body on the def line: no clean place for a stub
    header = "".join(lines[def_line - 1:body[0].line - 1])
    kept_doc = "".join(lines[docstring.line - 1:docstring.end_line]) if docstring else ""
    indent = lines[first_body - 1][:len(lines[first_body - 1]) - len(lines[first_body - 1].lstrip())]
    removed = "".join(lines[first_body - 1:statements[-1].end_line])
    stub = header + kept_doc + f'{indent}raise NotImplementedError("implement {name}")\n'
    start, end = def_line, statements[-1].end_line
    signature = " ".join(line.strip() for line in lines[node.lineno - 1:body[0].line - 1])
    return {
        "kind": "function", "name": name, "path": path, "line": start, "end_line": end, "scope": name,
        "signature": signature, "calls": call["count"], "args": call.get("args", {}), "returns": call.get("returns"),
        "docstring": bool(docstring), "stub": stub, "removed": removed,
        "operations": _operations(statements),
        "removed_lines": [first_body, end], "numbers": removed_numbers(ctx.sources[path], first_body, end),
    }


def _block_hole(ctx, unit: Unit, units: list[Unit], runs, values) -> dict | None:
    if unit.kind not in ("Assign", "AugAssign", "AnnAssign", "For") or runs.get((unit.path, unit.line), 0) < 1:
        return None
    operations = [c for c in unit.calls if c != "arithmetic"]
    if "print" in unit.calls or set(c.split(".")[-1] for c in unit.calls) & WRITE_CALLS:
        return None
    numbers = removed_numbers(ctx.sources[unit.path], unit.line, unit.end_line)
    # A step worth a hole makes at least two choices, one of them a named operation: two calls, or a call and
    # a number of its own (Ryn-Oliphant's np.polyfit(data[0:200, 5], data[0:200, 1], 1) fits rows 0:200 only).
    # ``y = x * 3.5`` (no operation) or ``a = np.asarray(b)`` (one choice) is no step.
    if len(unit.calls) + len(numbers) < 2 or not operations:
        return None
    later = {name for u in units[unit.index + 1:] for name in u.uses}
    defines = sorted((unit.defs - unit.header_names) & later)
    if not defines or not feeds_output(ctx.graph, unit.node_id):
        return None
    earlier = {name for u in units[:unit.index] for name in u.defs}
    lines = ctx.sources[unit.path].splitlines(keepends=True)
    first = lines[unit.line - 1]
    indent = first[:len(first) - len(first.lstrip())]
    stub = f'{indent}raise NotImplementedError("missing step: compute {", ".join(defines)}")\n'
    return {
        "kind": "block", "name": "_".join(defines), "path": unit.path, "line": unit.line, "end_line": unit.end_line,
        "scope": unit.scope, "defines": {n: (values.get((unit.path, unit.line, n)) or {}).get("summary")
                                          for n in defines},
        "reads": sorted((unit.uses & earlier) - set(defines) - ctx.modules) or sorted((unit.uses & earlier) - ctx.modules),
        "operations": operations, "stub": stub, "removed": "".join(lines[unit.line - 1:unit.end_line]),
        "removed_lines": [unit.line, unit.end_line],
        "numbers": numbers,
    }


def _operations(units: list[Unit]) -> list[str]:
    """The named calls of a removed function body, each once: library functions first, then methods."""
    calls = [c for u in units for c in u.calls if c != "arithmetic"]
    named = [c for c in calls if not c.startswith(".")] + [c for c in calls if c.startswith(".")]
    return list(dict.fromkeys(named))


def removed_numbers(source: str, first: int, last: int) -> list[float]:
    """The numbers written in lines ``first..last`` that can change a result (``statement.analysis_numbers``),
    each once: the agent never sees the removed code, so the statement gives them
    (a shrinkage weight of 0.25, the bin edges of ``np.arange(0, 750, 150)``)."""
    found = []
    for value, line in _numbers_of(source):
        if first <= line <= last and value not in found:
            found.append(value)
    return found


@functools.lru_cache(maxsize=16)
def _numbers_of(source: str) -> tuple[tuple[float, int], ...]:
    """``(value, line)`` of every number of a file that can change a result, parsed once per file: each unit of
    the file asks for its own lines."""
    return tuple((value, line) for value, line, _ in analysis_numbers(source))


def build_completions(ctx: SeedContext) -> list[TaskRow]:
    if ctx.cfg.completion.max_per_seed == 0:
        return []
    holes = completion_holes(ctx)
    functions = [h for h in holes if h["kind"] == "function"]
    blocks = [h for h in holes if h["kind"] == "block"]
    ctx.rng("completion-functions").shuffle(functions)
    ctx.rng("completion-blocks").shuffle(blocks)
    tasks = []
    for hole in round_robin({"function": functions, "block": blocks}):
        item = task_id_for(ctx.seed.seed_id, f"completion:{hole['path']}:{hole['line']}")
        if len(tasks) >= ctx.cfg.completion.max_per_seed:
            ctx.recorder.count("completion_holes_over_cap")
            continue
        lines = ctx.sources[hole["path"]].splitlines(keepends=True)
        text = "".join(lines[:hole["line"] - 1]) + hole["stub"] + "".join(lines[hole["end_line"]:])
        try:
            parse_python(text, hole["path"])
        except SyntaxError:
            ctx.recorder.reject(item, "hole_breaks_syntax", "the program with the hole does not parse")
            continue
        incomplete = {**ctx.sources, hole["path"]: text}
        result = ctx.run(incomplete)
        _, got = ctx.answer_of(result)
        if result.ok and ctx.changes(got) == {}:
            ctx.recorder.reject(item, "hole_not_needed", "the program with the hole still gives the reference answer")
            continue
        # A hole that only feeds an ungraded print crashes when empty but accepts any fill: zeros in place
        # of the step must change a graded field (or make the program fail).
        zeroed = {**ctx.sources, hole["path"]: "".join(lines[:hole["line"] - 1]) + _zero_fill(hole)
                  + "".join(lines[hole["end_line"]:])}
        zeroed_result = ctx.run(zeroed)
        zeroed_got = ctx.answer_of(zeroed_result)[1]
        if zeroed_result.ok and ctx.changes(zeroed_got) == {}:
            ctx.recorder.reject(item, "hole_not_graded", "filling the hole with zeros leaves every graded field "
                                "as it is: what it computes is not part of the answer")
            continue
        statement, schema, answer = without_stated_fields(
            lambda s, a: completion_statement(ctx.seed.repo_id, ctx.seed.discipline, ctx.seed.script, ctx.data_lines,
                                              hole, ctx.seed.program_files, s, a),
            ctx.schema, ctx.answer, ctx.data_text, ctx.recorder)
        if statement is None:
            ctx.recorder.reject(item, "answer_in_statement", "the description of the hole gives every answer field")
            continue
        problem = graded_hole_problem(schema, answer, ctx.noise, (result.ok, got), (zeroed_result.ok, zeroed_got))
        if problem:
            ctx.recorder.reject(item, *problem)
            continue
        construction = dict(hole)
        tasks.append(ctx.base_task(
            "completion", f"{hole['path']}:{hole['line']}",
            statement=statement, answer_schema=schema, reference_answer=answer,
            reference_program=dict(ctx.sources), workspace_program=incomplete,
            negative_programs=[{"name": "incomplete", "entrypoint": ctx.seed.script, "files": incomplete}],
            construction=construction,
            derived_values=_hole_values(hole),
        ))
    return sorted(tasks, key=lambda t: t.task_id)


def graded_hole_problem(schema, answer: dict, noise: dict[str, float], incomplete: tuple[bool, dict],
                        zeroed: tuple[bool, dict]) -> tuple[str, str] | None:
    """Why the fields a Completion statement grades cannot tell a filled hole from an unfilled or zero-filled
    one, as ``(reason, message)``, or None. ``incomplete`` and ``zeroed``: ``(ran to the end, answer)`` of the
    program with its hole and with zeros in its place. The eval grades what a program reported however it
    ended, so a hole reached only after every graded field was reported (a crash in a later figure) would
    pass unfilled."""
    ok, got = incomplete
    if differences(schema, answer, got, noise) == {}:
        if ok:
            return "hole_not_needed", "the program with the hole still gives every field the statement grades"
        return "hole_after_results", ("the program with the hole reports every graded field before it stops: the "
                                      "eval would accept it unfilled")
    ok, got = zeroed
    if ok and differences(schema, answer, got, noise) == {}:
        return "hole_not_graded", ("filling the hole with zeros leaves every field the statement grades as it is: "
                                   "what it computes is not part of the answer")
    return None


def _zero_fill(hole: dict) -> str:
    """The hole's stub with its ``raise`` replaced by a wrong but runnable fill: ``return 0``, or every name
    the removed step defines bound to 0."""
    head, _, last = hole["stub"].rstrip("\n").rpartition("\n")
    indent = last[:len(last) - len(last.lstrip())]
    fill = "return 0" if hole["kind"] == "function" else " = ".join([*hole["defines"], "0"])
    return (head + "\n" if head else "") + f"{indent}{fill}\n"


def _hole_values(hole: dict) -> list[float]:
    summaries = [hole.get("returns")] + list(hole.get("defines", {}).values())
    return sorted({s["value"] for s in summaries if s and isinstance(s.get("value"), float)
                   and math.isfinite(s["value"]) and s["value"] != 0})
