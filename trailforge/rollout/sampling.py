"""Rejection sampling over episodes, solvability statistics, and the SFT export."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..io import StageRecorder, TrajectoryRow


def select(trajectories: list[dict[str, Any]], keep_failures: bool, recorder: StageRecorder) -> list[TrajectoryRow]:
    """Successes are kept; failures only when the recipe asks (labelled), otherwise counted rejects."""
    rows = []
    for trajectory in trajectories:
        success = trajectory["reward"] >= 1.0
        if success or keep_failures:
            rows.append(TrajectoryRow(**trajectory, label="success" if success else "failure"))
        else:
            reason = "wrong_answer" if trajectory["exit_status"] == "submitted" else trajectory["exit_status"]
            recorder.reject(f"{trajectory['env_id']}#{trajectory['attempt']}", reason,
                            f"episode ended with {trajectory['exit_status']} after {trajectory['steps']} steps; "
                            f"reward {trajectory['reward']}")
    return sorted(rows, key=lambda r: (r.env_id, r.attempt))


def solvability(trajectories: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Success rate and average steps per difficulty level and per task type (as in Pearl's Table 3)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for t in trajectories:
        groups[f"difficulty:{t.get('difficulty') or 'unrated'}"].append(t)
        groups[f"task_type:{t['task_type']}"].append(t)
    return {key: {"episodes": len(items), "success_rate": round(sum(t["reward"] >= 1 for t in items) / len(items), 4),
                  "avg_steps": round(sum(t["steps"] for t in items) / len(items), 2)}
            for key, items in sorted(groups.items())}


def write_sft(rows: list[TrajectoryRow], path: Path, max_tokens: int, recorder: StageRecorder) -> int:
    """Successful trajectories as chat records, skipping those longer than ``max_tokens`` (o200k_base tokens)."""
    encoding = o200k_encoding()
    written = 0
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            if row.label != "success":
                continue
            record = {"messages": row.messages, "tools": row.tools, "parallel_tool_calls": row.parallel_tool_calls}
            tokens = len(encoding.encode(json.dumps(record)))
            if tokens > max_tokens:
                recorder.count("sft_over_context_length")
                continue
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            written += 1
    return written


def o200k_encoding():
    """The o200k_base tokenizer from the files bundled with litellm, so counting needs no download."""
    import importlib
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    importlib.import_module("litellm.litellm_core_utils.default_encoding")  # points tiktoken at the bundled files
    import tiktoken

    return tiktoken.get_encoding("o200k_base")
