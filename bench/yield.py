"""Benchmark: how many verified environments the pipeline extracts, per repository and per task type.

Builds a recipe (default: demo) with `dvc repro` in a temporary copy of the project from an empty
execution cache, then prints, per repository and overall: seed programs, workflow-graph nodes,
candidate tasks and verified environments per type, rejects by stage and reason, the verified
environments per runnable seed, and distinct mutant answers. With --twice it builds a second copy
from a second empty cache and compares the hashes of every task file (rows and exported
environment folders). With --recheck it re-runs every exported environment's controls from its
folder. Prints figures; asserts nothing.

    python bench/yield.py [--recipe demo] [--twice] [--recheck]
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
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trailforge.io import SeedRow, TaskRow, VerifiedTaskRow, WorkflowRow, read_rejects, read_rows  # noqa: E402

TYPES = ("reproduction", "subflow", "completion", "correction")


def run(cwd: Path, *cmd: str) -> str:
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
           "TRAILFORGE_CACHE_DIR": str(cwd / ".trailforge" / "cache"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def build(tmp: Path, name: str, recipe: str) -> tuple[Path, float]:
    project = tmp / name
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(
        ".venv", "outputs", ".trailforge", ".git", "__pycache__", "tmp", "cache", "dvc.lock"))
    run(project, "git", "init", "-q")
    run(project, sys.executable, "-m", "trailforge.cli.main", "compose", f"recipe={recipe}")
    start = time.monotonic()
    run(project, sys.executable, "-m", "dvc", "repro")
    return project, time.monotonic() - start


def tree_hashes(project: Path) -> dict[str, str]:
    hashes = {}
    for folder in ("outputs/workflows/data", "outputs/tasks/data", "outputs/verify/data", "outputs/release/environments"):
        for path in sorted((project / folder).rglob("*")):
            if path.is_file():
                hashes[str(path.relative_to(project))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def explain(first: Path, second: Path, path: str) -> dict:
    """Which top-level keys of a differing JSON file differ (or that the file exists in one build only)."""
    a, b = first / path, second / path
    if not (a.exists() and b.exists()):
        return {"path": path, "only_in": "first" if a.exists() else "second"}
    if path.endswith(".json"):
        x, y = json.loads(a.read_text()), json.loads(b.read_text())
        if isinstance(x, dict) and isinstance(y, dict):
            keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
            return {"path": path, "keys": keys, "first": {k: x.get(k) for k in keys[:2]},
                    "second": {k: y.get(k) for k in keys[:2]}}
    return {"path": path}


def figures(project: Path) -> dict:
    out = project / "outputs"
    seeds = read_rows(out / "seeds/data", SeedRow)
    workflows = read_rows(out / "workflows/data", WorkflowRow)
    tasks = read_rows(out / "tasks/data", TaskRow)
    verified = read_rows(out / "verify/data", VerifiedTaskRow)
    per_repo: dict[str, dict] = defaultdict(lambda: {
        "seeds": 0, "workflow_nodes": 0, "candidates": Counter(), "verified": Counter()})
    for seed in seeds:
        per_repo[seed.repo_id]["seeds"] += 1
    for workflow in workflows:
        per_repo[workflow.repo_id]["workflow_nodes"] += workflow.nodes
    for task in tasks:
        per_repo[task.repo_id]["candidates"][task.task_type] += 1
    for task in verified:
        per_repo[task.repo_id]["verified"][task.task_type] += 1
    rejects = {}
    for stage in ("seeds", "workflows", "tasks", "verify"):
        reasons = Counter(r.reason for r in read_rejects(out / stage / "rejects.parquet"))
        rejects[stage] = dict(sorted(reasons.items()))
    mutant_prints = defaultdict(list)
    for task in verified:
        if task.task_type == "correction":
            mutant_prints[task.seed_id].append(task.construction["mutant_answer_fingerprint"])
    repos = {
        repo: {"seeds": r["seeds"], "workflow_nodes": r["workflow_nodes"],
               "candidates": {t: r["candidates"][t] for t in TYPES}, "verified": {t: r["verified"][t] for t in TYPES},
               "verified_total": sum(r["verified"].values())}
        for repo, r in sorted(per_repo.items())
    }
    total_verified = Counter(t.task_type for t in verified)
    return {
        "repositories": repos,
        "overall": {
            "repositories": len(repos),
            "seeds": len(seeds),
            "workflow_nodes": sum(w.nodes for w in workflows),
            "candidates": {t: sum(r["candidates"][t] for r in repos.values()) for t in TYPES},
            "verified": {t: total_verified[t] for t in TYPES},
            "verified_total": len(verified),
            "verified_per_seed": round(len(verified) / max(len(seeds), 1), 2),
            "reproduction_only_per_seed": round(total_verified["reproduction"] / max(len(seeds), 1), 2),
            "kept_mutants": sum(len(p) for p in mutant_prints.values()),
            "kept_mutants_with_duplicate_answers": sum(len(p) - len(set(p)) for p in mutant_prints.values()),
        },
        "rejects": rejects,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default="demo")
    parser.add_argument("--twice", action="store_true", help="build twice from clean caches and compare hashes")
    parser.add_argument("--recheck", action="store_true", help="re-run every environment's controls from its folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tf-yield-") as tmp:
        project, seconds = build(Path(tmp), "first", args.recipe)
        report = {"recipe": args.recipe, "cold_repro_s": round(seconds, 1), **figures(project)}
        if args.twice:
            again, _ = build(Path(tmp), "second", args.recipe)
            first, second = tree_hashes(project), tree_hashes(again)
            differing = sorted(p for p in set(first) | set(second) if first.get(p) != second.get(p))
            report["determinism"] = {
                "files_compared": len(first),
                "identical": first == second,
                "differing_files": len(differing),
                "differences": [explain(project, again, path) for path in differing[:10]],
            }
        if args.recheck:
            start = time.monotonic()
            summary = json.loads(run(project, sys.executable, "-m", "trailforge.cli.main", "recheck"))
            summary["seconds"] = round(time.monotonic() - start, 1)
            report["recheck"] = summary
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
