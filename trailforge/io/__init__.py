"""Stage I/O: typed rows, parquet shards, rejects and stats."""
from .rows import AnswerField, FileEntry, Reject, RepoRow, SeedRow, SnapshotRow, TaskRow, VerifiedTaskRow, WrittenFile
from .store import StageRecorder, read_rejects, read_rows, write_rows

__all__ = [
    "AnswerField", "FileEntry", "Reject", "RepoRow", "SeedRow", "SnapshotRow", "StageRecorder", "TaskRow",
    "VerifiedTaskRow", "WrittenFile", "read_rejects", "read_rows", "write_rows",
]
