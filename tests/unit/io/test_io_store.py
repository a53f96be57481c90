"""Parquet shards of typed rows, rejects and stats written by a stage."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import trailforge.io.store as store_module
from trailforge.io import (
    AnswerField,
    FileEntry,
    Reject,
    SnapshotRow,
    StageRecorder,
    TaskRow,
    read_rejects,
    read_rows,
    write_rows,
)
from trailforge.io.store import arrow_schema


def snapshot(i: int, commit: str | None = "abc123") -> SnapshotRow:
    return SnapshotRow(
        repo_id=f"org/repo-{i}",
        origin=f"/data/repos/repo-{i}",
        discipline="ecology",
        commit=commit,
        content_hash=f"{i:064x}",
        tree=f"/snapshots/{i}",
        files=[
            FileEntry(path="analysis.py", sha256="a" * 64, size=120 + i, kind="python"),
            FileEntry(path="data/obs.csv", sha256="b" * 64, size=3000, kind="data"),
        ],
        requirements=["numpy==1.26", "pandas>=2"],
        imports=["numpy", "pandas"],
        distributions=["numpy", "pandas"],
        local_modules=[],
    )


def task(i: int) -> TaskRow:
    return TaskRow(
        task_id=f"t{i}", task_type="reproduction", seed_id=f"s{i}", repo_id="org/r", discipline="ecology",
        statement="# Reproduce\n\u00e9t\u00e9 \u2013 unicode survives\n",
        answer_schema=[AnswerField(name="n", type="integer", label="Count", source="stdout", decimals=0)],
        reference_answer={"n": 3, "table": {"columns": ["a"], "rows": [[1.5], ["x"]]}, "flag": None},
        entrypoint="a.py", reference_program={"a.py": "print('Count: 3')\n"},
        workspace_files=[FileEntry(path="d.csv", sha256="c" * 64, size=4, kind="data")],
        tree="/t", distributions=[], sandbox_spec={"limits": {"memory_mb": 2048}},
    )


def test_snapshot_rows_round_trip(tmp_path):
    rows = [snapshot(1), snapshot(2, commit=None)]
    write_rows(rows, tmp_path / "data", SnapshotRow)
    back = read_rows(tmp_path / "data", SnapshotRow)
    assert back == rows
    assert back[1].commit is None
    assert back[0].files[1].kind == "data"


def test_task_rows_with_nested_dicts_round_trip(tmp_path):
    rows = [task(1), task(2)]
    write_rows(rows, tmp_path / "data", TaskRow)
    assert read_rows(tmp_path / "data", TaskRow) == rows


def test_scalar_columns_are_typed_and_nested_columns_are_json(tmp_path):
    paths = write_rows([snapshot(1)], tmp_path / "data", SnapshotRow)
    table = pq.read_table(paths[0])
    assert table.schema.field("repo_id").type == pa.string()
    assert table.schema.field("commit").type == pa.string()
    files = json.loads(table.column("files")[0].as_py())
    assert files[0]["path"] == "analysis.py"
    assert arrow_schema(FileEntry).field("size").type == pa.int64()


def test_same_rows_give_byte_identical_shards(tmp_path):
    rows = [snapshot(i) for i in range(3)]
    first = write_rows(rows, tmp_path / "a", SnapshotRow)
    second = write_rows(rows, tmp_path / "b", SnapshotRow)
    assert [p.name for p in first] == ["data-00000.parquet"]
    assert first[0].read_bytes() == second[0].read_bytes()


def test_different_rows_give_different_shards(tmp_path):
    first = write_rows([snapshot(1)], tmp_path / "a", SnapshotRow)
    second = write_rows([snapshot(2)], tmp_path / "b", SnapshotRow)
    assert first[0].read_bytes() != second[0].read_bytes()


def test_rewrite_replaces_old_shards(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "SHARD_ROWS", 2)
    folder = tmp_path / "data"
    assert len(write_rows([snapshot(i) for i in range(5)], folder, SnapshotRow)) == 3
    write_rows([snapshot(9)], folder, SnapshotRow)
    assert sorted(p.name for p in folder.iterdir()) == ["data-00000.parquet"]
    assert [r.repo_id for r in read_rows(folder, SnapshotRow)] == ["org/repo-9"]


def test_rows_keep_order_across_shards(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "SHARD_ROWS", 2)
    rows = [snapshot(i) for i in range(5)]
    write_rows(rows, tmp_path / "data", SnapshotRow)
    assert [r.repo_id for r in read_rows(tmp_path / "data", SnapshotRow)] == [r.repo_id for r in rows]


def test_empty_row_list_reads_back_empty(tmp_path):
    write_rows([], tmp_path / "data", SnapshotRow)
    assert read_rows(tmp_path / "data", SnapshotRow) == []


def test_reading_folder_without_shards_raises_helpful_error(tmp_path):
    (tmp_path / "data").mkdir()
    with pytest.raises(FileNotFoundError, match="no data-\\*.parquet shards") as info:
        read_rows(tmp_path / "data", SnapshotRow)
    assert str(tmp_path / "data") in str(info.value)
    assert "upstream stage" in str(info.value)


def test_recorder_writes_stats_and_rejects(tmp_path):
    recorder = StageRecorder("verify")
    recorder.reject("t2", "not_reproducible", "field x changed", field="x", spread=0.2)
    recorder.reject("t1", "answer_leak", "statement contains 1.234")
    recorder.reject("t3", "not_reproducible", "field y changed")
    recorder.count("reference_runs_executed", 4)
    recorder.count("reference_runs_executed")
    recorder.count("stochastic_tasks")
    recorder.figures["wall_s"] = 1.5
    recorder.figures["by_task_type"] = {"reproduction": 1}
    recorded = recorder.write([task(1)], TaskRow, tmp_path / "out")

    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats == {"stage": "verify", "accepted": 1, "rejected": 3,
                     "reject_reasons": {"answer_leak": 1, "not_reproducible": 2},
                     "counters": {"reference_runs_total": 5, "stochastic_tasks": 1},
                     "by_task_type": {"reproduction": 1}}
    timings = json.loads((tmp_path / "out" / "timings.json").read_text())
    assert timings == {"stage": "verify", "wall_s": 1.5, "counters": {"reference_runs_executed": 5}}
    # What the stage prints its summary from: everything, as recorded.
    assert recorded["wall_s"] == 1.5 and recorded["counters"]["reference_runs_executed"] == 5
    assert read_rows(tmp_path / "out" / "data", TaskRow) == [task(1)]


def _run_of(recorder: StageRecorder, *, cold: bool, seconds: float) -> StageRecorder:
    """One stage run over the same two items: a cold cache executes both runs, a warm one hits both."""
    recorder.reject("t2", "not_reproducible", "field x changed")
    for _ in range(2):
        recorder.count("reference_runs_executed" if cold else "reference_runs_cached")
    recorder.count("executions_run" if cold else "executions_cached", 2)
    recorder.count("answer_fields_data_dependent", 3)
    recorder.figures.update({
        "wall_s": seconds, "cache": {"hits": 0 if cold else 2, "misses": 2 if cold else 0},
        "durations_s": {"t1": seconds / 2}, "environment_ladder": {"host": {"attempts": 2, "run_s": seconds}},
        "traced_slowdown": {"t1": {"plain_s": 0.1, "traced_s": seconds}},
        "llm": {"calls": 2 if cold else 0, "cached_calls": 0 if cold else 2, "cost_usd": 0.01 if cold else 0.0},
        "github": {"requests": 3 if cold else 0, "rate_limit_waits": 1 if cold else 0},
        "executor": {"verify": {"wall_s": seconds, "items_per_s": 2 / seconds}},
        "by_task_type": {"reproduction": 1},
    })
    return recorder


def test_two_runs_over_the_same_inputs_write_identical_stats(tmp_path):
    _run_of(StageRecorder("verify"), cold=True, seconds=9.25).write([task(1)], TaskRow, tmp_path / "cold")
    _run_of(StageRecorder("verify"), cold=False, seconds=0.5).write([task(1)], TaskRow, tmp_path / "warm")
    cold, warm = (tmp_path / "cold" / "stats.json").read_bytes(), (tmp_path / "warm" / "stats.json").read_bytes()
    assert cold == warm
    assert json.loads(cold)["counters"] == {"answer_fields_data_dependent": 3, "executions_total": 2,
                                            "reference_runs_total": 2}
    # The runs differ, and that shows where it belongs.
    assert (tmp_path / "cold" / "timings.json").read_bytes() != (tmp_path / "warm" / "timings.json").read_bytes()
    assert json.loads((tmp_path / "warm" / "timings.json").read_text())["counters"] == {
        "executions_cached": 2, "reference_runs_cached": 2}


def test_no_measured_figure_reaches_stats_json(tmp_path):
    _run_of(StageRecorder("seeds"), cold=True, seconds=3.0).write([], TaskRow, tmp_path / "out")
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    timings = json.loads((tmp_path / "out" / "timings.json").read_text())
    assert not set(stats) & store_module.MEASURED_FIGURES
    assert set(timings) == store_module.MEASURED_FIGURES | {"stage", "counters"}
    assert not [name for name in stats["counters"] if name.endswith(store_module.RUN_COUNTER_SUFFIXES)]


def test_a_stage_with_nothing_measured_still_writes_timings(tmp_path):
    # Every stage declares timings.json as a DVC out, so it must exist even when nothing was timed.
    StageRecorder("decontaminate").write([], TaskRow, tmp_path / "out")
    assert json.loads((tmp_path / "out" / "timings.json").read_text()) == {"stage": "decontaminate"}


def test_rejects_parquet_is_readable_and_sorted(tmp_path):
    recorder = StageRecorder("verify")
    recorder.reject("t2", "not_reproducible", "field x changed", field="x", spread=0.2)
    recorder.reject("t1", "answer_leak", "statement contains 1.234")
    recorder.write([], TaskRow, tmp_path / "out")
    rejects = read_rejects(tmp_path / "out" / "rejects.parquet")
    assert all(isinstance(r, Reject) for r in rejects)
    assert [(r.item_id, r.reason) for r in rejects] == [("t1", "answer_leak"), ("t2", "not_reproducible")]
    assert rejects[1].stage == "verify"
    assert rejects[1].detail == {"field": "x", "spread": 0.2}


def test_recorder_with_no_rejects_writes_empty_rejects_file(tmp_path):
    stats = StageRecorder("seeds").write([], TaskRow, tmp_path / "out")
    assert stats["rejected"] == 0 and stats["reject_reasons"] == {}
    assert read_rejects(tmp_path / "out" / "rejects.parquet") == []


def test_reject_message_is_capped(tmp_path):
    recorder = StageRecorder("s")
    recorder.reject("i", "r", "x" * 5000)
    assert len(recorder.rejects[0].message) == 2000
