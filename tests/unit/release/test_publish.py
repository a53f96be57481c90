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
from trailforge.io import LineageRow, write_rows
from trailforge.release.card import card_configs
from trailforge.release.publish import PublishError, build_version, card_parts, parquet_bytes, pipeline_status, \
    published_card, publish_release, recipe_files
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


PARAMS = "recipe: tiny\nseed: 0\n"  # the recipe fixture's params.yaml
PARAMS_SHA256 = hashlib.sha256(PARAMS.encode()).hexdigest()


def card_text(splits, params_sha256: str = PARAMS_SHA256, title: str = "Tiny release") -> str:
    header = json.dumps({"configs": card_configs(list(splits)), "license": "mit",
                         "trailforge": {"params_sha256": params_sha256, "set": "release"}})
    return f"---\n{header}\n---\n# {title}\n\nBody.\n"


def write_release(root: Path, splits: dict[str, list[dict]], card: str | None = "default") -> Path:
    """A release folder as the release stage leaves it: dataset/ (save_to_disk), environments/ and a card."""
    for folder in ("dataset", "environments"):
        if (root / folder).exists():
            shutil.rmtree(root / folder)
    datasets.DatasetDict({s: datasets.Dataset.from_list(r, features=FEATURES) for s, r in splits.items()}) \
        .save_to_disk(str(root / "dataset"))
    for split, records in splits.items():
        for record in records:
            env = root / "environments" / record["env_id"]
            (env / "eval").mkdir(parents=True)
            (env / "metadata.json").write_text(json.dumps({"env_id": record["env_id"], "task_type": split}))
            (env / "task.md").write_text(record["statement"], encoding="utf-8")
            (env / "eval" / "expected.json").write_text('{"fields": []}\n')
    if card == "default":
        card = card_text(splits)
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
    files = {"params.yaml": PARAMS, "recipe/tiny.yaml": "defaults:\n  - base\n",
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
    kinds = {s: dataset[s].num_rows for s in dataset}
    files["README.md"] = published_card((release / "README.md").read_text(), "release", kinds,
                                        sum(kinds.values()), build_version(release)).encode()
    files["report/tasks.svg"] = (release / "report" / "tasks.svg").read_bytes()
    for path in (release / "environments").rglob("*"):
        if path.is_file():
            files[f"environments/{path.relative_to(release / 'environments').as_posix()}"] = path.read_bytes()
    files.update({f"recipe/{rel}": path.read_bytes() for rel, path in recipe.items()})
    return files


def test_the_published_card_names_the_commit_the_release_was_built_at(release):
    card = (release / "README.md").read_text()
    assert build_version(release) is None  # no timings.json: the section says nothing of a build
    assert "git commit" not in published_card(card, "release", {"completion": 3}, 3)
    (release / "timings.json").write_text(json.dumps(
        {"stage": "release", "code_version": {"commit": "d" * 40, "package_version": "0.1.0", "dirty": True}}))
    published = published_card(card, "release", {"completion": 3}, 3, build_version(release))
    assert f"built by trailforge 0.1.0 at git commit {'d' * 40} with uncommitted code changes" in published
    (release / "timings.json").write_text("{truncated")
    assert build_version(release) is None


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
    # One row names another data file: the rows change, the environment folders and counts do not.
    completion = rows("completion", 3)
    completion[1]["workspace_files"] = ["data/site1-revised.csv", "README.txt"]
    write_release(release, {"completion": completion, "correction": rows("correction", 2)}, card=None)

    summary = push(hub, release, recipe)

    changed = "data/completion-00000-of-00001.parquet"
    assert summary["uploaded"] == [changed] and summary["deleted"] == []
    assert hub.commits[-1]["added"] == [changed] and hub.commits[-1]["deleted"] == []
    assert len(hub.lfs_uploads) == uploads + 1
    assert pq.read_table(io.BytesIO(hub.files(REPO)[changed])).to_pylist() == completion


def test_a_changed_card_is_committed_inline_and_a_dropped_split_deleted(hub, release, recipe):
    push(hub, release, recipe)
    uploads = len(hub.lfs_uploads)
    shutil.rmtree(release / "dataset")
    write_release(release, {"completion": rows("completion", 3)})

    summary = push(hub, release, recipe)

    assert summary["uploaded"] == ["README.md"]
    gone = [f"environments/correction-{i}/{f}" for i in range(2) for f in ("eval/expected.json", "metadata.json",
                                                                          "task.md")]
    assert summary["deleted"] == ["data/correction-00000-of-00001.parquet", *gone]
    assert len(hub.lfs_uploads) == uploads  # README.md is a regular file: no LFS upload
    assert not any("correction" in p for p in hub.files(REPO))
    assert b"correction" not in hub.files(REPO)["README.md"]


def test_push_to_another_branch_leaves_main_alone(hub, release, recipe):
    push(hub, release, recipe)
    main_before = hub.files(REPO)
    write_release(release, {"completion": rows("completion", 5), "correction": rows("correction", 2)})

    summary = push(hub, release, recipe, PublishConfig(repo_id=REPO, push=True, revision="next"))

    new_envs = [f"environments/completion-{i}/{f}" for i in (3, 4)
                for f in ("eval/expected.json", "metadata.json", "task.md")]
    assert summary["uploaded"] == ["README.md", "data/completion-00000-of-00001.parquet", *new_envs]
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
    # The release was built from other params than the project's params.yaml: refused before any request.
    stale = cli()
    assert stale.returncode == 2 and "stale" in stale.stderr and "dvc repro release" in stale.stderr
    assert "Traceback" not in stale.stderr and hub.requests == []
    project_hash = hashlib.sha256((project / "params.yaml").read_bytes()).hexdigest()
    (release / "README.md").write_text(card_text(["completion", "correction"], project_hash), encoding="utf-8")

    first = cli()
    assert first.returncode == 0, first.stderr
    expected = expected_files(release, recipe_files(project, project / "params.yaml"))
    assert json.loads(first.stdout)["uploaded"] == sorted(expected)
    assert hub.files(REPO) == {".gitattributes": GITATTRIBUTES.encode(), **expected}
    uploaded_card = card_parts(hub.files(REPO)["README.md"].decode())[0]
    assert uploaded_card["trailforge"]["params_sha256"] == \
        hashlib.sha256(hub.files(REPO)["recipe/params.yaml"]).hexdigest()

    (release / "README.md").write_text(card_text(["completion", "correction"], project_hash, "Tiny release, revised"),
                                       encoding="utf-8")
    writes = len(hub.write_requests())
    dry = cli("--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["uploaded"] == ["README.md"] and len(hub.write_requests()) == writes

    assert json.loads(cli().stdout)["uploaded"] == ["README.md"]
    again = json.loads(cli().stdout)
    assert again["uploaded"] == [] and again["commit"] is None
    assert len(hub.commits) == 2 and hub.xet_requests == []


def lineage_rows(ids: list[str], kind: str = "environment") -> list[LineageRow]:
    return [LineageRow(item_id=i, kind=kind, text="t", parents=[], roots=[], depth=0) for i in ids]


def test_a_card_built_from_other_params_is_refused_before_any_request(hub, release, recipe):
    (release / "README.md").write_text(card_text(["completion", "correction"], "0" * 64), encoding="utf-8")
    with pytest.raises(PublishError, match=r"stale: its card was built from params.yaml with sha256 000000000000"):
        push(hub, release, recipe)
    (release / "README.md").write_text("---\nlicense: mit\n---\n# Old card\n", encoding="utf-8")
    with pytest.raises(PublishError, match="records no params hash"):
        push(hub, release, recipe)
    assert hub.requests == []


def test_the_uploaded_card_says_which_set_and_has_a_default_config(hub, release, recipe):
    push(hub, release, recipe)
    header, body = card_parts(hub.files(REPO)["README.md"].decode())
    assert header["trailforge"] == {"params_sha256": PARAMS_SHA256, "set": "release", "environments": 5,
                                    "release_environments": 5}
    assert header["configs"][0] == {"config_name": "default", "default": True, "data_files": [
        {"split": "completion", "path": "data/completion-*.parquet"},
        {"split": "correction", "path": "data/correction-*.parquet"}]}
    assert [c["config_name"] for c in header["configs"][1:]] == ["completion", "correction"]
    assert body.startswith("# Tiny release\n\n## This upload\n\nThis copy holds the **release** set")
    assert "5 of the release's 5 environments (3 completion, 2 correction)" in body and body.endswith("Body.\n")


def test_publishing_the_sample_set_uploads_only_its_environments(hub, release, recipe, tmp_path):
    sample = tmp_path / "sample"
    # Repository and seed nodes of the lineage graph are no environments and are left out.
    write_rows(lineage_rows(["completion-2", "correction-0"]) + lineage_rows(["meadow"], kind="repository"),
               sample / "data", LineageRow)

    summary = push(hub, release, recipe, PublishConfig(repo_id=REPO, push=True, set="sample"), selection_dir=sample)

    files = hub.files(REPO)
    assert summary["set"] == "sample" and summary["environments"] == 2
    assert sorted({p.split("/")[1] for p in files if p.startswith("environments/")}) == ["completion-2",
                                                                                         "correction-0"]
    for split, kept in (("completion", ["completion-2"]), ("correction", ["correction-0"])):
        table = pq.read_table(io.BytesIO(files[f"data/{split}-00000-of-00001.parquet"]))
        assert table.column("env_id").to_pylist() == kept
    header, body = card_parts(files["README.md"].decode())
    assert header["trailforge"]["set"] == "sample" and header["trailforge"]["environments"] == 2
    assert header["trailforge"]["release_environments"] == 5 and header["size_categories"] == ["n<1K"]
    assert "the **sample** set" in body and "2 of the release's 5 environments" in body

    # A sample of one type only: the other type's rows, folders and configs go.
    write_rows(lineage_rows(["correction-1"]), sample / "data", LineageRow)
    summary = push(hub, release, recipe, PublishConfig(repo_id=REPO, push=True, set="sample"), selection_dir=sample)
    files = hub.files(REPO)
    assert "data/completion-00000-of-00001.parquet" in summary["deleted"]
    assert [c["config_name"] for c in card_parts(files["README.md"].decode())[0]["configs"]] == ["default",
                                                                                                 "correction"]
    assert sorted({p.split("/")[1] for p in files if p.startswith("environments/")}) == ["correction-1"]


def test_a_set_from_another_corpus_or_an_older_release_is_refused(hub, release, recipe, tmp_path):
    config = PublishConfig(repo_id=REPO, push=True, set="decontaminate")
    with pytest.raises(PublishError, match="needs the decontaminate stage's folder"):
        push(hub, release, recipe, config)
    with pytest.raises(PublishError, match=r"no data-\*.parquet shards .*dvc repro decontaminate"):
        push(hub, release, recipe, config, selection_dir=tmp_path / "never-ran")
    write_rows(lineage_rows(["doc-1", "doc-2"], kind="item"), tmp_path / "jsonl" / "data", LineageRow)
    with pytest.raises(PublishError, match="holds no environments .*lineage.input.path"):
        push(hub, release, recipe, config, selection_dir=tmp_path / "jsonl")
    write_rows(lineage_rows(["completion-0", "completion-9"]), tmp_path / "old" / "data", LineageRow)
    with pytest.raises(PublishError, match="1 environment.* not in this release .*completion-9"):
        push(hub, release, recipe, config, selection_dir=tmp_path / "old")
    assert hub.requests == []


def test_pipeline_status_refuses_a_stage_dvc_reports_changed(tmp_path):
    project = tmp_path / "dvc-project"
    project.mkdir()
    (project / "verified.txt").write_text("3 environments\n")
    (project / "dvc.yaml").write_text("stages:\n  release:\n    cmd: cp verified.txt released.txt\n"
                                      "    deps: [verified.txt]\n    outs: [released.txt]\n")
    dvc = [sys.executable, "-m", "dvc"]
    for args in (["init", "--no-scm", "-q"], ["repro", "-q", "release"]):
        done = subprocess.run(dvc + args, cwd=project, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr

    pipeline_status(project, "release")  # up to date: no error
    (project / "verified.txt").write_text("4 environments\n")
    with pytest.raises(PublishError, match=r"release set is stale: DVC reports changes in release .*dvc repro release"):
        pipeline_status(project, "release")
    with pytest.raises(PublishError, match="`dvc status sample` failed"):
        pipeline_status(project, "sample")  # a stage this pipeline does not have
