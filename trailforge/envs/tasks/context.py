"""What every task builder of one seed shares: the seed context (program, graph, runs), task ids, the eval
template, and the helpers that place a task in the program's workflow."""
from __future__ import annotations

import functools
import hashlib
import math
import random
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import networkx as nx

from ...cache import ContentCache
from ...config.schema import TasksConfig
from ...io import AnswerField, SeedRow, StageRecorder, TaskRow, WorkflowRow
from ...sandbox import Sandbox, run_cached
from ..answers import answer_from_run
from ..parameters import generated_lines, seed_literals
from ..protocol import RunProtocol, recorded_request, run_note
from ..analysis import literal_values
from ..data_files import describe_data_file
from .statement import stated_fields
from ..workflow import MODULE_SCOPE, Program, Unit, analyse_program, graph_from_json, observations
from .compare import differences


@functools.cache
def eval_script() -> str:
    return resources.files("trailforge.envs").joinpath("templates/eval.py").read_text(encoding="utf-8")


def task_id_for(seed_id: str, task_type: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", f"{seed_id}:{task_type}")


def workspace_text(data: dict[str, bytes]) -> str:
    """The data files as text, as ``verify`` reads them when it looks for leaked values."""
    return "\n".join(d.decode("utf-8", errors="replace") for d in data.values())


def without_stated_fields(build, schema, answer, text: str, recorder: StageRecorder):
    """``(statement, schema, answer)``: ``build(schema, answer)``'s statement, without the fields whose value
    its own prose gives (the statement is built again without them); statement None when no field is left.

    A statement describes its data ("4615 lines") and, for a Completion, the size of what the hole must
    define: a count of points equal to such a number is read off the statement, not computed, and would make
    ``verify`` reject the whole task as an answer leak. Only that field goes; the rest of the task stands."""
    statement = build(schema, answer)
    given = set(stated_fields(statement, schema, answer, text))
    if not given:
        return statement, schema, answer
    recorder.count("answer_fields_given_by_statement", len(given))
    schema = [f for f in schema if f.name not in given]
    answer = {f.name: answer[f.name] for f in schema}
    if not schema:
        return None, schema, answer
    statement = build(schema, answer)
    if stated_fields(statement, schema, answer, text):  # the prose changed with the fields: give up on it
        return None, schema, answer
    return statement, schema, answer


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
            **{**fields, "statement": fields["statement"] + run_note(self.seed.script, self.seed.cwd, self.seed.args,
                                                                  self.seed.output_folders, self.data)},
        )


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


def round_robin(groups: dict[str, list]) -> list:
    ordered, queues = [], [list(items) for items in groups.values()]
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def parameter_lines(ctx, path: str, text: str | None = None) -> set[int]:
    """Lines of ``path`` (or of ``text``, a version of it) that read the seed's generated parameters file."""
    parameters = getattr(ctx.seed, "parameters_file", None)
    if not parameters or path != ctx.seed.script:
        return set()
    return generated_lines(ctx.sources[path] if text is None else text, parameters)


def allowed_operators(ctx: SeedContext):
    return None if ctx.cfg.correction.operators == "all" else ctx.cfg.correction.operators


def seed_data(seed: SeedRow, sources: dict[str, str]) -> tuple[dict[str, bytes], list[str]]:
    """``(data, data_lines)``: the seed's data files by path, and the statement's description of each.
    The columns and keys the program's own literals name are listed first in a description."""
    tree = Path(seed.tree)
    data = {f.path: (tree / f.path).read_bytes() for f in seed.data_files}
    used = set().union(*map(literal_values, sources.values()))
    data_lines = [describe_data_file(f, data[f.path], parameters=f.path == seed.parameters_file, used=used)
                  for f in seed.data_files]
    return data, data_lines


def seed_context(seed: SeedRow, workflow: WorkflowRow, schema, answer, sandbox, cache, recorder, cfg: TasksConfig,
                 rng_seed: int, max_fields: int, max_rows: int, noise: dict[str, float] | None = None
                 ) -> SeedContext | None:
    tree = Path(seed.tree)
    sources = {path: (tree / path).read_text(encoding="utf-8") for path in seed.program_files}
    env = sandbox.prepare(seed.distributions)
    if not env.ready:
        recorder.reject(seed.seed_id, "missing_dependency", f"the sandbox lacks {', '.join(env.missing)}")
        return None
    data, data_lines = seed_data(seed, sources)
    return SeedContext(
        seed=seed, workflow=workflow, program=analyse_program(sources, seed.script), sources=sources,
        schema=schema, answer=answer, data_lines=data_lines,
        data=data, env=env, sandbox=sandbox, cache=cache, recorder=recorder, cfg=cfg, rng_seed=rng_seed,
        max_fields=max_fields, max_rows=max_rows, noise=dict(noise or {}),
    )
