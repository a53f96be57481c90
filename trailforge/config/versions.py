"""The versions of what computes a corpus's answers, as a params file DVC tracks (``versions.yaml``).

Reference answers, traces and every parquet byte come from the interpreter and a handful of libraries, so
an upgrade must make exactly the stages that compute with them stale. A stage output cannot say that:
DVC only looks at outputs after running the stage. So ``trailforge compose`` (and ``trailforge versions``)
writes what ``importlib.metadata`` reports into ``versions.yaml`` beside ``params.yaml``, and each stage in
``dvc.yaml`` lists the keys it depends on (``versions.yaml: [python, libraries.numpy, programs]``); DVC then
reports an upgrade as a changed param of exactly those stages. A stage that starts with a record that no
longer matches the running environment refuses (``version_drift``), so dvc.lock never pairs results with
versions that did not make them.

Sections:

- ``python``: the interpreter every stage runs in (``ast``, ``json`` and hashing behave per version).
- ``libraries``: what trailforge's own stage code computes with (``RESULT_LIBRARIES``); a stage lists the
  ones its module's import closure reaches (``tests/unit/config/test_versions.py`` checks ``dvc.yaml``).
- ``programs``: what the repositories' programs run on, which depends on ``sandbox`` (``program_versions``).
  Only the stages that run programs (seeds, workflows, tasks, verify) list it.
"""
from __future__ import annotations

import importlib.metadata
import platform
from pathlib import Path
from typing import Any

import yaml

VERSIONS_FILE = "versions.yaml"

# Distributions whose version can change what a stage writes, and why. Configuration (hydra, omegaconf:
# captured by params.yaml), plumbing (dvc, ray: the executor's results are identical by design), model access
# (litellm: replies are cached on the request) and validation (pydantic) are left out on purpose.
RESULT_LIBRARIES = {
    "pyarrow": "writes every parquet file (its footer names the writer's version)",
    "numpy": "data-dependence perturbations, lineage similarity and sampling, diversity figures",
    "networkx": "workflow graphs, slices, the lineage graph and its curation",
    "datasets": "writes the release's DatasetDict (arrow files, features)",
    "matplotlib": "draws the release report's plots",
    "jinja2": "renders the dataset card and the HTML report",
}

# What a program run on the host interpreter (sandbox.environments=host) can import and answer with: the
# scientific stack research scripts use. An absent one is recorded as null: installing it changes which
# programs run. A library outside this list still reaches each seed's sandbox spec, not DVC.
PROGRAM_LIBRARIES = ("numpy", "pandas", "scipy", "matplotlib", "networkx", "scikit-learn", "statsmodels")


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def program_versions(sandbox: dict[str, Any]) -> dict[str, Any]:
    """What the sandboxed programs answer with, for a composed ``sandbox`` group.

    ``host``: the running interpreter and its scientific libraries. ``venv``: each environment is built from
    the host's base interpreter by the installer, so those two decide it; the packages it resolves are
    recorded per seed (era environments pinned in full), not knowable before the run. ``docker``: the image
    (``sandbox.base_image``, already a params dependency) holds the interpreter; nothing of the host counts.
    """
    backend = sandbox.get("backend", "local")
    if backend == "docker":
        return {"runs_on": "docker"}
    if sandbox.get("environments", "host") == "venv":
        installer = sandbox.get("installer", "uv")
        return {"runs_on": "venv", "python": platform.python_version(),
                "installer": f"{installer} {installed_version(installer)}"}
    return {"runs_on": "host", "python": platform.python_version(),
            **{name: installed_version(name) for name in PROGRAM_LIBRARIES}}


def recorded_versions(config: dict[str, Any]) -> dict[str, Any]:
    """The ``versions.yaml`` content for a composed config (a plain dict, as in params.yaml)."""
    return {
        "python": platform.python_version(),
        "libraries": {name: installed_version(name) for name in RESULT_LIBRARIES},
        "programs": program_versions(dict(config.get("sandbox") or {})),
    }


def write_versions(versions: dict[str, Any], path: Path) -> None:
    header = ("# Versions of what computes this corpus's answers, written by `trailforge compose` / `trailforge versions`\n"
              "# from importlib.metadata. dvc.yaml lists the keys each stage depends on; do not edit by hand.\n")
    path.write_text(header + yaml.safe_dump(versions, sort_keys=True), encoding="utf-8")


def read_versions(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def version_drift(recorded: dict[str, Any], current: dict[str, Any], prefix: str = "") -> list[str]:
    """Every key whose recorded value differs from the current one, as readable lines (empty: they agree)."""
    lines = []
    for key in sorted(set(recorded) | set(current)):
        old, new = recorded.get(key), current.get(key)
        name = f"{prefix}{key}"
        if isinstance(old, dict) and isinstance(new, dict):
            lines.extend(version_drift(old, new, f"{name}."))
        elif old != new:
            lines.append(f"{name}: {VERSIONS_FILE} records {old!r}, this environment has {new!r}")
    return lines


def check_recorded_versions(params_path: Path, config: dict[str, Any]) -> list[str]:
    """Drift between the ``versions.yaml`` beside ``params_path`` and this environment.

    No file means the stage was started by hand (tests, one-off runs), not by DVC, so there is nothing to
    keep true."""
    path = Path(params_path).parent / VERSIONS_FILE
    if not path.is_file():
        return []
    return version_drift(read_versions(path), recorded_versions(config))
