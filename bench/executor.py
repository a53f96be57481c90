"""Benchmark: executor=ray on a loopback cluster of one and of two worker processes, next to executor=local.

1. Throughput of a CPU-bound stage (default ``tasks``: every item runs reference programs, slices and
   mutants in the sandbox) with a cold cache: the recipe is built up to the stage's inputs once, then
   the stage is run with ``executor=local`` (1 and 2 threads) and with ``executor=ray`` on a cluster
   of one process (head only) and of two (head + one worker node), each node offering one CPU.
   Printed: items, the map's wall time and items/s (from the stage's timings.json), and per-node items.
2. ``--demo``: the whole corpus (discover ... release) built with ``executor=local`` and with
   ``executor=ray`` on the two-process cluster, in the same project folder with cold caches; prints how
   many output files were compared and which differ (timings.json, the measured figures, is not; the
   release card and report are left out since they record the sha256 of params.yaml, which names
   the executor).

    python bench/executor.py [--recipe demo] [--stage tasks] [--demo] [--no-throughput]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trailforge.config import compose, validate, write_params  # noqa: E402
from trailforge.executor.ray_cluster import LoopbackCluster  # noqa: E402
from trailforge.testing.corpus import STAGE_CHAIN, corpus_digest  # noqa: E402

INPUT_ITEMS = {"snapshot": "discover", "seeds": "snapshot", "workflows": "seeds", "tasks": "seeds",
               "statements": "tasks", "verify": "statements"}


def params(project: Path, recipe: str, overrides: list[str]) -> None:
    data = compose(recipe, overrides, root=ROOT)
    if data["source"].get("kind") == "local":  # repositories are named relative to the project root
        data["source"]["repos"] = [{**r, "path": str(ROOT / r["path"])} for r in data["source"]["repos"]]
    validate(data)
    write_params(data, project / "params.yaml")


def run_stage(project: Path, stage: str, args: list[str], cache: Path, out: str | None = None) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAILFORGE_CACHE_DIR": str(cache),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "RAY_USAGE_STATS_ENABLED": "0"}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", f"stages.{stage}", *args, "--out", out or f"out/{stage}"],
                          cwd=project, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"stage {stage} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.monotonic() - started


def stage_figures(project: Path, out: str, stage: str, elapsed: float) -> dict:
    timings = json.loads((project / out / "timings.json").read_text())
    upstream = INPUT_ITEMS[stage]
    items = _row_count(project / "out" / upstream)
    ray = timings.get("executor", {}).get(stage)
    map_s = ray["wall_s"] if ray else timings["wall_s"]
    return {"items": items, "map_s": round(map_s, 2), "items_per_s": round(items / map_s, 3),
            "stage_s": round(elapsed, 2), "nodes": {k: v["items"] for k, v in (ray or {}).get("nodes", {}).items()}}


def _row_count(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(p).num_rows for p in (folder / "data").glob("data-*.parquet"))


def throughput(recipe: str, stage: str, root: Path) -> None:
    project = root / "project"
    project.mkdir()
    params(project, recipe, [])
    warm = root / "cache-inputs"
    for name, args in STAGE_CHAIN[: [s for s, _ in STAGE_CHAIN].index(stage)]:
        run_stage(project, name, args, warm)
    args = dict(STAGE_CHAIN)[stage]
    rows = []
    for workers in (1, 2):
        params(project, recipe, [f"executor.max_workers={workers}"])
        elapsed = run_stage(project, stage, args, root / f"cache-local-{workers}", out=f"bench/local-{workers}")
        rows.append((f"local, {workers} thread(s)", stage_figures(project, f"bench/local-{workers}", stage, elapsed)))
    for workers in (1, 2):
        with LoopbackCluster(workers=workers - 1, env={"PYTHONPATH": str(ROOT)}) as cluster:
            params(project, recipe, ["executor=ray", f"executor.address={cluster.address}"])
            elapsed = run_stage(project, stage, args, root / f"cache-ray-{workers}", out=f"bench/ray-{workers}")
            rows.append((f"ray, {workers} worker process(es)",
                         stage_figures(project, f"bench/ray-{workers}", stage, elapsed)))
    print(f"\n{recipe} recipe, stage {stage}, cold cache, {os.cpu_count()} cores on this machine")
    print(f"{'executor':32} {'items':>6} {'map s':>8} {'items/s':>8} {'stage s':>8}  per node")
    for name, f in rows:
        print(f"{name:32} {f['items']:>6} {f['map_s']:>8} {f['items_per_s']:>8} {f['stage_s']:>8}  {f['nodes'] or ''}")
    print(json.dumps({name: f for name, f in rows}, sort_keys=True))


def demo(recipe: str, root: Path) -> None:
    project = root / "project"
    project.mkdir()
    timings = {}
    for name, overrides, make_cluster in [("local", [], None), ("ray", ["executor=ray"], 1)]:
        shutil.rmtree(project / "out", ignore_errors=True)
        cluster = LoopbackCluster(workers=make_cluster, env={"PYTHONPATH": str(ROOT)}).start() if make_cluster else None
        try:
            params(project, recipe, overrides + ([f"executor.address={cluster.address}"] if cluster else []))
            started = time.monotonic()
            for stage, args in STAGE_CHAIN:
                run_stage(project, stage, args, root / f"cache-{name}")
            timings[name] = round(time.monotonic() - started, 1)
        finally:
            if cluster:
                cluster.stop()
        shutil.copytree(project / "out", root / f"{name}-out")
    local, ray = corpus_digest(root / "local-out"), corpus_digest(root / "ray-out")
    differ = sorted(p for p in set(local) | set(ray) if local.get(p) != ray.get(p))
    environments = len({p.split("/")[2] for p in local if p.startswith("release/environments/")})
    corpus = hashlib.sha256(json.dumps(local, sort_keys=True).encode()).hexdigest()
    print(f"\n{recipe} corpus: {len(local)} files compared ({environments} environments), "
          f"local {timings['local']}s, ray (2 processes) {timings['ray']}s")
    ray_corpus = hashlib.sha256(json.dumps(ray, sort_keys=True).encode()).hexdigest()
    print(f"corpus hash local {corpus[:16]}  ray {ray_corpus[:16]}")
    print("identical" if not differ else f"{len(differ)} files differ: {differ[:20]}")
    if differ:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default="demo")
    parser.add_argument("--stage", default="tasks", choices=sorted(INPUT_ITEMS))
    parser.add_argument("--demo", action="store_true", help="also build the whole corpus both ways and compare hashes")
    parser.add_argument("--no-throughput", action="store_true", help="skip part 1 (with --demo: only the comparison)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-executor-") as tmp:
        if not args.no_throughput:
            (Path(tmp) / "throughput").mkdir()
            throughput(args.recipe, args.stage, Path(tmp) / "throughput")
        if args.demo:
            (Path(tmp) / "demo").mkdir()
            demo(args.recipe, Path(tmp) / "demo")


if __name__ == "__main__":
    main()
