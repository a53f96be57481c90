"""The Docker backend: one image per dependency set, one throwaway container per run.

``prepare`` renders a Dockerfile for the dependency set (the configured base image, a
virtual environment, the requirements installed with pip, a non-root user), builds it
once and tags it by the hash of everything that went into it, so the same set reuses the
same image on every later run. Builds reach the package index the way the host does:
the host's CA bundle is copied into the build and the index URLs and proxy variables are
passed as build arguments, so TLS-intercepting proxies and private indexes work. After a
build, ``pip freeze`` inside the image is the lock recorded in the environment's spec.

``run`` copies the request's files into a private scratch directory, mounts it as the
only writable path (``/work``), and runs the command as ``nobody`` with no network, a
read-only root filesystem, every capability dropped, no privilege escalation, memory,
process, CPU and file-size limits. Output goes to files inside the scratch directory
under the file-size limit, so a flood fills neither the Docker log nor memory. The
container is removed afterwards whatever happened.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

from ..cache import stable_hash
from .base import BAD_REQUEST, KILLED, NONZERO_EXIT, OK, OUTPUT_LIMIT, TIMEOUT, PreparedEnv, RunRequest, RunResult
from .local import (LOCK_SCRIPT, SCRATCH_MARK, _failing_requirement, _hand_over, _read_capped, _safe_relative,
                    collect_outputs, refused_requirement, remove_tree)

WORKDIR = "/work"
VENV = "/opt/venv"
STDOUT_FILE = ".tf_stdout"
STDERR_FILE = ".tf_stderr"
NOBODY = "65534:65534"
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


class DockerUnavailable(RuntimeError):
    """No Docker engine can be reached, or the base image is missing."""


def render_dockerfile(base_image: str, requirements: list[str], with_ca: bool = True,
                      requirements_file: str = "requirements.txt", wheels_only: bool = True) -> str:
    """The Dockerfile that rebuilds one dependency set (also exported with each environment)."""
    # The base is a build argument, so a machine without registry access can substitute a local image.
    lines = [f"ARG BASE_IMAGE={base_image}", "FROM ${BASE_IMAGE}"]
    if with_ca:
        lines += [
            "# The host's CA bundle, so pip works behind TLS-intercepting proxies.",
            "COPY ca-bundle.crt /etc/ssl/certs/trailforge-ca.crt",
            "ENV PIP_CERT=/etc/ssl/certs/trailforge-ca.crt SSL_CERT_FILE=/etc/ssl/certs/trailforge-ca.crt \\",
            "    REQUESTS_CA_BUNDLE=/etc/ssl/certs/trailforge-ca.crt",
        ]
    lines += [
        "ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1",
        "ARG PIP_INDEX_URL",
        "ARG PIP_EXTRA_INDEX_URL",
        "ARG HTTP_PROXY",
        "ARG HTTPS_PROXY",
        "ARG NO_PROXY",
        f"RUN python3 -m venv {VENV} && chown -R {NOBODY} {VENV}",
        f"COPY {requirements_file} /tmp/requirements.txt",
        "# The install runs as nobody, and wheels only by default: no package's build code runs at all.",
        f"USER {NOBODY}",
        "ENV HOME=/tmp",
    ]
    if requirements:
        binary = " --only-binary :all:" if wheels_only else ""
        lines.append(f"RUN {VENV}/bin/pip install --no-input{binary} -r /tmp/requirements.txt")
    lines += [
        f"ENV PATH={VENV}/bin:$PATH",
        f"WORKDIR {WORKDIR}",
    ]
    return "\n".join(lines) + "\n"


def _context(dockerfile: str, requirements: list[str], ca_bundle: bytes) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in (("Dockerfile", dockerfile.encode()), ("requirements.txt",
                                                               ("\n".join(requirements) + "\n").encode()),
                           ("ca-bundle.crt", ca_bundle)):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


class DockerSandbox:
    name = "docker"

    def __init__(self, base_image: str = "python:3.11-slim", timeout_s: float = 120.0, max_stdout_bytes: int = 200_000,
                 max_output_file_bytes: int = 5_000_000, memory_mb: int = 2048, max_processes: int = 256,
                 cpus: float = 1.0, ca_bundle: str | None = "/etc/ssl/certs/ca-certificates.crt",
                 index_url: str | None = None, extra_index_urls: tuple[str, ...] = (), build_network: str = "default",
                 client=None, max_output_total_bytes: int = 50_000_000, max_output_files: int = 10_000,
                 max_output_depth: int = 64, wheels_only: bool = True, max_timeout_s: float = 600.0):
        self.base_image = base_image
        self.timeout_s = timeout_s  # what a program run asks for unless its caller says otherwise
        self.max_timeout_s = max(max_timeout_s, timeout_s)  # what any one request may get
        self.max_stdout_bytes = max_stdout_bytes
        self.max_output_file_bytes = max_output_file_bytes
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.cpus = cpus
        self.ca_bundle = ca_bundle
        self.index_url = index_url or os.environ.get("PIP_INDEX_URL")
        self.extra_index_urls = tuple(extra_index_urls) or tuple(
            u for u in os.environ.get("PIP_EXTRA_INDEX_URL", "").split() if u)
        self.build_network = build_network
        self.caps = {"total_bytes": max_output_total_bytes, "files": max_output_files, "depth": max_output_depth}
        self.wheels_only = wheels_only
        self._client = client
        self._prepared: dict[str, PreparedEnv] = {}

    # An executor=ray worker gets a copy without the client (a socket) and without the prepared
    # environments: images live in each node's own engine, so the node checks (and builds) its own.
    def __getstate__(self) -> dict:
        return {**self.__dict__, "_client": None, "_prepared": {}}

    @classmethod
    def from_config(cls, config) -> "DockerSandbox":
        return cls(
            base_image=config.base_image, timeout_s=config.timeout_s, max_stdout_bytes=config.max_stdout_bytes,
            max_output_file_bytes=config.max_output_file_bytes, memory_mb=config.memory_mb,
            max_processes=config.max_processes, cpus=config.cpus, ca_bundle=config.ca_bundle,
            index_url=config.index_url, extra_index_urls=tuple(config.extra_index_urls),
            build_network=config.build_network, max_output_total_bytes=config.max_output_total_bytes,
            max_output_files=config.max_output_files, max_output_depth=config.max_output_depth,
            wheels_only=config.wheels_only, max_timeout_s=config.max_timeout_s,
        )

    @property
    def client(self):
        if self._client is None:
            import docker

            try:
                self._client = docker.from_env()
                self._client.ping()
            except Exception as exc:  # the SDK raises several types for "no engine"
                raise DockerUnavailable(
                    f"sandbox=docker needs a running Docker engine ({exc}); start dockerd "
                    "(see .ci/docker-setup.sh) or use sandbox=local") from None
        return self._client

    def _ca_bytes(self) -> bytes:
        if self.ca_bundle and Path(self.ca_bundle).is_file():
            return Path(self.ca_bundle).read_bytes()
        return b""

    def prepare(self, distributions: list[str], as_of: str | None = None) -> PreparedEnv:
        requirements = sorted(set(distributions))
        if as_of is not None:  # pip in the image has no release-date bound; an era environment is the local venv's
            error = f"the docker backend installs current releases only (asked for releases as of {as_of})"
            spec = {"backend": "docker", "error": error}
            return PreparedEnv(spec=spec, spec_hash=stable_hash(spec), missing=(error,))
        refused = [f"{spec} ({why})" for spec in requirements if (why := refused_requirement(spec))]
        if refused:
            spec = {"backend": "docker", "error": f"refused requirements: {', '.join(refused)}"}
            return PreparedEnv(spec=spec, spec_hash=stable_hash(spec), missing=tuple(f"refused {r}" for r in refused))
        dockerfile = render_dockerfile(self.base_image, requirements, wheels_only=self.wheels_only)
        build_key = stable_hash({"dockerfile": dockerfile, "requirements": requirements,
                                 "ca": stable_hash(self._ca_bytes().decode("latin-1"))})
        if build_key in self._prepared:
            return self._prepared[build_key]
        tag = f"trailforge/env:{build_key[:16]}"
        error = self._ensure_image(tag, dockerfile, requirements)
        if error:
            env = PreparedEnv(spec={"backend": "docker", "image": tag, "error": error}, spec_hash=build_key,
                              missing=tuple(requirements) or ("base image",))
        else:
            packages = self._freeze(tag)
            spec = {
                "backend": "docker",
                "base_image": self.base_image,
                "image": tag,
                "dockerfile": dockerfile,
                "python": packages.pop("__python__", ""),
                "packages": packages,
                "network": "none",
                "limits": {"memory_mb": self.memory_mb, "max_processes": self.max_processes, "cpus": self.cpus},
            }
            env = PreparedEnv(spec=spec, spec_hash=stable_hash({k: v for k, v in spec.items() if k != "image"}))
        self._prepared[build_key] = env
        return env

    def _ensure_image(self, tag: str, dockerfile: str, requirements: list[str]) -> str | None:
        import docker

        try:
            self.client.images.get(tag)
            return None
        except docker.errors.ImageNotFound:
            pass
        try:
            self.client.images.get(self.base_image)
        except docker.errors.ImageNotFound:
            try:
                self.client.images.pull(self.base_image)
            except docker.errors.APIError as exc:
                return (f"base image {self.base_image} is not available and cannot be pulled ({exc.explanation}); "
                        "build one with .ci/docker-setup.sh and set sandbox.base_image")
        build_args = {k: v for k, v in {
            "PIP_INDEX_URL": self.index_url or "",
            "PIP_EXTRA_INDEX_URL": " ".join(self.extra_index_urls),
            **{k.upper(): os.environ[k] for k in _PROXY_VARS if k in os.environ},
        }.items() if v}
        try:
            self.client.images.build(fileobj=_context(dockerfile, requirements, self._ca_bytes()), custom_context=True,
                                     tag=tag, buildargs=build_args, rm=True,
                                     network_mode=None if self.build_network == "default" else self.build_network,
                                     forcerm=True, pull=False)
        except docker.errors.BuildError as exc:
            log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
            failing = _failing_requirement(log, requirements)
            return f"installing {failing or ', '.join(requirements)} failed: {log.strip()[-400:]}"
        except docker.errors.APIError as exc:
            return f"image build failed: {exc.explanation}"
        return None

    def _freeze(self, tag: str) -> dict[str, str]:
        output = self.client.containers.run(tag, ["python", "-c", LOCK_SCRIPT], remove=True, network_mode="none")
        packages = json.loads(output.decode())
        return dict(sorted(packages.items()))

    def run(self, env: PreparedEnv, request: RunRequest) -> RunResult:
        bad = [p for p in request.files if not _safe_relative(p)]
        if request.cwd != "." and not _safe_relative(request.cwd):
            bad.append(request.cwd)
        bad += [folder for folder in request.folders if not _safe_relative(folder)]
        if bad:
            return _failed(BAD_REQUEST, f"refusing file paths outside the scratch directory: {bad[:3]}")
        scratch = Path(tempfile.mkdtemp(prefix="tf-dkr-"))
        try:
            for rel, data in request.files.items():
                target = scratch / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            for rel in request.folders:
                (scratch / rel).mkdir(parents=True, exist_ok=True)
            if os.geteuid() == 0:
                _hand_over(scratch, request.files)
            else:
                os.chmod(scratch, 0o777)  # the container user is nobody, whoever we are
                for dirpath, dirnames, _ in os.walk(scratch):
                    for name in dirnames:
                        os.chmod(os.path.join(dirpath, name), 0o777)
            return self._execute(scratch, env, request)
        finally:
            remove_tree(scratch)

    def _execute(self, scratch: Path, env: PreparedEnv, request: RunRequest) -> RunResult:
        import docker
        from docker.types import Ulimit

        timeout = min(request.timeout_s, self.max_timeout_s)
        command = ["sh", "-c", f'exec "$@" >{WORKDIR}/{STDOUT_FILE} 2>{WORKDIR}/{STDERR_FILE}', "sh", *request.command]
        environment = {"HOME": WORKDIR, "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
                       "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1",
                       "OPENBLAS_NUM_THREADS": "1", **request.env}
        started = time.monotonic()
        container = self.client.containers.create(
            env.spec["image"], command, working_dir=_workdir(request.cwd), user=NOBODY, environment=environment,
            network_mode="none", read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            mem_limit=f"{self.memory_mb}m", memswap_limit=f"{self.memory_mb}m", pids_limit=self.max_processes,
            nano_cpus=int(self.cpus * 1e9), tmpfs={"/tmp": "size=64m"},
            volumes={str(scratch): {"bind": WORKDIR, "mode": "rw"}},
            ulimits=[Ulimit(name="fsize", soft=self.max_output_file_bytes, hard=self.max_output_file_bytes),
                     Ulimit(name="nofile", soft=256, hard=256), Ulimit(name="core", soft=0, hard=0)],
            log_config={"type": "none"},
        )
        timed_out = False
        try:
            container.start()
            try:
                status = container.wait(timeout=timeout)
                code = status.get("StatusCode")
            except Exception:  # requests' ReadTimeout: the program ran past the wall clock
                timed_out = True
                code = None
            container.reload()
            oom = container.attrs.get("State", {}).get("OOMKilled", False)
        finally:
            try:
                container.remove(force=True)
            except docker.errors.APIError:
                pass
        duration = time.monotonic() - started
        stdout, truncated = _read_capped(scratch / STDOUT_FILE, self.max_stdout_bytes) \
            if (scratch / STDOUT_FILE).exists() else ("", False)
        stderr, _ = _read_capped(scratch / STDERR_FILE, self.max_stdout_bytes) \
            if (scratch / STDERR_FILE).exists() else ("", False)
        stdout, stderr = stdout.replace(WORKDIR + "/", SCRATCH_MARK + "/"), stderr.replace(WORKDIR + "/", SCRATCH_MARK + "/")
        sizes = [(scratch / n).stat().st_size for n in (STDOUT_FILE, STDERR_FILE) if (scratch / n).exists()]
        if timed_out:
            reason = TIMEOUT
        elif code == 0:
            reason = OK
        elif oom or (code is not None and code >= 128 and code - 128 != 25):
            reason = KILLED
        elif (code is not None and code - 128 == 25) or "[Errno 27] File too large" in stderr or \
                max(sizes, default=0) >= self.max_output_file_bytes:
            reason = OUTPUT_LIMIT
        else:
            reason = NONZERO_EXIT
        # The container is gone, so nothing can change the tree while it is read.
        files, oversized, cap = collect_outputs(scratch, request.files, self.max_output_file_bytes,
                                                skip=(STDOUT_FILE, STDERR_FILE), caps=self.caps)
        if cap and reason in (OK, NONZERO_EXIT):
            reason, files = cap, {}
        return RunResult(exit_code=code, reason=reason, stdout=stdout, stderr=stderr, stdout_truncated=truncated,
                         files=files, oversized_files=oversized, duration_s=round(duration, 4))


def _workdir(cwd: str) -> str:
    return WORKDIR if cwd in ("", ".") else f"{WORKDIR}/{cwd}"


def _failed(reason: str, message: str) -> RunResult:
    return RunResult(None, reason, "", message, False, {}, [], 0.0)
