"""The stand-in Hub answers the read routes huggingface_hub and datasets use, as the clients themselves call them."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import datasets
import httpx
import huggingface_hub.constants
import pytest
from huggingface_hub import CommitOperationAdd, HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url, \
    snapshot_download
from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

from trailforge.release.publish import parquet_bytes
from trailforge.testing.hub_server import FakeHubServer, git_blob_id

REPO = "trailforge-tester/reads"
CARD = "---\n" + json.dumps({"configs": [
    {"config_name": "default", "data_files": [{"split": "x", "path": "data/x-*.parquet"},
                                             {"split": "y", "path": "data/y-*.parquet"}]},
    {"config_name": "x", "data_files": [{"split": "train", "path": "data/x-*.parquet"}]},
]}) + "\n---\n# Reads\n"


@pytest.fixture(autouse=True)
def lfs_not_xet(monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)


def rows(n: int) -> list[dict]:
    return [{"n": i, "name": f"item {i}"} for i in range(n)]


@pytest.fixture
def hub():
    with FakeHubServer(tree_page_size=3) as server:  # small pages: every listing must follow Link headers
        api = HfApi(endpoint=server.url, token=server.token)
        api.create_repo(REPO, repo_type="dataset", private=False)
        files = {"README.md": CARD.encode(),
                 "data/x-00000-of-00001.parquet": parquet_bytes(datasets.Dataset.from_list(rows(5))),
                 "data/y-00000-of-00001.parquet": parquet_bytes(datasets.Dataset.from_list(rows(2))),
                 "environments/e1/task.md": b"Compute the mean.\n", "environments/e1/eval/expected.json": b"{}\n",
                 "environments/e10/task.md": b"Not e1.\n", "environments/e2/task.md": b"Another.\n"}
        api.create_commit(REPO, [CommitOperationAdd(p, c) for p, c in files.items()], repo_type="dataset",
                          commit_message="first")
        server.first_files = files
        yield server


def test_file_metadata_headers_are_those_hf_hub_download_reads(hub):
    head = hub.repos[("dataset", REPO)]["branches"]["main"]["sha"]
    regular = get_hf_file_metadata(hf_hub_url(REPO, "README.md", repo_type="dataset", endpoint=hub.url), token=False)
    assert regular.commit_hash == head and regular.size == len(CARD.encode())
    assert regular.etag == git_blob_id(CARD.encode())
    parquet = hub.first_files["data/x-00000-of-00001.parquet"]
    lfs = get_hf_file_metadata(hf_hub_url(REPO, "data/x-00000-of-00001.parquet", repo_type="dataset",
                                          endpoint=hub.url), token=False)
    assert lfs.etag == hashlib.sha256(parquet).hexdigest() and lfs.size == len(parquet)


def test_download_at_a_branch_and_at_an_older_commit(hub, tmp_path):
    first = hub.repos[("dataset", REPO)]["branches"]["main"]["sha"]
    HfApi(endpoint=hub.url, token=hub.token).create_commit(
        REPO, [CommitOperationAdd("environments/e1/task.md", b"Changed.\n")], repo_type="dataset",
        commit_message="second")
    path = hf_hub_download(REPO, "environments/e1/task.md", repo_type="dataset", endpoint=hub.url,
                           cache_dir=tmp_path / "cache", token=False)
    old = hf_hub_download(REPO, "environments/e1/task.md", repo_type="dataset", revision=first, endpoint=hub.url,
                          cache_dir=tmp_path / "cache", token=False)
    assert open(path, "rb").read() == b"Changed.\n" and open(old, "rb").read() == b"Compute the mean.\n"
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(REPO, "environments/e3/task.md", repo_type="dataset", endpoint=hub.url,
                        cache_dir=tmp_path / "cache", token=False)


def test_range_requests_get_the_asked_bytes(hub):
    url = hf_hub_url(REPO, "environments/e1/task.md", repo_type="dataset", endpoint=hub.url)
    part = httpx.get(url, headers={"Range": "bytes=8-11"})
    assert part.status_code == 206 and part.content == b"the " and part.headers["Content-Range"] == "bytes 8-11/18"
    assert httpx.get(url, headers={"Range": "bytes=-5"}).content == b"ean.\n"


def test_snapshot_download_takes_only_the_allowed_folder(hub, tmp_path):
    folder = snapshot_download(REPO, repo_type="dataset", endpoint=hub.url, allow_patterns=["environments/e1/*"],
                               local_dir=tmp_path / "snap", token=False)
    got = sorted(p.relative_to(folder).as_posix() for p in (tmp_path / "snap").rglob("*")
                 if p.is_file() and ".cache" not in p.parts)
    assert got == ["environments/e1/eval/expected.json", "environments/e1/task.md"]
    assert sorted(hub.downloads()) == got  # e10 and the parquet files were never fetched


def test_private_repository_needs_the_token_to_read(hub, tmp_path):
    HfApi(endpoint=hub.url, token=hub.token).create_repo("trailforge-tester/closed", repo_type="dataset", private=True)
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("trailforge-tester/closed", ".gitattributes", repo_type="dataset", endpoint=hub.url,
                        cache_dir=tmp_path / "a", token=False)
    path = hf_hub_download("trailforge-tester/closed", ".gitattributes", repo_type="dataset", endpoint=hub.url,
                           cache_dir=tmp_path / "b", token=hub.token)
    assert b"filter=lfs" in open(path, "rb").read()


def test_load_dataset_reads_the_default_and_a_named_config(hub, tmp_path):
    """datasets reads HF_ENDPOINT when it is imported, so it runs in a fresh process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update({"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "home"), "HF_HUB_DISABLE_XET": "1",
                "HF_DATASETS_CACHE": str(tmp_path / "datasets"), "HF_HUB_DISABLE_TELEMETRY": "1"})
    code = ("import datasets, json, sys\n"
            "d = datasets.load_dataset(sys.argv[1])\n"
            "x = datasets.load_dataset(sys.argv[1], 'x')\n"
            "print(json.dumps({'default': {s: d[s].to_list() for s in d}, 'x': {s: x[s].num_rows for s in x}}))\n")
    done = subprocess.run([sys.executable, "-c", code, REPO], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {"default": {"x": rows(5), "y": rows(2)}, "x": {"train": 5}}
