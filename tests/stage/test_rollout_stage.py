"""Stage tier: scripted agents through litellm against a local server, in a real exported environment."""
from __future__ import annotations

import json
import signal
import time

import pytest

from conftest import DOMINANCE_FILES, build_to_tasks, run_stage, stats, write_params
from trailforge.io import TrajectoryRow, read_rejects, read_rows
from trailforge.testing.openai_server import FakeOpenAIServer


def _call(name, arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def search(envs) -> str:
    """What a curious agent tries: the environment folder by absolute path, and any expected.json under the
    test's own temporary tree (searching the whole disk would also meet other checkouts' outputs, which
    the local backend does not hide: see the README's sandbox section)."""
    return (f"ls {envs}; cat {envs}/*/eval/expected.json {envs}/*/solution/*.py; "
            f"timeout 2 find {envs.parents[3]} /root /home -name expected.json 2>/dev/null; "
            "echo searched")


def agent(answer, envs, delay=0.0):
    """Attempt k plays scenario k: solve, wrong answer, loop, malformed, hang, search for secrets."""
    def reply(request):
        time.sleep(delay)
        attempt, turns = request.get("seed", 0), sum(m["role"] == "assistant" for m in request["messages"])
        wrong = {k: (v * 3 if isinstance(v, (int, float)) else v) for k, v in answer.items()}
        plans = {
            0: [_call("run_shell", {"command": "cat data/obs.csv"}), _call("submit", {"answer": answer})],
            1: [_call("submit", {"answer": wrong})],
            2: [_call("run_shell", {"command": "ls"})] * 10,
            3: [_call("run_shell", "{not json")] * 10,
            4: [_call("run_shell", {"command": "sleep 30"}), _call("submit", {"answer": answer})],
            5: [_call("run_shell", {"command": search(envs)}), _call("submit", {"answer": answer})],
        }[attempt]
        return plans[min(turns, len(plans) - 1)]
    return reply


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    root = tmp_path_factory.mktemp("rollout")
    project, repo = build_to_tasks(root, "meadow-dominance", DOMINANCE_FILES, ["tasks.types=[reproduction]"])
    run_stage(project, "verify", "--tasks", "out/tasks", "--out", "out/verify")
    run_stage(project, "release", "--verified", "out/verify", "--out", "out/release")
    envs = project / "out/release/environments"
    expected = json.loads(next(envs.iterdir()).joinpath("eval/expected.json").read_text())
    answer = {f["name"]: f["value"] for f in expected["fields"]}
    return project, repo, root, answer, envs


def _params(project, repo, server, extra=()):
    write_params(project, [str(repo)], ["tasks.types=[reproduction]", "llm=vllm", f"llm.api_base={server.url}",
                                        "llm.model=openai/fake", "harness.attempts=6", "harness.max_steps=4",
                                        "harness.max_format_errors=2", "harness.command_timeout_s=2",
                                        "harness.keep_failures=true", "executor.max_workers=2", *extra])


@pytest.fixture(scope="module")
def model(released):
    """One endpoint for the first runs: the base URL is part of every request, hence of the cache key."""
    _, _, _, answer, envs = released
    with FakeOpenAIServer(responder=agent(answer, envs)) as server:
        yield server


def test_scripted_agents_end_with_the_right_status_and_complete_trajectories(released, model):
    project, repo, root, answer, envs = released
    _params(project, repo, model)
    run_stage(project, "rollout", "--environments", "out/release/environments", "--out", "out/rollout",
              cache=root / "cache-rollout")
    rows = {r.attempt: r for r in read_rows(project / "out/rollout/data", TrajectoryRow)}
    outcome = {k: (r.exit_status, r.reward) for k, r in rows.items()}
    assert outcome == {0: ("submitted", 1.0), 1: ("submitted", 0.0), 2: ("step_limit", 0.0),
                       3: ("format_error", 0.0), 4: ("submitted", 1.0), 5: ("submitted", 1.0)}
    hang = rows[4].messages
    assert any(m["role"] == "tool" and "stopped after 2" in m["content"] for m in hang)
    found = next(m["content"] for m in rows[5].messages if m["role"] == "tool")
    own = next(envs.iterdir()).name  # this environment's folder: its grader, answer and solution
    assert "searched" in found and "No such file or directory" in found
    assert own not in found and '"fields"' not in found
    assert not any(repr(v) in found for v in answer.values() if isinstance(v, float))
    for row in rows.values():
        ids = [c["id"] for m in row.messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
        assert len(ids) == len(set(ids)), "tool-call ids are unique within a trajectory"
        answered = {m["tool_call_id"] for m in row.messages if m["role"] == "tool"}
        assert answered <= set(ids) and row.messages[0]["role"] == "system"
    figures = stats(project / "out/rollout")
    assert figures["solvability"]["task_type:reproduction"] == {"episodes": 6, "success_rate": 0.5,
                                                                 "avg_steps": pytest.approx(13 / 6, abs=0.01)}
    assert figures["sft_records"] == 3
    sft = [json.loads(line) for line in (project / "out/rollout/sft.jsonl").read_text().splitlines()]
    assert len(sft) == 3 and all(r["tools"] and r["messages"][-1]["role"] == "tool" for r in sft)


def test_failures_are_counted_rejects_unless_kept(released, model):
    project, repo, root, answer, envs = released
    before = model.calls
    _params(project, repo, model, ["harness.keep_failures=false"])
    run_stage(project, "rollout", "--environments", "out/release/environments", "--out", "out/rollout-strict",
              cache=root / "cache-rollout")
    assert model.calls == before, "every turn was already answered: the cache serves the whole run"
    rows = read_rows(project / "out/rollout-strict/data", TrajectoryRow)
    assert {r.attempt for r in rows} == {0, 4, 5}
    assert sorted(r.reason for r in read_rejects(project / "out/rollout-strict/rejects.parquet")) == [
        "format_error", "step_limit", "wrong_answer"]


def test_a_killed_rollout_resumes_without_repeating_requests_or_trajectories(released):
    project, repo, root, answer, envs = released
    with FakeOpenAIServer(responder=agent(answer, envs, delay=0.4)) as server:
        _params(project, repo, server, ["harness.keep_failures=true"])
        proc = run_stage(project, "rollout", "--environments", "out/release/environments", "--out",
                         "out/rollout-killed", cache=root / "cache-killed", popen=True)
        deadline = time.monotonic() + 60
        while server.calls < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = len(server.requests)
        assert 4 <= before < 14, "the kill lands mid-run"
        run_stage(project, "rollout", "--environments", "out/release/environments", "--out", "out/rollout-killed",
                  cache=root / "cache-killed")
        bodies = [json.dumps(r, sort_keys=True) for r in server.requests]
    # Completed steps are never asked again. A request in flight when the process died got no answer
    # the client could keep, so it is asked once more: at most one per worker.
    assert len(bodies) - len(set(bodies)) <= 2
    rows = read_rows(project / "out/rollout-killed/data", TrajectoryRow)
    assert sorted(r.attempt for r in rows) == [0, 1, 2, 3, 4, 5]


def test_rollouts_need_a_model(released):
    project, repo, _, _, _ = released
    write_params(project, [str(repo)], ["tasks.types=[reproduction]"])
    done = run_stage(project, "rollout", "--environments", "out/release/environments", "--out", "out/never",
                     check=False)
    assert done.returncode != 0 and "llm=none" in done.stderr
