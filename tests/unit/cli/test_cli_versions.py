"""`trailforge versions [--check]`: record the installed versions stages depend on, or say what drifted."""
from __future__ import annotations

import shutil

import yaml

from conftest import PROJECT_ROOT
from trailforge.cli.main import main
from trailforge.config.versions import recorded_versions


def test_versions_writes_the_record_and_check_names_each_drifted_key(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    shutil.copy(PROJECT_ROOT / "params.yaml", params)
    assert main(["versions", "--params", str(params)]) == 0
    written = yaml.safe_load((tmp_path / "versions.yaml").read_text())
    assert written == recorded_versions(yaml.safe_load(params.read_text()))
    assert main(["versions", "--params", str(params), "--check"]) == 0
    capsys.readouterr()

    stale = {**written, "libraries": {**written["libraries"], "pyarrow": "0.1.0"}}
    (tmp_path / "versions.yaml").write_text(yaml.safe_dump(stale))
    assert main(["versions", "--params", str(params), "--check"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"libraries.pyarrow: versions.yaml records '0.1.0', this environment has {written['libraries']['pyarrow']!r}"]


def test_versions_without_a_composed_config_says_what_to_run(tmp_path, capsys):
    assert main(["versions", "--params", str(tmp_path / "params.yaml")]) == 2
    assert "trailforge compose" in capsys.readouterr().err
