"""Stage tier: lineage -> decontaminate -> sample on the bundled synthetic JSONL corpus (the curate recipe)."""
from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq

from conftest import PROJECT_ROOT, run_stage, stats
from trailforge.config import compose, validate, write_params

EXAMPLES = PROJECT_ROOT / "examples" / "lineage"


def _curate_project(project, overrides=()):
    corpus = project / "corpus.jsonl"
    lines = (EXAMPLES / "planted.jsonl").read_text().splitlines()
    corpus.write_text("\n".join(lines[:200] + ["{broken json", json.dumps({"text": "no id here"})]
                                + lines[200:]) + "\n")
    shutil.copytree(EXAMPLES / "benchmark", project / "benchmark")
    data = compose("curate", [f"lineage.input.path={corpus}", f"lineage.contamination.benchmarks=[{project / 'benchmark'}]",
                              *overrides], root=PROJECT_ROOT)
    validate(data)
    write_params(data, project / "params.yaml")


def _run_all(project, out="out"):
    run_stage(project, "lineage", "--out", f"{out}/lineage")
    run_stage(project, "decontaminate", "--lineage", f"{out}/lineage", "--out", f"{out}/decontaminate")
    return run_stage(project, "sample", "--lineage", f"{out}/lineage", "--kept", f"{out}/decontaminate",
                     "--out", f"{out}/sample")


def _rows(folder):
    return [r for shard in sorted(folder.glob("data-*.parquet")) for r in pq.read_table(shard).to_pylist()]


def test_curation_stages_label_drop_and_sample_with_reasons(project):
    _curate_project(project)
    _run_all(project)
    lineage = stats(project / "out/lineage")
    assert lineage["accepted"] == 400
    assert lineage["reject_reasons"] == {"malformed_json": 1, "missing_field": 1}
    assert lineage["contamination_seeds"]["benchmark_ngram"] >= 1
    assert set(lineage["edge_types"]) == {"derive", "refine", "merge", "diverge"}

    rows = {r["item_id"]: r for r in _rows(project / "out/lineage/data")}
    truth = [json.loads(line) for line in (EXAMPLES / "planted_edges.jsonl").read_text().splitlines()]
    recovered = sum(1 for e in truth if any(p["id"] == e["parent"] and p["type"] == e["type"]
                                            for p in json.loads(rows[e["child"]]["parents"])))
    assert recovered >= 0.9 * len(truth)

    decon = stats(project / "out/decontaminate")
    dropped = {r["item_id"] for r in pq.read_table(project / "out/decontaminate/rejects.parquet").to_pylist()}
    assert decon["rejected"] == len(dropped) > 0
    assert set(decon["reject_reasons"]) <= {"contaminated_benchmark_ngram", "contaminated_failed_evaluation",
                                             "contaminated_benchmark_near_duplicate"}
    for item_id in dropped:
        assert rows[item_id]["contamination"] >= 0.5
        path = json.loads(rows[item_id]["contamination_path"])
        assert path[-1] == item_id
    kept = _rows(project / "out/decontaminate/data")
    assert len(kept) + len(dropped) == 400
    assert all(r["weight"] == 1.0 or 0 < r["weight"] < 1.0 for r in kept)
    assert any(r["weight"] < 1.0 for r in kept)

    sample = stats(project / "out/sample")
    assert sample["accepted"] == sample["budget"] == 2 * 3 * 10
    assert sample["selected"]["roots_covered"] >= sample["uniform_same_size"]["roots_covered"]
    assert not {r["item_id"] for r in _rows(project / "out/sample/data")} & dropped


def test_curation_outputs_are_byte_identical_across_runs(project):
    _curate_project(project, ["lineage.sampling.method=adaptive", "lineage.sampling.rounds=10"])
    _run_all(project, "a")
    _run_all(project, "b")
    for stage in ("lineage", "decontaminate", "sample"):
        for name in ("data/data-00000.parquet", "rejects.parquet"):
            assert (project / "a" / stage / name).read_bytes() == (project / "b" / stage / name).read_bytes()
    assert (project / "a/lineage/graph.json").read_bytes() == (project / "b/lineage/graph.json").read_bytes()


def test_a_missing_input_is_a_clear_error(project):
    data = compose("curate", ["lineage.input.path=nowhere.jsonl"], root=PROJECT_ROOT)
    write_params(data, project / "params.yaml")
    done = run_stage(project, "lineage", "--out", "out/lineage", check=False)
    assert done.returncode != 0 and "lineage.input.path: nowhere.jsonl does not exist" in done.stderr


def test_a_repeated_id_is_a_reject_and_the_first_item_is_kept(project):
    lines = (EXAMPLES / "planted.jsonl").read_text().splitlines()[:40]
    first = json.loads(lines[3])
    corpus = project / "corpus.jsonl"
    corpus.write_text("\n".join(lines + [json.dumps({**first, "text": "a different text under the same id"})]) + "\n")
    data = compose("curate", [f"lineage.input.path={corpus}", "lineage.contamination.benchmarks=[]"], root=PROJECT_ROOT)
    write_params(data, project / "params.yaml")
    run_stage(project, "lineage", "--out", "out/lineage")
    lineage = stats(project / "out/lineage")
    assert lineage["accepted"] == 40 and lineage["reject_reasons"] == {"duplicate_id": 1}
    rows = {r["item_id"]: r for r in _rows(project / "out/lineage/data")}
    assert rows[first["id"]]["text"] == first["text"]
