"""The answer every task of a seed starts from: the seed run's structured results, without echoed constants,
without fields that do not reproduce between runs, and narrowed to the fields that move with the data."""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path


from ...io import SeedRow, StageRecorder
from ...sandbox import PICKLE_PERTURBER, PICKLE_PERTURBER_SCRIPT, RunRequest, run_cached
from ..answers import answer_from_run, extract_answer
from ..data_files import column_statistics
from ..dependence import VARIANTS, is_pickle, moved_fields, perturb_files
from ..parameters import seed_literals
from ..protocol import RunProtocol, recorded_request
from ..spread import answer_spreads, noise_bars, reference_runs
from ..analysis import literal_values
from .compare import field_difference
from .context import task_id_for


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


def perturbed_pickles(seed: SeedRow, rng_seed: int, jitter: float, sandbox, cache, env,
                      recorder: StageRecorder) -> tuple[dict, list[str]]:
    """The seed's data files with the floats inside its binary pickles scaled, and the pickles that changed.

    The pickles are loaded by ``sandbox/pickle_perturber.py`` inside the sandbox, in the program's environment
    (unpickling runs code the file names, and a pickled DataFrame needs the pandas that wrote it); the host
    only hands over bytes and takes the rewritten bytes back."""
    tree = Path(seed.tree)
    data = {f.path: (tree / f.path).read_bytes() for f in seed.data_files}
    pickles = sorted(path for path, content in data.items() if is_pickle(content))
    if not pickles:
        return data, []
    digest = hashlib.sha256(f"{rng_seed}:{seed.seed_id}:perturb:pickles".encode()).hexdigest()
    request = RunRequest(("python", PICKLE_PERTURBER_SCRIPT, str(int(digest[:15], 16)), repr(jitter), *pickles),
                         {**{p: data[p] for p in pickles}, PICKLE_PERTURBER_SCRIPT: PICKLE_PERTURBER.read_bytes()},
                         timeout_s=sandbox.timeout_s)
    result, hit = run_cached(cache, sandbox, env, request, salt="perturb-pickles")
    recorder.count("pickle_perturbations_cached" if hit else "pickle_perturbations_run")
    changed = [p for p in pickles if result.ok and result.files.get(p) not in (None, data[p])]
    return {**data, **{p: result.files[p] for p in changed}}, changed


def still_fields(seed: SeedRow, program: dict[str, str], schema, answer, rng_seed: int, jitter: float,
                 limits: tuple[int, int], sandbox, cache, env, recorder, answer_from: str = "outputs",
                 noise: dict[str, float] | None = None):
    """``(fields that never moved, None)`` after running ``program`` on each perturbation of the data in
    turn until every field has moved, or ``(None, (reason, message))`` when no perturbed run succeeded.
    ``noise``: per field, a relative move within the program's own run-to-run spread, which is not a move."""

    still, ran, problem = list(schema), False, "none of the data files can be perturbed (binary formats)"
    for variant in VARIANTS:
        if variant.get("pickles"):
            data, changed = perturbed_pickles(seed, rng_seed, jitter, sandbox, cache, env, recorder)
        else:
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


# A printed value matches a statistic within half a unit of its last printed place only when it was printed
# with this many units of that place or more (four significant digits): ``0.3`` is close to many numbers.
MIN_PRINTED_UNITS = 1000


def raw_statistic_fields(schema, answer: dict, data: dict[str, bytes]) -> list[str]:
    """Names of the fields whose value is a plain statistic of one column of an input table (its minimum,
    maximum, sum, mean or median, or the table's row count), or a whole column: reading a file gives them,
    whatever the analysis does. A value printed with few digits matches nothing (``MIN_PRINTED_UNITS``)."""
    statistics, columns = [], []
    for path, content in sorted(data.items()):
        found, values = column_statistics(path, content)
        statistics += found
        columns += values
    if not statistics:
        return []
    names = []
    for field in schema:
        value = answer.get(field.name)
        if field.type in ("number", "integer") and isinstance(value, (int, float)) and not isinstance(value, bool):
            slack = field.resolution or 0.0
            if slack and abs(value) < MIN_PRINTED_UNITS * slack or float(value).is_integer() and abs(value) < 100:
                continue  # few digits (or a small whole number: a count) match some statistic by chance
            if any(abs(value - s) <= max(slack, 1e-9 * abs(s)) for s in statistics):
                names.append(field.name)
        elif field.type == "number_list" and isinstance(value, list) and len(value) >= 2:
            if any(len(c) == len(value) and all(isinstance(v, (int, float)) and abs(v - x) <= 1e-9 * max(abs(x), 1)
                                                for v, x in zip(value, c)) for c in columns):
                names.append(field.name)
    return names
