"""Which output files may hold results: library caches, config, bytecode and hidden files never do."""
from __future__ import annotations

import json

import pytest

from trailforge.envs.answers import answer_from_run, is_result_file
from trailforge.sandbox.base import OK, RunResult


def _result(files: dict[str, bytes], stdout: str = "") -> RunResult:
    return RunResult(exit_code=0, reason=OK, stdout=stdout, stderr="", stdout_truncated=False, files=files,
                     oversized_files=[], duration_s=0.1)


@pytest.mark.parametrize("path", [
    ".cache/matplotlib/fontlist-v3.11.0.json",  # what the sandbox's HOME collects from matplotlib
    ".config/matplotlib/matplotlibrc",
    ".local/share/x.json",
    ".ipython/profile_default/history.json",
    "analysis/__pycache__/util.cpython-311.pyc",
    "util.pyc",
    ".tf_trace.json",
    "results/.hidden.csv",
])
def test_caches_config_and_bytecode_are_not_results(path):
    assert not is_result_file(path)


@pytest.mark.parametrize("path", ["results.json", "out/fit.csv", "figs/summary.tsv", "result/value.json"])
def test_ordinary_outputs_are_results(path):
    assert is_result_file(path)


def test_matplotlib_font_cache_never_becomes_an_answer():
    font_cache = json.dumps({"defaultFamily": {"ttf": "DejaVu Sans", "afm": "Helvetica"}, "_version": 390})
    result = _result({
        ".cache/matplotlib/fontlist-v3.11.0.json": font_cache.encode(),
        "fit.json": json.dumps({"slope": 2.5}).encode(),
    })
    schema, answer = answer_from_run(result, "outputs", max_fields=24, max_rows=50)
    assert [f.name for f in schema] == ["fit_slope"]
    assert answer == {"fit_slope": 2.5}
