"""The agent harness: a tool-calling loop in an environment's sandbox, graded by the environment's own eval.

The agent sees the statement and its workspace, nothing else. It works through three tools:
``run_shell`` and ``run_python`` run in the sandbox on the current workspace (files the command
creates or changes are kept for the next step), and ``submit`` hands in the answer. The answer is
graded by the environment's ``eval/eval.py`` outside the sandbox.

Limits end an episode with an exit status: ``submitted``, ``step_limit``, ``time_limit``,
``cost_limit``, ``format_error`` (too many malformed replies in a row) or ``sandbox_failure``.
Every step is appended to a per-episode JSONL file as it happens. A killed episode is replayed
from its start: each model turn and each command goes through its content-addressed cache, so
the replay repeats no model request and no execution, and it arrives where the run stopped.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cache import ContentCache
from ..llm import BudgetExhausted, LLMClient, LLMError
from ..sandbox import RunRequest, Sandbox, run_cached

TOOLS = [
    {"type": "function", "function": {
        "name": "run_shell", "description": "Run a shell command in your working directory and see its output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "run_python", "description": "Run Python code in your working directory and see its output.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}},
    {"type": "function", "function": {
        "name": "submit", "description": "Hand in your final answer: the JSON object the task asks for. Ends the task.",
        "parameters": {"type": "object", "properties": {"answer": {"type": "object"}}, "required": ["answer"]}}},
]
SYSTEM_PROMPT = (
    "You are a careful research assistant. You work in a directory that holds the data of a scientific analysis. "
    "Use run_shell and run_python to inspect the data and compute what the task asks, then call submit once "
    "with the answer object. Files you write stay in the directory between steps."
)


@dataclass
class Environment:
    env_id: str
    task_type: str
    statement: str
    workspace: dict[str, bytes]
    folder: Path
    distributions: list[str]
    difficulty: int | None


def load_environment(folder: Path) -> Environment:
    meta = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
    workspace_root = folder / "workspace"
    workspace = {p.relative_to(workspace_root).as_posix(): p.read_bytes()
                 for p in sorted(workspace_root.rglob("*")) if p.is_file()}
    return Environment(env_id=meta["env_id"], task_type=meta["task_type"],
                       statement=(folder / "task.md").read_text(encoding="utf-8"), workspace=workspace, folder=folder,
                       distributions=meta.get("distributions", []),
                       difficulty=(meta.get("checks", {}).get("difficulty") or {}).get("level"))


def grade(env: Environment, answer: Any) -> tuple[float, str]:
    """Run the environment's eval on the answer, outside the sandbox (the eval is ours, not the repository's)."""
    with tempfile.TemporaryDirectory(prefix="tf-grade-") as tmp:
        path = Path(tmp) / "answer.json"
        path.write_text(json.dumps(answer), encoding="utf-8")
        done = subprocess.run([sys.executable, str(env.folder / "eval" / "eval.py"), str(path),
                               str(env.folder / "eval" / "expected.json")], capture_output=True, text=True, timeout=60)
    return (1.0 if done.returncode == 0 else 0.0), (done.stdout + done.stderr).strip()[-2000:]


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 2
    return f"{text[:head]}\n[... {len(text) - limit} characters truncated ...]\n{text[-(limit - head):]}"


class EpisodeLog:
    """Append-only JSONL of one episode's steps; ``finished`` when it holds an end record."""

    def __init__(self, path: Path):
        self.path = path

    def finished(self) -> dict | None:
        if not self.path.exists():
            return None
        lines = [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return lines[-1] if lines and lines[-1].get("type") == "end" else None

    def restart(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("", encoding="utf-8")

    def append(self, record: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()


def run_episode(env: Environment, attempt: int, llm: LLMClient, sandbox: Sandbox, cache: ContentCache, cfg,
                log: EpisodeLog, model_name: str) -> dict[str, Any]:
    done = log.finished()
    if done is not None:
        return done["trajectory"]
    log.restart()
    prepared = sandbox.prepare(env.distributions)
    messages: list[dict[str, Any]] = [{"role": "system", "content": cfg.system_prompt or SYSTEM_PROMPT},
                                      {"role": "user", "content": cfg.task_template.replace("{statement}",
                                                                                            env.statement)}]
    workspace = dict(env.workspace)
    started, steps, format_errors = time.monotonic(), 0, 0
    usage_before = (llm.usage.prompt_tokens, llm.usage.completion_tokens, llm.usage.cost_usd)
    status, reward, message = "step_limit", 0.0, ""
    while steps < cfg.max_steps:
        if time.monotonic() - started > cfg.wall_clock_s:
            status = "time_limit"
            break
        if cfg.max_cost_usd is not None and llm.usage.cost_usd - usage_before[2] >= cfg.max_cost_usd:
            status = "cost_limit"
            break
        steps += 1
        try:
            turn = llm.chat(messages, TOOLS, seed=attempt)
        except BudgetExhausted:
            status = "cost_limit"
            break
        except LLMError as exc:
            status, message = "model_error", exc.reason
            break
        calls = [{"id": f"call_{steps}_{i}", "name": c["name"], "arguments": c["arguments"]}
                 for i, c in enumerate(turn["tool_calls"])]  # ids unique within the trajectory
        assistant: dict[str, Any] = {"role": "assistant", "content": turn["content"] or ""}
        if calls:
            assistant["tool_calls"] = [{"id": c["id"], "type": "function",
                                        "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
        messages.append(assistant)
        if not calls:
            format_errors += 1
            messages.append({"role": "user", "content": "Reply with a call to one of the tools: run_shell, "
                                                        "run_python or submit."})
            log.append({"type": "step", "step": steps, "format_error": "no tool call"})
            if format_errors >= cfg.max_format_errors:
                status = "format_error"
                break
            continue
        submitted = False
        for call in calls:
            observation, valid, result = _act(call, workspace, sandbox, prepared, cache, cfg)
            if result is not None:
                workspace.update(result)
            if valid == "submit":
                reward, message = grade(env, observation)
                observation = f"submitted; graded: {message[:500]}"
                submitted = True
            format_errors = 0 if valid else format_errors + 1
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": observation})
            if valid == "sandbox_failure":
                status = "sandbox_failure"
        log.append({"type": "step", "step": steps, "messages": messages[-(1 + len(calls)):]})
        if submitted:
            status = "submitted"
            break
        if status == "sandbox_failure":
            break
        if format_errors >= cfg.max_format_errors:
            status = "format_error"
            break
    trajectory = {
        "env_id": env.env_id, "attempt": attempt, "task_type": env.task_type, "difficulty": env.difficulty,
        "model": model_name, "messages": messages, "tools": TOOLS, "parallel_tool_calls": False,
        "reward": reward, "exit_status": status, "grader_message": message, "steps": steps,
        "prompt_tokens": llm.usage.prompt_tokens - usage_before[0],
        "completion_tokens": llm.usage.completion_tokens - usage_before[1],
        "cost_usd": round(llm.usage.cost_usd - usage_before[2], 6),
        "wall_s": round(time.monotonic() - started, 3),
    }
    log.append({"type": "end", "trajectory": trajectory})
    return trajectory


def _act(call, workspace, sandbox, prepared, cache, cfg):
    """Run one tool call: (observation or submitted answer, validity, changed files)."""
    try:
        args = json.loads(call["arguments"] or "{}")
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError as exc:
        return f"error: the arguments are not valid JSON ({exc}); call the tool again", False, None
    if call["name"] == "submit":
        if not isinstance(args.get("answer"), dict):
            return "error: submit needs an 'answer' object", False, None
        return args["answer"], "submit", None
    if call["name"] == "run_shell" and isinstance(args.get("command"), str):
        command = ("sh", "-c", args["command"])
    elif call["name"] == "run_python" and isinstance(args.get("code"), str):
        command = ("python", "-c", args["code"])
    else:
        return f"error: unknown tool or missing argument in {call['name']}", False, None
    if not prepared.ready:
        return f"error: the sandbox cannot run ({', '.join(prepared.missing)})", "sandbox_failure", None
    result, _ = run_cached(cache, sandbox, prepared, RunRequest(command, dict(workspace),
                                                                 timeout_s=cfg.command_timeout_s))
    note = {"timeout": f"[the command was stopped after {cfg.command_timeout_s}s]"}.get(result.reason, "")
    text = f"exit code: {result.exit_code} ({result.reason}) {note}\n{result.stdout}\n{result.stderr}".strip()
    return truncate(text, cfg.max_observation_chars), True, result.files
