"""A script that fails after its analysis ran (a missing plotting backend, a late typo) is cut just before the
failing top-level statement; the prefix is a seed when it runs cleanly and produces results."""
from __future__ import annotations

import ast
from pathlib import Path

from ...cache import ContentCache
from ...io import SeedRow, StageRecorder
from ...sandbox import Sandbox, run_cached
from ..parsing import UnparseableSource, parse_python
from ..protocol import RunProtocol, recorded_request
from .candidates import SeedCandidate, is_entry_point
from .seed_rows import seed_from_run, write_seed_tree


MAX_CUTS = 2  # failed starts whose prefix is tried as a seed, latest failure first


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


def cut_seed(candidate: SeedCandidate, protocol: RunProtocol, line: int, env, sandbox: Sandbox,
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
    row, _ = seed_from_run(candidate, protocol, result, env, ran={candidate.script: cut})
    if row is None:
        recorder.count("cuts_not_a_seed")
        return None, result.duration_s
    recorder.count("seeds_cut_before_a_failure")
    row = row.model_copy(update={"cut_before_line": line})
    return row.model_copy(update={"tree": str(write_seed_tree(trees, row, files, kind="cut"))}), result.duration_s
