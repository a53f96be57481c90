"""The reproducible part of a dvc.lock, and the committed tiny reference that the e2e test compares builds to."""
from __future__ import annotations

import copy
import re

import pytest
import yaml

from conftest import PROJECT_ROOT
from trailforge.io.reference_lock import (LockError, read_reference, reference_differences, reproducible_record,
                                          write_reference)

DVC = {"stages": {"verify": {
    "params": [{"versions.yaml": ["python", "libraries.numpy"]}],
    "outs": ["outputs/verify/data", {"outputs/verify/timings.json": {"cache": False}}],
    "metrics": ["outputs/verify/stats.json"],
}}}
LOCK = {"schema": "2.0", "stages": {"verify": {
    "cmd": "python -m stages.verify",
    "deps": [{"path": "trailforge/envs/verify.py", "md5": "c0de"}],
    "params": {"params.yaml": {"verifier.rtol": 1e-6},
               "versions.yaml": {"python": "3.11.7", "libraries.numpy": "2.4.6"}},
    "outs": [{"path": "outputs/verify/data", "md5": "aaa.dir", "nfiles": 3},
             {"path": "outputs/verify/timings.json", "md5": "71me"},
             {"path": "outputs/verify/stats.json", "md5": "5ta7"}],
}}}


def test_the_record_keeps_results_and_versions_and_leaves_out_measured_outs_and_code():
    record = reproducible_record(LOCK, DVC)
    assert record == {"verify": {"versions": {"python": "3.11.7", "libraries.numpy": "2.4.6"},
                                 "outs": {"outputs/verify/data": "aaa.dir", "outputs/verify/stats.json": "5ta7"}}}
    # A refactor changes a code dep's md5 and no output: still reproduced.
    refactored = copy.deepcopy(LOCK)
    refactored["stages"]["verify"]["deps"][0]["md5"] = "f00d"
    refactored["stages"]["verify"]["outs"][1]["md5"] = "other-timings"
    assert reference_differences(record, reproducible_record(refactored, DVC)) == []


def test_a_version_or_output_change_is_named_versions_first():
    reference = reproducible_record(LOCK, DVC)
    upgraded = copy.deepcopy(LOCK)
    upgraded["stages"]["verify"]["params"]["versions.yaml"]["libraries.numpy"] = "2.5.0"
    upgraded["stages"]["verify"]["outs"][0]["md5"] = "bbb.dir"
    differences = reference_differences(reference, reproducible_record(upgraded, DVC))
    assert differences == [
        "stage verify: versions.yaml libraries.numpy is '2.5.0', the reference was built with '2.4.6'",
        "stage verify: outputs/verify/data md5 bbb.dir, reference aaa.dir",
    ]
    fewer = {"verify": {**reference["verify"], "outs": {"outputs/verify/data": "aaa.dir"}}, "extra": reference["verify"]}
    assert reference_differences(reference, fewer) == [
        "stage extra: only in the build", "stage verify: outputs/verify/stats.json md5 None, reference 5ta7"]


def test_a_stage_without_versions_params_is_refused_by_name():
    bare = copy.deepcopy(LOCK)
    del bare["stages"]["verify"]["params"]["versions.yaml"]
    with pytest.raises(LockError, match=r"stages\.verify\.params has no versions\.yaml"):
        reproducible_record(bare, DVC)
    with pytest.raises(LockError, match="no stages"):
        reproducible_record({"schema": "2.0"}, DVC)


def test_a_written_reference_reads_back_the_same(tmp_path):
    record = reproducible_record(LOCK, DVC)
    write_reference(record, tmp_path / "ref.yaml", "how")
    assert read_reference(tmp_path / "ref.yaml") == record


def test_the_committed_tiny_reference_covers_every_stage_and_the_pinned_versions():
    """The reference, versions.yaml and constraints.txt describe one environment: upgrading a pin without
    rebuilding the reference (or the reverse) fails here, before the e2e build would."""
    reference = read_reference(PROJECT_ROOT / "tests" / "e2e" / "tiny.lock.yaml")
    stages = yaml.safe_load((PROJECT_ROOT / "dvc.yaml").read_text())["stages"]
    assert set(reference) == set(stages)
    recorded = yaml.safe_load((PROJECT_ROOT / "versions.yaml").read_text())
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (PROJECT_ROOT / "constraints.txt").read_text(), re.M))
    pins = {name.lower(): version for name, version in pins.items()}
    for library, version in recorded["libraries"].items():
        assert pins.get(library) == version, f"versions.yaml records {library} {version}, constraints.txt pins {pins.get(library)}"
    for name, entry in reference.items():
        for key, value in entry["versions"].items():
            if key.startswith("libraries."):
                assert recorded["libraries"][key.split(".", 1)[1]] == value, (name, key)
            else:  # python, programs
                assert recorded[key] == value, (name, key)
        assert entry["outs"], f"stage {name} has no reproducible outputs in the reference"
