"""The corpus digest compares what a run built, not how it ran (cache hits, timings)."""
from __future__ import annotations

from trailforge.io import StageRecorder, TaskRow
from trailforge.testing.corpus import corpus_digest


def _write_stats(folder, counters, **figures):
    recorder = StageRecorder("verify")
    for name, count in counters.items():
        recorder.count(name, count)
    recorder.figures.update(figures)
    recorder.write([], TaskRow, folder)


def test_cache_hit_split_and_timings_do_not_change_the_digest(tmp_path):
    # A cold run where two items raced for the same run, and one where the second hit the cache.
    _write_stats(tmp_path / "a/verify", {"eval_runs_cached": 1, "eval_runs_executed": 3, "executions_run": 2,
                                         "stochastic_tasks": 1},
                 cache={"hits": 1, "misses": 3}, wall_s=1.5)
    _write_stats(tmp_path / "b/verify", {"eval_runs_executed": 4, "executions_cached": 2, "stochastic_tasks": 1},
                 cache={"hits": 2, "misses": 2}, wall_s=9.0)
    assert corpus_digest(tmp_path / "a") == corpus_digest(tmp_path / "b")
    assert "verify/stats.json" in corpus_digest(tmp_path / "a")
    assert "verify/timings.json" not in corpus_digest(tmp_path / "a")


def test_a_different_number_of_runs_or_other_counter_changes_the_digest(tmp_path):
    _write_stats(tmp_path / "a/verify", {"eval_runs_cached": 1, "eval_runs_executed": 3, "stochastic_tasks": 1})
    _write_stats(tmp_path / "b/verify", {"eval_runs_executed": 5, "stochastic_tasks": 1})
    _write_stats(tmp_path / "c/verify", {"eval_runs_executed": 4, "stochastic_tasks": 2})
    digests = [corpus_digest(tmp_path / name)["verify/stats.json"] for name in "abc"]
    assert len(set(digests)) == 3
