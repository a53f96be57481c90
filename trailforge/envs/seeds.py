"""Find entry scripts that read data and produce results, run them, keep those that work.

A candidate is a Python file that parses, is meant to be run (a ``__main__`` guard or
top-level statements beyond definitions) and refers to data. Each candidate runs in the
sandbox on a copy of the whole snapshot under a tracer that records the files it read
and the repository modules it imported. A seed program is a candidate that exits
cleanly, reads at least one data file and prints or writes something.
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..cache import ContentCache
from ..io import SeedRow, SnapshotRow, StageRecorder, WrittenFile
from ..sandbox import TRACE_RUNNER, RunRequest, Sandbox, run_cached
from ..sandbox.base import NONZERO_EXIT, OK, OUTPUT_LIMIT, TIMEOUT
from .parsing import SYNTAX_ERROR, UNPARSEABLE_SOURCE, UnparseableSource, parse_python

TRACE_SCRIPT = ".tf_trace.py"
TRACE_FILE = ".tf_trace.json"
MAX_TEXT_OUTPUT = 200_000
_DATA_CALLS = {
    "open", "read_csv", "read_table", "read_excel", "read_json", "read_parquet", "loadtxt", "genfromtxt",
    "load", "fromfile", "read_fwf", "read_hdf", "Dataset", "File", "parse", "read",
}


@dataclass(frozen=True)
class SeedCandidate:
    snapshot: SnapshotRow
    script: str

    @property
    def seed_id(self) -> str:
        return f"{self.snapshot.repo_id}:{self.script}"


def find_candidates(snapshot: SnapshotRow, unusable: set[str], max_per_repo: int,
                    recorder: StageRecorder) -> list[SeedCandidate]:
    tree = Path(snapshot.tree)
    data_names = {f.path for f in snapshot.files if f.kind in ("data", "binary", "text")}
    data_names |= {Path(p).name for p in list(data_names)}
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
        if not refers_to_data(module, data_names):
            recorder.reject(item, "no_data_reference", "neither names a data file of the repository nor calls a reader")
            continue
        if len(found) >= max_per_repo:
            recorder.reject(item, "over_budget", f"budget.max_seeds_per_repo={max_per_repo} reached")
            continue
        found.append(SeedCandidate(snapshot, entry.path))
    return found


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


def run_candidate(candidate: SeedCandidate, sandbox: Sandbox, cache: ContentCache, timeout_s: float,
                  recorder: StageRecorder) -> SeedRow | None:
    snap = candidate.snapshot
    item = candidate.seed_id
    env = sandbox.prepare(snap.distributions)
    if not env.ready:
        recorder.reject(item, "missing_dependency", f"the sandbox lacks {', '.join(env.missing)}", missing=list(env.missing))
        return None
    tree = Path(snap.tree)
    files = {f.path: (tree / f.path).read_bytes() for f in snap.files}
    files[TRACE_SCRIPT] = TRACE_RUNNER.read_bytes()
    request = RunRequest(command=("python", TRACE_SCRIPT, candidate.script), files=files, timeout_s=timeout_s)
    result, hit = run_cached(cache, sandbox, env, request)
    recorder.count("executions_cached" if hit else "executions_run")
    recorder.figures.setdefault("durations_s", {})[item] = result.duration_s
    if result.reason != OK:
        reasons = {TIMEOUT: "timeout", NONZERO_EXIT: "nonzero_exit", OUTPUT_LIMIT: "output_limit"}
        stderr = portable_stderr(result.stderr)
        tail = stderr.strip().splitlines()[-1:] or [""]
        recorder.reject(item, reasons.get(result.reason, result.reason),
                        f"{candidate.script} ended with {result.reason} (exit {result.exit_code}): {tail[0][:300]}",
                        stderr_tail=stderr[-2000:])
        return None
    trace = _read_trace(result.files.pop(TRACE_FILE, None))
    by_path = {f.path: f for f in snap.files}
    data_files = [by_path[p] for p in trace["reads"] if p in by_path and by_path[p].kind != "python"]
    if not data_files:
        recorder.reject(item, "no_data_read", "ran but read no data file of the repository")
        return None
    written = [_written(path, data) for path, data in sorted(result.files.items())]
    if not result.stdout.strip() and not written:
        recorder.reject(item, "no_output", "ran but printed nothing and wrote no file")
        return None
    local = [p for p in trace["local_modules"] if p in by_path and p != candidate.script and p != TRACE_SCRIPT]
    return SeedRow(
        seed_id=item,
        repo_id=snap.repo_id,
        discipline=snap.discipline,
        script=candidate.script,
        tree=snap.tree,
        program_files=[candidate.script, *sorted(local)],
        data_files=sorted(data_files, key=lambda f: f.path),
        stdout=result.stdout,
        files_written=written,
        distributions=snap.distributions,
        sandbox_spec=env.spec,
    )


def _read_trace(data: bytes | None) -> dict:
    if not data:
        return {"reads": [], "local_modules": []}
    try:
        trace = json.loads(data)
    except ValueError:
        return {"reads": [], "local_modules": []}
    return {"reads": list(trace.get("reads", [])), "local_modules": list(trace.get("local_modules", []))}


def _written(path: str, data: bytes) -> WrittenFile:
    text = None
    if len(data) <= MAX_TEXT_OUTPUT:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    return WrittenFile(path=path, sha256=hashlib.sha256(data).hexdigest(), size=len(data), text=text)


def unusable_files(rejects) -> set[str]:
    """Files the snapshot could not analyse (syntax errors, too deep to parse, not UTF-8): never seed candidates."""
    return {r.item_id for r in rejects if r.reason in (SYNTAX_ERROR, UNPARSEABLE_SOURCE, "not_utf8", "binary_file")}
