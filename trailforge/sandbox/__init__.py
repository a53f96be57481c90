"""Run untrusted programs: one protocol (``base``), backends picked by `sandbox.backend`."""
from pathlib import Path

from .base import PreparedEnv, RunRequest, RunResult, Sandbox, SandboxInfrastructureError
from .cached import run_cached
from .docker import DockerSandbox, DockerUnavailable
from .local import LocalSandbox, SandboxUnavailable

BACKENDS = {"local": LocalSandbox, "docker": DockerSandbox}
TRACE_RUNNER = Path(__file__).with_name("trace_runner.py")


def build_sandbox(config) -> Sandbox:
    try:
        backend = BACKENDS[config.backend]
    except KeyError:
        raise ValueError(f"sandbox.backend: unknown backend '{config.backend}'; available: {sorted(BACKENDS)}") from None
    return backend.from_config(config)


__all__ = [
    "BACKENDS", "TRACE_RUNNER", "DockerSandbox", "DockerUnavailable", "LocalSandbox", "PreparedEnv", "RunRequest", "RunResult", "Sandbox",
    "SandboxInfrastructureError", "SandboxUnavailable", "build_sandbox", "run_cached",
]
