"""Publishing a release to the Hub: huggingface_hub itself talks to a local stand-in Hub (FakeHubServer)."""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import huggingface_hub.constants
import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi

from conftest import PROJECT_ROOT
from trailforge.config import ConfigError, compose, validate, write_params
from trailforge.config.schema import PublishConfig
from trailforge.release.publish import PublishError, card_configs, parquet_bytes, publish_release, recipe_files
from trailforge.testing.hub_server import GITATTRIBUTES, FakeHubServer

REPO = "trailforge-tester/tiny-release"
FEATURES = datasets.Features({
    "env_id": datasets.Value("string"),
    "statement": datasets.Value("string"),
    "workspace_files": datasets.Sequence(datasets.Value("string")),
})


@pytest.fixture(autouse=True)
def lfs_not_xet(monkeypatch):
    # huggingface_hub picks Xet on the client side whenever hf_xet is installed; the stand-in speaks
    # LFS, so switch Xet off the way HF_HUB_DISABLE_XET=1 would have at import time. Releases before Xet
    # (the 0.25 floor in pyproject.toml) have no such constant and always speak LFS.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True, raising=False)


@pytest.fixture
def hub():
    with FakeHubServer(tree_page_size=4) as server:  # small pages: the listing must follow Link headers
        yield server


def rows(split: str, n: int) -> list[dict]:
    return [{"env_id": f"{split}-{i}", "statement": f"Compute quantity {i} of {split}.",
             "workspace_files": [f"data/site{i}.csv", "README.txt"]} for i in range(n)]


def write_release(root: Path, splits: dict[str, list[dict]], card: str | None = "default") -> Path:
    """A release folder as the release stage leaves it: dataset/ (save_to_disk) and maybe a card."""
    if (root / "dataset").exists():
        shutil.rmtree(root / "dataset")
    datasets.DatasetDict({s: datasets.Dataset.from_list(r, features=FEATURES) for s, r in splits.items()}) \
        .save_to_disk(str(root / "dataset"))
    if card == "default":
        header = json.dumps({"configs": card_configs(list(splits)), "license": "mit"})
        card = f"---\n{header}\n---\n# Tiny release\n"
    if card is not None:
        (root / "README.md").write_text(card, encoding="utf-8")
        (root / "report").mkdir(exist_ok=True)
        (root / "report" / "tasks.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>\n", encoding="utf-8")
    return root


@pytest.fixture
def release(tmp_path):
    splits = {"completion": rows("completion", 3), "correction": rows("correction", 2)}
    return write_release(tmp_path / "release", splits)


@pytest.fixture
def recipe(tmp_path):
    root = tmp_path / "project"
    files = {"params.yaml": "recipe: tiny\nseed: 0\n", "recipe/tiny.yaml": "defaults:\n  - base\n",
             "conf/base.yaml": "defaults:\n  - publish: hub\n", "conf/publish/hub.yaml": "push: true\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return {rel: root / rel for rel in files}


def push(hub, release, recipe, config=None, **kwargs):
    config = config or PublishConfig(repo_id=REPO, push=True)
    return publish_release(release, config, recipe, api=HfApi(endpoint=hub.url),
                           environ={config.token_env: hub.token}, **kwargs)


def expected_files(release: Path, recipe: dict[str, Path]) -> dict[str, bytes]:
    dataset = datasets.load_from_disk(str(release / "dataset"))
    files = {f"data/{s}-00000-of-00001.parquet": parquet_bytes(dataset[s]) for s in dataset}
    files["README.md"] = (release / "README.md").read_bytes()
    files["report/tasks.svg"] = (release / "report" / "tasks.svg").read_bytes()
    files.update({f"recipe/{rel}": path.read_bytes() for rel, path in recipe.items()})
    return files


def test_first_push_uploads_exactly_the_release_files(hub, release, recipe):
    summary = push(hub, release, recipe)

    expected = expected_files(release, recipe)
    assert summary["uploaded"] == sorted(expected) and summary["skipped"] == [] and summary["deleted"] == []
    assert summary["commit"] == hub.commits[-1]["oid"]
    assert hub.files(REPO) == {".gitattributes": GITATTRIBUTES.encode(), **expected}
    assert [c["added"] for c in hub.commits] == [sorted(expected)]
    # The parquet files went through the LFS basic transfer, the small text files inline in the commit.
    assert sorted(hub.lfs_uploads) == sorted(hashlib.sha256(expected[p]).hexdigest()
                                             for p in expected if p.endswith(".parquet"))
    assert hub.xet_requests == []
    assert all(r["authorized"] for r in hub.requests if not r["path"].startswith(("/lfs-", "/api/validate")))
    assert hub.repos[("dataset", REPO)]["private"] is True
    uploaded = pq.read_table(io.BytesIO(hub.files(REPO)["data/completion-00000-of-00001.parquet"]))
    assert uploaded.to_pylist() == rows("completion", 3)


def test_uploaded_parquet_loads_back_with_its_features(hub, release, recipe, tmp_path):
    push(hub, release, recipe)
    path = tmp_path / "correction.parquet"
    path.write_bytes(hub.files(REPO)["data/correction-00000-of-00001.parquet"])
    loaded = datasets.Dataset.from_parquet(str(path))
    assert loaded.features == FEATURES
    assert loaded.to_list() == rows("correction", 2)


def test_second_push_of_an_unchanged_release_uploads_nothing(hub, release, recipe):
    push(hub, release, recipe)
    commits, uploads, requests = len(hub.commits), len(hub.lfs_uploads), len(hub.requests)
    # The release stage rebuilds the dataset from scratch: new arrow files, same rows.
    write_release(release, {"completion": rows("completion", 3), "correction": rows("correction", 2)})

    summary = push(hub, release, recipe)

    assert summary["uploaded"] == [] and summary["commit"] is None
    assert summary["skipped"] == sorted(expected_files(release, recipe))
    assert len(hub.commits) == commits and len(hub.lfs_uploads) == uploads
    new_requests = hub.requests[requests:]
    assert new_requests and all(r["method"] == "GET" and "/tree/" in r["path"] for r in new_requests)


def test_a_changed_file_uploads_only_that_file(hub, release, recipe):
    push(hub, release, recipe)
    uploads = len(hub.lfs_uploads)
    write_release(release, {"completion": rows("completion", 4), "correction": rows("correction", 2)}, card=None)

    summary = push(hub, release, recipe)

    changed = "data/completion-00000-of-00001.parquet"
    assert summary["uploaded"] == [changed] and summary["deleted"] == []
    assert hub.commits[-1]["added"] == [changed] and hub.commits[-1]["deleted"] == []
    assert len(hub.lfs_uploads) == uploads + 1
    assert pq.read_table(io.BytesIO(hub.files(REPO)[changed])).num_rows == 4


def test_a_changed_card_is_committed_inline_and_a_dropped_split_deleted(hub, release, recipe):
    push(hub, release, recipe)
    uploads = len(hub.lfs_uploads)
    shutil.rmtree(release / "dataset")
    write_release(release, {"completion": rows("completion", 3)})

    summary = push(hub, release, recipe)

    assert summary["uploaded"] == ["README.md"]
    assert summary["deleted"] == ["data/correction-00000-of-00001.parquet"]
    assert len(hub.lfs_uploads) == uploads  # README.md is a regular file: no LFS upload
    assert "data/correction-00000-of-00001.parquet" not in hub.files(REPO)
    assert b"correction" not in hub.files(REPO)["README.md"]


def test_push_to_another_branch_leaves_main_alone(hub, release, recipe):
    push(hub, release, recipe)
    main_before = hub.files(REPO)
    write_release(release, {"completion": rows("completion", 5), "correction": rows("correction", 2)})

    summary = push(hub, release, recipe, PublishConfig(repo_id=REPO, push=True, revision="next"))

    assert summary["uploaded"] == ["data/completion-00000-of-00001.parquet"]
    assert hub.commits[-1]["revision"] == "next"
    assert hub.files(REPO) == main_before


def test_missing_token_is_an_error_naming_the_variable(hub, release, recipe):
    config = PublishConfig(repo_id=REPO, push=True, token_env="TRAILFORGE_TEST_HUB_TOKEN")
    with pytest.raises(PublishError, match="TRAILFORGE_TEST_HUB_TOKEN"):
        publish_release(release, config, recipe, api=HfApi(endpoint=hub.url), environ={"HF_TOKEN": hub.token})
    assert hub.requests == []


def test_wrong_token_is_reported_with_the_hub_answer(hub, release, recipe):
    config = PublishConfig(repo_id=REPO, push=True)
    with pytest.raises(PublishError, match="refused the push"):
        publish_release(release, config, recipe, api=HfApi(endpoint=hub.url), environ={"HF_TOKEN": "hf_wrong"})
    assert hub.commits == [] and hub.lfs_uploads == []


def test_dry_run_lists_without_writing(hub, release, recipe):
    summary = push(hub, release, recipe, PublishConfig(repo_id=REPO), dry_run=True)

    assert summary["dry_run"] and summary["uploaded"] == sorted(expected_files(release, recipe))
    assert hub.write_requests() == [] and hub.repos == {}


def test_push_false_refuses_without_dry_run(hub, release, recipe):
    with pytest.raises(PublishError, match="publish.push"):
        push(hub, release, recipe, PublishConfig(repo_id=REPO, push=False))
    assert hub.requests == []


def test_parquet_bytes_do_not_depend_on_how_the_dataset_was_saved(tmp_path):
    a = write_release(tmp_path / "a", {"s": rows("s", 30)}, card=None)
    dataset = datasets.Dataset.from_list(rows("s", 30), features=FEATURES)
    b = tmp_path / "b"
    datasets.DatasetDict({"s": dataset}).save_to_disk(str(b / "dataset"), max_shard_size=2000)
    assert parquet_bytes(datasets.load_from_disk(str(a / "dataset"))["s"]) == \
        parquet_bytes(datasets.load_from_disk(str(b / "dataset"))["s"])


def test_recipe_files_are_params_the_recipe_and_conf():
    files = recipe_files(PROJECT_ROOT, PROJECT_ROOT / "params.yaml")
    assert "params.yaml" in files and "conf/base.yaml" in files and "conf/publish/hub.yaml" in files
    assert any(rel.startswith("recipe/") for rel in files)
    assert all(path.is_file() for path in files.values())


def test_hub_option_needs_a_repo_id_and_no_token_in_config():
    with pytest.raises(ConfigError, match="publish.repo_id"):
        validate(compose("tiny", ["publish=hub"], root=PROJECT_ROOT))
    with pytest.raises(ConfigError, match="publish.token_env"):
        validate(compose("tiny", ["publish=hub", f"publish.repo_id={REPO}", "+publish.token=hf_secret"],
                         root=PROJECT_ROOT))
    cfg = validate(compose("tiny", ["publish=hub", f"publish.repo_id={REPO}"], root=PROJECT_ROOT))
    assert cfg.publish.push and cfg.publish.repo_id == REPO and cfg.publish.token_env == "HF_TOKEN"


def test_cli_pushes_to_the_endpoint_named_by_hf_endpoint(hub, release, tmp_path):
    """The `trailforge publish` command in a fresh process: HF_ENDPOINT is read when huggingface_hub loads."""
    project = tmp_path / "project"
    for folder in ("recipe", "conf"):
        shutil.copytree(PROJECT_ROOT / folder, project / folder)
    params = compose("tiny", ["publish=hub", f"publish.repo_id={REPO}"], root=PROJECT_ROOT)
    validate(params)
    write_params(params, project / "params.yaml")
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update({"PYTHONPATH": str(PROJECT_ROOT), "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1",
                "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1"})

    def cli(*args, token=True):
        run_env = {**env, "HF_TOKEN": hub.token} if token else env
        return subprocess.run([sys.executable, "-m", "trailforge.cli.main", "publish", "--release", str(release),
                               *args], cwd=project, env=run_env, capture_output=True, text=True, timeout=300)

    missing = cli(token=False)
    assert missing.returncode == 2 and "HF_TOKEN" in missing.stderr and hub.requests == []

    first = cli()
    assert first.returncode == 0, first.stderr
    expected = expected_files(release, recipe_files(project, project / "params.yaml"))
    assert json.loads(first.stdout)["uploaded"] == sorted(expected)
    assert hub.files(REPO) == {".gitattributes": GITATTRIBUTES.encode(), **expected}

    (release / "README.md").write_text("---\nlicense: mit\n---\n# Tiny release, revised\n", encoding="utf-8")
    writes = len(hub.write_requests())
    dry = cli("--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["uploaded"] == ["README.md"] and len(hub.write_requests()) == writes

    assert json.loads(cli().stdout)["uploaded"] == ["README.md"]
    again = json.loads(cli().stdout)
    assert again["uploaded"] == [] and again["commit"] is None
    assert len(hub.commits) == 2 and hub.xet_requests == []
