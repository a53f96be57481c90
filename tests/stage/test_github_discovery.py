"""Stage tier: discovery through a local stand-in for the GitHub search API, cloning real local repositories."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import make_repo, run_stage, timings, write_params
from trailforge.io import RepoRow, read_rejects, read_rows
from trailforge.testing.github_server import FakeGitHubServer
from trailforge.testing.openai_server import FakeOpenAIServer


def _git_repo(path, files):
    make_repo(path, files)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit",
                                                             "-qm", "init"]):
        subprocess.run(["git", *cmd], cwd=path, check=True, capture_output=True)
    return path


@pytest.fixture
def world(tmp_path):
    science = _git_repo(tmp_path / "git" / "meadow", {
        "README.md": "Quadrat survey of species abundance and biodiversity. Paper: doi:10.1234/eco.5678\n",
        "analysis.py": "import csv\nrows = list(csv.DictReader(open('data/q.csv')))\nprint('Sites:', len(rows))\n",
        "data/q.csv": "site,count\nA,3\n",
    })
    no_data = _git_repo(tmp_path / "git" / "notes", {
        "README.md": "Quadrat sampling notes on species and habitat. doi:10.1234/eco.1\n",
        "plot.py": "print('nothing to analyse')\n",
    })
    repos = [
        {"full_name": "lab/meadow", "description": "quadrat species abundance survey", "stargazers_count": 120,
         "clone_url": str(science), "default_branch": "main"},
        {"full_name": "lab/notes", "description": "quadrat species sampling notes", "stargazers_count": 40,
         "clone_url": str(no_data), "default_branch": "main"},
        {"full_name": "someone/meadow-fork", "description": "quadrat species survey fork", "stargazers_count": 50,
         "clone_url": str(science), "default_branch": "main", "fork": True},
        {"full_name": "tiny/quadrat-toy", "description": "quadrat species toy", "stargazers_count": 2,
         "clone_url": str(science), "default_branch": "main"},
    ]
    project = tmp_path / "project"
    project.mkdir()
    return project, repos


def _params(project, server, extra=()):
    write_params(project, [], ["source=github", f"source.api_url={server.url}", "source.min_keyword_hits=1",
                               "source.max_keyword_hits=1000", "source.keywords_per_discipline=3",
                               "domain.allowed=[ecology]", *extra])


def test_search_filters_clones_and_caches(world, monkeypatch):
    project, repos = world
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-test-secret")
    # ecology's first three terms: "ecology" (too generic here), "species", "abundance"
    with FakeGitHubServer(repos, counts={"ecology": 5_000_000}) as server:
        _params(project, server)
        server.rate_limited = 2  # the first two requests hit the rate limit
        run_stage(project, "discover", "--out", "out/discover")
        first = len(server.requests)
        assert all(r["authorization"] == "Bearer ghp-test-secret" for r in server.requests)
        run_stage(project, "discover", "--out", "out/again")
        assert len(server.requests) == first, "a re-run is served from the cache"
    rows = read_rows(project / "out/discover/data", RepoRow)
    assert [r.repo_id for r in rows] == ["lab-meadow"] and rows[0].discipline == "ecology"
    reasons = {(r.item_id, r.reason) for r in read_rejects(project / "out/discover/rejects.parquet")}
    assert ("keyword:ecology:ecology", "keyword_too_generic") in reasons
    assert ("someone/meadow-fork", "fork_or_archived") in reasons
    assert ("lab-notes", "no_data_files") in reasons
    assert not any("tiny" in item for item, _ in reasons), "the stars qualifier keeps it out of the results"
    figures = timings(project / "out/discover")["github"]
    assert figures["rate_limit_waits"] == 2
    cached = "".join(p.read_text() for p in (project / "cache").rglob("*.json"))
    assert "ghp-test-secret" not in cached


def test_a_model_widens_the_keyword_pool(world):
    project, repos = world
    pool = {"software": ["vegan"], "file_formats": [], "databases": ["gbif occurrence"],
            "pipelines": ["quadrat survey"]}
    with FakeGitHubServer(repos) as github, FakeOpenAIServer([json.dumps(pool)]) as model:
        _params(project, github, ["source.expand_keywords=true", "source.keywords_per_discipline=40", "llm=vllm",
                                  f"llm.api_base={model.url}", "llm.model=openai/fake"])
        run_stage(project, "discover", "--out", "out/discover")
        queried = {r["params"]["q"] for r in github.requests}
        assert model.calls == 1
        run_stage(project, "discover", "--out", "out/again")
        assert model.calls == 1, "a second run makes no model call"
    assert any('"quadrat survey"' in q for q in queried) and any('"gbif occurrence"' in q for q in queried)


def test_expansion_without_a_model_fails_at_start(world):
    project, repos = world
    with FakeGitHubServer(repos) as server:
        _params(project, server, ["source.expand_keywords=true"])
        done = run_stage(project, "discover", "--out", "out/never", check=False)
        assert server.requests == []
    assert done.returncode != 0 and "llm=none" in done.stderr
