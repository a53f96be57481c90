"""Candidates: the files of a snapshot that are meant to be run and refer to data, each with the ways to start it
(``protocol``) and the third-party packages it imports; files the snapshot stage could not use are left out."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from ...io import SnapshotRow, StageRecorder
from ..deps import script_imports, third_party
from ..parsing import PYTHON2_ONLY, SYNTAX_ERROR, UNPARSEABLE_SOURCE, UnparseableSource, parse_python
from ..protocol import NEEDS_ARGUMENTS, RunProtocol, infer_protocols


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


def unusable_files(rejects) -> set[str]:
    """Files the snapshot could not analyse (syntax errors, Python 2, too deep to parse, not UTF-8): never seed
    candidates."""
    return {r.item_id for r in rejects
            if r.reason in (SYNTAX_ERROR, PYTHON2_ONLY, UNPARSEABLE_SOURCE, "not_utf8", "binary_file")}
