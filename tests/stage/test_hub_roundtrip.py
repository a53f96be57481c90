"""Stage tier: a real release goes to the stand-in Hub and comes back as a consumer gets it.

One small repository gives all four task types; the pipeline runs through `sample`, `trailforge publish`
uploads the sampled set, and then fresh processes that know only HF_ENDPOINT (and the token of the private
repository) load the dataset with `datasets.load_dataset` and materialise environments with
`trailforge fetch-env`, which grades them with their own eval.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import PROJECT_ROOT, make_repo, run_stage, stats, write_params
from tests.stage.test_derived_tasks import ANALYSIS, DATA, HELPERS
from trailforge.io import LineageRow, read_rows
from trailforge.release.publish import card_parts
from trailforge.testing.hub_server import FakeHubServer

REPO = "trailforge-tester/meadow-release"
REPO_ALL = "trailforge-tester/meadow-release-all"  # the same build, publish.set=release: every environment
# A budget of 2 x 2 x 2 = 8 environments, fewer than the release has: the sample is a real subset.
SAMPLING = ["lineage.sampling.breadth=2", "lineage.sampling.depth=2", "lineage.sampling.granularity=2"]


@pytest.fixture(scope="module")
def hub():
    with FakeHubServer() as server:
        yield server


@pytest.fixture(scope="module")
def published(tmp_path_factory, hub):
    root = tmp_path_factory.mktemp("roundtrip")
    project = root / "project"
    project.mkdir()
    for folder in ("recipe", "conf"):  # publish uploads the recipe next to the release
        shutil.copytree(PROJECT_ROOT / folder, project / folder)
    repo = make_repo(root / "repos" / "meadow-shannon", {
        "README.md": "Species abundance survey of meadow habitat; Shannon biodiversity.\n",
        "analysis.py": ANALYSIS, "helpers.py": HELPERS, "data/obs.csv": DATA,
    })
    write_params(project, [str(repo)], ["publish=hub", f"publish.repo_id={REPO}", "publish.set=sample",
                                        "lineage.input.path=out/release/environments", *SAMPLING])
    run_stage(project, "discover", "--out", "out/discover")
    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")
    run_stage(project, "workflows", "--seeds", "out/seeds", "--out", "out/workflows")
    run_stage(project, "tasks", "--seeds", "out/seeds", "--workflows", "out/workflows", "--out", "out/tasks")
    run_stage(project, "verify", "--tasks", "out/tasks", "--out", "out/verify")
    run_stage(project, "release", "--verified", "out/verify", "--out", "out/release")
    run_stage(project, "lineage", "--out", "out/lineage")
    run_stage(project, "decontaminate", "--lineage", "out/lineage", "--out", "out/decontaminate")
    run_stage(project, "sample", "--lineage", "out/lineage", "--kept", "out/decontaminate", "--out", "out/sample")

    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}  # HF_HUB_OFFLINE among them
    env.update({"PYTHONPATH": str(PROJECT_ROOT), "HF_ENDPOINT": hub.url, "HF_TOKEN": hub.token,
                "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(root / "hf-home"),
                "HF_DATASETS_CACHE": str(root / "hf-datasets"), "TRAILFORGE_CACHE_DIR": str(root / "consumer-cache")})
    done = subprocess.run([sys.executable, "-m", "trailforge.cli.main", "publish", "--release", "out/release",
                           "--outputs", "out"], cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    sampled = sorted(r.item_id for r in read_rows(project / "out/sample/data", LineageRow) if r.kind == "environment")
    # The whole release as well, from a params file of its own: a sample of 8 need not hold every type.
    import yaml
    whole = yaml.safe_load((project / "params.yaml").read_text())
    whole["publish"].update({"set": "release", "repo_id": REPO_ALL})
    (project / "params-release.yaml").write_text(yaml.safe_dump(whole, sort_keys=False))
    # The card names the set and the params it was built from, so the release stage runs again for it (seconds).
    run_stage(project, "release", "--verified", "out/verify", "--out", "out/release-all", "--params", "params-release.yaml")
    again = subprocess.run([sys.executable, "-m", "trailforge.cli.main", "publish", "--release", "out/release-all",
                            "--outputs", "out", "--params", "params-release.yaml"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    return {"project": project, "root": root, "env": env, "summary": json.loads(done.stdout), "sampled": sampled,
            "released": sorted(p.name for p in (project / "out/release/environments").iterdir() if p.is_dir())}


def consumer(published, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """A fresh process in a folder of its own: no project, no outputs, only the Hub."""
    cwd = published["root"] / "consumer"
    cwd.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=published["env"], capture_output=True, text=True,
                          timeout=timeout)


def test_the_sampled_set_is_what_went_up(published, hub):
    release_total = stats(published["project"] / "out/release")["environments"]
    sampled = published["sampled"]
    assert 0 < len(sampled) < release_total, "the budget must select a proper subset"
    files = hub.files(REPO)
    assert sorted({p.split("/")[1] for p in files if p.startswith("environments/")}) == sampled
    assert published["summary"]["set"] == "sample" and published["summary"]["environments"] == len(sampled)
    header, body = card_parts(files["README.md"].decode())
    assert header["trailforge"]["set"] == "sample"
    assert header["trailforge"]["release_environments"] == release_total
    assert f"{len(sampled)} of the release's {release_total} environments" in body
    # The card's params hash is that of the params.yaml uploaded with it.
    import hashlib
    assert header["trailforge"]["params_sha256"] == hashlib.sha256(files["recipe/params.yaml"]).hexdigest()
    folder = next(p for p in files if p.startswith("environments/") and p.endswith("/metadata.json"))
    env_root = folder.rsplit("/", 1)[0]
    for part in ("task.md", "eval/eval.py", "eval/expected.json", "eval/controls/controls.json", "sandbox.json",
                 "Dockerfile", "requirements.lock.txt"):
        assert f"{env_root}/{part}" in files, part
    assert any(p.startswith(f"{env_root}/workspace/") for p in files)


def test_publish_set_release_uploads_every_environment(published, hub):
    import hashlib
    files = hub.files(REPO_ALL)
    assert sorted({p.split("/")[1] for p in files if p.startswith("environments/")}) == published["released"]
    header, _ = card_parts(files["README.md"].decode())
    assert header["trailforge"]["set"] == "release"
    assert header["trailforge"]["params_sha256"] == hashlib.sha256(files["recipe/params.yaml"]).hexdigest()


LOAD = """
import datasets, json, sys
default = datasets.load_dataset(sys.argv[1])
one = datasets.load_dataset(sys.argv[1], sys.argv[2])
print(json.dumps({"default": {split: sorted(default[split]["env_id"]) for split in default},
                  "one": {split: sorted(one[split]["env_id"]) for split in one},
                  "task_types": sorted(set(default[split][0]["task_type"] for split in default))}))
"""


def test_load_dataset_reads_the_default_and_a_per_type_config(published):
    sampled = published["sampled"]
    by_type: dict[str, list[str]] = {}
    for env_id in sampled:
        meta = json.loads((published["project"] / "out/release/environments" / env_id / "metadata.json").read_text())
        by_type.setdefault(meta["task_type"], []).append(env_id)
    kind = sorted(by_type)[0]
    done = consumer(published, "-c", LOAD, REPO, kind)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded["default"] == {k: sorted(v) for k, v in by_type.items()}  # one split per type, as load_from_disk
    assert loaded["one"] == {"train": sorted(by_type[kind])}
    assert loaded["task_types"] == sorted(by_type)


def wrong(answer: dict) -> dict:
    """The gold answer with its first field materially changed."""
    answer = copy.deepcopy(answer)
    name, value = next(iter(answer.items()))
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        answer[name] = "not the answer"
    elif isinstance(value, str):
        answer[name] = value + " (changed)"
    else:
        answer[name] = value * 3 + 7
    return answer


def _one_per_type(published, env_ids) -> dict[str, str]:
    seen: dict[str, str] = {}
    for env_id in env_ids:
        meta = json.loads((published["project"] / "out/release/environments" / env_id / "metadata.json").read_text())
        seen.setdefault(meta["task_type"], env_id)
    return seen


@pytest.mark.parametrize("repo_id", [REPO, REPO_ALL], ids=["sample", "release"])
def test_fetch_env_materialises_one_environment_per_type_and_grades_it(published, hub, repo_id):
    seen = _one_per_type(published, published["sampled" if repo_id == REPO else "released"])
    if repo_id == REPO_ALL:  # the whole release holds every type, Reproduction included
        assert sorted(seen) == ["completion", "correction", "reproduction", "subflow"]
    assert seen
    for kind, env_id in sorted(seen.items()):
        dest = published["root"] / "fetched" / repo_id.rsplit("/", 1)[1] / kind
        done = consumer(published, "-m", "trailforge.cli.main", "fetch-env", repo_id, env_id, "--dest", str(dest))
        assert done.returncode == 0, f"{kind}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        report = json.loads(done.stdout)
        assert report["env_id"] == env_id and report["task_type"] == kind and report["ok"], report["problems"]
        assert report["reference_accepted"] and report["gold_answer_accepted"]
        assert report["negatives_rejected"] and all(report["negatives_rejected"].values())
        # The folder is the one export wrote, byte for byte.
        source = published["project"] / "out/release/environments" / env_id
        assert {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()} == \
            {p.relative_to(source).as_posix(): p.read_bytes() for p in source.rglob("*") if p.is_file()}

        expected = json.loads((dest / "eval/expected.json").read_text())
        gold = {f["name"]: f["value"] for f in expected["fields"]}
        answers = published["root"] / "answers" / repo_id.rsplit("/", 1)[1] / kind
        answers.mkdir(parents=True)
        (answers / "gold.json").write_text(json.dumps(gold))
        (answers / "wrong.json").write_text(json.dumps(wrong(gold)))
        for name, accepted in (("gold", True), ("wrong", False)):
            graded = consumer(published, "-m", "trailforge.cli.main", "fetch-env", repo_id, env_id,
                              "--dest", str(answers / f"env-{name}"), "--answer", str(answers / f"{name}.json"))
            assert graded.returncode == (0 if accepted else 1), graded.stderr[-2000:]
            assert json.loads(graded.stdout)["accepted"] is accepted
        # What the environment's README line says a consumer runs, with no trailforge at all.
        plain = subprocess.run([sys.executable, "eval/eval.py", str(answers / "wrong.json"), "eval/expected.json"],
                               cwd=dest, capture_output=True, text=True, timeout=120)
        assert plain.returncode == 1, plain.stdout


def test_fetch_env_names_what_is_missing(published):
    done = consumer(published, "-m", "trailforge.cli.main", "fetch-env", REPO, "no-such-env",
                    "--dest", str(published["root"] / "missing"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{REPO}@main has no environment no-such-env; it has {len(published['sampled'])} environment(s)" \
        in done.stderr
    other = consumer(published, "-m", "trailforge.cli.main", "fetch-env", "trailforge-tester/absent", "x",
                     "--dest", str(published["root"] / "absent"))
    assert other.returncode == 2 and "no dataset repository trailforge-tester/absent" in other.stderr
