"""The sandbox protocol every backend implements, and its request/result types.

A backend prepares an environment for a dependency set once, then runs commands in a
fresh scratch directory holding exactly the files the request supplies. It returns what
happened (exit code, capped output, files written, duration) and a reason code; it never
raises for anything the program does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

# Reason codes a run can end with.
OK = "ok"
NONZERO_EXIT = "nonzero_exit"
TIMEOUT = "timeout"
OUTPUT_LIMIT = "output_limit"
KILLED = "killed_by_signal"
BAD_REQUEST = "bad_request"
# Caps on what one run may hand back (each its own reason, so a reject says which cap it hit).
OUTPUT_TOTAL_LIMIT = "output_total_limit"
OUTPUT_COUNT_LIMIT = "output_count_limit"
OUTPUT_DEPTH_LIMIT = "output_depth_limit"
SCRATCH_FULL = "scratch_full"


class SandboxInfrastructureError(RuntimeError):
    """The host, not the program, made the run fail (the sandbox did not start, quota, ENOSPC).

    Raised instead of returning a result, so it is never cached and never becomes a reject
    of the program: the stage stops with this message and a re-run resumes.
    """


@dataclass(frozen=True)
class PreparedEnv:
    """A runnable environment for one dependency set."""

    spec: dict[str, Any]
    spec_hash: str
    missing: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return not self.missing


@dataclass(frozen=True)
class RunRequest:
    command: tuple[str, ...]
    files: dict[str, bytes]
    timeout_s: float
    env: dict[str, str] = field(default_factory=dict)
    # Working folder of the command, relative to the scratch folder (a folder of ``files``): real
    # scripts open their data relative to where they expect to be started.
    cwd: str = "."
    # Empty folders to create before the run: those of the repository the program writes into (a
    # task's workspace holds only data and program files, and ``open("figs/a.png", "w")`` needs ``figs/``).
    folders: tuple[str, ...] = ()


@dataclass
class RunResult:
    exit_code: int | None
    reason: str
    stdout: str
    stderr: str
    stdout_truncated: bool
    files: dict[str, bytes]
    oversized_files: list[str]
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.reason == OK


class Sandbox(Protocol):
    name: str
    timeout_s: float

    def prepare(self, distributions: list[str], as_of: str | None = None) -> PreparedEnv:
        """An environment with ``distributions``; with ``as_of`` (YYYY-MM-DD), their releases of that day."""
        ...

    def run(self, env: PreparedEnv, request: RunRequest) -> RunResult: ...
