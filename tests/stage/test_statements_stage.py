"""Stage tier: model-written statements through litellm against a local OpenAI-compatible server."""
from __future__ import annotations

import json

import pytest

from conftest import DOMINANCE_FILES, build_to_tasks, run_stage, stats, timings, write_params
from trailforge.io import TaskRow, read_rejects, read_rows
from trailforge.testing.openai_server import FakeOpenAIServer


def _responder(mode):
    def reply(request):
        original = request["messages"][-1]["content"]
        if mode == "good":
            text = original.replace("# Reproduce an analysis", "# Please reproduce an analysis")
        elif mode == "drop_field":
            text = original.replace("`dominance_share`", "the share")
        else:  # leaks the answer
            text = original + "\nHint: the share is 0.4167.\n"
        return json.dumps({"statement": text})
    return reply


@pytest.fixture(scope="module")
def tasks_built(tmp_path_factory):
    root = tmp_path_factory.mktemp("statements")
    project, repo = build_to_tasks(root, "meadow-dominance", DOMINANCE_FILES, ["tasks.types=[reproduction]"])
    return project, repo, root


def _run(project, repo, server, out, cache, extra=()):
    write_params(project, [str(repo)], ["tasks.types=[reproduction]", "tasks.statements=model", "llm=vllm",
                                        f"llm.api_base={server.url}", "llm.model=openai/fake", "llm.backoff_s=0.01",
                                        *extra])
    return run_stage(project, "statements", "--tasks", "out/tasks", "--out", out, cache=cache)


def test_checked_rewrites_replace_statements_and_a_rerun_makes_no_call(tasks_built):
    project, repo, root = tasks_built
    with FakeOpenAIServer(responder=_responder("good")) as server:
        _run(project, repo, server, "out/statements", root / "cache")
        calls = server.calls
        assert calls == len(read_rows(project / "out/tasks/data", TaskRow)) >= 1
        _run(project, repo, server, "out/statements-again", root / "cache")
        assert server.calls == calls, "a second run is served from the cache"
    rewritten = read_rows(project / "out/statements/data", TaskRow)
    assert all(t.statement.startswith("# Please reproduce") for t in rewritten)
    assert all("deterministic_statement" in t.construction for t in rewritten)
    figures = stats(project / "out/statements")
    assert figures["counters"]["statements_rewritten"] == len(rewritten)
    assert timings(project / "out/statements")["llm"]["calls"] == calls


@pytest.mark.parametrize("mode, reason", [("drop_field", "rewrite_drops_field"), ("leak", "rewrite_adds_numbers")])
def test_a_rewrite_that_drops_a_field_or_adds_a_value_is_refused(tasks_built, mode, reason):
    project, repo, root = tasks_built
    with FakeOpenAIServer(responder=_responder(mode)) as server:
        _run(project, repo, server, f"out/statements-{mode}", root / f"cache-{mode}")
    original = {t.task_id: t.statement for t in read_rows(project / "out/tasks/data", TaskRow)}
    kept = {t.task_id: t.statement for t in read_rows(project / f"out/statements-{mode}/data", TaskRow)}
    assert kept == original, "a refused rewrite leaves the deterministic statement"
    assert {r.reason for r in read_rejects(project / f"out/statements-{mode}/rejects.parquet")} == {reason}


def test_an_exhausted_budget_keeps_consistent_outputs_and_says_what_is_left(tasks_built):
    project, repo, root = tasks_built
    with FakeOpenAIServer(responder=_responder("good")) as server:
        done = _run(project, repo, server, "out/statements-budget", root / "cache-budget", ["budget.max_llm_calls=0"])
    assert "statements were not rewritten" in done.stdout and server.calls == 0
    assert read_rows(project / "out/statements-budget/data", TaskRow) == read_rows(project / "out/tasks/data", TaskRow)


def test_a_recipe_that_needs_a_model_fails_at_start_naming_the_config(tasks_built):
    project, repo, _ = tasks_built
    write_params(project, [str(repo)], ["tasks.types=[reproduction]", "tasks.statements=model"])
    done = run_stage(project, "statements", "--tasks", "out/tasks", "--out", "out/never", check=False)
    assert done.returncode != 0 and "llm=none" in done.stderr and "llm=openai" in done.stderr
    assert not (project / "out/never").exists()
