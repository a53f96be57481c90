"""Stage tier: model review with recursive repair in verify, on scripted reviews from a local server."""
from __future__ import annotations

import json

import pytest

from conftest import DOMINANCE_FILES, build_to_tasks, run_stage, stats, timings, write_params
from trailforge.io import TaskRow, VerifiedTaskRow, read_rejects, read_rows
from trailforge.testing.openai_server import FakeOpenAIServer


def scripted(reviewer: str):
    """A model that reviews (and repairs) statements the way the test needs."""
    def reply(request):
        system = request["messages"][0]["content"]
        user = request["messages"][-1]["content"]
        if system.startswith("You revise"):
            statement = user.split("Statement:\n", 1)[1].split("\n\nReview:\n", 1)[0]
            return json.dumps({"statement": statement.replace("# Reproduce", "# Carefully reproduce")})
        repaired = "Carefully reproduce" in user
        if reviewer == "repairable" and repaired or reviewer == "good":
            return json.dumps({"issues": [], "score": 5, "repairable": True, "difficulty": 2,
                               "difficulty_reason": "two aggregations over one table"})
        issue = {"criterion": "identifiability", "severity": "major", "description": "the goal is unclear"}
        return json.dumps({"issues": [issue], "score": 2, "repairable": reviewer != "unrepairable",
                           "suggestions": "state the goal", "difficulty": 1, "difficulty_reason": "short"})
    return reply


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("review")
    project, repo = build_to_tasks(root, "meadow-dominance", DOMINANCE_FILES, ["tasks.types=[reproduction]"])
    return project, repo, root


def _verify(built, server, name, extra=()):
    project, repo, root = built
    write_params(project, [str(repo)], ["tasks.types=[reproduction]", "verifier.review=true", "llm=vllm",
                                        f"llm.api_base={server.url}", "llm.model=openai/fake", "llm.backoff_s=0.01",
                                        "verifier.max_repair_rounds=2", *extra])
    done = run_stage(project, "verify", "--tasks", "out/tasks", "--out", f"out/{name}", cache=root / f"cache-{name}")
    rows = read_rows(project / f"out/{name}/data", VerifiedTaskRow)
    out = project / f"out/{name}"
    return done, rows, read_rejects(out / "rejects.parquet"), stats(out), timings(out)["llm"]


def test_a_good_task_passes_the_first_review_with_a_difficulty(built):
    with FakeOpenAIServer(responder=scripted("good")) as server:
        _, rows, rejects, figures, usage = _verify(built, server, "good")
    assert len(rows) == 1 and not rejects
    assert rows[0].checks["review"]["rounds"] == 0 and rows[0].checks["difficulty"]["level"] == 2
    assert figures["counters"]["review_first_round_pass"] == 1 and usage["calls"] == 1


def test_a_repairable_task_is_recovered_and_its_program_and_answer_do_not_move(built):
    project = built[0]
    before = read_rows(project / "out/tasks/data", TaskRow)[0]
    with FakeOpenAIServer(responder=scripted("repairable")) as server:
        _, rows, rejects, figures, _ = _verify(built, server, "repaired")
        assert server.calls == 3  # review, repair, review
    assert len(rows) == 1 and not rejects
    after = rows[0]
    assert after.statement.startswith("# Carefully reproduce") and after.checks["review"]["rounds"] == 1
    assert json.dumps(after.reference_program, sort_keys=True) == json.dumps(before.reference_program, sort_keys=True)
    assert json.dumps(after.reference_answer, sort_keys=True) == json.dumps(before.reference_answer, sort_keys=True)
    assert figures["counters"]["review_recovered"] == 1 and figures["counters"]["repairs_made"] == 1


@pytest.mark.parametrize("reviewer, reason, requests", [("unrepairable", "review_unrepairable", 1),
                                                        ("hopeless", "review_rejected", 5)])
def test_unrepairable_and_never_good_enough_tasks_are_rejected(built, reviewer, reason, requests):
    with FakeOpenAIServer(responder=scripted(reviewer)) as server:
        _, rows, rejects, _, usage = _verify(built, server, reviewer)
    # hopeless: 3 reviews and 2 repairs (max_repair_rounds=2); a repeated identical request is a cache hit
    assert usage["calls"] + usage["cached_calls"] == requests
    assert rows == [] and [r.reason for r in rejects] == [reason]


def test_a_budget_exhausted_mid_verify_leaves_consistent_outputs_and_says_what_was_not_done(built):
    with FakeOpenAIServer(responder=scripted("repairable")) as server:  # one endpoint for both runs
        done, rows, rejects, _, _ = _verify(built, server, "budget", ["budget.max_llm_calls=1"])
        assert server.calls == 1
        assert rows == [] and [r.reason for r in rejects] == ["budget_exhausted"]
        assert "not reviewed" in done.stdout
        _, rows, _, _, usage = _verify(built, server, "budget", ["budget.max_llm_calls=10"])
        assert server.calls == 3, "the finished review is reused from the cache; only the rest is asked"
    assert len(rows) == 1 and usage["cached_calls"] == 1
