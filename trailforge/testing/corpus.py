"""The environments pipeline as stage invocations, and a digest of its outputs for byte-identity checks.

Used where a corpus is built outside DVC and compared, e.g. ``executor=local`` against ``executor=ray``
(tests/stage/test_ray_pipeline.py, bench/executor.py). Each stage writes to ``out/<stage>``.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from ..io.store import TIMINGS_FILE

STAGE_CHAIN: list[tuple[str, list[str]]] = [
    ("discover", []),
    ("snapshot", ["--repos", "out/discover"]),
    ("seeds", ["--snapshots", "out/snapshot"]),
    ("workflows", ["--seeds", "out/seeds"]),
    ("tasks", ["--seeds", "out/seeds", "--workflows", "out/workflows"]),
    ("statements", ["--tasks", "out/tasks"]),
    ("verify", ["--tasks", "out/statements"]),
    ("release", ["--verified", "out/verify", "--discover", "out/discover", "--snapshot", "out/snapshot",
                 "--seeds", "out/seeds", "--workflows", "out/workflows", "--tasks", "out/tasks",
                 "--statements", "out/statements"]),
]
# The release card and report record the sha256 of params.yaml, which names the executor; the datasets
# fingerprint is measured too.
DIFFERS_BY_PARAMS = {"release/README.md", "release/dataset/state.json"}


def corpus_digest(out: Path) -> dict[str, str]:
    """sha256 of every output file by path under ``out``, leaving out each stage's timings.json (measured
    figures: timings, cache hits; see ``trailforge.io.store.MEASURED_FIGURES``). stats.json is compared as
    written: it holds only counts, so it must be byte-identical too."""
    digests = {}
    for path in sorted(p for p in Path(out).rglob("*") if p.is_file()):
        rel = path.relative_to(out).as_posix()
        if rel in DIFFERS_BY_PARAMS or rel.startswith("release/report/") or path.name == TIMINGS_FILE:
            continue
        digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests
