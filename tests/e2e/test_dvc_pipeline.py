"""End-to-end tier: the real `dvc repro` on the tiny recipe, in a temporary copy of the project."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import PROJECT_ROOT
from trailforge.io.reference_lock import read_reference, record_of_build, reference_differences, write_reference

TINY_REPOS = ["meadow-quadrats", "kinase-inhibitor-screen"]
RUNNABLE_SCRIPTS = 4  # 2 + 2; kinase-inhibitor-screen/normalize_plate.py fails on purpose


def _left_behind(folder, names):
    """Bytecode, scratch and run caches stay behind; a package named `cache` (trailforge.cache) is code and travels."""
    dropped = {"__pycache__", "tmp"}
    if "cache" in names and not (os.path.isfile(os.path.join(folder, "cache", "__init__.py"))):
        dropped.add("cache")
    return [name for name in names if name in dropped]


def _copy_project(dest):
    for name in ["recipe", "conf", "stages", "trailforge", ".dvc"]:
        shutil.copytree(PROJECT_ROOT / name, dest / name, ignore=_left_behind)
    for name in ["dvc.yaml", ".dvcignore", ".gitignore"]:
        shutil.copy(PROJECT_ROOT / name, dest / name)
    for repo in TINY_REPOS:
        shutil.copytree(PROJECT_ROOT / "examples" / "repos" / repo, dest / "examples" / "repos" / repo)


def _run(cwd, *cmd, stdout_only=False):
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
           "TRAILFORGE_CACHE_DIR": str(cwd / ".trailforge" / "cache"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout if stdout_only else done.stdout + done.stderr  # progress lines go to stderr


def _stats(project, stage):
    return json.loads((project / "outputs" / stage / "stats.json").read_text())


TRAILFORGE = [sys.executable, "-m", "trailforge.cli.main"]
DVC = [sys.executable, "-m", "dvc"]
# The output md5s a cold build of the tiny recipe must give, with the versions.yaml they were made with.
REFERENCE = PROJECT_ROOT / "tests" / "e2e" / "tiny.lock.yaml"
REGENERATE = "TRAILFORGE_WRITE_REFERENCE=1 python -m pytest tests/e2e -k reproduces  (in the constraints.txt venv)"


@pytest.fixture(scope="module")
def tiny_build(tmp_path_factory):
    """One cold build of the tiny recipe in a fresh copy (empty run cache, no outputs, no dvc.lock), shared by the
    tests below; the lock's record is taken before any test changes the copy."""
    project = tmp_path_factory.mktemp("e2e") / "copy"
    _copy_project(project)
    _run(project, "git", "init", "-q")
    _run(project, *TRAILFORGE, "compose", "recipe=tiny")
    _run(project, *DVC, "repro")
    return project, record_of_build(project)


@pytest.mark.e2e
def test_a_cold_build_reproduces_the_reference_lock_and_a_version_change_makes_its_stages_stale(tiny_build):
    project, record = tiny_build
    if os.environ.get("TRAILFORGE_WRITE_REFERENCE"):
        write_reference(record, REFERENCE, REGENERATE)
    differences = reference_differences(read_reference(REFERENCE), record)
    assert not differences, ("the cold build does not reproduce " + str(REFERENCE.relative_to(PROJECT_ROOT))
                             + ":\n" + "\n".join(differences[:40]) + f"\nif the change is intended: {REGENERATE}")

    # The check can fail: a different library version is a different versions.yaml param of exactly the stages
    # that list it, so DVC calls them stale. (A stage then refuses to run under versions it was not recorded
    # with, tests/unit/config/test_versions.py; not shown here because `dvc repro` deletes a stage's outputs
    # before running it, and the next test reads them.)
    versions_file = project / "versions.yaml"
    recorded = yaml.safe_load(versions_file.read_text())
    upgraded = {**recorded, "libraries": {**recorded["libraries"], "numpy": "99.0.0"}}
    versions_file.write_text(yaml.safe_dump(upgraded))
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    listing_numpy = {name for name, spec in stages.items()
                     if any("libraries.numpy" in entry.get("versions.yaml", []) for entry in spec["params"]
                            if isinstance(entry, dict))}
    stale = json.loads(_run(project, *DVC, "status", "--json", stdout_only=True))
    assert set(stale) == listing_numpy and {"discover", "snapshot"}.isdisjoint(stale), stale
    assert all("libraries.numpy" in json.dumps(stale[name]) for name in stale), stale
    # Re-recording the installed versions makes the copy up to date again, with nothing re-run.
    _run(project, *TRAILFORGE, "versions")
    assert json.loads(_run(project, *DVC, "status", "--json", stdout_only=True)) == {}


@pytest.mark.e2e
def test_tiny_recipe_builds_verifies_and_rebuilds_only_what_changed(tiny_build):
    project, _ = tiny_build
    trailforge, dvc = TRAILFORGE, DVC

    release = _stats(project, "release")
    verified = _stats(project, "verify")["accepted"]
    assert release["environments"] == verified
    by_type = release["by_task_type"]
    assert set(by_type) == {"reproduction", "subflow", "completion", "correction"}
    assert by_type["reproduction"] == RUNNABLE_SCRIPTS
    assert verified >= 10 * RUNNABLE_SCRIPTS, f"derived task types should multiply the yield: {by_type}"
    envs = sorted(p.name for p in (project / "outputs/release/environments").iterdir())
    assert len(envs) == verified
    for env in envs:
        folder = project / "outputs/release/environments" / env
        meta = json.loads((folder / "metadata.json").read_text())
        assert (folder / "task.md").is_file() and (folder / "eval/expected.json").is_file()
        assert not (folder / "workspace" / "answer.json").exists()
        suffixes = {p.suffix for p in (folder / "workspace").rglob("*") if p.is_file()}
        if meta["task_type"] in ("reproduction", "subflow"):
            assert suffixes <= {".csv", ".json", ".tsv"}, "the agent gets data, not the program"
        else:
            assert ".py" in suffixes, "completion and correction hand over the program to repair"

    # The lineage stage links every released environment to its seed program and its repository.
    import networkx as nx

    graph = nx.node_link_graph(json.loads((project / "outputs/lineage/graph.json").read_text()), edges="edges")
    for env in envs:
        meta = json.loads((project / "outputs/release/environments" / env / "metadata.json").read_text())
        assert list(graph.predecessors(env)) == [f"seed:{meta['seed_id']}"]
        assert nx.has_path(graph, f"repo:{meta['repo_id']}", env)
    assert _stats(project, "lineage")["roots"] == len(TINY_REPOS)
    assert (project / "outputs/release/README.md").is_file() and (project / "outputs/release/report/index.html").is_file()

    import datasets

    loaded = datasets.load_from_disk(str(project / "outputs/release/dataset"))
    assert sorted(loaded) == sorted(by_type) and loaded["reproduction"].num_rows == RUNNABLE_SCRIPTS

    # DVC's metrics are the counts alone: what a run measured (timings, cache hits) is in timings.json.
    from trailforge.io.store import MEASURED_FIGURES

    shown = json.loads(_run(project, *dvc, "metrics", "show", "--json", stdout_only=True))
    metrics = next(iter(shown.values()))["data"]  # the workspace's (DVC names it "")
    assert metrics and all(path.endswith("/stats.json") for path in metrics)
    for path, metric in metrics.items():
        assert not set(metric["data"]) & MEASURED_FIGURES, path
        assert not [c for c in metric["data"].get("counters", {}) if c.endswith(("_cached", "_executed", "_run"))]
    assert "wall_s" in json.loads((project / "outputs/verify/timings.json").read_text())
    # The funnel and the yield per repository render as DVC plots, from the release's tables.
    plots = json.loads(_run(project, *dvc, "plots", "show", "--json", stdout_only=True))["data"]
    values = {title: spec[0]["content"]["data"]["values"] for title, spec in plots.items()}
    funnel_rows = next(v for t, v in values.items() if t.startswith("Verification funnel"))
    assert [r["stage"] for r in funnel_rows][-1] == "verify" and int(funnel_rows[-1]["accepted"]) == verified
    yield_rows = next(v for t, v in values.items() if t.startswith("Environments per repository"))
    assert sorted(r["repo_id"] for r in yield_rows) == sorted(TINY_REPOS)

    # A fresh re-check from the exported folders alone: no cache, reference accepted, every control rejected.
    summary = json.loads(_run(project, *trailforge, "recheck", stdout_only=True))
    assert summary["passed"] == summary["environments"] == verified, summary["failures"][:3]

    # Bytecode that Python writes next to the code a stage imports is not a code change.
    stray = project / "trailforge" / "lineage" / "__pycache__" / "graph.cpython-311.pyc"
    stray.parent.mkdir(exist_ok=True)
    stray.write_bytes(b"bytecode written by some later import")
    assert "changed" not in _run(project, *dvc, "status").lower()
    assert "Running stage" not in _run(project, *dvc, "repro")

    # A verifier change re-runs verify and what follows it (release reads all of params.yaml), nothing upstream,
    # and every reference run comes from the cache.
    _run(project, *trailforge, "compose", "recipe=tiny", "verifier.rtol=1e-5")
    log = _run(project, *dvc, "repro")
    ran = [line.split("'")[1] for line in log.splitlines() if line.startswith("Running stage")]
    assert ran[0] == "verify" and set(ran) <= {"verify", "release", "lineage", "decontaminate", "sample"}
    counters = json.loads((project / "outputs/verify/timings.json").read_text())["counters"]
    assert counters.get("reference_runs_executed", 0) == 0
    assert counters["reference_runs_cached"] >= 2 * verified
    assert counters.get("negative_runs_executed", 0) == 0
