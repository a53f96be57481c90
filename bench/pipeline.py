"""Benchmark: cold and warm `dvc repro` of a recipe in a temporary copy of the project.

Cold: empty execution cache. Warm: outputs and dvc.lock deleted, execution cache kept, DVC's own
run-cache bypassed (--no-run-cache), so every stage re-runs but no program executes again.
Restore: the same deletion, with DVC's run-cache allowed to restore outputs. No-op: nothing changed.
Prints wall times and cache figures; asserts nothing.

    python bench/pipeline.py [--recipe demo]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(cwd: Path, *cmd: str) -> float:
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
           "TRAILFORGE_CACHE_DIR": str(cwd / ".trailforge" / "cache"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    return time.monotonic() - start


def figures(project: Path) -> dict:
    out = {}
    for stage in ("seeds", "verify"):
        stats = json.loads((project / "outputs" / stage / "stats.json").read_text())
        timings = json.loads((project / "outputs" / stage / "timings.json").read_text())
        out[stage] = {"cache_hits": timings["cache"]["hits"], "cache_misses": timings["cache"]["misses"],
                      "accepted": stats["accepted"]}
    out["environments"] = json.loads((project / "outputs/release/stats.json").read_text())["environments"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default="demo")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tf-bench-") as tmp:
        project = Path(tmp) / "project"
        shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(
            ".venv", "outputs", ".trailforge", ".git", "__pycache__", "tmp", "cache", "dvc.lock"))
        run(project, "git", "init", "-q")
        run(project, sys.executable, "-m", "trailforge.cli.main", "compose", f"recipe={args.recipe}")
        cold = run(project, sys.executable, "-m", "dvc", "repro")
        cold_figures = figures(project)
        shutil.rmtree(project / "outputs")
        (project / "dvc.lock").unlink()
        warm = run(project, sys.executable, "-m", "dvc", "repro", "--no-run-cache")
        warm_figures = figures(project)
        shutil.rmtree(project / "outputs")
        (project / "dvc.lock").unlink()
        restore = run(project, sys.executable, "-m", "dvc", "repro")
        noop = run(project, sys.executable, "-m", "dvc", "repro")
    print(json.dumps({
        "recipe": args.recipe,
        "cold_repro_s": round(cold, 2),
        "warm_repro_s": round(warm, 2),
        "run_cache_restore_s": round(restore, 2),
        "noop_repro_s": round(noop, 2),
        "cold": cold_figures,
        "warm": warm_figures,
    }, indent=2))


if __name__ == "__main__":
    main()
