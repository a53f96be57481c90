"""Stage tier: repositories built to crash discover and snapshot end as counted rejects, and the build
goes on with the good repository next to them."""
from __future__ import annotations

import os
import stat

import pytest

from conftest import make_repo, run_stage, stats, write_params
from trailforge.envs.files import MAX_TREE_DEPTH, remove_tree
from trailforge.io import SnapshotRow, read_rejects, read_rows

README = "# Meadow survey\nSpecies abundance per quadrat; Shannon diversity of the habitat.\n"
READS = "import csv\nrows = list(csv.DictReader(open('data/obs.csv')))\n"
GOOD_FILES = {
    "README.md": README,
    "data/obs.csv": "site,count\nA,3\nB,4\nC,5\n",
    "mean.py": READS + "print('Mean count:', sum(int(r['count']) for r in rows) / len(rows))\n",
}


def _nest(base, levels: int, name: str = "d") -> str:
    """``levels`` folders inside ``base``, made one by one (os.makedirs recurses per level too)."""
    rel = ""
    for _ in range(levels):
        rel = f"{rel}/{name}" if rel else name
        os.mkdir(base / rel)
    return rel


@pytest.fixture
def two_repos(project):
    """(good repository, hostile repository folder to fill); both removed without recursion afterwards."""
    good = make_repo(project / "repos" / "good-meadow", GOOD_FILES)
    hostile = make_repo(project / "repos" / "hostile-meadow", GOOD_FILES)
    yield good, hostile
    remove_tree(project / "repos")
    remove_tree(project / "out")


def _snapshots(project) -> dict[str, SnapshotRow]:
    return {r.repo_id: r for r in read_rows(project / "out/snapshot/data", SnapshotRow)}


def _rejects(project, stage: str) -> dict[str, str]:
    return {r.item_id: r.reason for r in read_rejects(project / f"out/{stage}/rejects.parquet")}


def test_folder_nested_1100_deep_is_cut_at_the_depth_cap_and_counted(project, two_repos):
    good, hostile = two_repos
    chain = _nest(hostile, 1100)
    (hostile / chain / "bottom.py").write_text("print('never reached')\n")
    shallow = "/".join(["d"] * 10)
    (hostile / shallow / "kept.py").write_text("VALUE = 1\n")
    write_params(project, [str(good), str(hostile)])

    run_stage(project, "discover", "--out", "out/discover")
    discovered = stats(project / "out/discover")
    assert discovered["accepted"] == 2 and discovered["reject_reasons"] == {}
    assert discovered["counters"]["folders_too_deep"] == 1

    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    snapshots = _snapshots(project)
    assert sorted(snapshots) == ["good-meadow", "hostile-meadow"]
    cut = "/".join(["d"] * (MAX_TREE_DEPTH + 1))
    assert _rejects(project, "snapshot") == {f"hostile-meadow:{cut}": "tree_too_deep"}
    assert stats(project / "out/snapshot")["reject_reasons"] == {"tree_too_deep": 1}
    paths = {f.path for f in snapshots["hostile-meadow"].files}
    assert f"{shallow}/kept.py" in paths, "the part of the tree above the cap is still copied"
    assert not any(p.endswith("bottom.py") for p in paths)


def test_source_too_deep_for_the_parser_is_a_counted_reject_of_that_file(project, two_repos):
    good, hostile = two_repos
    expression = "X = " + "+".join(["1"] * 100_000) + "\n"  # ~200 KB
    (hostile / "deep_sum.py").write_text(expression)
    (hostile / "nulls.py").write_bytes(b"import numpy\x00\n")
    write_params(project, [str(good), str(hostile)])
    run_stage(project, "discover", "--out", "out/discover")

    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    assert sorted(_snapshots(project)) == ["good-meadow", "hostile-meadow"]
    rejects = {r.item_id: r for r in read_rejects(project / "out/snapshot/rejects.parquet")}
    assert {k: r.reason for k, r in rejects.items()} == {
        "hostile-meadow:deep_sum.py": "unparseable_source", "hostile-meadow:nulls.py": "unparseable_source",
    }
    assert "deep_sum.py" in rejects["hostile-meadow:deep_sum.py"].message
    assert "null bytes" in rejects["hostile-meadow:nulls.py"].message

    # The seeds stage parses candidates too: the files the snapshot could not parse are never candidates.
    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")
    seed_rejects = _rejects(project, "seeds")
    assert not any(item.endswith(("deep_sum.py", "nulls.py")) for item in seed_rejects)
    assert stats(project / "out/seeds")["counters"]["candidates"] == 2  # mean.py of each repository


def test_python2_script_is_a_named_reject_not_a_syntax_error(project, two_repos):
    good, hostile = two_repos
    (hostile / "old_mean.py").write_text(READS + "print 'Mean count:', len(rows)\n")
    (hostile / "broken.py").write_text("def f(:\n    pass\n")
    write_params(project, [str(good), str(hostile)])
    run_stage(project, "discover", "--out", "out/discover")

    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    rejects = {r.item_id: r for r in read_rejects(project / "out/snapshot/rejects.parquet")}
    assert {k: r.reason for k, r in rejects.items()} == {
        "hostile-meadow:old_mean.py": "python2_only", "hostile-meadow:broken.py": "syntax_error",
    }
    assert "old_mean.py is Python 2 only (print statement at line 3)" in rejects["hostile-meadow:old_mean.py"].message
    assert stats(project / "out/snapshot")["reject_reasons"] == {"python2_only": 1, "syntax_error": 1}

    # Like any file the snapshot could not parse, it is never a seed candidate (so not rejected twice).
    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")
    assert not any(item.endswith(("old_mean.py", "broken.py")) for item in _rejects(project, "seeds"))


def test_local_copy_skips_hardlinks_and_special_files_and_normalises_permissions(project, two_repos, tmp_path):
    good, hostile = two_repos
    host_secret = tmp_path / "host_secret.txt"
    host_secret.write_text("token=abc\n")
    os.link(host_secret, hostile / "data" / "innocent.csv")
    os.mkfifo(hostile / "data" / "pipe.csv")
    (hostile / os.fsdecode(b"data/caf\xe9.csv")).write_text("a\n1\n")  # a Latin-1 name: no row could hold it
    wide = hostile / "tool.py"
    wide.write_text("print('hello')\n")
    os.chmod(wide, 0o6777)  # setuid, setgid, world-writable
    os.chmod(hostile / "data", 0o777)
    write_params(project, [str(good), str(hostile)])
    run_stage(project, "discover", "--out", "out/discover")

    # A group-writable umask is common (user-private groups); the copy must not inherit it.
    previous = os.umask(0o002)
    try:
        run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    finally:
        os.umask(previous)
    assert sorted(_snapshots(project)) == ["good-meadow", "hostile-meadow"]
    assert _rejects(project, "snapshot") == {
        "hostile-meadow:data/innocent.csv": "hardlinked_file",
        "hostile-meadow:data/pipe.csv": "not_regular_file",
        "hostile-meadow:data/caf\\xe9.csv": "undecodable_name",
    }
    counted = stats(project / "out/snapshot")["reject_reasons"]
    assert counted == {"hardlinked_file": 1, "not_regular_file": 1, "undecodable_name": 1}
    copy = project / "out/snapshot/trees/hostile-meadow"
    assert not (copy / "data/innocent.csv").exists()
    for path in [copy, *copy.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o755 if path.is_dir() else 0o644), f"{path.relative_to(copy)} has mode {oct(mode)}"


def test_manifest_requirements_other_than_named_releases_are_refused_one_by_one(project, two_repos):
    good, hostile = two_repos
    refused = [
        "mypkg @ https://example.org/mypkg-1.0.tar.gz",
        "git+https://github.com/org/repo.git#egg=repo",
        "./vendored",
        "-e .",
        "--index-url https://mirror.example/simple",
        "-r more-requirements.txt",
    ]
    (hostile / "requirements.txt").write_text("\n".join(["numpy==1.26.4", *refused, "pandas>=2"]) + "\n")
    write_params(project, [str(good), str(hostile)])
    run_stage(project, "discover", "--out", "out/discover")
    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")

    snapshots = _snapshots(project)
    assert sorted(snapshots) == ["good-meadow", "hostile-meadow"]
    row = snapshots["hostile-meadow"]
    assert row.requirements == ["numpy==1.26.4", "pandas>=2"]
    assert {"numpy==1.26.4", "pandas>=2"} <= set(row.distributions)
    assert not any(("/" in d or d.startswith(("-", ".")) or "mypkg" in d) for d in row.distributions)
    rejects = [r for r in read_rejects(project / "out/snapshot/rejects.parquet") if r.reason == "refused_requirement"]
    assert sorted(r.detail["requirement"] for r in rejects) == sorted(refused)
    for reject in rejects:
        assert reject.detail["requirement"] in reject.message and "requirements.txt" in reject.message
    assert stats(project / "out/snapshot")["reject_reasons"] == {"refused_requirement": len(refused)}
