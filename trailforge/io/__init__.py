"""Stage I/O: typed rows, parquet shards, rejects and stats."""
from .rows import (
    TASK_TYPES, AnswerField, FileEntry, IdeationRow, LineageRow, Reject, RepoRow, SeedRow, SnapshotRow, TaskRow, TrajectoryRow, VerifiedTaskRow,
    WorkflowRow, WrittenFile,
)
from .store import StageRecorder, read_rejects, read_rows, write_rows

__all__ = [
    "TASK_TYPES", "IdeationRow", "LineageRow", "TrajectoryRow", "WorkflowRow", "AnswerField", "FileEntry", "Reject", "RepoRow", "SeedRow", "SnapshotRow", "StageRecorder", "TaskRow",
    "VerifiedTaskRow", "WrittenFile", "read_rejects", "read_rows", "write_rows",
]
