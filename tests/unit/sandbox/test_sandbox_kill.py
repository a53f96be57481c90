"""A pipeline killed with SIGKILL in the middle of a sandbox run leaves no process and no scratch behind.

A separate Python process (the pipeline) runs a program in ``LocalSandbox`` that writes into its
scratch folder and starts two children, one of them in its own session (``os.setsid``), all
sleeping with a unique marker on their command line. When all three are running, the test kills
the pipeline with SIGKILL. With bubblewrap, nothing may survive: no marker process, no other
descendant of the pipeline, no scratch folder, no populated cgroup; the empty group folders the
pipeline could not remove are swept by the next run. With ``isolation=off`` the plain fallback has
nothing tying the run to the pipeline's life: what it leaves is recorded, and the next run's sweep
must still remove the scratch folder.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT, alive_with
from trailforge.sandbox import LocalSandbox, RunRequest
from trailforge.sandbox.cgroup import PARENT
from trailforge.sandbox.local import bwrap_problem

# Reads its marker from the environment, so the pipeline's own command line never carries it.
PIPELINE = """
import os, sys
from trailforge.sandbox import LocalSandbox, RunRequest
box = LocalSandbox(timeout_s=60, isolation=sys.argv[1])
print(box.isolation, box.cgroups, flush=True)
box.run(box.prepare([]), RunRequest(("python", "-c", sys.argv[2], os.environ["TF_KILL_MARKER"]), {}, timeout_s=60))
print("the run returned", flush=True)
"""
PROGRAM = """
import os, subprocess, sys, time
with open("work.txt", "w") as fh:
    fh.write("half done")
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", sys.argv[1]])
subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(60)", sys.argv[1]])
time.sleep(60)
"""
SCRATCH_BASE = Path(tempfile.gettempdir()) / "trailforge-sandbox"
CGROUP_PARENTS = [Path("/sys/fs/cgroup") / name / PARENT for name in ("memory", "pids")]


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of a process, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0].decode(), int(fields[19])


def _processes() -> dict[int, tuple[int, str, int]]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (info := _stat(int(entry.name))) is not None:
            found[int(entry.name)] = info
    return found


def descendants(root: int) -> dict[int, int]:
    """Every live process below ``root`` (host pids), with its start time to tell a reused pid apart."""
    table = _processes()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, state, start) in table.items():
            if ppid == parent and pid not in found and state not in ("Z", "X"):
                found[pid] = start
                frontier.append(pid)
    return found


def still_alive(processes: dict[int, int]) -> list[int]:
    return [pid for pid, start in processes.items()
            if (info := _stat(pid)) is not None and info[2] == start and info[1] not in ("Z", "X")]


def marked(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def listing() -> set[str]:
    """What a run may leave in the temporary folder: tf-sbx-* entries and scratch folders of the fallback."""
    entries = {p.name for p in Path(tempfile.gettempdir()).glob("tf-sbx-*")}
    if SCRATCH_BASE.is_dir():
        entries |= {f"trailforge-sandbox/{p.name}" for p in SCRATCH_BASE.iterdir()}
    return entries


def groups_of(pid: int) -> list[Path]:
    return [folder for parent in CGROUP_PARENTS if parent.is_dir() for folder in parent.glob(f"run-{pid}-*")]


def _members(folder: Path) -> list[str]:
    try:
        return (folder / "cgroup.procs").read_text().split()
    except OSError:
        return []


def _until(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def killed_pipeline(tmp_path):
    """Start a pipeline for an isolation mode, wait until its program is at work, kill it with SIGKILL."""
    started: list[int] = []

    def start(isolation: str) -> dict:
        marker = f"tf-kill-{os.getpid()}-{time.monotonic_ns()}"
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "TF_KILL_MARKER": marker,
               "TRAILFORGE_CACHE_DIR": str(tmp_path / "cache")}
        before = listing()
        proc = subprocess.Popen([sys.executable, "-c", PIPELINE, isolation, PROGRAM], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(proc.pid)
        # At work: the program and both children are running, and the program's file is in its scratch.
        at_work = _until(lambda: len(marked(marker)) >= 3 and any(
            os.path.exists(f"/proc/{pid}/cwd/work.txt") for pid in marked(marker)), 60)
        if not at_work:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the sandboxed program never got to work:\n{out}\n{err}")
        program = next(pid for pid in marked(marker) if os.path.exists(f"/proc/{pid}/cwd/work.txt"))
        scratch = os.readlink(f"/proc/{program}/cwd")
        tree = descendants(proc.pid)
        groups = groups_of(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        started.extend(tree)
        mode = proc.stdout.readline().split()
        return {"pid": proc.pid, "marker": marker, "before": before, "tree": tree, "scratch": scratch,
                "groups": groups, "isolation": mode[0], "cgroups": mode[1] == "True", "killed_at": time.monotonic()}

    yield start
    for pid in started:  # whatever a failed check left running: only processes this test started
        if _stat(pid) is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _leftovers(before: set[str]) -> list[str]:
    """New entries whose owner is gone (another live pipeline's scratch folder is not a leftover)."""
    left = []
    for name in sorted(listing() - before):
        owner = name.split("/", 1)[-1].split("-", 1)[0]
        if not (owner.isdigit() and Path(f"/proc/{owner}").exists()):
            left.append(name)
    return left


def _next_run(isolation: str) -> None:
    box = LocalSandbox(timeout_s=20, isolation=isolation)
    result = box.run(box.prepare([]), RunRequest(("python", "-c", "print('next run')"), {}, timeout_s=20))
    assert result.ok and result.stdout.strip() == "next run", result.stderr


def test_a_killed_pipeline_leaves_no_process_no_scratch_and_no_populated_cgroup(killed_pipeline):
    if bwrap_problem():
        pytest.skip(f"no bubblewrap isolation on this host: {bwrap_problem()}")
    run = killed_pipeline("required")
    assert run["isolation"] == "bwrap"
    assert run["scratch"] == "/tf-scratch", "the scratch folder exists only inside the sandbox"
    assert len(run["tree"]) >= 4, run["tree"]  # bubblewrap, its init, the supervisor, the program, children

    gone = _until(lambda: not alive_with(run["marker"]) and not still_alive(run["tree"]))
    assert gone, (f"survivors {time.monotonic() - run['killed_at']:.1f}s after the kill: marker "
                  f"{marked(run['marker'])}, descendants {still_alive(run['tree'])}")
    # A concurrent run's sweep also kills what is left in a dead pipeline's group (and removes it): when
    # the group is already gone here, the processes may have died by that sweep, not by the kill.
    swept_by_another = run["cgroups"] and not all(g.exists() for g in run["groups"])
    assert _leftovers(run["before"]) == []

    if run["cgroups"]:
        assert run["groups"], "the run had a cgroup of the pipeline's pid"
        assert _until(lambda: not any(_members(g) for g in run["groups"])), \
            {str(g): _members(g) for g in run["groups"]}
        _next_run("required")  # the next run sweeps the empty group folders of a dead pipeline
        assert groups_of(run["pid"]) == [], "a dead pipeline's cgroup folder outlived the next run"
    else:
        _next_run("required")
    assert _leftovers(run["before"]) == []
    if swept_by_another:
        pytest.skip("inconclusive: another run swept this pipeline's cgroup before the survivors were checked")


def test_plain_fallback_leaves_no_scratch_after_the_next_run(killed_pipeline):
    run = killed_pipeline("off")
    assert run["isolation"] == "process"
    scratch = Path(run["scratch"])
    assert scratch.parent == SCRATCH_BASE and scratch.name.startswith(f"{run['pid']}-"), scratch

    survived = not _until(lambda: not alive_with(run["marker"]), seconds=5)
    evidence = (f"marker processes {marked(run['marker'])}, descendants {still_alive(run['tree'])} "
                f"{time.monotonic() - run['killed_at']:.1f}s after the kill; scratch {scratch} "
                f"exists: {scratch.exists()}")
    _next_run("off")  # the next run's sweep removes scratch folders of dead pipelines
    assert not scratch.exists(), f"the killed pipeline's scratch outlived the next run's sweep ({evidence})"
    assert _leftovers(run["before"]) == []
    if survived:
        pytest.xfail("known limit of isolation=off: nothing ties the supervisor and the program to the "
                     f"pipeline's life, so they run on until the supervisor's deadline ({evidence})")
