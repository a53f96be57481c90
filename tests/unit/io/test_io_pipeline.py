"""The stage list the CLI reads from dvc.yaml, and the stats.json of each stage folder."""
from __future__ import annotations

import json

import pytest
import yaml

from conftest import PROJECT_ROOT
from trailforge.io.pipeline import pipeline_stages, read_stage_stats


def test_the_stages_are_those_of_dvc_yaml_in_its_order():
    declared = list(yaml.safe_load((PROJECT_ROOT / "dvc.yaml").read_text())["stages"])
    assert pipeline_stages(PROJECT_ROOT) == declared
    assert declared[-3:] == ["lineage", "decontaminate", "sample"]


def test_no_dvc_yaml_means_no_stages(tmp_path):
    assert pipeline_stages(tmp_path) == []


def test_stats_per_stage_with_unlisted_folders_after_by_name(tmp_path):
    for stage, data in {"b": {"accepted": 1}, "zeta": {"accepted": 2}, "alpha": {"accepted": 3}}.items():
        (tmp_path / stage).mkdir()
        (tmp_path / stage / "stats.json").write_text(json.dumps(data))
    (tmp_path / "scratch").mkdir()  # a folder without stats.json is no stage
    found = read_stage_stats(tmp_path, ["a", "b"])
    assert list(found) == ["a", "b", "alpha", "zeta"]
    assert found["a"] is None and found["b"] == {"accepted": 1}


def test_a_truncated_stats_file_is_named(tmp_path):
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "stats.json").write_text('{"accepted": ')
    with pytest.raises(ValueError, match=r"verify/stats.json is not valid JSON .*re-run the verify stage"):
        read_stage_stats(tmp_path, ["verify"])
