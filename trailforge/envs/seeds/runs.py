"""Running a repository's candidates: each under its start protocols and dependency rungs until one run is clean,
then the seed rows that run gives (itself, its cut prefix, or its parameterised rewrite)."""
from __future__ import annotations

import os
import platform
import time
from pathlib import Path

from ...cache import ContentCache
from ...io import SeedRow, SnapshotRow, StageRecorder
from ...sandbox import Sandbox, run_cached
from ..protocol import RunProtocol, recorded_request
from .candidates import SeedCandidate
from .cuts import MAX_CUTS, cut_seed
from .ladder import ERA_ERRORS, dependency_ladder, environment_of, ladder_figure
from .parameter_seeds import parameter_seed
from .seed_rows import USAGE_TEXT, seed_from_run, write_seed_tree


def run_repository(candidates: list[SeedCandidate], sandbox: Sandbox, cache: ContentCache, timeout_s: float,
                   max_seeds: int, seconds_budget: float, recorder: StageRecorder,
                   trees: Path | None = None, starts_per_script: int = 1) -> list[SeedRow]:
    """Try one repository's candidates in order of promise until ``max_seeds`` are accepted or the
    repository's run time (the recorded durations, so a cached re-run decides the same) is spent.
    ``trees``: where seeds with a generated parameters file get their tree; None: no such seeds.
    ``starts_per_script``: seeds one script may give, one per start that names other data files."""
    rows, spent = [], 0.0
    for candidate in candidates:
        if len(rows) >= max_seeds:
            recorder.reject(candidate.seed_id, "over_budget", f"budget.max_seeds_per_repo={max_seeds} seeds accepted")
            continue
        if spent >= seconds_budget:
            recorder.reject(candidate.seed_id, "repo_time_budget",
                            f"budget.seed_seconds_per_repo={seconds_budget:g} spent ({spent:.1f} s of runs)")
            continue
        found, seconds = run_candidate(candidate, sandbox, cache, timeout_s, recorder, trees, starts_per_script)
        spent += seconds
        rows.extend(found[:max_seeds - len(rows)])
    return rows


def run_candidate(candidate: SeedCandidate, sandbox: Sandbox, cache: ContentCache, timeout_s: float,
                  recorder: StageRecorder, trees: Path | None = None,
                  starts: int = 1) -> tuple[list[SeedRow], float]:
    """Run the candidate in each environment of its ladder, under each of its protocols, until one works;
    (its seeds, seconds run): none, or one per start up to ``starts`` (see ``_run_protocols``). Every
    environment tried is on each seed (``environment_attempts``)."""
    item = candidate.seed_id
    installs = bool(getattr(sandbox, "installs_releases", False))
    python = platform.python_version()
    attempts, failures, seconds, cuttable = [], [], 0.0, []
    for rung in dependency_ladder(candidate, installs, python):
        if rung.name == "imports" and not any(a["outcome"].startswith("not_installed") for a in attempts):
            continue
        started = time.monotonic()
        env = sandbox.prepare(list(rung.distributions), rung.as_of)
        cost = ladder_figure(recorder, rung.name)
        cost["attempts"] += 1
        cost["prepare_s"] = round(cost["prepare_s"] + time.monotonic() - started, 2)
        attempt = {"rung": rung.name, "distributions": list(rung.distributions), "as_of": rung.as_of}
        attempts.append(attempt)
        if not env.ready:
            attempt["outcome"] = "not_installed: " + "; ".join(env.missing)[:300]
            failures.append((None, ("missing_dependency", f"the sandbox lacks {', '.join(env.missing)}",
                                    {"missing": list(env.missing)})))
            continue
        rows, tried, spent = _run_protocols(candidate, env, sandbox, cache, timeout_s, recorder, trees, starts)
        seconds += spent
        cost["run_s"] = round(cost["run_s"] + spent, 2)
        if rows:
            return environment_of(rows, rung, env, attempts, cost, recorder), seconds
        attempt["outcome"] = tried[0][1][0]
        failures.extend(tried)
        cuttable += [(f[2]["failed_at_line"], rung, env, attempt, cost, protocol) for protocol, f in tried
                     if f[0] == "nonzero_exit" and f[2].get("failed_at_line")]
        if not any(ERA_ERRORS.search(f[1][2].get("stderr_tail", "")[-600:]) for f in tried):
            break  # the program failed on its own terms; another era of its libraries will not help
    # No start ran to the end: the part of the script before the top-level statement that failed may still be
    # an analysis of the data (the tables a script writes before a removed matplotlib argument stops it).
    for line, rung, env, attempt, cost, protocol in sorted(cuttable, key=lambda c: -c[0])[:MAX_CUTS]:
        row, spent = cut_seed(candidate, protocol, line, env, sandbox, cache, timeout_s, recorder, trees)
        seconds += spent
        if row is not None:
            attempt["outcome"] = f"ran up to line {line}"
            return environment_of([row], rung, env, attempts, cost, recorder), seconds
    protocol, (reason, message, detail) = failures[0]
    if len(failures) > 1:
        message += f" (and {len(failures) - 1} other attempt(s) failed: " + "; ".join(
            (f"cwd={p.cwd} args={list(p.args)}: {f[0]}" if p is not None else f"environment: {f[0]}")
            for p, f in failures[1:]) + ")"
    if len(attempts) > 1:
        detail = {**detail, "environments": [a["rung"] + (f" as of {a['as_of']}" if a["as_of"] else "") + ": "
                                             + a["outcome"] for a in attempts]}
    recorder.reject(item, reason, message, **detail)
    return [], seconds


def _run_protocols(candidate: SeedCandidate, env, sandbox: Sandbox, cache: ContentCache, timeout_s: float,
                   recorder: StageRecorder, trees: Path | None = None,
                   starts: int = 1) -> tuple[list[SeedRow], list, float]:
    """Run the candidate in ``env`` under each of its protocols until one makes a seed;
    (its seeds, [(protocol, failure)], seconds run).

    A script meant to be run once per data file (``plot.py raw/specimen-a.raw``, then ``specimen-b.raw``) is
    one analysis of several data sets: after its first seed, the later starts whose arguments name a data file
    no seed so far read are run too, and each that reads other data is a seed of its own, up to ``starts``
    seeds. Its id is the script's with ``@2``, ``@3``... Starts that only change flags are not run."""
    snap = candidate.snapshot
    tree = Path(snap.tree)
    files = {f.path: (tree / f.path).read_bytes() for f in snap.files}
    failures, seconds, rows = [], 0.0, []
    no_data_runs = []  # (index into failures, protocol, result) of clean runs that read no data: tried last
    for number, protocol in enumerate(candidate.protocols):
        if rows and (len(rows) >= starts or not _names_unread_data(protocol, snap, rows)):
            continue
        request = recorded_request(protocol, candidate.script, files, timeout_s, trace=())
        result, hit = run_cached(cache, sandbox, env, request)
        recorder.count("executions_cached" if hit else "executions_run")
        seconds += result.duration_s
        recorder.figures.setdefault("durations_s", {}).setdefault(candidate.seed_id, result.duration_s)
        row, failure = seed_from_run(candidate, protocol, result, env)
        if rows:  # a further start of a script that already made a seed: kept only when it read other data
            read = {f.path for f in row.data_files} if row is not None else None
            if read is not None and all(read != {f.path for f in r.data_files} for r in rows):
                rows.append(row.model_copy(update={"seed_id": f"{candidate.seed_id}@{len(rows) + 1}"}))
                recorder.count("seeds_by_further_start")
            else:
                recorder.count("further_starts_not_kept")
            continue
        if row is not None:
            if number:
                recorder.count("seeds_by_later_protocol")
            rows.append(row)
            continue
        if failure[0] == "no_data_read":
            no_data_runs.append((len(failures), protocol, result))
        failures.append((protocol, failure))
    if rows:
        return rows, failures, seconds
    # Only when no start of the script reads data is a start that read none worth a parameter seed: a run
    # without the README's arguments that printed a help text is not the program at work.
    for index, protocol, result in no_data_runs if trees is not None else ():
        if USAGE_TEXT.match(result.stdout.lstrip()):
            reason, message, detail = failures[index][1]
            failures[index] = (protocol, (reason, message + "; it printed its usage text, so it did not run its "
                                          "computation without arguments", detail))
            continue
        row, failure, spent, generated = parameter_seed(candidate, protocol, result, env, files, sandbox, cache,
                                                         timeout_s, recorder, failures[index][1])
        seconds += spent
        if row is not None:
            row = row.model_copy(update={"tree": str(write_seed_tree(trees, row, {**files, **generated}))})
            if index:
                recorder.count("seeds_by_later_protocol")
            return [row], failures, seconds
        failures[index] = (protocol, failure)
    return [], failures, seconds


def _names_unread_data(protocol: RunProtocol, snap: SnapshotRow, seeds: list[SeedRow]) -> bool:
    """Whether the start's arguments name a data file of the repository that none of ``seeds`` read."""
    data = {f.path for f in snap.files if f.kind != "python"}
    read = {f.path for seed in seeds for f in seed.data_files}
    named = set()
    for arg in protocol.args:
        path = os.path.normpath(os.path.join(protocol.cwd, arg))
        if path in data:
            named.add(path)
    return bool(named - read)
