"""`trailforge report`: one line for every stage dvc.yaml declares, curation stages with their figures."""
from __future__ import annotations

import json

import pytest

from conftest import PROJECT_ROOT
from trailforge.cli.main import main
from trailforge.io.pipeline import pipeline_stages

# Counts as the stages write them (trimmed): the curation stages' figures came from `dvc repro sample` on recipe=curate.
STATS = {
    "seeds": {"stage": "seeds", "accepted": 12, "rejected": 3, "reject_reasons": {"needs_arguments": 3}},
    "verify": {"stage": "verify", "accepted": 160, "rejected": 9, "reject_reasons": {"leaks_answer": 9}},
    "release": {"stage": "release", "accepted": 160, "rejected": 0, "environments": 160,
                "by_task_type": {"completion": 50, "correction": 40, "reproduction": 12, "subflow": 58}},
    "lineage": {"stage": "lineage", "accepted": 400, "rejected": 0, "items": 400, "edges": 401,
                "edge_types": {"derive": 93, "diverge": 76, "merge": 106, "refine": 126}, "roots": 52,
                "families": 16, "contaminated_items": 101, "redundancy_rate": 0.4375},
    "decontaminate": {"stage": "decontaminate", "accepted": 354, "rejected": 46, "downweighted": 31,
                      "reject_reasons": {"contaminated_benchmark_ngram": 26, "contaminated_failed_evaluation": 20}},
    "sample": {"stage": "sample", "accepted": 60, "rejected": 0, "method": "farthest_point", "budget": 60,
               "selected": {"vendi": 46.6574, "redundancy_rate": 0.0},
               "uniform_same_size": {"vendi": 42.6371, "redundancy_rate": 0.0833}},
}


def _outputs(folder, stats):
    for stage, data in stats.items():
        (folder / stage).mkdir(parents=True)
        (folder / stage / "stats.json").write_text(json.dumps(data))
    return folder


@pytest.fixture(autouse=True)
def _in_project(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)


def test_every_pipeline_stage_is_reported_in_pipeline_order(tmp_path, capsys):
    stages = pipeline_stages(PROJECT_ROOT)
    assert {"lineage", "decontaminate", "sample"} <= set(stages), "the curation stages are DVC stages"
    assert main(["report", "--outputs", str(_outputs(tmp_path / "outputs", STATS))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == stages
    by_stage = {line.split()[0]: line for line in lines}
    for stage in set(stages) - set(STATS):
        assert by_stage[stage].endswith("not run"), by_stage[stage]
    assert "accepted=12 rejected=3" in by_stage["seeds"] and "reasons=needs_arguments:3" in by_stage["seeds"]
    assert "types={completion:50, correction:40, reproduction:12, subflow:58}" in by_stage["release"]
    assert ("edges=401 edge_types={derive:93, diverge:76, merge:106, refine:126} roots=52 families=16 "
            "contaminated=101 redundancy_rate=0.4375") in by_stage["lineage"]
    assert "accepted=354 rejected=46 downweighted=31 reasons=contaminated_benchmark_ngram:26" in by_stage["decontaminate"]
    assert ("method=farthest_point budget=60 vendi=46.6574 uniform_vendi=42.6371 redundancy_rate=0.0 "
            "uniform_redundancy_rate=0.0833") in by_stage["sample"]


def test_stages_run_outside_dvc_repro_follow_by_name(tmp_path, capsys):
    extra = {"rollout": {"stage": "rollout", "accepted": 8, "rejected": 0, "sft_records": 5},
             "ideation": {"stage": "ideation", "accepted": 2, "rejected": 1, "retries": 4}}
    assert main(["report", "--outputs", str(_outputs(tmp_path / "outputs", {**STATS, **extra}))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[-2:]] == ["ideation", "rollout"]
    assert "sft_records=5" in lines[-1] and "retries=4" in lines[-2]


def test_the_stage_list_is_the_one_of_the_project_the_outputs_belong_to(tmp_path, capsys):
    project = tmp_path / "other"
    (project / "recipe").mkdir(parents=True)
    (project / "conf").mkdir()
    (project / "dvc.yaml").write_text("stages:\n  gamma:\n    cmd: x\n  alpha:\n    cmd: y\n")
    outputs = _outputs(project / "outputs", {"alpha": {"accepted": 1, "rejected": 0}})
    assert main(["report", "--outputs", str(outputs)]) == 0  # run from this project's root: its dvc.yaml is not used
    assert capsys.readouterr().out.splitlines() == ["gamma         not run", "alpha         accepted=1 rejected=0"]
