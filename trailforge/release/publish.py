"""Publish a release to a Hugging Face Hub dataset repository, uploading only what changed.

Layout of the Hub repository (``publish.repo_id``, branch ``publish.revision``)::

    README.md                               the release's dataset card, rewritten for the set uploaded
    report/...                              the release's report folder, when it has one (the card shows its plots)
    data/<split>-00000-of-00001.parquet     one file per split of outputs/release/dataset (one split per task type)
    environments/<env_id>/...               each uploaded environment's folder, as export wrote it (task.md,
                                            workspace/, solution/, eval/ with controls, sandbox.json,
                                            Dockerfile, requirements.lock.txt, metadata.json)
    recipe/params.yaml                      the resolved config the release was built from
    recipe/recipe/<name>.yaml               the recipe named in params.yaml
    recipe/conf/...                         the config groups it composes from

Which environments go up is ``publish.set``: ``release`` (all of them), ``decontaminate`` (those the
decontaminate stage kept) or ``sample`` (the budgeted sample). The rows, the environment folders and the
card's ``configs:`` all follow the set, and the card says which set it is and how many of the release's
environments it holds (``trailforge:`` in its YAML header, and a section of its body).

The card's ``configs:`` (see :func:`card.card_configs`) make ``load_dataset(repo)`` give one split per
task type, as ``load_from_disk`` does locally, and ``load_dataset(repo, "<task_type>")`` one type.
``data/<split>-NNNNN-of-NNNNN.parquet`` is the name ``DatasetDict.push_to_hub`` uses, so even a Hub
copy without a card loads. ``recipe/`` mirrors the project's own folders, so ``trailforge validate``
and ``compose`` work inside a download of it. All of ``conf/`` goes up because params.yaml does not
record which group options or overrides produced it; params.yaml itself holds the resolved values.

A stale release is refused, not uploaded: the card records the sha256 of the params.yaml the release
was built from, and it must be that of the params.yaml uploaded next to it (``publish=hub`` changes
params.yaml, so the release is rebuilt after composing it). ``pipeline_status`` asks DVC whether the
stages that made the set are up to date with their code and data as well.

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
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..config.schema import PublishConfig
from ..io import LineageRow, read_rows
from ..io.store import TIMINGS_FILE
from .card import DATA_DIR, card_configs, describe_build_commit, size_category

REPO_TYPE = "dataset"
RECIPE_DIR = "recipe"
REPORT_DIR = "report"
ENVIRONMENTS_DIR = "environments"
# Remote files under these folders that the release no longer has are deleted.
MANAGED_PREFIXES = (f"{DATA_DIR}/", f"{RECIPE_DIR}/", f"{REPORT_DIR}/", f"{ENVIRONMENTS_DIR}/")
PARQUET_ROW_GROUP_SIZE = 1000  # rows; fixed so that the bytes do not depend on a library default
# The DVC stages whose outputs make each set; `dvc status --with-deps` on the last covers the others.
SET_STAGES = {"release": "release", "decontaminate": "decontaminate", "sample": "sample"}
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)


class PublishError(RuntimeError):
    """Publishing cannot start or the Hub refused it; the message says which setting or variable to fix."""


def split_path(split: str) -> str:
    return f"{DATA_DIR}/{split}-00000-of-00001.parquet"


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


def selected_environments(publish_set: str, selection_dir: Path | None) -> list[str] | None:
    """The ids of the environments a set keeps (``None``: the whole release).

    ``decontaminate`` and ``sample`` write lineage rows; those of kind ``environment`` are the release's
    environments (the lineage stage read ``outputs/release/environments``). A lineage run over another
    corpus has none, and is refused rather than published as an empty set.
    """
    if publish_set == "release":
        return None
    if selection_dir is None:
        raise PublishError(f"publish.set={publish_set} needs the {publish_set} stage's folder (--outputs)")
    try:
        rows = read_rows(Path(selection_dir) / "data", LineageRow)
    except FileNotFoundError as exc:
        raise PublishError(f"publish.set={publish_set}: {exc} (dvc repro {SET_STAGES[publish_set]})") from None
    kept = sorted(r.item_id for r in rows if r.kind == "environment")
    if not kept:
        raise PublishError(f"publish.set={publish_set}: {selection_dir} holds no environments ({len(rows)} other "
                           "items); its lineage stage must read the release (lineage.input.path="
                           "outputs/release/environments, lineage.input.format=environments)")
    return kept


def card_parts(card: str) -> tuple[dict[str, Any], str]:
    """A card's YAML header and its Markdown body."""
    match = _FRONT_MATTER.match(card)
    if not match:
        return {}, card
    header = yaml.safe_load(match.group(1)) or {}
    if not isinstance(header, dict):
        raise PublishError("the card's YAML header is not a mapping")
    return header, card[match.end():]


def check_params_hash(card: str, params: bytes) -> None:
    """Refuse a release whose card names other params than the params.yaml that is uploaded with it."""
    recorded = (card_parts(card)[0].get("trailforge") or {}).get("params_sha256")
    actual = hashlib.sha256(params).hexdigest()
    if recorded is None:
        raise PublishError("the release's card records no params hash (trailforge.params_sha256): it was built "
                           "by an older trailforge; rebuild it with `dvc repro release`")
    if recorded != actual:
        raise PublishError(f"the release is stale: its card was built from params.yaml with sha256 {recorded[:12]}..., "
                           f"but params.yaml is now {actual[:12]}... (composing publish=hub changes it too); "
                           "rebuild with `dvc repro release` (only the stages whose params changed re-run), "
                           "then publish")


def published_card(card: str, publish_set: str, kinds: dict[str, int], release_count: int,
                   build: dict[str, Any] | None = None) -> str:
    """The release's card for the uploaded set: its configs, size and ``trailforge.set``, and a section
    saying which set this is and, when ``build`` (the release's recorded code version) is known, the
    commit it was built at. The statistics in the body stay those of the whole release."""
    header, body = card_parts(card)
    total = sum(kinds.values())
    header["size_categories"] = [size_category(total)]
    header["configs"] = card_configs(list(kinds))
    header["trailforge"] = {**(header.get("trailforge") or {}), "set": publish_set, "environments": total,
                            "release_environments": release_count}
    meaning = {"release": "every environment of the release",
               "decontaminate": "the environments the decontaminate stage kept (those below "
                                "lineage.contamination.drop_threshold)",
               "sample": "the environments the sample stage chose under the lineage.sampling budget"}[publish_set]
    counts = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    section = (f"## This upload\n\nThis copy holds the **{publish_set}** set: {meaning}, {total} of the release's "
               f"{release_count} environments ({counts}). `load_dataset(repo)` gives one split per task type; "
               "`load_dataset(repo, \"<task type>\")` gives one type as `train`. Each environment's folder is under "
               "`environments/<env_id>/`: `trailforge fetch-env REPO ENV_ID --dest DIR` downloads one and grades its "
               "reference answer with its own eval. The statistics below describe the whole release."
               + (f" This release was {describe_build_commit(build)}." if build else "") + "\n\n")
    lines = body.split("\n", 1)  # after the title line, when the body starts with one
    body = f"{lines[0]}\n\n{section}{lines[1].lstrip(chr(10))}" if body.startswith("# ") and len(lines) == 2 \
        else section + body
    front = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return f"---\n{front}---\n{body}"


def build_version(release_dir: Path) -> dict[str, Any] | None:
    """The code version the release stage recorded in its timings.json (None when there is none to read)."""
    try:
        version = json.loads((release_dir / TIMINGS_FILE).read_text(encoding="utf-8")).get("code_version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, dict) else None


def release_files(release_dir: Path, recipe_files: Mapping[str, Path], publish_set: str = "release",
                  selection_dir: Path | None = None) -> dict[str, bytes]:
    """Path in the Hub repository -> content, for everything a release publishes of ``publish_set``."""
    import datasets

    dataset_dir = release_dir / "dataset"
    if not dataset_dir.is_dir():
        raise PublishError(f"no dataset at {dataset_dir}: build the release first (dvc repro release)")
    dataset = datasets.load_from_disk(str(dataset_dir))
    if not isinstance(dataset, datasets.DatasetDict):
        raise PublishError(f"{dataset_dir} holds a single Dataset; the release writes a DatasetDict of splits")
    card_path = release_dir / "README.md"
    if not card_path.is_file():
        raise PublishError(f"no dataset card at {card_path}: build the release first (dvc repro release)")
    if "params.yaml" not in recipe_files:
        raise PublishError("no params.yaml among the recipe files: the card's params hash cannot be checked")
    card = card_path.read_text(encoding="utf-8")
    check_params_hash(card, Path(recipe_files["params.yaml"]).read_bytes())

    release_ids = sorted(env_id for split in dataset for env_id in dataset[split]["env_id"])
    keep = selected_environments(publish_set, selection_dir)
    if keep is not None:
        unknown = sorted(set(keep) - set(release_ids))
        if unknown:
            raise PublishError(f"publish.set={publish_set}: {len(unknown)} environment(s) are not in this release "
                               f"(e.g. {unknown[0]}): the {publish_set} stage ran on an older release; "
                               f"dvc repro {SET_STAGES[publish_set]}")
        wanted = set(keep)
        dataset = datasets.DatasetDict({
            split: part for split in dataset
            if len(part := dataset[split].filter(lambda row: row["env_id"] in wanted, keep_in_memory=True))})
    files = {split_path(split): parquet_bytes(dataset[split]) for split in sorted(dataset)}
    kinds = {split: dataset[split].num_rows for split in dataset}
    files["README.md"] = published_card(card, publish_set, kinds, len(release_ids),
                                        build_version(release_dir)).encode("utf-8")
    report = release_dir / REPORT_DIR
    if report.is_dir():  # the card's images point into it
        for path in sorted(p for p in report.rglob("*") if p.is_file()):
            files[f"{REPORT_DIR}/{path.relative_to(report).as_posix()}"] = path.read_bytes()
    for env_id in sorted(env_id for split in dataset for env_id in dataset[split]["env_id"]):
        folder = release_dir / ENVIRONMENTS_DIR / env_id
        if not (folder / "metadata.json").is_file():
            raise PublishError(f"the release has no environment folder {folder}: rebuild it (dvc repro release)")
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            files[f"{ENVIRONMENTS_DIR}/{env_id}/{path.relative_to(folder).as_posix()}"] = path.read_bytes()
    for rel, path in sorted(recipe_files.items()):
        files[f"{RECIPE_DIR}/{Path(rel).as_posix()}"] = Path(path).read_bytes()
    return dict(sorted(files.items()))


def pipeline_status(project: Path, publish_set: str) -> None:
    """Refuse when DVC says a stage that made ``publish_set`` (or any stage above it) is out of date."""
    stage = SET_STAGES[publish_set]
    try:
        # DVC of this interpreter, not whichever `dvc` is first on PATH.
        done = subprocess.run([sys.executable, "-m", "dvc", "status", "--json", "--with-deps", stage], cwd=project,
                              capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise PublishError(f"`dvc status {stage}` took more than 10 minutes in {project}") from None
    if done.returncode != 0 and "No module named dvc" in done.stderr:
        raise PublishError("dvc is not installed with this trailforge: install the project (it depends on dvc) "
                           "to check that the release is up to date") from None
    if done.returncode != 0:
        raise PublishError(f"`dvc status {stage}` failed in {project}: {done.stderr.strip()[-500:]}")
    stale = json.loads(done.stdout or "{}")
    if stale:
        raise PublishError(f"the {publish_set} set is stale: DVC reports changes in {', '.join(sorted(stale))} "
                           f"(`dvc status --with-deps {stage}`); run `dvc repro {stage}`, then publish")


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
                    selection_dir: Path | None = None, dry_run: bool = False,
                    environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Push the changed files of ``config.set`` to ``config.repo_id`` in one commit; return what was done.

    ``selection_dir`` is the folder of the stage that made the set (``outputs/sample`` for
    ``publish.set=sample``). With ``dry_run`` the remote is only listed: the answer says what a push
    would upload, skip and delete, and nothing is written. ``api`` is a ``huggingface_hub.HfApi``
    (default: one for the library's endpoint, ``HF_ENDPOINT``).
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
    local = release_files(Path(release_dir), recipe_files, config.set, selection_dir)
    try:
        remote = remote_files(api, config.repo_id, config.revision, token)
        upload = [p for p, content in local.items() if not is_unchanged(content, remote.get(p))]
        delete = sorted(p for p in remote if p.startswith(MANAGED_PREFIXES) and p not in local)
        summary = {
            "repo_id": config.repo_id, "revision": config.revision, "endpoint": api.endpoint, "dry_run": dry_run,
            "set": config.set, "environments": len({p.split("/")[1] for p in local if p.startswith(ENVIRONMENTS_DIR)}),
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
