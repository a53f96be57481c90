"""Run untrusted programs: one protocol (``base``), backends picked by `sandbox.backend`."""
from pathlib import Path

from .base import PreparedEnv, RunRequest, RunResult, Sandbox, SandboxInfrastructureError
from .cached import run_cached
from .docker import DockerSandbox, DockerUnavailable
from .local import LocalSandbox, SandboxUnavailable

BACKENDS = {"local": LocalSandbox, "docker": DockerSandbox}
TRACE_RUNNER = Path(__file__).with_name("trace_runner.py")
PLOT_RECORDER = Path(__file__).with_name("plot_recorder.py")
# Where the runners sit in the scratch folder (its root) and what they leave there: never data or results.
TRACE_SCRIPT = ".tf_trace.py"
TRACE_FILE = ".tf_trace.json"
PLOT_SCRIPT = ".tf_plots.py"  # trace_runner.py loads it by this name
PLOTS_FILE = ".tf_plots.json"  # written by plot_recorder.py
RUNNER_FILES = (TRACE_SCRIPT, PLOT_SCRIPT)
PICKLE_PERTURBER = Path(__file__).with_name("pickle_perturber.py")
PICKLE_PERTURBER_SCRIPT = ".tf_perturb_pickles.py"


def runner_files(trace: bool) -> dict[str, bytes]:
    """The files a recorded run needs at the scratch root: the plot recorder, and the tracer if ``trace``."""
    files = {PLOT_SCRIPT: PLOT_RECORDER.read_bytes()}
    if trace:
        files[TRACE_SCRIPT] = TRACE_RUNNER.read_bytes()
    return files


def build_sandbox(config) -> Sandbox:
    try:
        backend = BACKENDS[config.backend]
    except KeyError:
        raise ValueError(f"sandbox.backend: unknown backend '{config.backend}'; available: {sorted(BACKENDS)}") from None
    return backend.from_config(config)


__all__ = [
    "BACKENDS", "PLOT_RECORDER", "PLOT_SCRIPT", "PLOTS_FILE", "RUNNER_FILES", "TRACE_FILE", "TRACE_RUNNER",
    "TRACE_SCRIPT", "runner_files", "DockerSandbox", "DockerUnavailable", "LocalSandbox", "PreparedEnv", "RunRequest", "RunResult", "Sandbox",
    "SandboxInfrastructureError", "SandboxUnavailable", "build_sandbox", "run_cached",
]
