"""`trailforge deps`: compare dvc.yaml's code deps with the stage modules' imports, and rewrite them."""
from __future__ import annotations

import shutil

import pytest

from conftest import PROJECT_ROOT
from trailforge.cli.main import main


@pytest.fixture
def project(tmp_path):
    """A copy of the project's code and dvc.yaml: the check runs on real modules that a test may edit."""
    for name in ("trailforge", "stages"):
        shutil.copytree(PROJECT_ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    return tmp_path


def test_check_passes_on_the_committed_dvc_yaml(project, capsys):
    assert main(["deps", "--check", "--dvc-file", str(project / "dvc.yaml")]) == 0
    assert "every stage's code deps match its imports" in capsys.readouterr().out


def test_a_new_import_fails_the_check_until_write_adds_it(project, capsys):
    dvc_file = project / "dvc.yaml"
    committed = dvc_file.read_text()
    stage = project / "stages" / "decontaminate.py"
    stage.write_text(stage.read_text() + "\nfrom trailforge.lineage import synthetic  # noqa: F401\n")

    assert main(["deps", "--check", "--dvc-file", str(dvc_file)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "decontaminate (stages/decontaminate.py):\n  missing trailforge/lineage/synthetic.py\n"
    assert "trailforge deps --write" in captured.err

    assert main(["deps", "--write", "--dvc-file", str(dvc_file)]) == 0
    assert "rewrote the code deps" in capsys.readouterr().out
    rewritten = dvc_file.read_text()
    assert rewritten.count("- trailforge/lineage/synthetic.py") == 1
    # Only that one line was added: every other line of dvc.yaml is as it was.
    assert [line for line in rewritten.splitlines() if "synthetic" not in line] == committed.splitlines()
    assert main(["deps", "--check", "--dvc-file", str(dvc_file)]) == 0


def test_a_removed_import_is_reported_stale(project, capsys):
    stage = project / "stages" / "release.py"
    text = stage.read_text()
    line = next(line for line in text.splitlines(keepends=True) if line.startswith("from trailforge.release.report "))
    stage.write_text(text.replace(line, ""))  # whatever names it imports: the module leaves the closure
    export = project / "trailforge" / "release" / "__init__.py"
    assert "report" not in export.read_text()  # nothing else pulls report.py into release's closure
    assert main(["deps", "--check", "--dvc-file", str(project / "dvc.yaml")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("release (stages/release.py):\n")
    assert "  stale   trailforge/release/report.py\n" in out


def test_without_a_flag_it_prints_each_stages_deps(project, capsys):
    assert main(["deps", "--dvc-file", str(project / "dvc.yaml")]) == 0
    out = capsys.readouterr().out
    assert "statements:\n  - stages/statements.py\n" in out
    assert "  - trailforge/envs/verify/checks.py\n" in out.split("statements:")[1].split("verify:")[0]


def test_unreadable_inputs_are_errors_not_tracebacks(project, capsys):
    assert main(["deps", "--check", "--dvc-file", str(project / "nowhere.yaml")]) == 2
    assert "error: no " in capsys.readouterr().err
    (project / "dvc.yaml").write_text("stages: [unclosed\n")
    assert main(["deps", "--check", "--dvc-file", str(project / "dvc.yaml")]) == 2
    assert "is not valid YAML" in capsys.readouterr().err
    (project / "dvc.yaml").write_text("stages:\n  s:\n    cmd: python -m stages.gone\n")
    # a stage running a module that is not there: the dvc.yaml belongs to another folder, or the module is gone
    assert main(["deps", "--write", "--dvc-file", str(project / "dvc.yaml")]) == 2
    assert "runs stages.gone, which is not a module under" in capsys.readouterr().err
    (project / "stages" / "broken.py").write_text("from trailforge.nothing import x\n")
    (project / "dvc.yaml").write_text("stages:\n  s:\n    cmd: python -m stages.broken\n")
    assert main(["deps", "--check", "--dvc-file", str(project / "dvc.yaml")]) == 2
    assert "stages/broken.py:1: imports trailforge.nothing, which is no module of the project" in \
        capsys.readouterr().err
