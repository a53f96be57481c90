"""Stage tier: the discover stage labels listed repositories and filters only what a GitHub search found."""
from __future__ import annotations

import subprocess

from conftest import make_repo, run_stage, write_params
from trailforge.io import RepoRow, read_rejects, read_rows
from trailforge.testing.github_server import FakeGitHubServer

# Research code whose README and file names hold none of the domain's vocabulary.
PLAIN = {
    "README.md": "Scripts for the lab course, week 3.\n",
    "analyse.py": "import csv\nrows = list(csv.DictReader(open('runs.csv')))\nprint('Rows:', len(rows))\n",
    "runs.csv": "a,b\n1,2\n",
}


def test_a_listed_repository_without_vocabulary_goes_on_as_unknown(project):
    repo = make_repo(project / "repos" / "lab-week3", PLAIN)
    write_params(project, [str(repo)], ["domain.allowed=[ecology]"])
    run_stage(project, "discover", "--out", "out/discover")
    rows = read_rows(project / "out/discover/data", RepoRow)
    assert [(r.repo_id, r.discipline) for r in rows] == [("lab-week3", "unknown")]
    assert read_rejects(project / "out/discover/rejects.parquet") == []


def test_source_folders_make_each_clone_a_repository_after_the_listed_ones(project):
    listed = make_repo(project / "listed" / "first-lab", PLAIN)
    for name in ("lab-b", "lab-a"):
        make_repo(project / "clones" / name, PLAIN)
    write_params(project, [str(listed)], ["+source.folders=[clones,missing-clones]"])
    run_stage(project, "discover", "--out", "out/discover")
    rows = read_rows(project / "out/discover/data", RepoRow)
    assert sorted((r.repo_id, r.origin) for r in rows) == [
        ("first-lab", str(listed)), ("lab-a", "clones/lab-a"), ("lab-b", "clones/lab-b")]
    assert [(r.item_id, r.reason) for r in read_rejects(project / "out/discover/rejects.parquet")] == [
        ("missing-clones", "missing_source_path")]


def test_a_search_candidate_without_vocabulary_is_filtered(project, tmp_path):
    plain = make_repo(tmp_path / "git" / "plain", PLAIN)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"],
                ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", *cmd], cwd=plain, check=True, capture_output=True)
    # The search matches on the description; the cloned tree is what discover judges.
    found = [{"full_name": "lab/plain", "description": "quadrat species scripts", "stargazers_count": 99,
              "clone_url": str(plain), "default_branch": "main"}]
    with FakeGitHubServer(found) as server:
        write_params(project, [], ["source=github", f"source.api_url={server.url}", "source.min_keyword_hits=1",
                                   "source.max_keyword_hits=1000", "source.keywords_per_discipline=3",
                                   "domain.allowed=[ecology]"])
        run_stage(project, "discover", "--out", "out/discover")
    assert read_rows(project / "out/discover/data", RepoRow) == []
    reasons = {(r.item_id, r.reason) for r in read_rejects(project / "out/discover/rejects.parquet")}
    assert ("lab-plain", "no_discipline") in reasons
