"""The local backend: each run in its own bubblewrap sandbox, an allow-list of the host.

What a run sees (``isolation`` ``auto`` or ``required``, where ``bwrap`` works): a fresh root holding
read-only binds of the system folders (``/usr`` and the ``/bin``, ``/lib``... links beside it), the
interpreter (or the run's virtual environment) and a few files of ``/etc`` that programs read; its
own ``/proc``, a minimal ``/dev``, private ``/tmp`` and ``/dev/shm``; and a scratch folder that is a
size-capped in-memory filesystem holding exactly the request's files. Nothing else of the host
exists in it: no home folder, no project, no cache, no other release. Every namespace is its own
(mount, PID, network, IPC, UTS, cgroup), a seccomp filter refuses the calls a research program
never needs (new namespaces, mounts, keyrings, BPF, perf, userfaultfd, io_uring, kernel modules),
and the program runs as an unprivileged user: when we are root, a fresh uid per run (so its
process limit is its own and it owns nothing on the host); otherwise the calling user, mapped
through a user namespace.

A small supervisor (``inside.py``) runs in the sandbox around the program. At the exit or the
deadline it kills every other process of the PID namespace, and only then walks the scratch folder
(no link followed, caps on bytes, files and depth) and hands the outputs back through a file
descriptor. So the parent never reads the program's tree, and a run leaves nothing behind: when
the pipeline dies, bubblewrap's ``--die-with-parent`` takes the sandbox with it, and the scratch
folder was never on disk. Memory and process count are bounded for the whole run by a cgroup
where we may create one (root); elsewhere by rlimits per process (address space and, with the
per-run uid, the process count), which is the tightest bound available.

Dependency installs (``environments=venv``) run in the same kind of sandbox, as an unprivileged
user, with the network only for that step and only wheels by default (``wheels_only``): no
repository code, no ``setup.py``, runs during an install. The environment's lock is read by a
normal sandboxed run.

Where bubblewrap cannot run, ``isolation=required`` fails at start naming the reason, and ``auto``
says on stderr that runs are plain subprocesses of the calling user (``isolation=off`` asks for
that): then the program can read whatever that user can read.
"""
from __future__ import annotations

import fcntl
import functools
import importlib.metadata
import json
import os
import platform
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement

from ..cache import stable_hash
from . import inside
from .base import (BAD_REQUEST, KILLED, NONZERO_EXIT, OK, OUTPUT_COUNT_LIMIT, OUTPUT_DEPTH_LIMIT, OUTPUT_LIMIT,
                   OUTPUT_TOTAL_LIMIT, SCRATCH_FULL, TIMEOUT, PreparedEnv, RunRequest, RunResult,
                   SandboxInfrastructureError)
from .cgroup import RunGroup

SCRATCH_MARK = "<scratch>"
SANDBOX_SCRATCH = "/tf-scratch"  # where the scratch folder is inside a sandbox (masked in outputs)
_PASS_THROUGH_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")  # host CPU workarounds, not secrets
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
              "all_proxy")  # only the install step, which runs no repository code, gets these
INSIDE_SOURCE = Path(inside.__file__).read_text(encoding="utf-8")
SUPERVISOR_PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
CAP_NAMES = {"total_bytes": OUTPUT_TOTAL_LIMIT, "file_count": OUTPUT_COUNT_LIMIT, "depth": OUTPUT_DEPTH_LIMIT}
RUN_UID_BASE = 3_000_000_000  # far above login users and the usual subordinate-uid ranges
RUN_UID_SPAN = 1 << 28
INSTALL_UID = RUN_UID_BASE - 1  # one fixed user for installs, so their shared download cache stays theirs
# An installer writes wheels far larger than a program's output cap and runs many threads; its memory
# is bounded by the run's cgroup where there is one, and it runs only the installer (wheels only).
INSTALL_LIMITS = {"RLIMIT_FSIZE": 4 << 30, "RLIMIT_NOFILE": 4096, "RLIMIT_NPROC": 4096, "RLIMIT_CORE": 0}
HOST_GRACE_S = 30.0  # beyond the run's own deadline: supervisor start-up and output collection
# System folders bound read-only (or re-created as the links they are on the host).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives",
             "/etc/fonts", "/etc/mime.types")
ETC_NETWORK_FILES = ("/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/resolv.conf", "/etc/hosts",
                     "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/services")
# Calls a research program never makes and that widen the kernel surface (or escape the namespaces).
DENIED_SYSCALLS = ("keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "mount", "umount2",
                   "pivot_root", "unshare", "setns", "io_uring_setup", "io_uring_enter", "io_uring_register",
                   "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
                   "open_by_handle_at", "name_to_handle_at", "swapon", "swapoff", "reboot", "syslog", "acct",
                   "quotactl", "lookup_dcookie", "fsopen", "fsmount", "fspick", "move_mount", "open_tree")
CLONE_NEWUSER = 0x10000000
# Run inside an environment: its installed distributions and Python version, as JSON (the lock).
LOCK_SCRIPT = ("import importlib.metadata as m, json, platform; "
               "d = {x.metadata['Name']: x.version for x in m.distributions()}; "
               "d['__python__'] = platform.python_version(); print(json.dumps(d, sort_keys=True))")
_warned: set[str] = set()


class SandboxUnavailable(RuntimeError):
    """The recipe demands isolation this host cannot give."""


@functools.cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot isolate runs on this host, or None when a trial sandbox worked."""
    if sys.platform != "linux":
        return f"bubblewrap needs Linux (this is {sys.platform})"
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return "the `bwrap` program is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        return "running as root needs `setpriv` (util-linux) to drop to an unprivileged user"
    trial = [bwrap, *_namespace_flags(network=False), "--die-with-parent", *_system_binds(), "--proc", "/proc",
             "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(trial, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"a trial sandbox did not start: {exc}"
    if done.returncode != 0:
        return f"a trial sandbox failed: {done.stderr.strip()[-300:] or f'exit {done.returncode}'}"
    return None


def _namespace_flags(network: bool) -> list[str]:
    # As root bubblewrap needs no user namespace (and one would keep us uid 0): every other one is
    # unshared and the supervisor drops to an unprivileged uid itself.
    flags = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() != 0:
        flags.append("--unshare-user")
    if not network:
        flags.append("--unshare-net")
    return flags


def _system_binds() -> list[str]:
    args = []
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    return args


def _visible(path: str) -> bool:
    """Whether ``path`` is already inside one of the system binds."""
    return any(path == d or path.startswith(d + os.sep) for d in SYSTEM_DIRS if not os.path.islink(d))


def _keep_paths(interpreter: str) -> list[str]:
    """What the program needs to see beyond the system folders: the interpreter's prefixes and venv."""
    venv = os.path.dirname(os.path.dirname(os.path.abspath(interpreter)))
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, venv, os.path.dirname(os.path.realpath(interpreter)),
                                           os.path.dirname(os.path.realpath(sys.executable)))}
    paths |= {os.path.abspath(p) for p in (venv,)}  # the venv as named, when it is reached through a link
    paths = {p for p in paths if p not in ("/", "") and not _visible(p)}
    return sorted(p for p in paths if not any(p.startswith(other + os.sep) for other in paths))


def _parents(paths: list[str]) -> list[str]:
    """bwrap makes missing mount points 0700 as root; make every parent folder 0755 so the user can pass."""
    args, made = [], set()
    for path in paths:
        parts = PurePosixPath(path).parts
        for i in range(2, len(parts)):
            parent = str(PurePosixPath(*parts[:i]))
            if parent not in made and not _visible(parent):
                made.add(parent)
                args += ["--perms", "0755", "--dir", parent]
    return args


@functools.cache
def _seccomp_program() -> bytes | None:
    """The compiled filter (libseccomp through pyseccomp), or None where either is missing."""
    try:
        import pyseccomp as seccomp

        rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        for name in DENIED_SYSCALLS:
            try:
                rules.add_rule(seccomp.ERRNO(1), name)
            except (RuntimeError, ValueError, OSError):
                continue  # a call this architecture does not have
        rules.add_rule(seccomp.ERRNO(1), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
        rules.add_rule(seccomp.ERRNO(38), "clone3")  # ENOSYS: the C library falls back to clone, which is checked
        with tempfile.TemporaryFile() as fh:
            rules.export_bpf(fh)
            fh.seek(0)
            return fh.read()
    except Exception:  # noqa: BLE001 - no library, no libseccomp, unknown architecture: run without the filter
        return None


def _data_fd(data: bytes) -> int:
    fd = os.memfd_create("tf-sandbox", 0) if hasattr(os, "memfd_create") else _unlinked_fd()
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _unlinked_fd() -> int:
    fd, path = tempfile.mkstemp(prefix="tf-sbx-fd-")
    os.unlink(path)
    return fd


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        print(f"trailforge: WARNING: {message}", file=sys.stderr, flush=True)


class LocalSandbox:
    name = "local"

    def __init__(
        self,
        timeout_s: float = 120.0,
        max_stdout_bytes: int = 200_000,
        max_output_file_bytes: int = 5_000_000,
        memory_mb: int = 2048,
        max_processes: int = 256,
        network: str = "none",
        require_network_isolation: bool = False,
        isolation: str = "auto",
        environments: str = "host",
        venv_root: str | None = None,
        hidden_paths: tuple[str, ...] = (),
        max_output_total_bytes: int = 50_000_000,
        max_output_files: int = 10_000,
        max_output_depth: int = 64,
        max_scratch_mb: int = 1024,
        wheels_only: bool = True,
        installer: str = "uv",
        index_url: str | None = None,
        find_links: tuple[str, ...] = (),
        no_index: bool = False,
        max_timeout_s: float = 600.0,
    ):
        self.hidden_paths = tuple(hidden_paths)  # more host folders to mask if they fall inside a bind
        self.environments = environments
        self.venv_root = venv_root or os.path.join(os.environ.get("TRAILFORGE_CACHE_DIR", ".trailforge/cache"), "venvs")
        self.timeout_s = timeout_s  # what a program run asks for unless its caller says otherwise
        self.max_timeout_s = max(max_timeout_s, timeout_s)  # what any one request may get
        self.max_stdout_bytes = max_stdout_bytes
        self.max_output_file_bytes = max_output_file_bytes
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.network = network
        self.caps = {"file_bytes": max_output_file_bytes, "total_bytes": max_output_total_bytes,
                     "files": max_output_files, "depth": max_output_depth}
        self.max_scratch_mb = max_scratch_mb
        self.wheels_only = wheels_only
        self.installer = installer
        # Whether prepare() can install other releases (a venv per dependency set, dated by uv): the seeds
        # stage climbs its dependency ladder only then.
        self.installs_releases = environments == "venv" and installer == "uv"
        self._failed_builds: dict[str, str] = {}  # environment key -> why its install failed, in this process
        self.index_url = index_url
        self.find_links = tuple(find_links)
        self.no_index = no_index
        problem = bwrap_problem() if isolation != "off" else "sandbox.isolation is 'off'"
        self.isolation = "bwrap" if problem is None else "process"
        if isolation == "required" and problem:
            raise SandboxUnavailable(
                f"sandbox.isolation is 'required' but bubblewrap cannot isolate runs here: {problem}; install "
                "bubblewrap, use sandbox=docker, or set sandbox.isolation=auto to accept plain subprocesses")
        if isolation == "auto" and problem:
            _warn_once(f"sandbox.isolation=auto downgraded to plain subprocesses ({problem}): programs run as "
                       f"uid {os.geteuid()} and can read every file that user can; install bubblewrap or use "
                       "sandbox=docker for isolation, sandbox.isolation=required to make this an error")
        self.isolate_network = network == "none" and self.isolation == "bwrap"
        if network == "none" and require_network_isolation and not self.isolate_network:
            raise SandboxUnavailable(
                "sandbox.require_network_isolation is true but this host cannot put runs in their own network "
                f"namespace ({problem}); install bubblewrap, use sandbox=docker, or set "
                "sandbox.require_network_isolation=false")
        self.seccomp = self.isolation == "bwrap" and _seccomp_program() is not None
        self.cgroups = self.isolation == "bwrap" and os.geteuid() == 0 and _cgroups_work()

    @property
    def namespaces(self) -> bool:
        return self.isolation == "bwrap"

    @classmethod
    def from_config(cls, config) -> "LocalSandbox":
        return cls(
            timeout_s=config.timeout_s,
            max_timeout_s=config.max_timeout_s,
            max_stdout_bytes=config.max_stdout_bytes,
            max_output_file_bytes=config.max_output_file_bytes,
            memory_mb=config.memory_mb,
            max_processes=config.max_processes,
            network=config.network,
            require_network_isolation=config.require_network_isolation,
            isolation=config.isolation,
            environments=config.environments,
            venv_root=config.venv_root,
            max_output_total_bytes=config.max_output_total_bytes,
            max_output_files=config.max_output_files,
            max_output_depth=config.max_output_depth,
            max_scratch_mb=config.max_scratch_mb,
            wheels_only=config.wheels_only,
            installer=config.installer,
            index_url=config.index_url,
            find_links=tuple(config.find_links),
            no_index=config.no_index,
        )

    def _spec_common(self) -> dict:
        return {
            "network": "none" if self.isolate_network else self.network,
            "isolation": self.isolation,
            "limits": {"memory_mb": self.memory_mb, "max_processes": self.max_processes},
        }

    def prepare(self, distributions: list[str], as_of: str | None = None) -> PreparedEnv:
        """``host``: the running interpreter, reporting what it lacks. ``venv``: one virtual
        environment per dependency set (and release date), installed once and reused (see ``prepare_venv``)."""
        if self.environments == "venv":
            return self.prepare_venv(distributions, as_of)
        if as_of is not None:
            error = f"sandbox.environments=host cannot install releases as of {as_of} (use environments=venv)"
            spec = {"backend": "local", "error": error}
            return PreparedEnv(spec=spec, spec_hash=stable_hash(spec), missing=(error,))
        packages, missing = {}, []
        for spec in sorted(set(distributions)):
            requirement = Requirement(spec)
            try:
                version = importlib.metadata.version(requirement.name)
            except importlib.metadata.PackageNotFoundError:
                missing.append(spec)
                continue
            if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
                missing.append(f"{spec} (the host has {version})")
                continue
            packages[requirement.name] = version
        spec = {"backend": "local", "python": platform.python_version(), "packages": packages, **self._spec_common()}
        return PreparedEnv(spec=spec, spec_hash=stable_hash(spec), missing=tuple(missing))

    def prepare_venv(self, distributions: list[str], as_of: str | None = None) -> PreparedEnv:
        """A virtual environment per dependency set under ``venv_root``, keyed by its hash.

        With ``as_of`` the installer takes only releases uploaded before the end of that day
        (``uv pip install --exclude-newer``): the libraries of a repository's era.

        Built in a temporary folder and renamed into place when the install succeeded, so a killed
        build is never reused. The install runs sandboxed (see ``_install``); the lock is what
        ``importlib.metadata`` sees inside the environment, read by a sandboxed run.
        """
        requirements = sorted(set(distributions))
        refused = [f"{spec} ({why})" for spec in requirements if (why := refused_requirement(spec))]
        if refused:
            spec = {"backend": "local", "environment": "venv", "error": f"refused requirements: {', '.join(refused)}"}
            return PreparedEnv(spec=spec, spec_hash=stable_hash(spec), missing=tuple(f"refused {r}" for r in refused))
        if as_of is not None and (self.installer != "uv" or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", as_of)):
            error = (f"cannot install releases as of {as_of!r}: needs sandbox.installer=uv and a YYYY-MM-DD date"
                     f" (installer is {self.installer})")
            spec = {"backend": "local", "environment": "venv", "error": error}
            return PreparedEnv(spec=spec, spec_hash=stable_hash(spec), missing=(error,))
        identity = {"python": platform.python_version(), "requirements": requirements,
                    "wheels_only": self.wheels_only, "index": [self.index_url, list(self.find_links), self.no_index]}
        if as_of is not None:  # only then, so the environments of current releases keep their folders
            identity["as_of"] = as_of
        key = stable_hash(identity)[:16]
        root = Path(self.venv_root).resolve()
        target = root / key
        error = self._failed_builds.get(key)
        if error is None and not (target / "lock.json").is_file():
            root.mkdir(parents=True, exist_ok=True)
            # One build per environment at a time, across threads and processes: two candidates with the same
            # dependency set used to build it side by side, and one removed the folder the other had just renamed.
            locks = root / ".locks"  # kept: unlinking a lock file others wait on would let two builds start
            locks.mkdir(exist_ok=True)
            with open(locks / f"{key}.lock", "a") as guard:
                fcntl.flock(guard, fcntl.LOCK_EX)
                try:
                    if not (target / "lock.json").is_file():
                        error = self._build_once(root, key, target, requirements, as_of)
                finally:
                    fcntl.flock(guard, fcntl.LOCK_UN)
            if error is not None:  # this process does not try the same failing install again
                self._failed_builds[key] = error
        if error is not None:
            spec = {"backend": "local", "environment": "venv", "error": error}
            return PreparedEnv(spec=spec, spec_hash=stable_hash(spec), missing=(error,))
        lock = json.loads((target / "lock.json").read_text())
        spec = {
            "backend": "local",
            "environment": "venv",
            "interpreter": str(target / "bin" / "python"),
            "python": lock.pop("__python__"),
            "requirements": requirements,
            **({"as_of": as_of} if as_of else {}),
            "packages": lock,
            **self._spec_common(),
        }
        return PreparedEnv(spec=spec, spec_hash=stable_hash({k: v for k, v in spec.items() if k != "interpreter"}))

    def _build_once(self, root: Path, key: str, target: Path, requirements: list[str], as_of: str | None) -> str | None:
        """Build the environment in a temporary folder and rename it into place; None, or what failed."""
        building = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
        building.chmod(0o755)  # mkdtemp makes it private; sandboxed runs must read it
        try:
            error = self._build_venv(building, requirements, as_of)
            if error is None:
                if target.exists():  # a leftover without lock.json: an interrupted build of an older version
                    shutil.rmtree(target)
                building.rename(target)
            return error
        finally:
            shutil.rmtree(building, ignore_errors=True)

    def _build_venv(self, folder: Path, requirements: list[str], as_of: str | None = None) -> str | None:
        """Create a venv in ``folder`` and install ``requirements``; None, or what failed (naming the requirement)."""
        base = os.path.realpath(sys._base_executable if hasattr(sys, "_base_executable") else sys.executable)
        made = subprocess.run([base, "-m", "venv", *(["--without-pip"] if self.installer == "uv" else []), str(folder)],
                              capture_output=True, text=True, timeout=300)
        if made.returncode != 0:
            return f"cannot create a virtual environment: {made.stderr.strip()[-300:]}"
        pristine = _Pristine(folder)  # what a wheel's data files may overwrite, put back after the install
        if requirements:
            code, log = self._install(folder, requirements, as_of)
            if code != 0:
                failing = _failing_requirement(log, requirements)
                lines = [line for line in log.strip().splitlines() if line.strip()]
                tail = " ".join(lines[-2:])[-400:]
                if self.wheels_only and _no_wheel(log):
                    return (f"installing {failing or ' '.join(requirements)} refused: no wheel for this platform "
                            f"and source builds are off (sandbox.wheels_only): {tail}")
                return f"installing {failing or ' '.join(requirements)} failed: {tail}"
        pristine.restore()
        try:
            lock = read_lock(folder)
        except ValueError as exc:
            return f"cannot list the environment's packages: {exc}"
        (folder / "lock.json").write_text(json.dumps(lock, sort_keys=True))
        return None

    def _install(self, folder: Path, requirements: list[str], as_of: str | None = None) -> tuple[int, str]:
        """Install into ``folder`` inside a sandbox with network, as an unprivileged user; (exit code, log)."""
        cache = Path(self.venv_root).resolve() / (".uv-cache" if self.installer == "uv" else ".pip-cache")
        cache.mkdir(parents=True, exist_ok=True)
        info = os.lstat(cache)
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or \
                info.st_uid not in (os.geteuid(), INSTALL_UID):
            raise SandboxInfrastructureError(f"the install cache {cache} is not a folder of ours; remove it")
        python = folder / "bin" / "python"
        if self.installer == "uv":
            uv = _uv_binary()
            command = [uv, "pip", "install", "--no-config", "--python", str(python), "--link-mode", "copy",
                       *(["--no-build"] if self.wheels_only else []),
                       *(["--exclude-newer", f"{as_of}T23:59:59Z"] if as_of else [])]
        else:
            uv = None
            command = [str(python), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
                       *(["--only-binary", ":all:"] if self.wheels_only else [])]
        if self.index_url:
            command += ["--index-url", self.index_url]
        if self.no_index:
            command.append("--no-index")
        for link in self.find_links:
            command += ["--find-links", os.path.abspath(link)]
        command += list(requirements)
        ca = next((p for p in ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
                   if os.path.isfile(p)), None)
        env = {"PATH": f"{folder / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(folder), "LANG": "C.UTF-8",
               "UV_CACHE_DIR": str(cache), "PIP_CACHE_DIR": str(cache), "UV_PYTHON_DOWNLOADS": "never",
               "PYTHONNOUSERSITE": "1", **({"SSL_CERT_FILE": ca, "PIP_CERT": ca} if ca else {}),
               **{k: os.environ[k] for k in _PROXY_ENV if k in os.environ}}
        if self.isolation != "bwrap":
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=env, cwd=folder,
                                  stdin=subprocess.DEVNULL)
            return done.returncode, done.stdout + done.stderr
        uid = INSTALL_UID if os.geteuid() == 0 else None
        writable = [str(folder), str(cache)]
        if uid is not None:
            for path in writable:
                _chown_tree(Path(path), uid)
        readable = [*(str(Path(link).resolve()) for link in self.find_links), *([os.path.dirname(uv)] if uv else [])]
        try:
            result = self._sandboxed(command, {}, env, timeout_s=1800.0, interpreter=str(python), network=True,
                                     writable=writable, readable=readable, uid=uid, etc=ETC_FILES + ETC_NETWORK_FILES,
                                     limits=INSTALL_LIMITS)
        finally:
            if uid is not None:
                _chown_tree(folder, 0)  # the environment is root's again: no later run can change it
        return (0 if result.ok else (result.exit_code or 1)), result.stdout + result.stderr

    def run(self, env: PreparedEnv, request: RunRequest) -> RunResult:
        bad = [p for p in request.files if not _safe_relative(p)]
        if bad:
            return _failed(BAD_REQUEST, f"refusing file paths outside the scratch directory: {bad[:3]}")
        interpreter = env.spec.get("interpreter", sys.executable)
        command = [interpreter if part == "python" else part for part in request.command]
        child_env = {
            "PATH": f"{Path(interpreter).parent}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTHONIOENCODING": "utf-8",
            "MPLBACKEND": "Agg",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        child_env.update({k: os.environ[k] for k in _PASS_THROUGH_ENV if k in os.environ})
        child_env.update(request.env)
        # The request's time is the caller's (a traced run, an eval, an agent's command), bounded only by the ceiling.
        timeout = min(request.timeout_s, self.max_timeout_s)
        if not _safe_relative(request.cwd) and request.cwd != ".":
            return _failed(BAD_REQUEST, f"refusing a working folder outside the scratch directory: {request.cwd!r}")
        if not all(_safe_relative(folder) for folder in request.folders):
            return _failed(BAD_REQUEST, f"refusing folders outside the scratch directory: {list(request.folders)[:3]}")
        if self.isolation == "bwrap":
            uid = RUN_UID_BASE + secrets.randbelow(RUN_UID_SPAN) if os.geteuid() == 0 else None
            return self._sandboxed(command, request.files, child_env, timeout, interpreter, network=not self.isolate_network,
                                   uid=uid, cwd=request.cwd, folders=request.folders)
        return self._plain(command, request.files, child_env, timeout, interpreter, cwd=request.cwd,
                           folders=request.folders)

    def _limits(self, timeout: float) -> dict[str, int]:
        mem = self.memory_mb * 1024 * 1024
        return {"RLIMIT_AS": mem, "RLIMIT_CPU": int(timeout) + 2, "RLIMIT_FSIZE": self.max_output_file_bytes,
                "RLIMIT_NOFILE": 256, "RLIMIT_NPROC": self.max_processes, "RLIMIT_CORE": 0}

    def _sandboxed(self, command: list[str], files: dict[str, bytes], env: dict[str, str], timeout_s: float,
                   interpreter: str, network: bool, uid: int | None, writable: list[str] = (),
                   readable: list[str] = (), etc: tuple[str, ...] = ETC_FILES,
                   limits: dict[str, int] | None = None, cwd: str = ".", folders=()) -> RunResult:
        """One bubblewrap sandbox around the supervisor, which runs ``command`` in the scratch folder."""
        scratch = SANDBOX_SCRATCH
        keep = sorted(set(_keep_paths(interpreter)) | {p for p in readable if not _visible(p)})
        scratch_bytes = self.max_scratch_mb * 1024 * 1024
        # Order matters: a later mount hides what an earlier one put below its folder, so the private
        # /tmp comes before any bind that may live in the host's /tmp.
        # /tmp and /dev/shm are the run's own (multiprocessing needs /dev/shm); /proc/sys is read-only, since
        # the supervisor is uid 0 in here and sysctl writes check nothing else.
        mounts = [*_system_binds(), "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev",
                  "--size", str(64 << 20), "--perms", "1777", "--tmpfs", "/dev/shm",
                  "--size", str(64 << 20), "--perms", "1777", "--tmpfs", "/tmp"]
        etc = [path for path in etc if os.path.exists(path)]
        mounts += _parents(etc + ["/etc/passwd"] + keep + [p for p in writable if not _visible(p)])
        for path in etc:
            mounts += ["--ro-bind", path, path]
        for path in keep:
            mounts += ["--ro-bind", path, path]
        for path in writable:
            mounts += ["--bind", path, path]
        for path in self._masked(keep + list(writable)):
            mounts += ["--tmpfs", path]
        fds: list[int] = []
        try:
            user = uid if uid is not None else os.geteuid()
            passwd = f"root:x:0:0:root:/root:/bin/sh\nsandbox:x:{user}:{user}:sandbox:{scratch}:/bin/sh\n"
            group = f"root:x:0:\nsandbox:x:{user}:\n"
            for path, text in (("/etc/passwd", passwd), ("/etc/group", group)):
                fds.append(_data_fd(text.encode()))
                mounts += ["--ro-bind-data", str(fds[-1]), path]
            program = _seccomp_program() if self.seccomp else None
            if program is not None:
                fds.append(_data_fd(program))
                mounts += ["--seccomp", str(fds[-1])]
            mounts += ["--size", str(scratch_bytes), "--perms", "0755", "--tmpfs", scratch, "--chdir", scratch]
            # The root of the sandbox is bubblewrap's own tmpfs, and without root its folders (/etc, /var, the
            # mount points) belong to the calling user, so a program could write there. Every mount point
            # exists by now: the root goes read-only, while /tmp, /dev/shm, the scratch and the writable
            # binds are mounts of their own and stay writable.
            mounts += ["--remount-ro", "/"]
            if os.geteuid() == 0:
                mounts += ["--cap-drop", "ALL", *[a for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN")
                                                  for a in ("--cap-add", cap)]]
            with tempfile.TemporaryFile() as result_file, tempfile.TemporaryFile() as out, \
                    tempfile.TemporaryFile() as err:
                config = {"command": command, "timeout_s": timeout_s, "uid": uid, "setpriv": shutil.which("setpriv"),
                          "limits": limits or self._limits(timeout_s), "caps": self.caps, "scratch": scratch,
                          "result_fd": result_file.fileno(), "kill": "namespace", "cwd": cwd,
                          "folders": list(folders)}
                buffer = _FrameBuffer()
                inside.write_frames(buffer, config, files)
                config_fd = _data_fd(buffer.getvalue())
                fds.append(config_fd)
                # The supervisor runs on our own interpreter, never the environment's: a wheel may rewrite
                # the environment's pyvenv.cfg, and `-I -S` does not stop Python from reading that file.
                bwrap = [shutil.which("bwrap"), *_namespace_flags(network), "--die-with-parent", "--new-session",
                         "--hostname", "sandbox", *mounts, "--", SUPERVISOR_PYTHON, "-I", "-S", "-c", INSIDE_SOURCE,
                         str(config_fd)]
                run_env = {**env, "HOME": scratch, "TMPDIR": f"{scratch}/.tmp"}
                group_ = RunGroup.create(self.memory_mb * 1024 * 1024, self.max_processes + 16) \
                    if self.cgroups else None
                started = time.monotonic()
                try:
                    proc = subprocess.Popen(bwrap, env=run_env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                            pass_fds=[*fds, result_file.fileno()], start_new_session=True,
                                            preexec_fn=group_.enter if group_ else None)
                except OSError as exc:
                    raise SandboxInfrastructureError(f"cannot start bubblewrap: {exc}") from exc
                killed_by_host = False
                try:
                    proc.wait(timeout=timeout_s + HOST_GRACE_S)
                except subprocess.TimeoutExpired:
                    killed_by_host = True
                    _kill_group(proc.pid)
                    proc.wait()
                finally:
                    oom = group_.oom_killed() if group_ else False
                    if group_:
                        group_.close()
                duration = time.monotonic() - started
                return self._result(result_file, out, err, scratch, duration, killed_by_host, oom, proc.returncode)
        finally:
            for fd in fds:
                os.close(fd)

    def _masked(self, binds: list[str]) -> list[str]:
        """Folders that must not be seen but fall inside a bind (a project or cache under a bound prefix)."""
        candidates = {os.path.realpath(p) for p in (*self.hidden_paths, os.getcwd(), os.path.expanduser("~"),
                                                    os.environ.get("TRAILFORGE_CACHE_DIR", ".trailforge/cache"))}
        roots = [d for d in SYSTEM_DIRS if not os.path.islink(d)] + list(binds)
        masked = []
        for path in sorted(candidates):
            inside_bind = any(path.startswith(root + os.sep) for root in roots)
            holds_bind = any(b == path or b.startswith(path + os.sep) for b in binds)
            if inside_bind and not holds_bind and os.path.isdir(path):
                masked.append(path)
        return masked

    def _result(self, result_file, out, err, scratch: str, duration: float, killed_by_host: bool, oom: bool,
                bwrap_code: int | None) -> RunResult:
        stdout, truncated = _read_capped(out, self.max_stdout_bytes)
        stderr, _ = _read_capped(err, self.max_stdout_bytes)
        stdout, stderr = stdout.replace(scratch, SCRATCH_MARK), stderr.replace(scratch, SCRATCH_MARK)
        result_file.seek(0)
        if result_file.read(len(inside.MAGIC)) != inside.MAGIC:
            raise SandboxInfrastructureError(
                f"the sandbox did not start (bubblewrap exit {bwrap_code}): {stderr.strip()[-400:] or 'no message'}")
        try:
            header, files = inside.read_frames(result_file)
        except (ValueError, KeyError):  # the supervisor died before reporting: the program killed it
            header, files = None, {}
        if header is not None and "error" in header:
            return RunResult(None, BAD_REQUEST, stdout, stderr + header["error"], truncated, {}, [], round(duration, 4))
        if header is None or killed_by_host:
            reason = TIMEOUT if killed_by_host else KILLED
            return RunResult(None, reason, stdout, stderr, truncated, {}, [], round(duration, 4))
        code = header["exit_code"]
        sizes = [out.seek(0, os.SEEK_END), err.seek(0, os.SEEK_END)]
        reason = self._reason(code, header["timed_out"], stderr, sizes, oom)
        if reason in (OK, NONZERO_EXIT) and header["scratch_full"]:
            reason = SCRATCH_FULL
        if header["cap"] and reason in (OK, NONZERO_EXIT):
            reason, files = CAP_NAMES[header["cap"]], {}  # a capped run hands back nothing partial
        return RunResult(exit_code=code, reason=reason, stdout=stdout, stderr=stderr, stdout_truncated=truncated,
                         files=files, oversized_files=header["oversized"], duration_s=header["duration_s"])

    def _reason(self, code: int | None, timed_out: bool, stderr: str, sizes: list[int], oom: bool = False) -> str:
        if timed_out:
            return TIMEOUT
        if code == 0:
            return OK
        if code is not None and code < 0:
            return OUTPUT_LIMIT if -code == signal.SIGXFSZ else KILLED
        if oom:
            return KILLED
        if "[Errno 27] File too large" in stderr or max(sizes) >= self.max_output_file_bytes:
            return OUTPUT_LIMIT  # Python ignores SIGXFSZ, so the limit surfaces as errno 27 instead
        return NONZERO_EXIT

    def _plain(self, command: list[str], files: dict[str, bytes], env: dict[str, str], timeout_s: float,
               interpreter: str, cwd: str = ".", folders=()) -> RunResult:
        """The fallback: the same supervisor as a plain subprocess in a host scratch folder (no isolation)."""
        base = Path(tempfile.gettempdir()) / "trailforge-sandbox"
        base.mkdir(exist_ok=True)
        _sweep_scratch(base)
        scratch = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=base))
        try:
            with tempfile.TemporaryFile() as result_file, tempfile.TemporaryFile() as out, \
                    tempfile.TemporaryFile() as err:
                config = {"command": command, "timeout_s": timeout_s, "uid": None, "setpriv": None,
                          "limits": self._limits(timeout_s), "caps": self.caps, "scratch": str(scratch),
                          "result_fd": result_file.fileno(), "kill": "group", "cwd": cwd,
                          "folders": list(folders)}
                buffer = _FrameBuffer()
                inside.write_frames(buffer, config, files)
                config_fd = _data_fd(buffer.getvalue())
                run_env = {**env, "HOME": str(scratch), "TMPDIR": str(scratch / ".tmp")}
                started = time.monotonic()
                try:
                    proc = subprocess.Popen([interpreter, "-I", "-S", "-c", INSIDE_SOURCE, str(config_fd)], env=run_env,
                                            stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                            pass_fds=[config_fd, result_file.fileno()], start_new_session=True)
                except OSError as exc:
                    return _failed(BAD_REQUEST, f"cannot start {interpreter!r}: {exc}")
                finally:
                    os.close(config_fd)
                killed_by_host = False
                try:
                    proc.wait(timeout=timeout_s + HOST_GRACE_S)
                except subprocess.TimeoutExpired:
                    killed_by_host = True
                _kill_group(proc.pid)
                proc.wait()
                return self._result(result_file, out, err, str(scratch), time.monotonic() - started, killed_by_host,
                                    False, proc.returncode)
        finally:
            remove_tree(scratch)


class _Pristine:
    """The files of a fresh venv that configure its interpreter; an install must not change them."""

    NAMES = ("pyvenv.cfg",)

    def __init__(self, folder: Path):
        self.folder = folder
        self.saved = {name: (folder / name).read_bytes() for name in self.NAMES if (folder / name).is_file()}

    def restore(self) -> None:
        for name, data in self.saved.items():
            path = self.folder / name
            if path.is_symlink() or path.is_dir():
                remove_tree(path)
            path.write_bytes(data)


def read_lock(folder: Path) -> dict[str, str]:
    """Installed distributions and their versions, read from the venv's metadata files (nothing is run:
    starting the environment's interpreter would run every installed ``.pth`` file)."""
    site = sorted(folder.glob("lib/python*/site-packages"))
    if len(site) != 1:
        raise ValueError(f"expected one site-packages folder in {folder}, found {len(site)}")
    lock = {}
    for dist in importlib.metadata.distributions(path=[str(site[0])]):
        name, version = dist.metadata["Name"], dist.version
        if not isinstance(name, str) or not isinstance(version, str) or len(name) > 200 or len(version) > 100:
            raise ValueError("a distribution has no readable name or version")
        lock[name] = version
    lock["__python__"] = platform.python_version()
    return dict(sorted(lock.items()))


class _FrameBuffer(bytearray):
    """A bytes sink with the ``write``/``flush`` that ``inside.write_frames`` uses."""

    def write(self, data: bytes) -> None:
        self.extend(data)

    def flush(self) -> None:
        pass

    def getvalue(self) -> bytes:
        return bytes(self)


def refused_requirement(spec: str) -> str | None:
    """Why a requirement may not be installed (only named releases from the index are), or None."""
    try:
        requirement = Requirement(spec)
    except InvalidRequirement:
        return "not a requirement"
    if requirement.url:
        return "a direct URL"
    return None


def collect_outputs(scratch: Path, inputs: dict[str, bytes], limit: int, skip: tuple[str, ...] = (),
                    caps: dict | None = None) -> tuple[dict[str, bytes], list[str], str | None]:
    """Files the program created or changed, for backends that collect on the host after the run is dead."""
    caps = caps or {"total_bytes": 50_000_000, "files": 10_000, "depth": 64}
    found = inside.collect_tree(str(scratch), inputs, max_file_bytes=limit, max_total_bytes=caps["total_bytes"],
                                max_files=caps["files"], max_depth=caps["depth"], skip=frozenset(skip))
    return found["files"], found["oversized"], CAP_NAMES.get(found["cap"]) if found["cap"] else None


def _uv_binary() -> str:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if not found:
            raise SandboxInfrastructureError("sandbox.installer=uv but no `uv` is installed (pip install uv)") from None
        return found


def _no_wheel(log: str) -> bool:
    lowered = log.lower()
    return any(phrase in lowered for phrase in ("no-build", "has no usable wheels", "no matching distribution",
                                                "building source distributions is disabled", "only-binary",
                                                "no wheels with a matching"))


def _failing_requirement(log: str, requirements: list[str]) -> str | None:
    """The requirement the installer names in its error, so a reject says which one broke the install."""
    lowered = log.lower()
    for requirement in requirements:
        name = Requirement(requirement).name.lower()
        for phrase in (f"no matching distribution found for {name}", f"satisfies the requirement {name}",
                       f"failed building wheel for {name}", f"because {name}", f"`{name}", f"{name}=="):
            if phrase in lowered and ("error" in lowered or phrase.startswith("no")):
                return requirement
        if f"collecting {name}" in lowered and "error" in lowered.split(f"collecting {name}", 1)[1][:2000]:
            return requirement
    return None


def remove_tree(path: Path) -> None:
    """Delete a scratch tree of any depth (shutil.rmtree recurses and fails past ~1000 levels)."""
    done = subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True)
    if done.returncode != 0 and os.path.exists(path):
        shutil.rmtree(path, ignore_errors=True)


def _chown_tree(root: Path, uid: int) -> None:
    """Hand a tree of ours to ``uid``, never through a link (os.walk would follow one at the top)."""
    if os.path.islink(root):
        raise SandboxInfrastructureError(f"{root} is a link; refusing to change the owner of what it points at")
    os.lchown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


def _cgroups_work() -> bool:
    group = RunGroup.create(64 << 20, 16)
    if group is None:
        return False
    group.close()
    return True


def _sweep_scratch(base: Path) -> None:
    """Remove scratch folders of pipeline processes that died without cleaning up (plain-process mode)."""
    for folder in base.iterdir():
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def _hand_over(scratch: Path, inputs: dict[str, bytes]) -> None:
    """Give a host scratch folder to nobody (docker's container user): a writable working copy, as in
    the local backend; a changed input comes back as an output."""
    for dirpath, dirnames, filenames in os.walk(scratch):
        os.chown(dirpath, 65534, 65534)
        for name in filenames:
            os.chown(os.path.join(dirpath, name), 65534, 65534)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_capped(source, limit: int) -> tuple[str, bool]:
    """Up to ``limit`` bytes of a path or an open binary file, decoded, and whether there was more."""
    if isinstance(source, (str, Path)):
        with open(source, "rb") as fh:
            return _read_capped(fh, limit)
    size = source.seek(0, os.SEEK_END)
    source.seek(0)
    data = source.read(limit)
    return data.decode("utf-8", errors="replace"), size > limit


def _safe_relative(rel: str) -> bool:
    path = PurePosixPath(rel)
    return bool(rel) and not path.is_absolute() and ".." not in path.parts


def _failed(reason: str, message: str) -> RunResult:
    return RunResult(None, reason, "", message, False, {}, [], 0.0)
