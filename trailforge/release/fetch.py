"""Materialise one environment from the Hub copy of a release: what a consumer of a published release runs.

``trailforge publish`` uploads every environment's folder under ``environments/<env_id>/`` of the dataset
repository. :func:`fetch_environment` downloads exactly that folder (``snapshot_download`` with
``allow_patterns``: nothing else of the repository is fetched, not even the parquet files) plus the
release's ``recipe/params.yaml``, and moves the folder to ``dest``, where it is the folder export wrote:
``task.md``, ``workspace/``, ``solution/``, ``eval/`` with its controls, ``sandbox.json``, ``Dockerfile``,
``requirements.lock.txt`` and ``metadata.json``. :mod:`trailforge.release.recheck` then grades it from
the folder alone.

The Hub is ``huggingface_hub``'s: ``HF_ENDPOINT`` (or ``endpoint=``), and the token of ``HF_TOKEN`` or a
saved login, which a private repository needs.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_TYPE = "dataset"
ENVIRONMENTS_DIR = "environments"
PARAMS_PATH = "recipe/params.yaml"


class FetchError(RuntimeError):
    """The environment cannot be fetched; the message names the repository, revision or folder to fix."""


@dataclass(frozen=True)
class FetchedEnvironment:
    folder: Path
    params: bytes | None  # the params.yaml the release was built from, when the Hub copy has one


def _glob_literal(text: str) -> str:
    """``text`` as an fnmatch pattern that matches only itself (ids may hold ``[``, ``*`` or ``?``)."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in text)


def fetch_environment(repo_id: str, env_id: str, dest: Path, *, revision: str = "main", token: str | None = None,
                      endpoint: str | None = None) -> FetchedEnvironment:
    """Download ``environments/<env_id>/`` of the dataset ``repo_id`` at ``revision`` into ``dest``."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError

    dest = Path(dest)
    if "/" in env_id or env_id in ("", ".", ".."):
        raise FetchError(f"{env_id!r} is not an environment id (ids are folder names under environments/)")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FetchError(f"{dest} exists and is not an empty folder; choose another --dest")
    dest.parent.mkdir(parents=True, exist_ok=True)
    where = f"{repo_id}@{revision}"
    # Download next to dest, so that the final move stays on one filesystem.
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=dest.parent) as scratch:
        try:
            snapshot_download(repo_id, repo_type=REPO_TYPE, revision=revision, token=token, endpoint=endpoint,
                              local_dir=scratch,
                              allow_patterns=[f"{ENVIRONMENTS_DIR}/{_glob_literal(env_id)}/*", PARAMS_PATH])
        except RevisionNotFoundError:
            raise FetchError(f"{repo_id} has no revision {revision!r}") from None
        except RepositoryNotFoundError:
            raise FetchError(f"no dataset repository {repo_id} at {endpoint or 'the Hub (HF_ENDPOINT)'}, or it is "
                             "private and no token was given (set HF_TOKEN)") from None
        except HfHubHTTPError as exc:
            raise FetchError(f"the Hub refused the download of {where}: {exc}") from None
        folder = Path(scratch) / ENVIRONMENTS_DIR / env_id
        if not (folder / "metadata.json").is_file():
            raise FetchError(f"{where} has no environment {env_id}{_known(HfApi(endpoint=endpoint), repo_id, revision, token)}")
        params = Path(scratch) / PARAMS_PATH
        params_bytes = params.read_bytes() if params.is_file() else None
        if dest.exists():
            dest.rmdir()
        shutil.move(str(folder), str(dest))
    return FetchedEnvironment(dest, params_bytes)


def _known(api, repo_id: str, revision: str, token: str | None) -> str:
    """Which environments the repository does have, for the error message."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        names = sorted(entry.path.split("/", 1)[1] for entry in api.list_repo_tree(
            repo_id, path_in_repo=ENVIRONMENTS_DIR, revision=revision, repo_type=REPO_TYPE, token=token))
    except HfHubHTTPError:
        return ": it has no environments/ folder (was it published by an older trailforge?)"
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return f"; it has {len(names)} environment(s): {shown}"


def gold_answer(folder: Path) -> dict[str, Any]:
    """The reference answer an environment's eval grades against, as an answer file holds it."""
    expected = json.loads((Path(folder) / "eval" / "expected.json").read_text(encoding="utf-8"))
    return {field["name"]: field["value"] for field in expected["fields"]}


def release_config(params: bytes | None):
    """The validated config the release was built from (its sandbox and answer limits grade the folder)."""
    import yaml

    from ..config import validate

    if params is None:
        raise FetchError(f"the Hub copy has no {PARAMS_PATH}: pass --params with a params.yaml whose sandbox "
                         "can run this environment")
    return validate(yaml.safe_load(params))


def grade_fetched(folder: Path, sandbox, max_fields: int, max_rows: int,
                  answer: bytes | None = None) -> dict[str, Any]:
    """Grade a fetched environment with its own eval.

    Without ``answer``: re-check it from the folder (:func:`recheck.recheck_environment`: a fresh run of
    the reference program must be accepted, every negative control rejected, every positive control
    accepted) and grade its gold answer (``eval/expected.json``'s values). With ``answer`` (an answer
    file's bytes): grade that answer only. ``ok`` / ``accepted`` say whether it passed.
    """
    from .recheck import grade_answer, recheck_environment

    folder = Path(folder)
    meta = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
    head = {"env_id": meta["env_id"], "task_type": meta["task_type"], "folder": str(folder)}
    bare = sandbox.prepare([])  # the eval uses the standard library only
    if answer is not None:
        result = grade_answer(folder, answer, sandbox, bare)
        return {**head, "accepted": result.exit_code == 0, "eval_exit": result.exit_code,
                "eval_output": result.stdout[-4000:]}
    report = recheck_environment(folder, sandbox, max_fields, max_rows)
    gold = grade_answer(folder, gold_answer(folder), sandbox, bare)
    report["gold_answer_accepted"] = gold.exit_code == 0
    if gold.exit_code != 0:
        report["problems"].append(f"eval exit {gold.exit_code} on the gold answer of eval/expected.json")
    report["ok"] = not report["problems"]
    return {**head, **report}
