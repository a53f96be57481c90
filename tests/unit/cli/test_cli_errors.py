"""The CLI's failures: one line naming the problem, a non-zero exit, never a traceback; and `--version`."""
from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from conftest import PROJECT_ROOT
from trailforge.cli.main import main


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``trailforge ARGV`` run in-process (an uncaught exception fails the test)."""
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse: --version, --help and bad arguments
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def test_version_is_the_package_version(capsys):
    version = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["version"]
    status, out, _ = _run(["--version"], capsys)
    assert status == 0 and out == f"trailforge {version}\n"


# (arguments, run in an empty folder, words the one-line error must contain)
MISSING_INPUTS = [
    (["report"], ["outputs folder outputs does not exist", "dvc repro"]),
    (["recheck"], ["environments folder outputs/release/environments does not exist"]),
    (["publish", "--dry-run"], ["release folder outputs/release does not exist"]),
    (["graph", "demo:prog.py"], ["workflows folder outputs/workflows does not exist", "dvc repro workflows"]),
    (["review-sheet"], ["verify folder outputs/verify does not exist", "dvc repro verify"]),
    (["audit", "nowhere.jsonl"], ["nowhere.jsonl"]),
    (["ls"], ["no trailforge project"]),
    (["validate", "recipe=demo"], ["no trailforge project"]),
    (["deps", "--check"], ["no trailforge project"]),
]


@pytest.mark.parametrize("argv, words", MISSING_INPUTS, ids=[" ".join(a) for a, _ in MISSING_INPUTS])
def test_a_missing_input_is_one_line_naming_it(argv, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(argv, capsys)
    assert status != 0
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err, (word, err)


def test_an_existing_but_empty_folder_says_nothing_was_built(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs" / "seeds").mkdir(parents=True)
    (tmp_path / "envs").mkdir()
    (tmp_path / "workflows" / "data").mkdir(parents=True)
    cases = [
        (["report"], "nothing has been built in outputs"),
        (["recheck", "envs"], "envs holds no exported environment"),
        (["graph", "x:y.py", "--workflows", "workflows"], "workflows holds no workflow rows"),
    ]
    for argv, words in cases:
        status, _, err = _run(argv, capsys)
        assert status == 2 and err.startswith("error: ") and err.count("\n") == 1 and words in err, (argv, err)


def test_a_file_where_a_folder_belongs_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs").write_text("not a folder")
    status, _, err = _run(["report"], capsys)
    assert status == 2 and "outputs folder outputs is not a folder" in err


def test_a_broken_stats_file_names_the_file_and_the_stage(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs" / "verify").mkdir(parents=True)
    (tmp_path / "outputs" / "verify" / "stats.json").write_text("{truncated")
    status, _, err = _run(["report"], capsys)
    assert status == 2 and "outputs/verify/stats.json is not valid JSON" in err and "re-run the verify stage" in err


def test_recheck_without_params_names_the_missing_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "envs" / "e1").mkdir(parents=True)
    (tmp_path / "envs" / "e1" / "metadata.json").write_text("{}")
    status, _, err = _run(["recheck", "envs"], capsys)
    assert status == 2 and err.count("\n") == 1 and "params.yaml not found" in err


BAD_ARGUMENTS = [
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "the following arguments are required: command"),
    (["graph"], "the following arguments are required: seed_id"),
    (["graph", "x", "--format", "png"], "argument --format: invalid choice: 'png'"),
    (["review-sheet", "--size", "many"], "argument --size: invalid int value: 'many'"),
    (["deps", "--check", "--write"], "not allowed with argument --check"),
    (["report", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
]


@pytest.mark.parametrize("argv, words", BAD_ARGUMENTS, ids=[" ".join(a) or "(none)" for a, _ in BAD_ARGUMENTS])
def test_a_bad_argument_is_one_line_naming_it_not_the_usage_block(argv, words, capsys):
    status, out, err = _run(argv, capsys)
    assert status == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and words in err, err
    assert "usage:" not in err and "--help" in err


def test_the_installed_entry_point_prints_no_traceback(tmp_path):
    """Through a real process, as a user runs it: the message and exit status, no Python traceback."""
    done = subprocess.run([sys.executable, "-m", "trailforge.cli.main", "graph", "demo:prog.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: workflows folder outputs/workflows does not exist")
