"""Subflow, Completion and Correction tasks, derived from one seed program and its workflow.

Every derived task is checked by execution before it leaves this stage:

- Subflow: the backward slice that computes an intermediate result is run, and the value
  it saves must equal the value observed in the traced run of the whole program.
- Completion: a function body or a statement on the answer's dependency slice is replaced
  by a line that raises; the program with the hole is kept as the task's incomplete
  control (verify checks the eval rejects what it produces).
- Correction: mutants are run; one is kept only if it exits cleanly, still reports every
  field, differs materially from the reference answer, sits on a line that executed and
  feeds an output, and differs in output from every mutant kept before it.

All choices are deterministic for a given ``seed``: candidates are ordered, then shuffled
with a generator seeded from the recipe's seed and the seed program's id.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from ..cache import ContentCache
from ..config.schema import TasksConfig
from ..io import AnswerField, SeedRow, StageRecorder, TaskRow, WorkflowRow
from ..sandbox import Sandbox, run_cached
from .answers import answer_from_run
from .mutations import OPERATORS, Mutation, apply_mutation, find_mutations, mutated_line
from .parameters import generated_lines, seed_literals
from .protocol import RunProtocol, recorded_request, run_note
from .parsing import parse_python
from .slicing import SliceError, slice_program
from .statement import (
    completion_statement, correction_statement, describe_data_file, subflow_statement,
)
from .tasks import still_fields, task_id_for, without_stated_fields, workspace_text
from .workflow import MODULE_SCOPE, WRITE_CALLS, Program, Unit, analyse_program, graph_from_json, observations, unit_runs



@dataclass
class SeedContext:
    """Everything derived tasks of one seed program share, built once."""

    seed: SeedRow
    workflow: WorkflowRow
    program: Program
    sources: dict[str, str]
    schema: list[AnswerField]
    answer: dict[str, Any]
    data_lines: list[str]
    data: dict[str, bytes]
    env: Any
    sandbox: Sandbox
    cache: ContentCache
    recorder: StageRecorder
    cfg: TasksConfig
    rng_seed: int
    max_fields: int
    max_rows: int
    noise: dict[str, float] = field(default_factory=dict)  # per field: a relative change within the run-to-run spread
    graph: nx.DiGraph = field(init=False)
    literals: set = field(init=False)
    modules: set[str] = field(init=False)  # names bound by imports: not data a statement should name
    data_text: str = field(init=False)  # the data files as text: a string value found there is no leak

    def __post_init__(self):
        self.graph = graph_from_json(self.workflow.graph)
        self.literals = seed_literals(self.seed, self.sources.values())
        self.modules = {name for u in self.program.units() if u.kind in ("Import", "ImportFrom") for name in u.defs}
        self.data_text = workspace_text(self.data)

    def rng(self, purpose: str) -> random.Random:
        digest = hashlib.sha256(f"{self.rng_seed}:{self.seed.seed_id}:{purpose}".encode()).hexdigest()
        return random.Random(int(digest[:16], 16))

    def run(self, sources: dict[str, str], entry: str | None = None, salt: str = ""):
        files = {**self.data, **{p: t.encode("utf-8") for p, t in sources.items()}}
        protocol = RunProtocol.of(self.seed)
        request = recorded_request(protocol, entry or self.seed.script, files, self.sandbox.timeout_s)
        result, hit = run_cached(self.cache, self.sandbox, self.env, request, salt=salt)
        self.recorder.count("variant_runs_cached" if hit else "variant_runs_executed")
        return result

    def answer_of(self, result, answer_from: str = "outputs") -> tuple[list[AnswerField], dict[str, Any]]:
        return answer_from_run(result, answer_from, self.max_fields, self.max_rows, cwd=self.seed.cwd,
                               like=self.schema)

    def changes(self, got: dict[str, Any]) -> dict[str, str] | None:
        """How an answer of the whole program differs from the reference, beyond the program's own noise."""
        return differences(self.schema, self.answer, got, self.noise)

    def base_task(self, task_type: str, key: str, **fields) -> TaskRow:
        return TaskRow(
            task_id=task_id_for(self.seed.seed_id, f"{task_type}:{key}"), task_type=task_type,
            seed_id=self.seed.seed_id, repo_id=self.seed.repo_id, discipline=self.seed.discipline,
            entrypoint=self.seed.script, workspace_files=self.seed.data_files, tree=self.seed.tree,
            distributions=self.seed.distributions, sandbox_spec=self.seed.sandbox_spec,
            cwd=self.seed.cwd, args=list(self.seed.args), output_folders=list(self.seed.output_folders),
            **{**fields, "statement": fields["statement"] + run_note(self.seed.script, self.seed.cwd, self.seed.args)},
        )


# ---------------------------------------------------------------- comparing answers


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbers_differ(a: float, b: float, resolution: float | None, noise: float = 0.0) -> bool:
    return abs(a - b) > max(1e-4 * abs(b), 2 * (resolution or 0.0), 1e-12, noise * abs(b))


def _canonical_rows(table: dict) -> list[list]:
    return sorted(table.get("rows", []), key=lambda row: [str(c) if not _is_number(c) else f"{c:.6g}" for c in row])


def field_difference(field: AnswerField, ref: Any, got: Any, noise: float = 0.0) -> str | None:
    """None when ``got`` matches ``ref`` materially, else a short description of how it differs. ``noise``: the
    relative change the program's own run-to-run spread can make (``spread.noise_bars``), which is no change."""
    if field.type == "number" and _is_number(ref) and _is_number(got):
        if not _numbers_differ(got, ref, field.resolution, noise):
            return None
        if ref != 0 and got != 0 and (got > 0) != (ref > 0):
            return "it has the wrong sign"
        return "it comes out too high" if got > ref else "it comes out too low"
    if field.type == "number_list" and isinstance(ref, list) and isinstance(got, list):
        if len(ref) != len(got):
            return "it has the wrong number of values"
        return None if not any(_numbers_differ(g, r, field.resolution, noise) for g, r in zip(got, ref)) else ""
    if field.type == "table" and isinstance(ref, dict) and isinstance(got, dict):
        if ref.get("columns") != got.get("columns") or len(ref["rows"]) != len(got["rows"]):
            return "its shape is wrong"
        for row_ref, row_got in zip(_canonical_rows(ref), _canonical_rows(got)):
            for r, g in zip(row_ref, row_got):
                if _is_number(r) and _is_number(g):
                    if _numbers_differ(g, r, field.resolution, noise):
                        return ""
                elif r != g:
                    return ""
        return None
    return None if got == ref else ""


def differences(schema: list[AnswerField], ref: dict, got: dict, noise: dict[str, float] | None = None
                ) -> dict[str, str] | None:
    """Changed fields with a symptom each; None when a field is missing (not a clean symptom). ``noise``: per
    field, the relative change that is within the program's own spread."""
    if any(f.name not in got for f in schema):
        return None
    out = {}
    for spec in schema:
        diff = field_difference(spec, ref[spec.name], got[spec.name], (noise or {}).get(spec.name, 0.0))
        if diff is not None:
            out[spec.name] = diff
    return out


def slightly_moved(schema: list[AnswerField], ref: dict, got: dict, changed: dict) -> list[str]:
    """Fields not in ``changed`` whose value still differs from the reference at all (a residual's minimum moved
    in its ninth digit): a statement must not call them correct."""
    return [f.name for f in schema if f.name not in changed and f.name in got and got[f.name] != ref[f.name]]


def fingerprint(schema: list[AnswerField], answer: dict) -> str:
    def rounded(value):
        if _is_number(value):
            return f"{value:.6g}"
        if isinstance(value, list):
            return [rounded(v) for v in value]
        if isinstance(value, dict):
            return {"columns": value.get("columns"), "rows": [[rounded(c) for c in row] for row in _canonical_rows(value)]}
        return value
    return json.dumps({f.name: rounded(answer.get(f.name)) for f in schema}, sort_keys=True)


# ---------------------------------------------------------------- shared helpers


def feeds_output(graph: nx.DiGraph, node: str) -> bool:
    if not graph.has_node(node):
        return False
    return any(graph.nodes[n].get("kind") == "output" for n in nx.descendants(graph, node))


def innermost_unit(program: Program, path: str, line: int) -> Unit | None:
    best = None
    for (file, scope_line), units in program.scopes.items():
        if file != path:
            continue
        for unit in units:
            if unit.line <= line <= unit.end_line and unit.kind not in ("FunctionDef", "AsyncFunctionDef"):
                if best is None or scope_line != MODULE_SCOPE:
                    best = unit
    return best


def derived_numbers(workflow: WorkflowRow, lines: set[tuple[str, int]], literals: set) -> list[float]:
    """Observed numbers bound on the given lines that the program computed (not constants it states)."""
    found = set()
    for (path, line, _), record in observations(workflow.trace).items():
        value = record["summary"].get("value")
        if ((path, line) in lines and isinstance(value, float) and math.isfinite(value) and value != 0
                and value not in literals):
            found.add(value)
    return sorted(found)


def _round_robin(groups: dict[str, list]) -> list:
    ordered, queues = [], [list(items) for items in groups.values()]
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


# ---------------------------------------------------------------- Subflow


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
    negatives = [{"name": "incomplete", "entrypoint": ctx.seed.script,
                  "files": {**program, reporter: _without_target(program[reporter], name)}}]
    defective = _defective_slice(ctx, program, schema, answer, reporter)
    if defective:
        negatives.append(defective)
    local = list(dict.fromkeys([ctx.sources[ctx.seed.script], ctx.sources[reporter]]))
    steps = [(defined, tuple(r for r in read if r not in ctx.modules), ops) for defined, read, ops in sliced.steps]
    statement, schema, answer = without_stated_fields(
        lambda s, a: subflow_statement(ctx.seed.repo_id, ctx.seed.discipline, ctx.seed.script, ctx.data_lines, name,
                                       target["value"], steps, local, s, a),
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
        if len(values) != 1 or not _is_number(values[0]):
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
            if isinstance(value, list) and _is_number(expected) and index < len(value) and _is_number(value[index]) \
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
    candidates = [m for m in find_mutations(text, path, _allowed(ctx)) if m.line not in helper_lines]
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


def parameter_lines(ctx, path: str, text: str | None = None) -> set[int]:
    """Lines of ``path`` (or of ``text``, a version of it) that read the seed's generated parameters file."""
    parameters = getattr(ctx.seed, "parameters_file", None)
    if not parameters or path != ctx.seed.script:
        return set()
    return generated_lines(ctx.sources[path] if text is None else text, parameters)


def _helper_lines(text: str) -> set[int]:
    for node in parse_python(text, "<slice>").body:
        if isinstance(node, ast.FunctionDef) and node.name == "report_result":
            return set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return set()


def _allowed(ctx: SeedContext):
    return None if ctx.cfg.correction.operators == "all" else ctx.cfg.correction.operators


# ---------------------------------------------------------------- Completion


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
    }


def _block_hole(ctx, unit: Unit, units: list[Unit], runs, values) -> dict | None:
    if unit.kind not in ("Assign", "AugAssign", "AnnAssign", "For") or runs.get((unit.path, unit.line), 0) < 1:
        return None
    operations = [c for c in unit.calls if c != "arithmetic"]
    if len(unit.calls) < 2 or "print" in unit.calls or set(c.split(".")[-1] for c in unit.calls) & WRITE_CALLS:
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
    }


def build_completions(ctx: SeedContext) -> list[TaskRow]:
    if ctx.cfg.completion.max_per_seed == 0:
        return []
    holes = completion_holes(ctx)
    functions = [h for h in holes if h["kind"] == "function"]
    blocks = [h for h in holes if h["kind"] == "block"]
    ctx.rng("completion-functions").shuffle(functions)
    ctx.rng("completion-blocks").shuffle(blocks)
    tasks = []
    for hole in _round_robin({"function": functions, "block": blocks}):
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
        result = ctx.run(zeroed)
        if result.ok and ctx.changes(ctx.answer_of(result)[1]) == {}:
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


# ---------------------------------------------------------------- Correction


def correction_candidates(ctx: SeedContext) -> list[Mutation]:
    """Mutations on executed lines that feed an output, scientific operators first, interleaved by operator."""
    lines = ctx.workflow.trace.get("lines", {})
    groups: dict[str, list[Mutation]] = {name: [] for name in OPERATORS}
    for path in ctx.seed.program_files:
        executed = set(lines.get(path, [])) - parameter_lines(ctx, path)
        for mutation in find_mutations(ctx.sources[path], path, _allowed(ctx), executed):
            unit = innermost_unit(ctx.program, path, mutation.line)
            if unit is None or not feeds_output(ctx.graph, unit.node_id):
                continue
            groups[mutation.operator].append(mutation)
    for name, group in groups.items():
        ctx.rng(f"correction:{name}").shuffle(group)
    scientific = {n: g for n, g in groups.items() if OPERATORS[n].scientific}
    generic = {n: g for n, g in groups.items() if not OPERATORS[n].scientific}
    return _round_robin(scientific) + _round_robin(generic)


def mutation_key(mutation: Mutation) -> str:
    """Unique per edit: two edits by one operator on one line (x10 and /10) are two tasks."""
    edit = f"{mutation.col}:{mutation.end_line}:{mutation.end_col}:{mutation.replacement}"
    return f"{mutation.path}:{mutation.line}:{mutation.operator}:{hashlib.sha256(edit.encode()).hexdigest()[:8]}"


def build_corrections(ctx: SeedContext) -> list[TaskRow]:
    if ctx.cfg.correction.max_per_seed == 0:
        return []
    candidates = correction_candidates(ctx)
    budget = ctx.cfg.correction.max_candidates_per_seed
    if len(candidates) > budget:
        ctx.recorder.count("correction_candidates_over_budget", len(candidates) - budget)
    seen = {fingerprint(ctx.schema, ctx.answer)}
    tasks = []
    for mutation in candidates[:budget]:
        if len(tasks) >= ctx.cfg.correction.max_per_seed:
            break
        key = mutation_key(mutation)
        item = task_id_for(ctx.seed.seed_id, f"correction:{key}")
        source = ctx.sources[mutation.path]
        mutant = {**ctx.sources, mutation.path: apply_mutation(source, mutation)}
        result = ctx.run(mutant)
        if not result.ok:
            ctx.recorder.reject(item, "mutant_fails", f"the mutant ended with {result.reason}")
            continue
        if result.duration_s > ctx.sandbox.timeout_s / 2:
            # A mutant this close to the timeout could end either way on another machine: not reproducible.
            ctx.recorder.reject(item, "mutant_slow", f"the mutant took {result.duration_s:.1f}s, over half the timeout")
            continue
        _, got = ctx.answer_of(result)
        changed = ctx.changes(got)
        if changed is None:
            ctx.recorder.reject(item, "mutant_drops_field", "the mutant no longer reports every field")
            continue
        if not changed:
            ctx.recorder.reject(item, "mutant_equivalent", "the mutant's answer matches the reference")
            continue
        print_key = fingerprint(ctx.schema, got)
        if print_key in seen:
            ctx.recorder.reject(item, "mutant_duplicate", "another kept mutant gives the same answer")
            continue
        seen.add(print_key)
        original, mutated = mutated_line(source, mutation)
        # A field the defect moved, but by less than the bar for "wrong", is neither wrong nor surely correct.
        unclaimed = frozenset(slightly_moved(ctx.schema, ctx.answer, got, changed))
        statement, schema, answer = without_stated_fields(
            lambda s, a: correction_statement(ctx.seed.repo_id, ctx.seed.discipline, ctx.seed.script, ctx.data_lines,
                                              {k: v for k, v in changed.items() if k in a}, ctx.seed.program_files,
                                              s, a, unclaimed),
            ctx.schema, ctx.answer, ctx.data_text, ctx.recorder)
        changed = {k: v for k, v in changed.items() if k in answer}
        if statement is None or not changed:
            ctx.recorder.reject(item, "answer_in_statement", "the statement gives every field the defect changes")
            continue
        tasks.append(ctx.base_task(
            "correction", key,
            statement=statement, answer_schema=schema, reference_answer=answer,
            reference_program=dict(ctx.sources), workspace_program=mutant,
            negative_programs=[{"name": "defective", "entrypoint": ctx.seed.script, "files": mutant}],
            construction={"operator": mutation.operator, "description": OPERATORS[mutation.operator].description,
                          "path": mutation.path, "line": mutation.line, "original": original, "mutated": mutated,
                          "changed_fields": sorted(changed), "mutant_answer_fingerprint": print_key,
                          "unclaimed_fields": sorted(unclaimed & set(answer))},
        ))
    return sorted(tasks, key=lambda t: t.task_id)


# ---------------------------------------------------------------- per seed


def seed_context(seed: SeedRow, workflow: WorkflowRow, schema, answer, sandbox, cache, recorder, cfg: TasksConfig,
                 rng_seed: int, max_fields: int, max_rows: int, noise: dict[str, float] | None = None
                 ) -> SeedContext | None:
    tree = Path(seed.tree)
    sources = {path: (tree / path).read_text(encoding="utf-8") for path in seed.program_files}
    env = sandbox.prepare(seed.distributions)
    if not env.ready:
        recorder.reject(seed.seed_id, "missing_dependency", f"the sandbox lacks {', '.join(env.missing)}")
        return None
    data = {f.path: (tree / f.path).read_bytes() for f in seed.data_files}
    data_lines = [describe_data_file(f, data[f.path], parameters=f.path == seed.parameters_file)
                  for f in seed.data_files]
    return SeedContext(
        seed=seed, workflow=workflow, program=analyse_program(sources, seed.script), sources=sources,
        schema=schema, answer=answer, data_lines=data_lines,
        data=data, env=env, sandbox=sandbox, cache=cache, recorder=recorder, cfg=cfg, rng_seed=rng_seed,
        max_fields=max_fields, max_rows=max_rows, noise=dict(noise or {}),
    )


def attach_controls(reproduction: TaskRow, derived: list[TaskRow]) -> TaskRow:
    """Give the Reproduction task the seed's first defective and incomplete programs as negative controls: a
    defect that moves one of the Reproduction's own fields (it may grade fewer fields than the Correction)."""
    controls = []
    graded = {f.name for f in reproduction.answer_schema}
    for kind, name in (("correction", "defective"), ("completion", "incomplete")):
        for task in derived:
            if task.task_type == kind and (kind != "correction" or graded & set(task.construction.get(
                    "changed_fields", graded))):
                controls.append({"name": name, "entrypoint": task.entrypoint, "files": task.workspace_program})
                break
    return reproduction.model_copy(update={"negative_programs": controls})


__all__ = [
    "SeedContext", "attach_controls", "build_completions", "build_corrections", "build_subflows", "differences",
    "field_difference", "fingerprint", "seed_context",
]
