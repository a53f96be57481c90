"""The local backend: a subprocess in a scratch directory.

What it does: a private scratch directory per run, a scrubbed environment (no host
variables, HOME inside the scratch dir), resource limits (address space, CPU time, file
size, open files, processes), its own process group killed as a whole on timeout and
after exit, capped stdout/stderr, and no network through a network namespace
(``unshare -n``) where the host allows it.

When started as root on Linux with ``unshare`` and ``setpriv`` (``sandbox.isolation``
``auto`` or ``required``), each run also gets its own mount and PID namespaces: home
directories (``/root``, ``/home``, ``$HOME``) and ``/tmp`` are hidden behind empty
tmpfs mounts (the interpreter and the scratch directory are mounted back), the root
filesystem is read-only, the program runs as ``nobody`` (so the process limit applies
and nothing root owns is readable), input data files are read-only, and every process
the program leaves behind dies with the namespace.

What it does not do: it is not a security boundary against a determined attacker (no
seccomp filter, the host kernel is shared, ``/dev/shm`` and world-readable files stay
readable). Without the namespaces (not root, or ``isolation=off``) the program runs as
the calling user and can read any file that user can read by absolute path, and a
process limit does not apply to root. Use ``sandbox=docker`` when that matters.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

from packaging.requirements import Requirement

from ..cache import stable_hash
from .base import BAD_REQUEST, KILLED, NONZERO_EXIT, OK, OUTPUT_LIMIT, TIMEOUT, PreparedEnv, RunRequest, RunResult

_SKIP_OUTPUT_PARTS = {"__pycache__", ".tmp"}
SCRATCH_MARK = "<scratch>"
_PASS_THROUGH_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")  # host CPU workarounds, not secrets


class SandboxUnavailable(RuntimeError):
    """The recipe demands isolation this host cannot give."""


def _network_namespace_available() -> bool:
    unshare = shutil.which("unshare")
    if not unshare:
        return False
    try:
        done = subprocess.run([unshare, "-n", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


# Runs as root inside fresh mount + PID (+ network) namespaces, then drops to nobody.
# $1 scratch dir; TF_KEEP / TF_HIDE: paths to keep visible / to hide. /mnt (a private tmpfs here)
# holds the kept paths while the hiding tmpfs mounts go on.
NAMESPACE_SCRIPT = r"""
set -eu
scratch="$1"; shift 1
stage=/mnt
mount --make-rprivate /
mount -t tmpfs -o size=1m tmpfs "$stage"
i=0
for keep in $TF_KEEP "$scratch"; do
  mkdir -p "$stage/$i"; mount --rbind "$keep" "$stage/$i"; i=$((i+1))
done
for hide in $TF_HIDE; do
  if [ -d "$hide" ]; then mount -t tmpfs -o mode=755,size=1m tmpfs "$hide"; fi
done
i=0
for keep in $TF_KEEP "$scratch"; do
  mkdir -p "$keep"; mount --rbind "$stage/$i" "$keep"; i=$((i+1))
done
umount -R -l "$stage"
mount -o remount,bind,ro /
for keep in $TF_KEEP; do mount -o remount,bind,ro "$keep" 2>/dev/null || true; done
if [ -d /dev/shm ]; then mount -t tmpfs -o size=16m tmpfs /dev/shm; fi
cd "$scratch"
exec setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs -- "$@"
"""
NOBODY_UID = 65534
# Run inside an environment: its installed distributions and Python version, as JSON (the lock).
LOCK_SCRIPT = ("import importlib.metadata as m, json, platform; "
               "d = {x.metadata['Name']: x.version for x in m.distributions()}; "
               "d['__python__'] = platform.python_version(); print(json.dumps(d, sort_keys=True))")


def namespaces_available() -> bool:
    """Root, Linux, unshare and setpriv present, and a trial namespace with a read-only remount works."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("setpriv"):
        return False
    probe = "mount --make-rprivate / && mount -o remount,bind,ro / && mount -t tmpfs tmpfs /mnt"
    try:
        done = subprocess.run(["unshare", "--mount", "--pid", "--fork", "--mount-proc", "sh", "-c", probe],
                              capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _keep_paths(interpreter: str = sys.executable) -> list[str]:
    """What the program needs to see: the interpreter, its standard library and installed packages."""
    venv = os.path.dirname(os.path.dirname(os.path.abspath(interpreter)))
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, venv,
                                           os.path.dirname(os.path.realpath(sys.executable)))}
    paths = {p for p in paths if p != "/"}
    return sorted(p for p in paths if not any(p.startswith(other + os.sep) for other in paths))


def _hide_paths() -> list[str]:
    hide = {"/root", "/home", "/tmp", "/var/tmp", os.path.realpath(os.path.expanduser("~"))}
    return sorted(p for p in hide if p not in ("/", "") and os.path.isdir(p))


class LocalSandbox:
    name = "local"

    def __init__(
        self,
        timeout_s: float = 20.0,
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
    ):
        self.hidden_paths = tuple(hidden_paths)  # more host folders to cover (a rollout hides the project)
        self.environments = environments
        self.venv_root = venv_root or os.path.join(os.environ.get("TRAILFORGE_CACHE_DIR", ".trailforge/cache"), "venvs")
        self.timeout_s = timeout_s
        self.max_stdout_bytes = max_stdout_bytes
        self.max_output_file_bytes = max_output_file_bytes
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.network = network
        self.namespaces = isolation != "off" and namespaces_available()
        if isolation == "required" and not self.namespaces:
            raise SandboxUnavailable(
                "sandbox.isolation is 'required' but this host cannot give each run its own mount and PID "
                "namespaces as nobody (needs root, unshare and setpriv); use sandbox=docker, or set "
                "sandbox.isolation=auto to accept a plain subprocess"
            )
        self.isolate_network = False
        if network == "none":
            self.isolate_network = _network_namespace_available()
            if require_network_isolation and not self.isolate_network:
                raise SandboxUnavailable(
                    "sandbox.require_network_isolation is true but this host cannot create a network "
                    "namespace (`unshare -n` failed); run as a user allowed to unshare, use sandbox=docker, "
                    "or set sandbox.require_network_isolation=false"
                )

    @classmethod
    def from_config(cls, config) -> "LocalSandbox":
        return cls(
            timeout_s=config.timeout_s,
            max_stdout_bytes=config.max_stdout_bytes,
            max_output_file_bytes=config.max_output_file_bytes,
            memory_mb=config.memory_mb,
            max_processes=config.max_processes,
            network=config.network,
            require_network_isolation=config.require_network_isolation,
            isolation=config.isolation,
            environments=config.environments,
            venv_root=config.venv_root,
        )

    def prepare(self, distributions: list[str]) -> PreparedEnv:
        """``host``: the running interpreter, reporting what it lacks. ``venv``: one virtual
        environment per dependency set, installed once and reused (see ``prepare_venv``)."""
        if self.environments == "venv":
            return self.prepare_venv(distributions)
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
        spec = {
            "backend": "local",
            "python": platform.python_version(),
            "packages": packages,
            "network": "none" if self.isolate_network else self.network,
            "isolation": "namespaces" if self.namespaces else "process",
            "limits": {"memory_mb": self.memory_mb, "max_processes": self.max_processes},
        }
        return PreparedEnv(spec=spec, spec_hash=stable_hash(spec), missing=tuple(missing))

    def prepare_venv(self, distributions: list[str]) -> PreparedEnv:
        """A virtual environment per dependency set under ``venv_root``, keyed by its hash.

        Built in a temporary folder and renamed into place when pip succeeded, so a killed build
        is never reused. The lock is what ``importlib.metadata`` sees inside the environment.
        """
        requirements = sorted(set(distributions))
        key = stable_hash({"python": platform.python_version(), "requirements": requirements})[:16]
        root = Path(self.venv_root)
        target = root / key
        error = None
        if not (target / "lock.json").is_file():
            root.mkdir(parents=True, exist_ok=True)
            building = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
            building.chmod(0o755)  # mkdtemp makes it private; sandboxed runs as nobody must read it
            try:
                error = _build_venv(building, requirements)
                if error is None:
                    if target.exists():
                        shutil.rmtree(target)
                    building.rename(target)
            finally:
                shutil.rmtree(building, ignore_errors=True)
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
            "packages": lock,
            "network": "none" if self.isolate_network else self.network,
            "isolation": "namespaces" if self.namespaces else "process",
            "limits": {"memory_mb": self.memory_mb, "max_processes": self.max_processes},
        }
        return PreparedEnv(spec=spec, spec_hash=stable_hash({k: v for k, v in spec.items() if k != "interpreter"}))

    def run(self, env: PreparedEnv, request: RunRequest) -> RunResult:
        bad = [p for p in request.files if not _safe_relative(p)]
        if bad:
            return _failed(BAD_REQUEST, f"refusing file paths outside the scratch directory: {bad[:3]}")
        scratch = Path(tempfile.mkdtemp(prefix="tf-sbx-"))
        logs = Path(tempfile.mkdtemp(prefix="tf-log-"))
        try:
            for rel, data in request.files.items():
                target = scratch / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            (scratch / ".tmp").mkdir(exist_ok=True)
            if self.namespaces:
                _hand_over(scratch, request.files)
            return self._execute(scratch, logs, env, request)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.rmtree(logs, ignore_errors=True)

    def _execute(self, scratch: Path, logs: Path, env: PreparedEnv, request: RunRequest) -> RunResult:
        interpreter = env.spec.get("interpreter", sys.executable)
        command = [interpreter if part == "python" else part for part in request.command]
        if self.namespaces:
            namespaces = ["--mount", "--pid", "--fork", "--mount-proc", *(["--net"] if self.isolate_network else [])]
            command = ["unshare", *namespaces, "--", "sh", "-c", NAMESPACE_SCRIPT, "sh", str(scratch), *command]
        elif self.isolate_network:
            command = ["unshare", "-n", "--", *command]
        child_env = {
            "PATH": f"{Path(interpreter).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(scratch),
            "TMPDIR": str(scratch / ".tmp"),
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
        if self.namespaces:
            hide = sorted(set(_hide_paths()) | {os.path.realpath(p) for p in self.hidden_paths if os.path.isdir(p)})
            child_env.update(TF_KEEP=" ".join(_keep_paths(interpreter)), TF_HIDE=" ".join(hide))
        child_env.update(request.env)
        timeout = min(request.timeout_s, self.timeout_s)
        limits = _limits(self.memory_mb, timeout, self.max_output_file_bytes, self.max_processes)
        started = time.monotonic()
        with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
            try:
                proc = subprocess.Popen(
                    command,
                    cwd=scratch,
                    env=child_env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                    preexec_fn=limits,
                )
            except OSError as exc:
                return _failed(BAD_REQUEST, f"cannot start {command[0]!r}: {exc}")
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_group(proc.pid)  # also reaps background processes the program left behind
            proc.wait()
        duration = time.monotonic() - started
        stdout, truncated = _read_capped(logs / "stdout", self.max_stdout_bytes)
        stderr, _ = _read_capped(logs / "stderr", self.max_stdout_bytes)
        # Scratch paths are random; tracebacks that mention them would make results differ run to run.
        stdout, stderr = stdout.replace(str(scratch), SCRATCH_MARK), stderr.replace(str(scratch), SCRATCH_MARK)
        code = proc.returncode
        if timed_out:
            reason = TIMEOUT
        elif code == 0:
            reason = OK
        elif code is not None and code < 0:
            reason = OUTPUT_LIMIT if -code == signal.SIGXFSZ else KILLED
        elif self._hit_file_limit(logs, stderr):
            reason = OUTPUT_LIMIT  # Python ignores SIGXFSZ, so the limit surfaces as errno 27 instead
        else:
            reason = NONZERO_EXIT
        files, oversized = self._collect(scratch, request.files)
        return RunResult(
            exit_code=code,
            reason=reason,
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=truncated,
            files=files,
            oversized_files=oversized,
            duration_s=round(duration, 4),
        )

    def _hit_file_limit(self, logs: Path, stderr: str) -> bool:
        sizes = [(logs / name).stat().st_size for name in ("stdout", "stderr")]
        return "[Errno 27] File too large" in stderr or max(sizes) >= self.max_output_file_bytes

    def _collect(self, scratch: Path, inputs: dict[str, bytes]) -> tuple[dict[str, bytes], list[str]]:
        return collect_outputs(scratch, inputs, self.max_output_file_bytes)


def collect_outputs(scratch: Path, inputs: dict[str, bytes], limit: int,
                    skip: tuple[str, ...] = ()) -> tuple[dict[str, bytes], list[str]]:
    """Files the program created or changed (symlinks are never followed; oversized ones only named)."""
    files, oversized = {}, []
    for dirpath, dirnames, filenames in os.walk(scratch, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_OUTPUT_PARTS)
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(scratch).as_posix()
            if rel in skip or full.is_symlink() or not full.is_file():
                continue
            if full.stat().st_size > limit:
                oversized.append(rel)
                continue
            data = full.read_bytes()
            if inputs.get(rel) != data:
                files[rel] = data
    return files, oversized


def _build_venv(folder: Path, requirements: list[str]) -> str | None:
    """Create a venv in ``folder`` and install ``requirements``; None, or what failed (naming the requirement)."""
    made = subprocess.run([sys.executable, "-m", "venv", str(folder)], capture_output=True, text=True, timeout=300)
    if made.returncode != 0:
        return f"cannot create a virtual environment: {made.stderr.strip()[-300:]}"
    python = folder / "bin" / "python"
    if requirements:
        installed = subprocess.run([str(python), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
                                    *requirements], capture_output=True, text=True, timeout=1800)
        if installed.returncode != 0:
            failing = _failing_requirement(installed.stdout + installed.stderr, requirements)
            tail = installed.stderr.strip().splitlines()[-1:] or [""]
            return f"installing {failing or ' '.join(requirements)} failed: {tail[0][:300]}"
    frozen = subprocess.run([str(python), "-c", LOCK_SCRIPT], capture_output=True, text=True, timeout=120, cwd=folder)
    if frozen.returncode != 0:
        return f"cannot list the environment's packages: {frozen.stderr.strip()[-300:]}"
    (folder / "lock.json").write_text(frozen.stdout)
    return None


def _failing_requirement(log: str, requirements: list[str]) -> str | None:
    """The requirement pip names in its error, so a reject says which one broke the install."""
    lowered = log.lower()
    for requirement in requirements:
        name = Requirement(requirement).name.lower()
        for phrase in (f"no matching distribution found for {name}", f"satisfies the requirement {name}",
                       f"failed building wheel for {name}", f"collecting {name}"):
            if phrase in lowered and ("error" in lowered.split(phrase, 1)[1][:2000] or phrase.startswith("no")):
                return requirement
    return None


def _hand_over(scratch: Path, inputs: dict[str, bytes]) -> None:
    """Give the scratch directory to nobody; input files stay read-only so a run cannot alter its data."""
    for dirpath, dirnames, filenames in os.walk(scratch):
        os.chown(dirpath, NOBODY_UID, NOBODY_UID)
        for name in filenames:
            path = os.path.join(dirpath, name)
            os.chmod(path, 0o444)


def _limits(memory_mb: int, timeout: float, max_file: int, max_processes: int):
    def apply() -> None:
        mem = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        cpu = int(timeout) + 2
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file, max_file))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_capped(path: Path, limit: int) -> tuple[str, bool]:
    size = path.stat().st_size
    with open(path, "rb") as fh:
        data = fh.read(limit)
    return data.decode("utf-8", errors="replace"), size > limit


def _safe_relative(rel: str) -> bool:
    path = PurePosixPath(rel)
    return bool(rel) and not path.is_absolute() and ".." not in path.parts


def _failed(reason: str, message: str) -> RunResult:
    return RunResult(None, reason, "", message, False, {}, [], 0.0)
