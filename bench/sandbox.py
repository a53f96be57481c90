"""Benchmark: per-run overhead of each sandbox backend, and what the environment cache saves.

For each backend present (local with the host interpreter, local with a venv per dependency set,
the previous local backend read from git history, docker) it times N runs of a trivial program and
of a numpy program, against the same programs run with plain `python` in a subprocess, and reports
the median overhead. It also times `prepare` for a dependency set twice, from an empty environment
cache (and an empty download cache) and then warm, once with uv and once with pip as the installer.
Prints figures; asserts nothing.

    python bench/sandbox.py [--runs 10] [--skip-docker] [--old-ref d8cbc09]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trailforge.sandbox import DockerSandbox, LocalSandbox, RunRequest  # noqa: E402

PROGRAMS = {"trivial": "print('x: 1')", "numpy": "import numpy as np\nprint('x:', float(np.arange(10).sum()))"}
BASE_IMAGE = os.environ.get("TRAILFORGE_BASE_IMAGE", "trailforge/python-base:bookworm")


def median_seconds(action, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.monotonic()
        action()
        times.append(time.monotonic() - start)
    return round(statistics.median(times), 4)


def plain(code: str, runs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        return median_seconds(lambda: subprocess.run([sys.executable, "-c", code], cwd=tmp, check=True,
                                                     capture_output=True), runs)


def sandboxed(box, env, code: str, runs: int) -> float:
    def once():
        result = box.run(env, RunRequest(("python", "-c", code), {}, timeout_s=60))
        if not result.ok:
            raise SystemExit(f"{box.name} run failed: {result.stderr[-500:]}")
    return median_seconds(once, runs)


def prepare_twice(make_box, deps: list[str]) -> dict:
    start = time.monotonic()
    env = make_box().prepare(deps)
    cold = time.monotonic() - start
    if not env.ready:
        return {"error": env.missing}
    start = time.monotonic()
    make_box().prepare(deps)  # a new sandbox object, as in a new stage process
    warm = time.monotonic() - start
    return {"cold_s": round(cold, 2), "warm_s": round(warm, 3), "saved_s": round(cold - warm, 2)}


def old_local_backend(ref: str):
    """The local backend as it was at ``ref`` (the hand-rolled unshare/setpriv one), importable beside the new."""
    source = subprocess.run(["git", "show", f"{ref}:trailforge/sandbox/local.py"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location("trailforge.sandbox.old_local", fh.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.unlink(fh.name)
    return module.LocalSandbox


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--skip-docker", action="store_true")
    parser.add_argument("--old-ref", default="d8cbc09", help="commit holding the previous local backend")
    args = parser.parse_args()
    report: dict = {"runs_per_figure": args.runs, "plain_python_s": {k: plain(c, args.runs) for k, c in PROGRAMS.items()}}
    backends = {}
    host = LocalSandbox(timeout_s=60)
    backends["local_host"] = (host, host.prepare(["numpy"]), {"isolation": host.isolation, "seccomp": host.seccomp,
                                                               "cgroup": host.cgroups})
    try:
        old = old_local_backend(args.old_ref)(timeout_s=60)
        backends["old_local_host"] = (old, old.prepare(["numpy"]), {"isolation": "namespaces" if old.namespaces
                                                                    else "process", "ref": args.old_ref})
    except (subprocess.CalledProcessError, AttributeError, ImportError) as exc:
        report["old_local_host"] = f"skipped: {type(exc).__name__}: {exc}"[:300]
    with tempfile.TemporaryDirectory(prefix="tf-bench-venvs-", dir=ROOT) as venvs:
        for installer in ("uv", "pip"):
            # Each installer gets its own venv root, so its download cache starts empty too.
            root = os.path.join(venvs, installer, "venvs")
            make_box = lambda: LocalSandbox(timeout_s=60, environments="venv", venv_root=root,  # noqa: E731
                                            installer=installer)
            report[f"venv_prepare_numpy_{installer}"] = prepare_twice(make_box, ["numpy"])
        make_venv_box = lambda: LocalSandbox(timeout_s=60, environments="venv",  # noqa: E731
                                             venv_root=os.path.join(venvs, "uv", "venvs"))
        venv_box = make_venv_box()
        backends["local_venv"] = (venv_box, venv_box.prepare(["numpy"]), {})
        if not args.skip_docker:
            try:
                import docker

                client = docker.from_env()
                client.ping()
                client.images.get(BASE_IMAGE)
                make_docker = lambda: DockerSandbox(base_image=BASE_IMAGE, timeout_s=60)  # noqa: E731
                probe = make_docker().prepare(["numpy"])
                if probe.ready:
                    client.images.remove(probe.spec["image"], force=True)  # measure a cold build
                report["docker_prepare_numpy"] = prepare_twice(make_docker, ["numpy"])
                box = make_docker()
                backends["docker"] = (box, box.prepare(["numpy"]), {})
            except Exception as exc:
                report["docker"] = f"skipped: {type(exc).__name__}: {exc}"[:300]
        for name, (box, env, extra) in backends.items():
            figures = {k: sandboxed(box, env, code, args.runs) for k, code in PROGRAMS.items()}
            report[name] = {
                **extra,
                "median_run_s": figures,
                "overhead_vs_plain_s": {k: round(figures[k] - report["plain_python_s"][k], 4) for k in figures},
            }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
