"""Stage tier: the four task types from one small repository, their controls, and byte-identical rebuilds."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from conftest import DOCKER_BASE_IMAGE, docker_client_or_skip, make_repo, run_stage, stats, write_params
from trailforge.envs.answers import extract_answer
from trailforge.io import TaskRow, VerifiedTaskRow, read_rows

ANALYSIS = '''import csv

from helpers import shannon

MIN_COUNT = 1


def load(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def main():
    rows = load("data/obs.csv")
    by_site = {}
    for row in rows:
        if int(row["count"]) >= MIN_COUNT:
            by_site.setdefault(row["site"], []).append(float(row["count"]))
    diversity = {site: shannon(values) for site, values in sorted(by_site.items())}
    mean_h = sum(diversity.values()) / len(diversity)
    spread = max(diversity.values()) - min(diversity.values())
    total = sum(sum(v) for v in by_site.values())
    richest = max(by_site, key=lambda s: len(by_site[s]))
    print(f"Mean Shannon index: {mean_h:.5f}")
    print(f"Shannon spread: {spread:.5f}")
    print(f"Total individuals: {int(total)}")
    print(f"Richest site: {richest}")
    for site in sorted(diversity):
        print(f"Shannon {site}: {diversity[site]:.5f}")


main()
'''
HELPERS = '''import math


def shannon(counts):
    """Shannon diversity of a list of counts (natural log)."""
    total = sum(counts)
    shares = [c / total for c in counts if c > 0]
    return -sum(p * math.log(p) for p in shares)
'''
DATA = "site,species,count\n" + "".join(
    f"{site},{species},{count}\n"
    for site, counts in {"north": [12, 5, 3, 1, 9], "south": [20, 2, 2], "east": [7, 7, 6, 1], "west": [3, 0, 8]}.items()
    for species, count in zip("abcde", counts)
)


def _digest(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("derived")
    project = root / "project"
    project.mkdir()
    repo = make_repo(root / "repos" / "meadow-shannon", {
        "README.md": "Species abundance survey of meadow habitat; Shannon biodiversity.\n",
        "analysis.py": ANALYSIS, "helpers.py": HELPERS, "data/obs.csv": DATA,
    })
    write_params(project, [str(repo)])
    run_stage(project, "discover", "--out", "out/discover")
    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")
    run_stage(project, "workflows", "--seeds", "out/seeds", "--out", "out/workflows")
    run_stage(project, "tasks", "--seeds", "out/seeds", "--workflows", "out/workflows", "--out", "out/tasks")
    run_stage(project, "verify", "--tasks", "out/tasks", "--out", "out/verify")
    run_stage(project, "release", "--verified", "out/verify", "--out", "out/release")
    return project, root


def test_every_task_type_is_built_and_verified(built):
    project, _ = built
    tasks = read_rows(project / "out/tasks/data", TaskRow)
    verified = read_rows(project / "out/verify/data", VerifiedTaskRow)
    kinds = {t.task_type for t in verified}
    assert kinds == {"reproduction", "subflow", "completion", "correction"}
    assert len(verified) >= 10, stats(project / "out/verify")
    assert len(verified) == len(tasks), stats(project / "out/verify")["reject_reasons"]
    for task in verified:
        controls = task.checks["negative_controls"]
        assert sum(v.startswith("rejected") for v in controls.values()) >= 3
        if task.task_type == "correction":
            assert controls["program:defective"] == "rejected"
        if task.task_type == "completion":
            assert controls["program:incomplete"] == "rejected"


def test_kept_mutants_change_the_answer_and_differ_from_each_other(built):
    project, _ = built
    corrections = [t for t in read_rows(project / "out/verify/data", VerifiedTaskRow) if t.task_type == "correction"]
    assert corrections
    prints = [t.construction["mutant_answer_fingerprint"] for t in corrections]
    assert len(prints) == len(set(prints))
    for task in corrections:
        info = task.construction
        assert info["changed_fields"] and info["original"] != info["mutated"]
        assert info["original"].strip() not in task.statement
        changed = task.workspace_program[info["path"]]
        assert changed != task.reference_program[info["path"]]
        assert info["mutated"].strip() in changed
        for name in info["changed_fields"]:
            assert f"`{name}` is wrong" in task.statement


def _grade(folder, tmp_path, files, entry):
    """Run a program on the exported workspace data and grade its output with the exported eval."""
    work = tmp_path / "run"
    if work.exists():
        import shutil
        shutil.rmtree(work)
    (work / "data").mkdir(parents=True)
    for data in (folder / "workspace" / "data").iterdir():
        (work / "data" / data.name).write_bytes(data.read_bytes())
    for path, text in files.items():
        (work / path).write_text(text)
    done = subprocess.run([sys.executable, entry], cwd=work, capture_output=True, text=True, timeout=60)
    _, answer, _ = extract_answer(done.stdout, {}, 24, 50)
    (work / "answer.json").write_text(json.dumps(answer))
    graded = subprocess.run([sys.executable, str(folder / "eval/eval.py"), str(work / "answer.json"),
                             str(folder / "eval/expected.json")], capture_output=True, text=True, timeout=60)
    return graded.returncode, done.returncode


def test_completion_stubs_hold_no_removed_code_and_fail_the_eval(built, tmp_path):
    project, _ = built
    completions = [t for t in read_rows(project / "out/verify/data", VerifiedTaskRow) if t.task_type == "completion"]
    assert {t.construction["kind"] for t in completions} == {"function", "block"}
    for task in completions:
        info = task.construction
        removed = [line.strip() for line in info["removed"].splitlines() if line.strip()]
        stub_program = task.workspace_program[info["path"]]
        assert info["stub"] in stub_program
        assert not any(line in info["stub"] for line in removed)
        assert "NotImplementedError" in info["stub"]
        folder = project / "out/release/environments" / task.task_id
        verdict, exit_code = _grade(folder, tmp_path, task.workspace_program, task.entrypoint)
        assert exit_code != 0 and verdict == 1, "the program with the hole must not pass the eval"
        verdict, exit_code = _grade(folder, tmp_path, task.reference_program, task.entrypoint)
        assert exit_code == 0 and verdict == 0, "the reference program must pass it"


def test_subflow_statements_never_state_the_answer_or_values_it_derives_from(built):
    project, _ = built
    subflows = [t for t in read_rows(project / "out/verify/data", VerifiedTaskRow) if t.task_type == "subflow"]
    assert subflows
    for task in subflows:
        assert task.answer_from == "result_files"
        assert "report_result" in task.reference_program[task.entrypoint]
        for value in [*task.derived_values, *[v for v in task.reference_answer.values() if isinstance(v, float)]]:
            assert repr(value) not in task.statement and f"{value:.5f}" not in task.statement


def test_subflow_statements_state_the_slice_step_by_step(built):
    """The issue's reviewers could not answer Subflows whose steps read "`bottom, compound, …` from `H`": the
    statement now gives the slice's own code, so the filter on MIN_COUNT and the helper's formula are stated."""
    project, _ = built
    subflows = [t for t in read_rows(project / "out/verify/data", VerifiedTaskRow) if t.task_type == "subflow"]
    assert subflows
    for task in subflows:
        assert "report_result" not in task.statement
        assert "the requested result is `" in task.statement
        if "by_site" in task.statement:
            assert "if `int(row['count']) >= MIN_COUNT`:" in task.statement and "`MIN_COUNT = " in task.statement
    assert any("by_site" in task.statement for task in subflows)


def test_rebuilding_from_a_clean_cache_gives_identical_task_files(built):
    project, root = built
    for stage, args in [("workflows", ["--seeds", "out/seeds"]),
                        ("tasks", ["--seeds", "out/seeds", "--workflows", "out/workflows-again"])]:
        run_stage(project, stage, *args, "--out", f"out/{stage}-again", cache=root / "fresh-cache")
    assert _digest(project / "out/workflows") == _digest(project / "out/workflows-again")
    assert _digest(project / "out/tasks") == _digest(project / "out/tasks-again")


def test_recipe_caps_and_operator_allow_list_are_obeyed(built, tmp_path):
    project, root = built
    caps = ["tasks.correction.operators=[sign,log_base]", "tasks.correction.max_per_seed=1",
            "tasks.subflow.max_per_seed=1", "tasks.completion.max_per_seed=1", "seed=3"]
    # tasks.repository.target=0: the per-seed caps as written, not grown for a repository with one seed.
    for target, cap in ((0, 1), (48, 3)):  # one seed, caps 1/1/1: 4 tasks a seed, grown at most 3x
        write_params(project, [str(root / "repos" / "meadow-shannon")], [*caps, f"tasks.repository.target={target}"])
        run_stage(project, "tasks", "--seeds", "out/seeds", "--workflows", "out/workflows", "--out",
                  f"out/tasks-capped-{target}")
        tasks = read_rows(project / f"out/tasks-capped-{target}/data", TaskRow)
        by_type = {kind: [t for t in tasks if t.task_type == kind] for kind in ("subflow", "completion", "correction")}
        assert all(len(v) <= cap for v in by_type.values()), {k: len(v) for k, v in by_type.items()}
        assert all(t.construction["operator"] in ("sign", "log_base") for t in by_type["correction"])


def test_the_same_tasks_verify_the_same_way_under_docker(built):
    project, root = built
    docker_client_or_skip()
    base = DOCKER_BASE_IMAGE
    write_params(project, [str(root / "repos" / "meadow-shannon")], ["sandbox=docker", f"sandbox.base_image={base}"])
    run_stage(project, "verify", "--tasks", "out/tasks", "--out", "out/verify-docker", cache=root / "docker-cache")
    local = {t.task_id: t for t in read_rows(project / "out/verify/data", VerifiedTaskRow)}
    in_docker = {t.task_id: t for t in read_rows(project / "out/verify-docker/data", VerifiedTaskRow)}
    assert set(in_docker) == set(local), stats(project / "out/verify-docker")["reject_reasons"]
    for task_id, task in local.items():
        other = in_docker[task_id]
        assert other.sandbox_spec["backend"] == "docker"
        assert other.checks["max_rel_spread"] == task.checks["max_rel_spread"], "reference runs agree across backends"
        assert other.checks["negative_controls"] == task.checks["negative_controls"]
        assert other.tolerances == task.tolerances
