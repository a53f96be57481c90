"""One control group per sandbox run: memory and process count bounded for the whole run.

Rlimits bound each process; a run of many processes (or one writing to its in-memory scratch
folder) needs a bound on the sum, which only a cgroup gives. Works with cgroup v2 (the unified
hierarchy with the memory and pids controllers enabled for us) and v1 (separate ``memory`` and
``pids`` hierarchies). Needs write access to the hierarchy, which in practice means root; without
it ``RunGroup.create`` returns None and the run is bounded per process only (documented in
``local.py``).

Groups live under ``trailforge/`` in each hierarchy. One that a killed pipeline left behind is
removed by the next run that finds it empty.
"""
from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "trailforge"


def _v2_root() -> Path | None:
    controllers = ROOT / "cgroup.controllers"
    if controllers.is_file() and {"memory", "pids"} <= set(controllers.read_text().split()):
        return ROOT
    return None


def _v1_roots() -> tuple[Path, Path] | None:
    memory, pids = ROOT / "memory", ROOT / "pids"
    if (memory / "memory.limit_in_bytes").is_file() and (pids / "cgroup.procs").is_file():
        return memory, pids
    return None


@dataclass
class RunGroup:
    """The folders of one run's group (one per hierarchy) and how to read and end it."""

    folders: tuple[Path, ...]
    version: int

    @classmethod
    def create(cls, memory_bytes: int, max_processes: int) -> "RunGroup | None":
        """A fresh group with the limits set, or None where this host gives us none."""
        name = f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            v2 = _v2_root()
            if v2 is not None:
                parent = v2 / PARENT
                parent.mkdir(exist_ok=True)
                _write(parent / "cgroup.subtree_control", "+memory +pids")
                _sweep(parent)
                folder = parent / name
                folder.mkdir()
                _write(folder / "memory.max", str(memory_bytes))
                _write_if(folder / "memory.swap.max", "0")
                _write(folder / "pids.max", str(max_processes))
                return cls((folder,), 2)
            v1 = _v1_roots()
            if v1 is not None:
                memory, pids = (root / PARENT for root in v1)
                made = []
                for parent in (memory, pids):
                    parent.mkdir(exist_ok=True)
                    _sweep(parent)
                    (parent / name).mkdir()
                    made.append(parent / name)
                _write(made[0] / "memory.limit_in_bytes", str(memory_bytes))
                _write_if(made[0] / "memory.memsw.limit_in_bytes", str(memory_bytes))
                _write(made[1] / "pids.max", str(max_processes))
                return cls(tuple(made), 1)
        except OSError:
            return None
        return None

    def enter(self) -> None:
        """Move the calling process into the group (run in the child before it executes anything)."""
        for folder in self.folders:
            _write(folder / "cgroup.procs", str(os.getpid()))

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run for crossing the memory bound."""
        try:
            if self.version == 2:
                events = dict(line.split() for line in (self.folders[0] / "memory.events").read_text().splitlines())
                return int(events.get("oom_kill", 0)) > 0
            control = dict(line.split() for line in (self.folders[0] / "memory.oom_control").read_text().splitlines())
            return int(control.get("oom_kill", 0)) > 0
        except (OSError, ValueError):
            return False

    def close(self) -> None:
        """Kill whatever is left in the group, then remove it."""
        for folder in self.folders:
            _kill_members(folder)
            for _ in range(200):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def _kill_members(folder: Path) -> None:
    if (folder / "cgroup.kill").exists():
        _write_if(folder / "cgroup.kill", "1")
        return
    for _ in range(100):
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


def _sweep(parent: Path) -> None:
    """Remove groups of runs whose pipeline process is gone (rmdir fails on a group still in use)."""
    for folder in parent.glob("run-*"):
        try:
            pid = int(folder.name.split("-")[1])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
            _kill_members(folder)
            try:
                folder.rmdir()
            except OSError:
                pass


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _write_if(path: Path, value: str) -> None:
    try:
        _write(path, value)
    except OSError:
        pass
