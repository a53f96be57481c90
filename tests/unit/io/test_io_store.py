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
    recorder.figures["wall_s"] = 1.5
    stats = recorder.write([task(1)], TaskRow, tmp_path / "out")

    on_disk = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert on_disk == stats
    assert stats["stage"] == "verify"
    assert stats["accepted"] == 1 and stats["rejected"] == 3
    assert stats["reject_reasons"] == {"answer_leak": 1, "not_reproducible": 2}
    assert stats["counters"] == {"reference_runs_executed": 5}
    assert stats["wall_s"] == 1.5
    assert read_rows(tmp_path / "out" / "data", TaskRow) == [task(1)]


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
