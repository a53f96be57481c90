"""Shared helpers: the project root, tiny repositories on disk, and running real stage modules."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trailforge.testing.corpus import STAGE_CHAIN

PROJECT_ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def make_repo(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def write_params(project: Path, repos: list[str], overrides: list[str] | None = None) -> dict:
    """Compose the tiny recipe with overrides, point its source at ``repos``, write params.yaml."""
    from trailforge.config import compose, validate, write_params as write

    data = compose("tiny", overrides or [], root=PROJECT_ROOT)
    if data["source"].get("kind", "local") == "local":
        data["source"]["repos"] = [{"path": r} for r in repos]
    validate(data)
    write(data, project / "params.yaml")
    return data


def run_stage(project: Path, stage: str, *args: str, cache: Path | None = None, check: bool = True,
              popen: bool = False):
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT),
           "TRAILFORGE_CACHE_DIR": str(cache or project / "cache")}
    cmd = [sys.executable, "-m", f"stages.{stage}", *args]
    if popen:
        return subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    done = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    if check and done.returncode != 0:
        raise AssertionError(f"stage {stage} failed:\n{done.stdout}\n{done.stderr}")
    return done


def stats(folder: Path) -> dict:
    return json.loads((folder / "stats.json").read_text())


def timings(folder: Path) -> dict:
    """A stage's measured figures (cache hits, model usage, timings), kept apart from the counts in stats.json."""
    return json.loads((folder / "timings.json").read_text())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def alive_with(marker: str) -> bool:
    """Whether any process on the host has ``marker`` on its command line (pids differ inside a PID namespace)."""
    for proc in Path("/proc").iterdir():
        try:
            if marker.encode() in (proc / "cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


DOCKER_BASE_IMAGE = os.environ.get("TRAILFORGE_BASE_IMAGE", "trailforge/python-base:bookworm")


def docker_client_or_skip():
    """A Docker client with the base image present, or a skip that says what is missing."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
        client.images.get(DOCKER_BASE_IMAGE)
    except Exception as exc:
        pytest.skip(f"no Docker engine with base image {DOCKER_BASE_IMAGE} ({type(exc).__name__}); "
                    "run .ci/docker-setup.sh to test sandbox=docker")
    return client


def build_to_tasks(root: Path, name: str, files: dict[str, str], overrides: list[str]) -> tuple[Path, Path]:
    """A project with one small repository run from discover through tasks; returns (project, repo)."""
    project = root / "project"
    project.mkdir()
    repo = make_repo(root / "repos" / name, files)
    write_params(project, [str(repo)], overrides)
    for stage, args in STAGE_CHAIN[:[s for s, _ in STAGE_CHAIN].index("tasks") + 1]:
        run_stage(project, stage, *args, "--out", f"out/{stage}")
    return project, repo


# A one-script repository whose task has two fields; the model-stage tests build it through tasks.
DOMINANCE_FILES = {
    "README.md": "Species abundance survey of meadow habitat biodiversity.\n",
    "analysis.py": (
        "import csv\n\n"
        "rows = list(csv.DictReader(open(\"data/obs.csv\")))\n"
        "counts = [float(r[\"count\"]) for r in rows]\n"
        "total = sum(counts)\n"
        "print(f\"Total individuals: {int(total)}\")\n"
        "print(f\"Dominance share (fraction): {max(counts) / total:.4f}\")\n"
    ),
    "data/obs.csv": "species,count\na,5\nb,3\nc,4\n",
}
