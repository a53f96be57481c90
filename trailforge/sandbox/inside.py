"""The supervisor that runs inside a sandbox, around the untrusted program (standard library only).

The local backend starts it as ``python -I -S inside.py CONFIG_FD`` inside bubblewrap; the docker
backend and the plain-process fallback use its ``collect_tree`` on their own scratch folders. It:

1. reads its config (JSON) and the run's input files from one file descriptor and writes them
   into the scratch folder (inputs read-only, folders owned by the program's user);
2. starts the program with its resource limits, as an unprivileged user where it was given one;
3. at the exit or the deadline, kills every other process it can see (inside a PID namespace that
   is the whole run) and waits until none is left;
4. only then walks the scratch folder without following a link, under caps on bytes, file count
   and depth, and writes the result and the files to the result descriptor.

Why inside: when the program is dead nothing can change the tree while it is read, and whatever
the walk reads is only what the sandbox itself could see, so a race or a trick in the tree can
never reach a host file. Nothing here imports trailforge, and the interpreter runs isolated
(``-I -S``) so that no ``.pth`` file or variable of the program's environment runs in it.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time

MAGIC = b"TFSBX1\n"  # written before the program starts: without it the sandbox itself failed
SKIP_PARTS = frozenset({"__pycache__", ".tmp"})  # bytecode and the run's temp folder are never outputs


def collect_tree(root: str, inputs: dict[str, bytes], *, max_file_bytes: int, max_total_bytes: int,
                 max_files: int, max_depth: int, skip: frozenset[str] = frozenset()) -> dict:
    """Files under ``root`` that the program created or changed, walked without following links.

    Iterative (no recursion limit), descends through directory file descriptors opened with
    ``O_NOFOLLOW`` (a folder swapped for a link is never entered), reads only regular files
    opened with ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO never blocks), and stops at the first cap:
    ``cap`` then names it (``total_bytes``, ``file_count`` or ``depth``). Files over
    ``max_file_bytes`` are only named. Order is that of ``os.walk`` with sorted names, so the
    result is the same on every backend.
    """
    files: dict[str, bytes] = {}
    oversized: list[str] = []
    total = 0
    cap = None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(root, flags | os.O_DIRECTORY)
    except OSError:
        return {"files": files, "oversized": oversized, "cap": None}
    stack = [(top, "", 0)]
    try:
        while stack and cap is None:
            dir_fd, prefix, depth = stack.pop()
            try:
                entries = sorted(os.listdir(dir_fd))
            except OSError:
                os.close(dir_fd)
                continue
            subdirs = []
            for name in entries:
                if not name.isprintable() or not _utf8(name):
                    continue  # a name the rest of the pipeline cannot store as text is never an output
                rel = f"{prefix}{name}"
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    if name not in SKIP_PARTS:
                        subdirs.append(name)
                    continue
                if not stat.S_ISREG(info.st_mode) or rel in skip:
                    continue  # links, FIFOs, sockets and devices are never outputs
                if info.st_size > max_file_bytes:
                    oversized.append(rel)
                    continue
                data = _read_regular(name, dir_fd, max_file_bytes)
                if data is None or inputs.get(rel) == data:
                    continue
                if len(files) + 1 > max_files:
                    cap = "file_count"
                    break
                if total + len(data) > max_total_bytes:
                    cap = "total_bytes"
                    break
                files[rel] = data
                total += len(data)
            if cap is None and subdirs:
                if depth + 1 > max_depth:
                    cap = "depth"
                else:
                    for name in reversed(subdirs):
                        try:
                            child = os.open(name, flags | os.O_DIRECTORY, dir_fd=dir_fd)
                        except OSError:
                            continue
                        stack.append((child, f"{prefix}{name}/", depth + 1))
            os.close(dir_fd)
    finally:
        for dir_fd, _, _ in stack:
            os.close(dir_fd)
    return {"files": files, "oversized": oversized, "cap": cap}


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: bytes that were not UTF-8
        return False
    return True


def _read_regular(name: str, dir_fd: int, limit: int) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= limit else None
    finally:
        os.close(fd)


def read_frames(stream) -> tuple[dict, dict[str, bytes]]:
    """A header line of JSON, then the bytes of each file it lists, in order."""
    header = json.loads(stream.readline())
    files = {}
    for entry in header.pop("files"):
        data = stream.read(entry["size"])
        if len(data) != entry["size"]:
            raise ValueError(f"truncated frame for {entry['path']!r}")
        files[entry["path"]] = data
    return header, files


def write_frames(stream, header: dict, files: dict[str, bytes]) -> None:
    listing = [{"path": path, "size": len(data)} for path, data in files.items()]
    stream.write(json.dumps({**header, "files": listing}).encode() + b"\n")
    for data in files.values():
        stream.write(data)
    stream.flush()


def _place_inputs(scratch: str, inputs: dict[str, bytes], uid: int | None, folders=()) -> None:
    os.makedirs(os.path.join(scratch, ".tmp"), exist_ok=True)
    for rel in folders:  # checked by the caller: relative, inside the scratch folder
        os.makedirs(os.path.join(scratch, rel), exist_ok=True)
    for rel, data in inputs.items():
        path = os.path.join(scratch, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
    # A writable working copy: research scripts write next to themselves and overwrite committed
    # outputs. Inputs are protected by content, not permissions: a changed input comes back as an
    # output (collect_tree compares bytes), so the caller knows not to take it as data.
    if uid is not None:
        for dirpath, _, filenames in os.walk(scratch):  # only what we just made: no link can be here yet
            os.chown(dirpath, uid, uid)
            for name in filenames:
                os.chown(os.path.join(dirpath, name), uid, uid)


def _limiter(limits: dict):
    def apply() -> None:
        for name, value in limits.items():
            resource.setrlimit(getattr(resource, name), (value, value))
        try:  # the program, not the supervisor, is what the kernel kills first when memory runs out
            with open("/proc/self/oom_score_adj", "w") as fh:
                fh.write("1000")
        except OSError:
            pass

    return apply


def _others_alive() -> bool:
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (1, me):
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    state = fh.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                return True
    return False


def _kill_all(child: subprocess.Popen, whole_namespace: bool) -> None:
    """Kill the program and everything it started; in a PID namespace, every process but us and init."""
    if not whole_namespace:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        child.wait()
        return
    deadline = time.monotonic() + 30
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # a fork racing the sweep is caught by the next one
        except (ProcessLookupError, PermissionError):
            pass
        child.poll()
        if not _others_alive() or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    child.wait()


def _no_dumping() -> None:
    """Refuse ptrace and /proc/<pid>/mem to processes of the same user (the fallback shares our uid)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def main(config_fd: int) -> int:
    with os.fdopen(config_fd, "rb") as stream:
        config, inputs = read_frames(stream)
    _no_dumping()
    result = os.fdopen(config["result_fd"], "wb")
    scratch, uid = config["scratch"], config.get("uid")
    _place_inputs(scratch, inputs, uid, config.get("folders", ()))
    result.write(MAGIC)
    result.flush()
    command = list(config["command"])
    if uid is not None:
        command = [config["setpriv"], f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
                   "--inh-caps=-all", "--bounding-set=-all", "--", *command]
    whole_namespace = config["kill"] == "namespace"
    workdir = os.path.normpath(os.path.join(scratch, config.get("cwd", ".")))
    if not (workdir + os.sep).startswith(os.path.normpath(scratch) + os.sep):
        write_frames(result, {"error": f"working folder {config.get('cwd')!r} is outside the scratch folder"}, {})
        return 0
    if not os.path.isdir(workdir):  # a task's workspace holds only data and program files, not every folder
        os.makedirs(workdir)
        if uid is not None:
            os.chown(workdir, uid, uid)
    started = time.monotonic()
    timed_out = False
    try:
        child = subprocess.Popen(command, cwd=workdir, stdin=subprocess.DEVNULL, preexec_fn=_limiter(config["limits"]),
                                 start_new_session=not whole_namespace, close_fds=True)
    except OSError as exc:
        write_frames(result, {"error": f"cannot start {command[0]!r}: {exc}"}, {})
        return 0
    try:
        child.wait(timeout=config["timeout_s"])
    except subprocess.TimeoutExpired:
        timed_out = True
    duration = time.monotonic() - started
    _kill_all(child, whole_namespace)
    caps = config["caps"]
    collected = collect_tree(scratch, inputs, max_file_bytes=caps["file_bytes"], max_total_bytes=caps["total_bytes"],
                             max_files=caps["files"], max_depth=caps["depth"])
    try:
        usage = os.statvfs(scratch)
        scratch_full = usage.f_bavail * usage.f_frsize < 64 * 1024 and config["kill"] == "namespace"
    except OSError:
        scratch_full = False
    header = {"exit_code": child.returncode, "timed_out": timed_out, "duration_s": round(duration, 4),
              "oversized": collected["oversized"], "cap": collected["cap"], "scratch_full": scratch_full}
    write_frames(result, header, collected["files"])
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
