"""Synthesise tasks from seed programs.

Reproduction is the whole workflow, end to end: the reference answer is the structured
result of the seed run; the reference program is the seed script plus the repository
modules it imported; the agent's workspace holds only the data files the program was
observed to read. Subflow, Completion and Correction are derived from the same seed and
its workflow graph (``derived.py``); they share the Reproduction answer where they ask
for the whole workflow's results.
"""
from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from importlib import resources
from pathlib import Path

from ..io import SeedRow, StageRecorder, TaskRow
from ..sandbox import run_cached
from .answers import answer_from_run, extract_answer
from .printed import LINE_SOURCE
from .dependence import VARIANTS, moved_fields, perturb_files
from .spread import answer_spreads, noise_bars, reference_runs
from .parameters import seed_literals
from .protocol import RunProtocol, recorded_request, run_note
from .statement import describe_data_file, literal_values, reproduction_statement, stated_fields


@functools.cache
def eval_script() -> str:
    return resources.files("trailforge.envs").joinpath("templates/eval.py").read_text(encoding="utf-8")


def task_id_for(seed_id: str, task_type: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", f"{seed_id}:{task_type}")


def seed_line_names(seed: SeedRow) -> dict[int, str]:
    """The seed run's names for its bare printed numbers, by stdout line (``SeedRow.stdout_names``)."""
    return {int(index): name for index, name in seed.stdout_names.items() if index.isdigit()}


def seed_answer(seed: SeedRow, max_fields: int, max_table_rows: int, recorder: StageRecorder):
    """The structured answer of the seed run, without fields that only echo the program's constants."""
    files = {w.path: w.text for w in seed.files_written}
    refused: Counter = Counter()
    schema, answer, dropped = extract_answer(seed.stdout, files, max_fields, max_table_rows, skipped=refused,
                                             plots=seed.plots, line_names=seed_line_names(seed))
    if dropped:
        recorder.count("answer_fields_over_cap", dropped)
    for reason, n in sorted(refused.items()):  # results whose label may not reach a statement
        recorder.count(f"answer_fields_{reason}", n)
    tree = Path(seed.tree)
    program = {path: (tree / path).read_text(encoding="utf-8") for path in seed.program_files}
    return drop_echoed_settings(schema, answer, program, recorder, seed_literals(seed, program.values()))


def build_reproduction(seed: SeedRow, max_fields: int, max_table_rows: int, recorder: StageRecorder,
                       answer: tuple | None = None) -> TaskRow | None:
    """The Reproduction task of a seed; ``answer`` is ``(schema, values)`` when the caller already
    narrowed the seed's answer (to its data-dependent fields)."""
    task_id = task_id_for(seed.seed_id, "reproduction")
    tree = Path(seed.tree)
    program = {path: (tree / path).read_text(encoding="utf-8") for path in seed.program_files}
    schema, answer = answer if answer is not None else seed_answer(seed, max_fields, max_table_rows, recorder)
    if not schema:
        recorder.reject(task_id, "no_structured_answer",
                        "the program printed no 'label: value' result, wrote no readable JSON/CSV result "
                        "and drew no figure with data")
        return None
    data = {f.path: (tree / f.path).read_bytes() for f in seed.data_files}
    data_lines = [describe_data_file(f, data[f.path], parameters=f.path == seed.parameters_file)
                  for f in seed.data_files]
    sources = [program[p] for p in seed.program_files]
    statement, schema, answer = without_stated_fields(
        lambda s, a: reproduction_statement(seed.repo_id, seed.discipline, seed.script, data_lines, sources, s, a),
        schema, answer, workspace_text(data), recorder)
    if statement is None:
        recorder.reject(task_id, "answer_in_statement", "every answer field is given by the statement itself "
                        "(a count equal to a data file's stated line count)")
        return None
    return TaskRow(
        task_id=task_id,
        task_type="reproduction",
        seed_id=seed.seed_id,
        repo_id=seed.repo_id,
        discipline=seed.discipline,
        statement=statement + run_note(seed.script, seed.cwd, seed.args),
        answer_schema=schema,
        reference_answer=answer,
        entrypoint=seed.script,
        cwd=seed.cwd,
        output_folders=list(seed.output_folders),
        args=list(seed.args),
        reference_program=program,
        workspace_files=seed.data_files,
        tree=seed.tree,
        distributions=seed.distributions,
        sandbox_spec=seed.sandbox_spec,
    )


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


def drop_echoed_settings(schema, answer, program: dict[str, str], recorder: StageRecorder,
                         literals: set | None = None):
    """Remove fields that only echo a constant written in the program (a seed, a resample count) or, given
    ``literals``, any of those (a parameters file's numbers too).

    Such a value is an input of the analysis, not a result: asking for it tests nothing, and
    the statement's parameter list would give it away.
    """
    if literals is None:
        literals = set()
        for source in program.values():
            literals |= literal_values(source)
    kept = []
    for field in schema:
        value = answer[field.name]
        trivial_int = field.type == "integer" and -9 <= value <= 9
        if field.type in ("integer", "number", "string") and not trivial_int and value in literals:
            recorder.count("answer_fields_echoing_program_constants")
            continue
        kept.append(field)
    return kept, {f.name: answer[f.name] for f in kept}


def perturbed_data(seed: SeedRow, rng_seed: int, jitter: float, variant: dict) -> tuple[dict, list[str]]:
    """The seed's data files, perturbed the same way for every task of the seed (a fixed seed per seed program)."""
    tree = Path(seed.tree)
    data = {f.path: (tree / f.path).read_bytes() for f in seed.data_files}
    digest = hashlib.sha256(f"{rng_seed}:{seed.seed_id}:perturb:{variant['name']}".encode()).hexdigest()
    return perturb_files(data, int(digest[:16], 16), jitter, integers=variant["integers"], drop=variant["drop"],
                         rotate=variant.get("rotate", False))


def still_fields(seed: SeedRow, program: dict[str, str], schema, answer, rng_seed: int, jitter: float,
                 limits: tuple[int, int], sandbox, cache, env, recorder, answer_from: str = "outputs",
                 noise: dict[str, float] | None = None):
    """``(fields that never moved, None)`` after running ``program`` on each perturbation of the data in
    turn until every field has moved, or ``(None, (reason, message))`` when no perturbed run succeeded.
    ``noise``: per field, a relative move within the program's own run-to-run spread, which is not a move."""
    from .derived import field_difference

    still, ran, problem = list(schema), False, "none of the data files can be perturbed (binary formats)"
    for variant in VARIANTS:
        data, changed = perturbed_data(seed, rng_seed, jitter, variant)
        if not changed:
            continue
        request = recorded_request(RunProtocol.of(seed), seed.script,
                                   {**data, **{p: t.encode("utf-8") for p, t in program.items()}}, sandbox.timeout_s)
        result, hit = run_cached(cache, sandbox, env, request, salt=f"perturbed-data-{variant['name']}")
        recorder.count("perturbed_runs_cached" if hit else "perturbed_runs_executed")
        if not result.ok:
            tail = (result.stderr.strip().splitlines() or [""])[-1]
            problem = f"the program fails on perturbed data ({result.reason}: {tail[:200]})"
            continue
        ran = True
        got = answer_from_run(result, answer_from, *limits, cwd=seed.cwd, like=schema)[1]
        _, still = moved_fields(still, answer, got,
                                lambda f, ref, value: field_difference(f, ref, value, (noise or {}).get(f.name, 0.0)))
        if not still:
            break
    if not ran:
        return None, ("perturbation_fails" if "fails" in problem else "data_not_perturbable", problem)
    return still, None


def reproducible_answer(seed: SeedRow, schema, answer, cfg, sandbox, cache, recorder):
    """``(schema, answer, noise)``: the seed's answer without the fields that do not reproduce, and each varying
    field's noise bar (``spread.noise_bars``), or None (rejected).

    The seed program runs again as verify will run every task's reference (the same requests and salts, so
    verify finds these runs in the cache): a field that changes its text or shape between runs, or varies
    by more than ``verifier.max_rel_spread``, would make verify reject every task that grades it, so it is
    dropped here and the rest of the answer stands."""
    task_id = task_id_for(seed.seed_id, "reproduction")
    env = sandbox.prepare(seed.distributions)
    if not env.ready:
        recorder.reject(seed.seed_id, "missing_dependency", f"the sandbox lacks {', '.join(env.missing)}")
        return None
    tree = Path(seed.tree)
    files = {f.path: (tree / f.path).read_bytes() for f in seed.data_files}
    # As the task rows will hold them (read as text, so a CRLF file becomes LF): verify's request, byte for byte.
    files.update({path: (tree / path).read_text(encoding="utf-8").encode("utf-8") for path in seed.program_files})
    request = recorded_request(RunProtocol.of(seed), seed.script, files, sandbox.timeout_s)
    limits = (cfg.budget.max_answer_fields, cfg.budget.max_table_rows)

    class Failed(Exception):
        pass

    def run(salt: str) -> dict:
        result, hit = run_cached(cache, sandbox, env, request, salt=salt)
        recorder.count("reference_runs_cached" if hit else "reference_runs_executed")
        if not result.ok:
            tail = (result.stderr.strip().splitlines() or [""])[-1]
            raise Failed(f"a repeat of the seed run ended with {result.reason}: {tail[:300]}")
        return answer_from_run(result, "outputs", *limits, cwd=seed.cwd, like=schema)[1]

    verifier = cfg.verifier
    try:
        runs = reference_runs(run, answer, verifier.repeats, verifier.stochastic_repeats)
    except Failed as exc:
        recorder.reject(task_id, "not_executable", str(exc))
        return None
    if len(runs) > verifier.repeats:
        recorder.count("stochastic_seeds")
    spreads, failing = answer_spreads(schema, answer, runs, verifier.max_rel_spread)
    if failing:
        recorder.count("answer_fields_not_reproducible", len(failing))
    kept = [f for f in schema if f.name in spreads]
    if schema and not kept:
        name, (why, _) = next(iter(failing.items()))
        recorder.reject(task_id, "not_reproducible", f"no answer field reproduces between runs ({name} {why})")
        return None
    return kept, {f.name: answer[f.name] for f in kept}, noise_bars(spreads, verifier.spread_factor)


def data_dependent_answer(seed: SeedRow, schema, answer, cfg, sandbox, cache, recorder,
                          noise: dict[str, float] | None = None):
    """The seed's answer narrowed to the fields that move when the data move (beyond their ``noise``), or None
    (rejected)."""
    task_id = task_id_for(seed.seed_id, "reproduction")
    env = sandbox.prepare(seed.distributions)
    if not env.ready:
        recorder.reject(seed.seed_id, "missing_dependency", f"the sandbox lacks {', '.join(env.missing)}")
        return None
    tree = Path(seed.tree)
    program = {path: (tree / path).read_text(encoding="utf-8") for path in seed.program_files}
    still, why = still_fields(seed, program, schema, answer, cfg.seed, cfg.tasks.data_dependence.jitter,
                              (cfg.budget.max_answer_fields, cfg.budget.max_table_rows), sandbox, cache, env, recorder,
                              noise=noise)
    if still is None:
        recorder.reject(task_id, why[0], f"the data dependence of the answer cannot be checked: {why[1]}")
        return None
    moved = [f for f in schema if f not in still]
    recorder.count("answer_fields_data_dependent", len(moved))
    recorder.count("answer_fields_not_data_dependent", len(still))
    if not moved:
        names = ", ".join(f.name for f in still[:5])
        recorder.reject(task_id, "not_data_dependent",
                        f"no answer field moves when the data are perturbed (unchanged: {names})")
        return None
    return moved, {f.name: answer[f.name] for f in moved}


def build_seed_tasks(seed: SeedRow, workflow, cfg, sandbox, cache, recorder: StageRecorder,
                     seeds_in_repository: int | None = None) -> list[TaskRow]:
    """All task types the recipe asks for, from one seed program (``cfg`` is the whole config). With
    ``seeds_in_repository``, the per-seed caps are the ones a repository of that many seeds gets
    (``TasksConfig.for_repository``)."""
    from .derived import attach_controls, build_completions, build_corrections, build_subflows, seed_context

    budget, types = cfg.budget, cfg.tasks.types
    schema, answer = seed_answer(seed, budget.max_answer_fields, budget.max_table_rows, recorder)
    noise: dict[str, float] = {}
    if schema:
        checked = reproducible_answer(seed, schema, answer, cfg, sandbox, cache, recorder)
        if checked is None:
            return []
        schema, answer, noise = checked
    if schema and cfg.tasks.data_dependence.enabled:
        narrowed = data_dependent_answer(seed, schema, answer, cfg, sandbox, cache, recorder, noise)
        if narrowed is None:
            return []
        schema, answer = narrowed
    reproduction = build_reproduction(seed, budget.max_answer_fields, budget.max_table_rows, recorder,
                                      answer=(schema, answer))
    if reproduction is None:
        return []
    derived: list[TaskRow] = []
    if workflow is None:
        if set(types) - {"reproduction"}:
            recorder.reject(seed.seed_id, "no_workflow", "the workflows stage has no graph for this seed; "
                            "only Reproduction is possible")
    elif set(types) - {"reproduction"}:
        tasks_cfg = cfg.tasks.for_repository(seeds_in_repository) if seeds_in_repository else cfg.tasks
        ctx = seed_context(seed, workflow, reproduction.answer_schema, reproduction.reference_answer, sandbox, cache,
                           recorder, tasks_cfg, cfg.seed, budget.max_answer_fields, budget.max_table_rows, noise)
        if ctx is not None:
            builders = {"subflow": build_subflows, "completion": build_completions, "correction": build_corrections}
            for kind in ("subflow", "completion", "correction"):
                if kind == "subflow" and kind in types and seed.parameters_file:
                    # A Subflow names the values a step combines, not how: for a model's own arithmetic (a
                    # simulation's update rule) that is a guess, as for its Reproduction below.
                    recorder.reject(seed.seed_id, "subflow_needs_the_model",
                                    f"the only data of {seed.script} are its own constants: its intermediate "
                                    "results follow from the model's equations, which a Subflow statement does not give")
                    continue
                if kind in types:
                    try:
                        derived += builders[kind](ctx)
                    except Exception as exc:  # one odd program must cost its own tasks, not the stage
                        recorder.reject(seed.seed_id, f"{kind}_error",
                                        f"deriving {kind} tasks failed: {type(exc).__name__}: {exc}"[:500])
    if "reproduction" in types and seed.parameters_file:
        # "Reproduce it from the data alone" with the program's own constants as the data would have to give
        # the model itself (the equations, the integration scheme), which only the code states; the statement
        # lists operations, so the task is not answerable. Its derived tasks carry the code and stay.
        recorder.reject(reproduction.task_id, "reproduction_needs_the_model",
                        f"the only data of {seed.script} are its own constants ({seed.parameters_file}): reproducing "
                        "it needs its model, which only the code states")
        return derived
    if "reproduction" in types:
        reproduction = _without_line_named_fields(seed, reproduction, budget, recorder)
    out = [attach_controls(reproduction, derived)] if "reproduction" in types and reproduction else []
    return out + derived


def _without_line_named_fields(seed: SeedRow, reproduction: TaskRow, budget, recorder: StageRecorder) -> TaskRow | None:
    """The Reproduction without the fields named by the print call that printed them (``calc_gc(seq)``):
    a name taken from code is clear to whoever has the code (Completion, Correction), and a guess from the
    data alone (fraction or percent?). None, a counted reject, when no other field is left."""
    line_named = [f for f in reproduction.answer_schema if f.source.startswith(LINE_SOURCE)]
    if not line_named:
        return reproduction
    kept = [f for f in reproduction.answer_schema if not f.source.startswith(LINE_SOURCE)]
    recorder.count("answer_fields_named_by_code", len(line_named))
    if not kept:
        recorder.reject(reproduction.task_id, "reproduction_needs_the_code",
                        f"every result of {seed.script} is a bare printed number named only by the code that "
                        f"prints it ({', '.join(f.label for f in line_named[:3])}); its derived tasks carry the code")
        return None
    answer = {f.name: reproduction.reference_answer[f.name] for f in kept}
    return build_reproduction(seed, budget.max_answer_fields, budget.max_table_rows, recorder, answer=(kept, answer))
