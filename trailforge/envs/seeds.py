"""Find entry scripts that read data and produce results, run them, keep those that work.

A candidate is a Python file that parses, is meant to be run (a ``__main__`` guard or
top-level statements beyond definitions) and refers to data. Each candidate runs in the
sandbox on a copy of the whole snapshot under a tracer that records the files it read
and the repository modules it imported. A seed program is a candidate that exits
cleanly, reads at least one data file and prints or writes something.

A script that reads no data file but sets numeric constants at module level (a simulation,
a teaching example) gets its constants moved into a generated parameters file
(``parameters.py``); the rewritten program is run too and becomes the seed only when its
outputs are identical to the original's, and lives in a tree of its own under ``trees``.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import re
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..cache import ContentCache
from ..io import FileEntry, SeedRow, SnapshotRow, StageRecorder, WrittenFile
from ..sandbox import PLOTS_FILE, RUNNER_FILES, TRACE_FILE, Sandbox, run_cached
from ..sandbox.base import NONZERO_EXIT, OK, OUTPUT_LIMIT, TIMEOUT
from .answers import is_result_file, table_delimiter
from .printed import stdout_names
from .deps import (canonical, distribution_for, era_date, requirement_name, resolve_distributions, script_imports,
                   third_party)
from .parameters import parameterize
from .parsing import PYTHON2_ONLY, SYNTAX_ERROR, UNPARSEABLE_SOURCE, UnparseableSource, parse_python
from .plots import read_plots
from .protocol import NEEDS_ARGUMENTS, RunProtocol, infer_protocols, recorded_request

MAX_TEXT_OUTPUT = 200_000
# A written table is kept whole up to this size: answers summarise it (row count, column aggregates, end rows),
# and a results table of a genome-wide analysis (40,000 genes) is a few megabytes.
MAX_TABLE_TEXT_OUTPUT = 4_000_000
_DATA_CALLS = {
    "open", "read_csv", "read_table", "read_excel", "read_json", "read_parquet", "loadtxt", "genfromtxt",
    "load", "fromfile", "read_fwf", "read_hdf", "Dataset", "File", "parse", "read",
}


@dataclass(frozen=True)
class SeedCandidate:
    snapshot: SnapshotRow
    script: str
    protocols: tuple[RunProtocol, ...] = (RunProtocol(),)
    promise: int = 0
    imports: tuple[str, ...] | None = None  # third-party imports of the script and its local modules; None: the repo's

    @property
    def seed_id(self) -> str:
        return f"{self.snapshot.repo_id}:{self.script}"


def find_candidates(snapshot: SnapshotRow, unusable: set[str], recorder: StageRecorder) -> list[SeedCandidate]:
    """Every script of the snapshot that could be a seed, with the ways to start it, most promising first."""
    tree = Path(snapshot.tree)
    data_names = {f.path for f in snapshot.files if f.kind in ("data", "binary", "text")}
    data_names |= {Path(p).name for p in list(data_names)}
    repo_files = {f.path for f in snapshot.files}
    docs = _docs(snapshot)
    sources = {}
    for entry in snapshot.files:
        if entry.kind == "python" and f"{snapshot.repo_id}:{entry.path}" not in unusable:
            try:
                sources[entry.path] = (tree / entry.path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
    local_names = set(snapshot.local_modules)
    found = []
    for entry in snapshot.files:
        if entry.kind != "python" or f"{snapshot.repo_id}:{entry.path}" in unusable:
            continue
        item = f"{snapshot.repo_id}:{entry.path}"
        source = (tree / entry.path).read_text(encoding="utf-8")
        try:
            module = parse_python(source, entry.path)
        except UnparseableSource as exc:  # the snapshot names these as unusable; this guards older snapshots
            recorder.reject(item, exc.reason, str(exc))
            continue
        if not is_entry_point(module):
            recorder.reject(item, "not_entry_point", "only definitions and imports; nothing runs when executed")
            continue
        protocols = infer_protocols(entry.path, module, repo_files, docs)
        if not protocols:
            recorder.reject(item, NEEDS_ARGUMENTS, f"{entry.path} needs command-line arguments that neither its "
                            "code, a usage line nor the repository's data files supply")
            continue
        # A script that names no data is still run (a reader may hide behind a helper or a config file), but last:
        # the run's trace, not this guess, decides whether it reads repository data.
        score = promise(module) + (4 if refers_to_data(module, data_names) else 0)
        required, _ = script_imports(entry.path, sources)
        imports = tuple(third_party(required, local_names))
        found.append(SeedCandidate(snapshot, entry.path, tuple(protocols), score, imports))
    return sorted(found, key=lambda c: (-c.promise, c.script))


def promise(module: ast.Module) -> int:
    """How likely a script is to be an analysis worth a seed: a main guard, printed or written results
    (naming repository data counts most; ``find_candidates`` adds that)."""
    score = 0
    for node in module.body:
        if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
            score += 1
            break
    names = {_call(n) for n in ast.walk(module) if isinstance(n, ast.Call)}
    score += 2 if "print" in names else 0
    score += 1 if names & {"savefig", "to_csv", "write", "dump", "savetxt", "save", "to_excel", "to_json"} else 0
    return score


def _call(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _docs(snapshot: SnapshotRow) -> dict[str, str]:
    """README-like files, where usage lines live (bounded: a README is not a data set)."""
    tree, docs = Path(snapshot.tree), {}
    for entry in snapshot.files:
        name = Path(entry.path).name.lower()
        if entry.kind in ("doc", "text") and (name.startswith(("readme", "usage", "install")) or
                                              name.endswith((".md", ".rst"))):
            try:
                docs[entry.path] = (tree / entry.path).read_text(encoding="utf-8", errors="replace")[:200_000]
            except OSError:
                continue
    return docs


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


def is_entry_point(module: ast.Module) -> bool:
    passive = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in module.body:
        if isinstance(node, passive):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_literal(getattr(node, "value", None)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # docstring
        return True
    return False


def _is_literal(node) -> bool:
    if node is None:
        return True
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def refers_to_data(module: ast.Module, data_names: set[str]) -> bool:
    for node in ast.walk(module):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if text in data_names or any(text.endswith("/" + name) for name in data_names if "/" not in name):
                return True
            if re.search(r"\.(csv|tsv|json|txt|dat|fasta|fa|npy|npz|h5|nc|pdb|xlsx|parquet)$", text, re.I):
                return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in _DATA_CALLS:
                return True
    return False


# Tracebacks through installed packages name the interpreter's install folder, which is wherever this
# checkout's venv happens to live; only the part from lib/pythonX.Y/ on says anything about the program.
_INSTALL_FOLDER = re.compile(r'File "[^"\n]*?(/lib/python3\.\d+/)')


def portable_stderr(stderr: str) -> str:
    """``stderr`` with interpreter install folders replaced by ``<python>``, so rejects match across machines."""
    return _INSTALL_FOLDER.sub(r'File "<python>\1', stderr)


# A failure these name may be the libraries' era, not the program: the next rung of the ladder may fix it.
_ERA_ERRORS = re.compile(r"\b(AttributeError|ImportError|ModuleNotFoundError|TypeError)\b|has no attribute|deprecated|"
                         r"removed in|is not a valid package style")  # matplotlib 3.6 renamed the seaborn styles


@dataclass(frozen=True)
class Rung:
    """One environment to try a script in: which releases of its dependencies."""

    name: str  # declared, current, era or imports (see dependency_ladder)
    distributions: tuple[str, ...]
    as_of: str | None = None


def dependency_ladder(candidate: SeedCandidate, installs: bool, python_version: str) -> list[Rung]:
    """The environments to try, in order:

    - ``declared``: the repository's manifests (their pins kept) plus what the script imports that no manifest
      names. Manifests stay whole: they name what no import shows (``openpyxl`` behind ``read_excel``);
    - ``current``: the same distributions at their newest releases;
    - ``era``: the same distributions as of the repository's commit date;
    - ``imports``: only what the script itself imports, current, and only after a rung failed to install
      (a manifest naming a library without a wheel must not keep an analysis from running).

    A sandbox that cannot install (the host interpreter) has one rung."""
    snap = candidate.snapshot
    if candidate.imports is None:
        return [Rung("declared", tuple(snap.distributions))]
    declared, _ = resolve_distributions(list(snap.requirements), list(candidate.imports), set(), python_version)
    rungs = [Rung("declared", tuple(declared))]
    if installs:
        names = tuple(sorted({requirement_name(spec) for spec in declared}))
        if names != rungs[0].distributions:
            rungs.append(Rung("current", names))
        rungs.append(Rung("era", names, era_date(snap.commit_date, python_version)))
        own = tuple(sorted({canonical(distribution_for(name)) for name in candidate.imports}))
        if own != names:
            rungs.append(Rung("imports", own))
    return rungs


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
        cost = _ladder_figure(recorder, rung.name)
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
            return _environment_of(rows, rung, env, attempts, cost, recorder), seconds
        attempt["outcome"] = tried[0][1][0]
        failures.extend(tried)
        cuttable += [(f[2]["failed_at_line"], rung, env, attempt, cost, protocol) for protocol, f in tried
                     if f[0] == "nonzero_exit" and f[2].get("failed_at_line")]
        if not any(_ERA_ERRORS.search(f[1][2].get("stderr_tail", "")[-600:]) for f in tried):
            break  # the program failed on its own terms; another era of its libraries will not help
    # No start ran to the end: the part of the script before the top-level statement that failed may still be
    # an analysis of the data (the tables a script writes before a removed matplotlib argument stops it).
    for line, rung, env, attempt, cost, protocol in sorted(cuttable, key=lambda c: -c[0])[:MAX_CUTS]:
        row, spent = _cut_seed(candidate, protocol, line, env, sandbox, cache, timeout_s, recorder, trees)
        seconds += spent
        if row is not None:
            attempt["outcome"] = f"ran up to line {line}"
            return _environment_of([row], rung, env, attempts, cost, recorder), seconds
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


def _environment_of(rows: list[SeedRow], rung: Rung, env, attempts: list[dict], cost: dict,
                    recorder: StageRecorder) -> list[SeedRow]:
    """The seeds with the environment they ran in (pinned when it was an era's) and every one tried."""
    cost["seeds"] += len(rows)
    attempts[-1].setdefault("outcome", "ran")
    for row in rows:
        row.distributions = list(rung.distributions)
        if len(attempts) > 1:
            recorder.count(f"seeds_by_{rung.name}_environment")
        if rung.as_of is not None:  # what ran, pinned: later stages rebuild exactly this environment
            row.distributions = [f"{name}=={version}" for name, version in sorted(env.spec["packages"].items())]
        row.environment_attempts = attempts
    return rows


MAX_CUTS = 2  # failed starts whose prefix is tried as a seed, latest failure first
_MODULE_FRAME = re.compile(r'File "([^"]+)", line (\d+), in <module>')


def failing_line(stderr: str, script: str) -> int | None:
    """The line of ``script`` whose top-level statement was running when the program died: the outermost
    ``<module>`` frame of the script in the traceback; None when there is none (a syntax error, a signal)."""
    for path, line in _MODULE_FRAME.findall(stderr):  # a path as the program was started: relative to its cwd
        if path == script or path.endswith("/" + script) or script.endswith("/" + path):
            return int(line)
    return None


def cut_before(source: str, line: int) -> str | None:
    """The script up to the top-level statement that holds ``line`` (inside a ``__main__`` guard, up to the
    guard's statement that holds it), or None when what is left runs nothing but imports and definitions."""
    module = parse_python(source, "<script>")
    lines = source.splitlines(keepends=True)
    for node in module.body:
        if not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        cut = _first_line(node)
        if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
            inner = [n for n in node.body if n.lineno <= line <= (n.end_lineno or n.lineno)]
            if inner and inner[0] is not node.body[0]:
                cut = _first_line(inner[0])
        text = "".join(lines[:cut - 1])
        try:
            kept = parse_python(text, "<script>")
        except UnparseableSource:
            return None
        return text if is_entry_point(kept) else None
    return None


def _first_line(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def _cut_seed(candidate: SeedCandidate, protocol: RunProtocol, line: int, env, sandbox: Sandbox,
              cache: ContentCache, timeout_s: float, recorder: StageRecorder,
              trees: Path | None) -> tuple[SeedRow | None, float]:
    """A seed from the script cut before the top-level statement that failed at ``line``, run as the failed
    start was; (the seed or None, seconds run). Its tree is its own (``trees``): the cut script and its data."""
    snap = candidate.snapshot
    if trees is None:
        return None, 0.0
    files = {f.path: (Path(snap.tree) / f.path).read_bytes() for f in snap.files}
    try:
        cut = cut_before(files[candidate.script].decode("utf-8"), line)
    except (UnicodeDecodeError, UnparseableSource):
        cut = None
    if cut is None:
        recorder.count("cuts_leave_nothing")
        return None, 0.0
    files[candidate.script] = cut.encode("utf-8")
    result, hit = run_cached(cache, sandbox, env, recorded_request(protocol, candidate.script, files, timeout_s,
                                                                   trace=()))
    recorder.count("executions_cached" if hit else "executions_run")
    row, _ = _seed_from_run(candidate, protocol, result, env, ran={candidate.script: cut})
    if row is None:
        recorder.count("cuts_not_a_seed")
        return None, result.duration_s
    recorder.count("seeds_cut_before_a_failure")
    row = row.model_copy(update={"cut_before_line": line})
    return row.model_copy(update={"tree": str(write_seed_tree(trees, row, files, kind="cut"))}), result.duration_s


def _ladder_figure(recorder: StageRecorder, rung: str) -> dict:
    """What one rung of the dependency ladder cost in this stage: attempts, seeds it made, time preparing
    environments (installs; near zero once built) and running programs in them (recorded durations)."""
    ladder = recorder.figures.setdefault("environment_ladder", {})
    return ladder.setdefault(rung, {"attempts": 0, "seeds": 0, "prepare_s": 0.0, "run_s": 0.0})


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
        row, failure = _seed_from_run(candidate, protocol, result, env)
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
        row, failure, spent, generated = _parameter_seed(candidate, protocol, result, env, files, sandbox, cache,
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


# argparse's and click's help texts start so; a script that prints one on a bare start did not compute anything.
USAGE_TEXT = re.compile(r"(usage|Usage|USAGE):\s")


def _seed_from_run(candidate: SeedCandidate, protocol: RunProtocol, result, env,
                   ran: dict[str, str] | None = None) -> tuple[SeedRow | None, tuple]:
    """The seed a run makes, or (None, (reason, message, detail)) saying why it makes none. ``ran``: program
    texts the run had in place of the snapshot's (a rewritten script), by path."""
    snap = candidate.snapshot
    if result.reason != OK:
        reasons = {TIMEOUT: "timeout", NONZERO_EXIT: "nonzero_exit", OUTPUT_LIMIT: "output_limit"}
        stderr = portable_stderr(result.stderr)
        tail = stderr.strip().splitlines()[-1:] or [""]
        detail = {"stderr_tail": stderr[-2000:]}
        line = failing_line(stderr, candidate.script) if result.reason == NONZERO_EXIT else None
        if line is not None:
            detail["failed_at_line"] = line
        return None, (reasons.get(result.reason, result.reason),
                      f"{candidate.script} ended with {result.reason} (exit {result.exit_code}): {tail[0][:300]}",
                      detail)
    outputs = dict(result.files)
    trace = _read_trace(outputs.pop(TRACE_FILE, None))
    plots = read_plots(outputs.pop(PLOTS_FILE, None))  # what the figures showed: results, not a written file
    by_path = {f.path: f for f in snap.files}
    changed = {p for p in outputs if p in by_path}  # inputs the program rewrote are results, not data
    data_files = [by_path[p] for p in trace["reads"] if p in by_path and by_path[p].kind != "python"
                  and p not in changed]
    if not data_files:
        why = f" (it rewrote {len(changed)} of its inputs)" if changed else ""
        return None, ("no_data_read", f"ran but read no unchanged data file of the repository{why}", {})
    written = [_written(path, data) for path, data in sorted(outputs.items()) if is_result_file(path)]
    if not result.stdout.strip() and not written and not plots:
        return None, ("no_output", "ran but printed nothing, wrote no file and drew no figure", {})
    local = [p for p in trace["local_modules"] if p in by_path and p != candidate.script and p not in RUNNER_FILES]
    sources = {}
    for path in (candidate.script, *local):
        try:  # the texts that ran: the print calls' lines are theirs
            sources[path] = (ran or {}).get(path) or (Path(snap.tree) / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
    names = stdout_names(result.stdout, trace["prints"], sources)
    return SeedRow(
        seed_id=candidate.seed_id,
        repo_id=snap.repo_id,
        discipline=snap.discipline,
        script=candidate.script,
        tree=snap.tree,
        program_files=[candidate.script, *sorted(local)],
        data_files=sorted(data_files, key=lambda f: f.path),
        stdout=result.stdout,
        files_written=written,
        plots=plots,
        distributions=snap.distributions,
        sandbox_spec=env.spec,
        cwd=protocol.cwd,
        args=list(protocol.args),
        # Also the folders of files it wrote with the content they had (an export the repository ships):
        # no output for this run, but a run on other data writes there again.
        output_folders=output_folders(Path(snap.tree), [*(w.path for w in written),
                                                        *filter(is_result_file, trace["writes"])]),
        stdout_names={str(index): name for index, name in sorted(names.items())},
    ), ()


def _parameter_seed(candidate: SeedCandidate, protocol: RunProtocol, result, env, files: dict[str, bytes],
                    sandbox: Sandbox, cache: ContentCache, timeout_s: float, recorder: StageRecorder,
                    no_data: tuple) -> tuple[SeedRow | None, tuple, float, dict[str, bytes]]:
    """The seed of a script that read no data, with its numeric constants read from a generated parameters file
    (``parameters.parameterize``): (seed or None, why not, seconds run, the generated files by path). The rewritten
    program runs in the sandbox and must give exactly the original run's outputs: stdout, written files and figures
    (else ``parameters_unreproduced``). The seed's ``tree`` is still the snapshot's; the caller gives it its own."""
    try:
        rewritten = parameterize(files[candidate.script].decode("utf-8"), candidate.script, protocol.cwd, set(files))
    except (SyntaxError, ValueError, RecursionError, UnicodeDecodeError, MemoryError):
        rewritten = None
    if rewritten is None:
        reason, message, detail = no_data
        return None, (reason, message + "; and it sets no numeric constant at module level to read as a parameter",
                      detail), 0.0, {}
    recorder.count("parameter_rewrites_tried")
    program = rewritten.program.encode("utf-8")
    parameters = rewritten.text.encode("utf-8")
    request = recorded_request(protocol, candidate.script, {**files, candidate.script: program,
                                                            rewritten.path: parameters}, timeout_s, trace=())
    again, hit = run_cached(cache, sandbox, env, request)
    recorder.count("executions_cached" if hit else "executions_run")
    problem = reproduction_problem(result, again, rewritten.path)
    if problem:
        return None, ("parameters_unreproduced", f"{candidate.script} with its constants "
                      f"({', '.join(rewritten.names[:8])}) read from {rewritten.path}: {problem}",
                      {"parameters": list(rewritten.names)}), again.duration_s, {}
    snap = candidate.snapshot
    entry = FileEntry(path=rewritten.path, sha256=hashlib.sha256(parameters).hexdigest(), size=len(parameters),
                      kind="data")
    with_file = SeedCandidate(snap.model_copy(update={"files": [*snap.files, entry]}), candidate.script,
                              candidate.protocols, candidate.promise, candidate.imports)
    row, failure = _seed_from_run(with_file, protocol, again, env, ran={candidate.script: rewritten.program})
    if row is None:
        return None, failure, again.duration_s, {}
    recorder.count("seeds_from_parameters")
    recorder.count("parameters_in_files", len(rewritten.names))
    return row.model_copy(update={"parameters_file": rewritten.path}), (), again.duration_s, \
        {candidate.script: program, rewritten.path: parameters}


def reproduction_problem(original, rewritten, parameters_path: str) -> str | None:
    """Why the run of the rewritten program is not the original's, or None: it must exit cleanly, read the
    parameters file, print the same bytes, write the same result files with the same bytes and draw the same
    figures."""
    if not rewritten.ok:
        tail = (portable_stderr(rewritten.stderr).strip().splitlines() or [""])[-1]
        return f"the rewritten program ended with {rewritten.reason}: {tail[:300]}"
    if parameters_path not in _read_trace(rewritten.files.get(TRACE_FILE))["reads"]:
        return "the rewritten program did not read the parameters file"
    if rewritten.stdout != original.stdout or rewritten.stdout_truncated != original.stdout_truncated:
        return "it prints something else than the original"
    # Library caches and config under the scratch HOME (a fontconfig cache the first run of an environment
    # writes, the second finds) are no outputs of the analysis; the figures are (the plots file is hidden).
    def compared(files):
        return {p: d for p, d in files.items() if p != TRACE_FILE and (p == PLOTS_FILE or is_result_file(p))}

    outputs, again = compared(original.files), compared(rewritten.files)
    if set(outputs) != set(again):
        return f"it writes other files ({sorted(set(outputs) ^ set(again))[:5]})"
    differ = sorted(p for p in outputs if outputs[p] != again[p])
    if differ:
        return f"its outputs differ from the original's ({differ[:5]})"
    return None


def write_seed_tree(trees: Path, seed: SeedRow, files: dict[str, bytes], kind: str = "parameters") -> Path:
    """A tree of the seed's own under ``trees`` (``<repo>/<kind>-<digest>``): its data files (the generated
    parameters file), the rewritten entry script (with parameters, or cut) and the repository modules it
    imports, as ``files`` has them. Named by its content, so a re-run writes the same folder."""
    paths = sorted({*(f.path for f in seed.data_files), *seed.program_files})
    digest = hashlib.sha256(json.dumps({p: hashlib.sha256(files[p]).hexdigest() for p in paths},
                                       sort_keys=True).encode()).hexdigest()[:12]
    folder = trees / seed.repo_id / f"{kind}-{digest}"
    for path in paths:
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[path])
    return folder


def output_folders(tree: Path, written: list[str]) -> list[str]:
    """The repository's folders the program wrote into (``figs/`` for ``figs/fit.png``): a later run on the
    seed's files alone lacks them. Only folders the tree has: one the program made, it makes again."""
    folders = set()
    for path in written:
        for parent in PurePosixPath(path).parents:
            if parent.as_posix() != "." and (tree / parent).is_dir():
                folders.add(parent.as_posix())
    return sorted(folders)


def _read_trace(data: bytes | None) -> dict:
    empty = {"reads": [], "writes": [], "local_modules": [], "prints": []}
    if not data:
        return empty
    try:
        trace = json.loads(data)
    except ValueError:
        return empty
    if not isinstance(trace, dict):
        return empty
    read = {key: [str(p) for p in trace.get(key, []) if isinstance(p, str)]
            for key in ("reads", "writes", "local_modules")}
    prints = trace.get("prints")
    read["prints"] = [p for p in prints if isinstance(p, list)] if isinstance(prints, list) else []
    return read


def _written(path: str, data: bytes) -> WrittenFile:
    text = None
    if len(data) <= MAX_TABLE_TEXT_OUTPUT:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and len(data) > MAX_TEXT_OUTPUT and table_delimiter(path, text) is None:
            text = None
    return WrittenFile(path=path, sha256=hashlib.sha256(data).hexdigest(), size=len(data), text=text)


def unusable_files(rejects) -> set[str]:
    """Files the snapshot could not analyse (syntax errors, Python 2, too deep to parse, not UTF-8): never seed
    candidates."""
    return {r.item_id for r in rejects
            if r.reason in (SYNTAX_ERROR, PYTHON2_ONLY, UNPARSEABLE_SOURCE, "not_utf8", "binary_file")}
