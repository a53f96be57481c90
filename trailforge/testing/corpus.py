"""The environments pipeline as stage invocations, and a digest of its outputs for byte-identity checks.

Used where a corpus is built outside DVC and compared, e.g. ``executor=local`` against ``executor=ray``
(tests/stage/test_ray_pipeline.py, bench/executor.py). Each stage writes to ``out/<stage>``.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

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
# Measured quantities (docs/design-notes.md): timings, per-node throughput, sandbox durations, cache hits.
MEASURED_STATS_KEYS = {"wall_s", "executor", "durations_s", "cache", "environment_ladder", "traced_slowdown"}
# Counters that split one count of runs into cache hits and executions. Which items hit depends on the
# cache's history and, within a cold run, on scheduling: two items sharing a run race for it when they
# are in flight together. Only their sum describes the corpus.
RUN_COUNTER_SUFFIXES = ("_cached", "_executed", "_run")
# The release card and report record the sha256 of params.yaml, which names the executor; the datasets
# fingerprint is measured too.
DIFFERS_BY_PARAMS = {"release/README.md", "release/dataset/state.json"}


def without_measured(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _run_totals(v) if k == "counters" else without_measured(v)
                for k, v in value.items() if k not in MEASURED_STATS_KEYS}
    return value


def _run_totals(counters: dict[str, int]) -> dict[str, int]:
    """``eval_runs_cached`` + ``eval_runs_executed`` -> ``eval_runs_total``; other counters unchanged."""
    folded: dict[str, int] = {}
    for name, count in counters.items():
        base = next((name[: -len(s)] for s in RUN_COUNTER_SUFFIXES if name.endswith(s)), None)
        key = f"{base}_total" if base else name
        folded[key] = folded.get(key, 0) + count
    return folded


def corpus_digest(out: Path) -> dict[str, str]:
    """sha256 of every output file (stats.json with measured figures removed), by path under ``out``."""
    digests = {}
    for path in sorted(p for p in Path(out).rglob("*") if p.is_file()):
        rel = path.relative_to(out).as_posix()
        if rel in DIFFERS_BY_PARAMS or rel.startswith("release/report/"):
            continue
        data = path.read_bytes()
        if path.name == "stats.json":
            data = json.dumps(without_measured(json.loads(data)), sort_keys=True).encode()
        digests[rel] = hashlib.sha256(data).hexdigest()
    return digests
