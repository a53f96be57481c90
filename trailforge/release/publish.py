"""Publish a release to a Hugging Face Hub dataset repository, uploading only what changed.

Layout of the Hub repository (``publish.repo_id``, branch ``publish.revision``)::

    README.md                               the dataset card, when the release has one (outputs/release/README.md)
    report/...                              the release's report folder, when it has one (the card shows its plots)
    data/<split>-00000-of-00001.parquet     one file per split of outputs/release/dataset (one split per task type)
    recipe/params.yaml                      the resolved config the release was built from
    recipe/recipe/<name>.yaml               the recipe named in params.yaml
    recipe/conf/...                         the config groups it composes from

``data/<split>-NNNNN-of-NNNNN.parquet`` is the name ``DatasetDict.push_to_hub`` uses, so ``load_dataset``
finds every split even without a card; a card can name them explicitly with ``card_configs(splits)``.
``recipe/`` mirrors the project's own folders, so ``trailforge validate`` and ``compose`` work inside a
download of it. All of ``conf/`` goes up because params.yaml does not record which group options or
overrides produced it; params.yaml itself holds the resolved values, which are what the release used.
Environment folders (``outputs/release/environments``) are not pushed.

Only changed files are uploaded. The remote tree is listed first (git blob id and size of every file,
plus the sha256 of LFS files) and compared with the local bytes; a file with the same content is
skipped, and when nothing changed no commit is made at all. Parquet files are written with fixed
settings, so the same rows give the same bytes. Files under ``data/``, ``recipe/`` and ``report/`` that
the release no longer has are deleted in the same commit; other remote files (``.gitattributes``) are
left alone.

The token comes from the environment only: the variable named by ``publish.token_env`` (HF_TOKEN by
default). It is passed to every call, so a token saved by ``hf auth login`` is never used by mistake.
The Hub is ``huggingface_hub``'s endpoint: ``HF_ENDPOINT`` or an injected ``HfApi(endpoint=...)``.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any, Mapping

from ..config.schema import PublishConfig

REPO_TYPE = "dataset"
DATA_DIR = "data"
RECIPE_DIR = "recipe"
REPORT_DIR = "report"
# Remote files under these folders that the release no longer has are deleted.
MANAGED_PREFIXES = (f"{DATA_DIR}/", f"{RECIPE_DIR}/", f"{REPORT_DIR}/")
PARQUET_ROW_GROUP_SIZE = 1000  # rows; fixed so that the bytes do not depend on a library default


class PublishError(RuntimeError):
    """Publishing cannot start or the Hub refused it; the message says which setting or variable to fix."""


def split_path(split: str) -> str:
    return f"{DATA_DIR}/{split}-00000-of-00001.parquet"


def card_configs(splits: list[str]) -> list[dict[str, Any]]:
    """The ``configs:`` entry of a dataset card's YAML header that points at this layout's data files."""
    return [{"config_name": "default",
             "data_files": [{"split": s, "path": f"{DATA_DIR}/{s}-*.parquet"} for s in sorted(splits)]}]


def parquet_bytes(dataset) -> bytes:
    """One split as parquet; the same rows and features always give the same bytes."""
    import pyarrow.parquet as pq

    # Whole columns in one chunk, indices mapping applied: the bytes must not depend on how the
    # dataset happens to be laid out on disk.
    table = dataset.with_format("arrow")[:].combine_chunks()
    # The features go into the schema metadata the way `datasets` writes them, so load_dataset gets
    # the declared types (lists of strings) back instead of inferring them.
    features = json.dumps({"info": {"features": dataset.features.to_dict()}})
    table = table.replace_schema_metadata({"huggingface": features})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=PARQUET_ROW_GROUP_SIZE, compression="zstd",
                   compression_level=3, write_statistics=True, use_dictionary=True)
    return sink.getvalue()


def release_files(release_dir: Path, recipe_files: Mapping[str, Path]) -> dict[str, bytes]:
    """Path in the Hub repository -> content, for everything a release publishes."""
    import datasets

    dataset_dir = release_dir / "dataset"
    if not dataset_dir.is_dir():
        raise PublishError(f"no dataset at {dataset_dir}: build the release first (dvc repro release)")
    dataset = datasets.load_from_disk(str(dataset_dir))
    if not isinstance(dataset, datasets.DatasetDict):
        raise PublishError(f"{dataset_dir} holds a single Dataset; the release writes a DatasetDict of splits")
    files = {split_path(split): parquet_bytes(dataset[split]) for split in sorted(dataset)}
    card = release_dir / "README.md"
    if card.is_file():
        files["README.md"] = card.read_bytes()
    report = release_dir / REPORT_DIR
    if report.is_dir():  # the card's images point into it
        for path in sorted(p for p in report.rglob("*") if p.is_file()):
            files[f"{REPORT_DIR}/{path.relative_to(report).as_posix()}"] = path.read_bytes()
    for rel, path in sorted(recipe_files.items()):
        files[f"{RECIPE_DIR}/{Path(rel).as_posix()}"] = Path(path).read_bytes()
    return dict(sorted(files.items()))


def recipe_files(root: Path, params_path: Path) -> dict[str, Path]:
    """params.yaml, the recipe it names and every file under conf/, keyed by their path in the project."""
    import yaml

    params = yaml.safe_load(params_path.read_text(encoding="utf-8")) or {}
    recipe = params.get("recipe")
    recipe_path = root / "recipe" / f"{recipe}.yaml"
    if not recipe or not recipe_path.is_file():
        raise PublishError(f"{params_path} names recipe {recipe!r}, but {recipe_path} does not exist")
    files = {"params.yaml": params_path, f"recipe/{recipe}.yaml": recipe_path}
    for path in sorted((root / "conf").rglob("*.yaml")):
        files[path.relative_to(root).as_posix()] = path
    return files


def git_blob_id(content: bytes) -> str:
    """The id git (and so the Hub's listing) gives a regular file with this content."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def is_unchanged(content: bytes, remote) -> bool:
    """Whether a remote file (a ``RepoFile`` from the listing) already holds exactly ``content``."""
    if remote is None or remote.size != len(content):
        return False
    if remote.lfs is not None:
        return remote.lfs.sha256 == hashlib.sha256(content).hexdigest()
    return remote.blob_id == git_blob_id(content)


def remote_files(api, repo_id: str, revision: str, token: str) -> dict[str, Any]:
    """Path -> ``RepoFile`` at the head of ``revision``.

    A branch that does not exist yet will be created from main, so it is compared with main; a
    repository that does not exist has no files.
    """
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError
    from huggingface_hub.hf_api import RepoFile

    try:
        tree = api.list_repo_tree(repo_id, recursive=True, revision=revision, repo_type=REPO_TYPE, token=token)
        return {entry.path: entry for entry in tree if isinstance(entry, RepoFile)}
    except RevisionNotFoundError:
        return remote_files(api, repo_id, "main", token) if revision != "main" else {}
    except RepositoryNotFoundError:
        return {}


def token_from_environment(config: PublishConfig, environ: Mapping[str, str]) -> str:
    token = environ.get(config.token_env, "").strip()
    if not token:
        raise PublishError(f"no Hub token: set the environment variable {config.token_env} (publish.token_env "
                           "names it; tokens are never read from a config file)")
    return token


def publish_release(release_dir: Path, config: PublishConfig, recipe_files: Mapping[str, Path], *, api=None,
                    dry_run: bool = False, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Push the release's changed files to ``config.repo_id`` in one commit; return what was done.

    With ``dry_run`` the remote is only listed: the answer says what a push would upload, skip and
    delete, and nothing is written. ``api`` is a ``huggingface_hub.HfApi`` (default: one for the
    library's endpoint, ``HF_ENDPOINT``).
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    if config.repo_id is None:
        raise PublishError("publish.repo_id is not set: compose with publish=hub publish.repo_id=NAMESPACE/NAME")
    if not config.push and not dry_run:
        raise PublishError("publish.push is false in this config (publish=local); compose with publish=hub to "
                           "push, or pass --dry-run to see what would be pushed")
    token = token_from_environment(config, os.environ if environ is None else environ)
    api = api or HfApi()
    local = release_files(Path(release_dir), recipe_files)
    try:
        remote = remote_files(api, config.repo_id, config.revision, token)
        upload = [p for p, content in local.items() if not is_unchanged(content, remote.get(p))]
        delete = sorted(p for p in remote if p.startswith(MANAGED_PREFIXES) and p not in local)
        summary = {
            "repo_id": config.repo_id, "revision": config.revision, "endpoint": api.endpoint, "dry_run": dry_run,
            "uploaded": upload, "skipped": [p for p in local if p not in upload], "deleted": delete,
            "uploaded_bytes": sum(len(local[p]) for p in upload), "commit": None,
        }
        if dry_run or not (upload or delete):
            return summary
        api.create_repo(config.repo_id, repo_type=REPO_TYPE, private=config.private, exist_ok=True, token=token)
        if config.revision != "main":
            api.create_branch(config.repo_id, branch=config.revision, repo_type=REPO_TYPE, exist_ok=True,
                              token=token)
        operations = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=local[p]) for p in upload]
        operations += [CommitOperationDelete(path_in_repo=p) for p in delete]
        info = api.create_commit(
            config.repo_id, operations, repo_type=REPO_TYPE, revision=config.revision, token=token,
            commit_message=f"Publish {config.name}: {len(upload)} file(s) changed, {len(delete)} deleted")
    except HfHubHTTPError as exc:
        raise PublishError(f"the Hub at {api.endpoint} refused the push to {config.repo_id}: {exc}") from exc
    summary["commit"] = info.oid
    return summary
