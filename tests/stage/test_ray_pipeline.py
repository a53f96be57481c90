"""Stage tier: the tiny recipe on a real two-process Ray cluster (loopback) builds the same corpus as locally.

Both runs use the same project folder (outputs name paths inside it) and cold caches of their own;
every parquet file, every released environment file and every stats.json (counts; the measured figures
are in timings.json) must be byte-identical. Then a worker node is killed mid-stage and the stage still ends with the same outputs.
The lineage stage's similarity work (signals, benchmark matching) on the cluster gives the same graph.
"""
from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT, run_stage, timings, write_params
from trailforge.config import compose, validate
from trailforge.config import write_params as write_composed_params

pytest.importorskip("ray")
from trailforge.executor.ray_cluster import LoopbackCluster  # noqa: E402
from trailforge.testing.corpus import STAGE_CHAIN, corpus_digest  # noqa: E402

TINY_REPOS = [str(PROJECT_ROOT / "examples" / "repos" / name)
              for name in ("meadow-quadrats", "kinase-inhibitor-screen")]


@pytest.fixture(scope="module")
def cluster():
    with LoopbackCluster(workers=1, env={"PYTHONPATH": str(PROJECT_ROOT)}) as running:
        yield running


def _run_pipeline(project: Path, cache: Path, overrides: list[str]) -> None:
    shutil.rmtree(project / "out", ignore_errors=True)
    write_params(project, TINY_REPOS, overrides)
    for stage, args in STAGE_CHAIN:
        run_stage(project, stage, *args, "--out", f"out/{stage}", cache=cache)


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory):
    """The tiny corpus built with executor=local and with executor=ray, in the same project folder."""
    root = tmp_path_factory.mktemp("ray-pipeline")
    project = root / "project"
    project.mkdir()
    _run_pipeline(project, root / "cache-local", [])
    local = root / "local-out"
    shutil.copytree(project / "out", local)
    _run_pipeline(project, root / "cache-ray", ["executor=ray", f"executor.address={cluster.address}",
                                                "executor.max_in_flight=4"])
    return project, local


def test_ray_corpus_is_byte_identical_to_local(runs):
    project, local = runs
    expected, actual = corpus_digest(local), corpus_digest(project / "out")
    assert sorted(expected) == sorted(actual)
    assert any(p.startswith("release/environments/") for p in expected)
    assert {p for p in expected if expected[p] != actual.get(p)} == set()
    # The ray run recorded where its items ran, among its measured figures.
    verify_stats = json.loads((project / "out/verify/stats.json").read_text())
    nodes = timings(project / "out/verify")["executor"]["verify"]["nodes"]
    assert sum(n["items"] for n in nodes.values()) == verify_stats["accepted"] + verify_stats["rejected"]


def test_stage_survives_a_worker_node_killed_mid_stage(runs, cluster, tmp_path):
    project, local = runs
    cache = tmp_path / "cache-kill"  # cold: every verify item runs its sandbox checks again
    entries = cache / "entries"
    killed = {}

    def kill_after_first_items():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(entries.rglob("*.json"))) < 6:
            time.sleep(0.05)
        killed["before"] = len(list(entries.rglob("*.json")))
        killed["processes"] = cluster.kill_worker(0)

    killer = threading.Thread(target=kill_after_first_items)
    killer.start()
    run_stage(project, "verify", "--tasks", "out/statements", "--out", "out/verify-killed", cache=cache)
    killer.join()
    assert killed["processes"] >= 2, "the worker node's raylet and worker processes were killed"
    total = len(list(entries.rglob("*.json")))
    assert killed["before"] < total, "the kill landed before the stage's last item"
    expected = {k: v for k, v in corpus_digest(local).items() if k.startswith("verify/") and k != "verify/stats.json"}
    actual = {k.replace("verify-killed/", "verify/"): v for k, v in corpus_digest(project / "out").items()
              if k.startswith("verify-killed/") and k != "verify-killed/stats.json"}
    assert actual == expected and len(actual) >= 2  # data shards and rejects.parquet
    # A retried item may find what its killed attempt already cached, so cache figures (timings.json) may
    # differ; the outcome may not.
    outcome = ("accepted", "rejected", "reject_reasons")
    local_stats = json.loads((local / "verify/stats.json").read_text())
    killed_stats = json.loads((project / "out/verify-killed/stats.json").read_text())
    assert {k: killed_stats[k] for k in outcome} == {k: local_stats[k] for k in outcome}


def test_lineage_similarity_work_on_the_cluster_gives_the_same_graph(cluster, tmp_path):
    examples = PROJECT_ROOT / "examples" / "lineage"
    common = [f"lineage.input.path={examples / 'planted.jsonl'}",
              f"lineage.contamination.benchmarks=[{examples / 'benchmark'}]"]
    for name, overrides in (("local", []), ("ray", ["executor=ray", f"executor.address={cluster.address}"])):
        project = tmp_path / name
        project.mkdir()
        data = compose("curate", common + overrides, root=PROJECT_ROOT)
        validate(data)
        write_composed_params(data, project / "params.yaml")
        run_stage(project, "lineage", "--out", "out/lineage")
    local, ray = corpus_digest(tmp_path / "local" / "out"), corpus_digest(tmp_path / "ray" / "out")
    assert set(local) >= {"lineage/graph.json", "lineage/rejects.parquet", "lineage/stats.json"}
    assert ray == local
    figures = json.loads((tmp_path / "ray/out/lineage/stats.json").read_text())
    assert figures["contamination_seeds"]["benchmark_ngram"] >= 1
    throughput = timings(tmp_path / "ray/out/lineage")["executor"]
    for label in ("lineage signals", "benchmark matching"):
        assert sum(n["items"] for n in throughput[label]["nodes"].values()) >= 1
