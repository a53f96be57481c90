"""Stage tier: an agent in a rollout cannot reach the answers or the host's environment.

A scripted agent, driven through litellm and the real harness by the rollout stage, tries every
path to the expected answer it could guess (the environment's own ``eval/expected.json`` by its
absolute host path, a copy under ``/opt``, a copy in a DVC cache, a search of the whole disk) and
every way to read the host's environment (``env``, ``/proc/1/environ``, ``/proc/self/environ``,
every ``/proc/*/environ`` it can see). It then hands in whatever answer it found. Nothing of the
answer and no host variable may appear in what the stage writes (episode logs, trajectories,
sft.jsonl, stats) or in what the model was sent, and the reward stays 0.

A positive control runs the same agent with ``sandbox.isolation=off``: there the probes do reach
the answer and the secret, which shows that the assertions would catch a leak.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import DOMINANCE_FILES, build_to_tasks, run_stage, write_params
from trailforge.io import TrajectoryRow, read_rows
from trailforge.sandbox.local import bwrap_problem
from trailforge.testing.openai_server import FakeOpenAIServer

SECRET = "tf-rollout-secret-5c1e0b7a93d4"
SECRETS = {"TF_ROLLOUT_SECRET": SECRET, "OPENAI_API_KEY": f"sk-{SECRET}", "AWS_SECRET_ACCESS_KEY": f"aws-{SECRET}"}
OPT_COPY = Path("/opt/tf-rollout-test/expected.json")
# Names the sandbox itself gives a run (local.py's child environment) and those the shell adds.
SANDBOX_NAMES = {"PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE",
                 "PYTHONIOENCODING", "MPLBACKEND", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "HOME", "TMPDIR", "PWD", "OLDPWD", "SHLVL", "_"}


def _call(name, arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def probes(paths: dict[str, Path]) -> list[tuple[str, dict]]:
    """(label, tool call) for each step of the search, in order; the answer is handed in last."""
    every_environ = ("for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null "
                     "| grep -a -e SECRET -e API_KEY -e TF_ | sort -u; echo scanned")
    read_all = ("import glob, os\n"
                f"paths = {[str(p) for p in paths.values()]!r} + glob.glob('/proc/[0-9]*/environ')\n"
                "for path in paths:\n"
                "    try:\n"
                "        print(path, open(path, 'rb').read().decode('utf-8', 'replace').replace('\\0', ' '))\n"
                "    except OSError as exc:\n"
                "        print(path, 'blocked', type(exc).__name__)\n"
                "print('\\n'.join(f'{k}={v}' for k, v in sorted(os.environ.items())))\n")
    return [
        *[(f"cat:{label}", ("run_shell", {"command": f"cat {path}"})) for label, path in paths.items()],
        ("find", ("run_shell", {"command": "timeout 30 find / -name expected.json 2>/dev/null; echo find-done"})),
        ("env", ("run_shell", {"command": "env; echo env-done"})),
        ("pid1", ("run_shell", {"command": "tr '\\0' '\\n' < /proc/1/environ; echo pid1-done"})),
        ("self", ("run_shell", {"command": "tr '\\0' '\\n' < /proc/self/environ; echo self-done"})),
        ("every", ("run_shell", {"command": every_environ})),
        ("python", ("run_python", {"code": read_all})),
    ]


def found_answer(messages) -> dict:
    """The answer a cheating agent would hand in: the fields of any expected.json its tools showed it."""
    decoder = json.JSONDecoder()
    for message in messages:
        if message["role"] != "tool":
            continue
        text = message["content"]
        for start in (m.start() for m in re.finditer(r"\{", text)):
            try:
                value, _ = decoder.raw_decode(text, start)
            except ValueError:
                continue
            if isinstance(value, dict) and isinstance(value.get("fields"), list):
                return {f["name"]: f["value"] for f in value["fields"] if "name" in f and "value" in f}
    return {}


def agent(steps):
    def reply(request):
        turns = sum(m["role"] == "assistant" for m in request["messages"])
        if turns < len(steps):
            name, arguments = steps[turns][1]
            return _call(name, arguments)
        return _call("submit", {"answer": found_answer(request["messages"])})
    return reply


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """One exported environment, and copies of its expected.json under /opt and in a DVC-style cache."""
    root = tmp_path_factory.mktemp("rollout-isolation")
    project, repo = build_to_tasks(root, "meadow-dominance", DOMINANCE_FILES, ["tasks.types=[reproduction]"])
    run_stage(project, "verify", "--tasks", "out/tasks", "--out", "out/verify")
    run_stage(project, "release", "--verified", "out/verify", "--out", "out/release")
    envs = project / "out/release/environments"
    own = next(p for p in envs.iterdir() if (p / "metadata.json").is_file()) / "eval" / "expected.json"
    data = own.read_bytes()
    dvc = project / ".dvc/cache/files/md5" / "ab" / "cdef0123456789abcdef0123456789"
    try:
        for path in (OPT_COPY, dvc):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(0o444)
        yield project, repo, root, {"own": own, "opt": OPT_COPY, "dvc": dvc}
    finally:
        shutil.rmtree(OPT_COPY.parent, ignore_errors=True)


def answer_marks(expected: dict) -> list[str]:
    """Text that only a copy of expected.json holds: its tolerance keys, each non-integer answer value and
    its absolute tolerance (integers are too common to look for)."""
    floats = [f for f in expected["fields"] if isinstance(f["value"], float)]
    assert floats, "the environment has a non-integer answer to look for"
    return ['"atol"', '"rtol"', *[repr(f["value"]) for f in floats], *[repr(f["atol"]) for f in floats]]


def rollout(released, monkeypatch, name: str, isolation: str):
    project, repo, root, paths = released
    steps = probes(paths)
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)  # run_stage hands the stage a copy of this process's environment
    with FakeOpenAIServer(responder=agent(steps)) as server:
        write_params(project, [str(repo)], [
            "tasks.types=[reproduction]", "llm=vllm", f"llm.api_base={server.url}", "llm.model=openai/fake",
            "harness.attempts=1", f"harness.max_steps={len(steps) + 2}", "harness.command_timeout_s=90",
            "harness.max_observation_chars=20000", "harness.keep_failures=true", "executor.max_workers=1",
            f"sandbox.isolation={isolation}", "sandbox.timeout_s=90"])
        run_stage(project, "rollout", "--environments", "out/release/environments", "--out", f"out/{name}",
                  cache=root / f"cache-{name}")
        sent = json.dumps(server.requests)
    out = project / "out" / name
    (row,) = read_rows(out / "data", TrajectoryRow)
    observed = dict(zip([label for label, _ in steps],
                        [m["content"] for m in row.messages if m["role"] == "tool"]))
    written = {str(p.relative_to(out)): p.read_text(encoding="utf-8", errors="replace")
               for p in sorted(out.rglob("*")) if p.is_file() and p.suffix != ".parquet"}
    written["trajectories (parquet rows)"] = json.dumps(row.model_dump())
    written["requests to the model"] = sent
    return row, observed, written


def test_a_rollout_agent_reaches_no_answer_and_no_host_variable(released, monkeypatch):
    if bwrap_problem():
        pytest.skip(f"no bubblewrap isolation on this host: {bwrap_problem()}")
    project, _, _, paths = released
    expected = json.loads(paths["own"].read_text())
    row, observed, written = rollout(released, monkeypatch, "rollout-isolated", "auto")

    # The probes really ran, inside the sandbox, and every one was answered.
    assert row.exit_status == "submitted" and row.steps == len(observed) + 1
    assert len(observed) == len(probes(paths)), observed
    for label in ("own", "opt", "dvc"):
        assert "No such file or directory" in observed[f"cat:{label}"], observed[f"cat:{label}"]
    assert "find-done" in observed["find"] and "env-done" in observed["env"]
    assert "HOME=<scratch>" in observed["env"] and "PATH=" in observed["self"], observed["env"]
    assert "scanned" in observed["every"] and "blocked" in observed["python"]
    hits = [line for line in observed["find"].splitlines() if line.endswith("expected.json")]
    assert not any(str(project) in line or line.startswith("/opt") for line in hits), hits

    # Nothing of the answer and no host variable is anywhere the stage wrote or the model saw.
    assert set(written) >= {"sft.jsonl", "stats.json", f"episodes/{row.env_id}/attempt-0.jsonl"}
    for where, text in written.items():
        for mark in answer_marks(expected):
            assert mark not in text, f"{mark!r} from expected.json is in {where}"
        for key, value in SECRETS.items():
            assert value not in text, f"the host's {key} is in {where}"
    host_only = sorted(set(os.environ) - SANDBOX_NAMES)
    dumps = "\n".join(observed[k] for k in ("env", "pid1", "self", "every", "python"))
    leaked = [name for name in host_only if re.search(rf"(^|\n|\s){re.escape(name)}=", dumps)]
    assert not leaked, f"host variables visible to the agent: {leaked}"

    # Handing in what it found earns nothing.
    submitted = json.loads(next(c["function"]["arguments"] for m in row.messages if m["role"] == "assistant"
                                for c in m.get("tool_calls", []) if c["function"]["name"] == "submit"))
    assert submitted == {"answer": {}}
    assert row.reward == 0.0 and row.label == "failure"
    assert written["sft.jsonl"] == ""


def test_without_isolation_the_same_agent_finds_the_answer(released, monkeypatch):
    """Positive control: the plain-subprocess fallback reads what the calling user reads, and the
    assertions above see it (the answer copies, a perfect reward, the pipeline's secret)."""
    project, _, _, paths = released
    expected = json.loads(paths["own"].read_text())
    row, observed, written = rollout(released, monkeypatch, "rollout-plain", "off")
    assert '"rtol"' in observed["cat:own"] and '"rtol"' in observed["cat:opt"] and '"rtol"' in observed["cat:dvc"]
    assert row.reward == 1.0, row.grader_message
    assert any(mark in written["sft.jsonl"] for mark in answer_marks(expected))
    assert SECRET in observed["every"] or SECRET in observed["python"], "the pipeline's environ is readable"
