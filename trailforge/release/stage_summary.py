"""One line per stage for ``trailforge report``: accepted, rejected and why, plus the figures that stage is for.

Pure functions over the ``stats.json`` mappings the stages write; only counts of the corpus appear (never
timings or cache figures, which change on every run).
"""
from __future__ import annotations

from typing import Any

# Per stage, the figures after accepted/rejected that say what it produced: (label, path into stats.json).
HEADLINE_FIGURES: dict[str, list[tuple[str, str]]] = {
    "release": [("environments", "environments"), ("types", "by_task_type")],
    "lineage": [("items", "items"), ("edges", "edges"), ("edge_types", "edge_types"), ("roots", "roots"),
                ("families", "families"), ("contaminated", "contaminated_items"),
                ("redundancy_rate", "redundancy_rate")],
    "decontaminate": [("downweighted", "downweighted")],
    # The sample next to a uniform one of the same size: what lineage-aware sampling is for.
    "sample": [("method", "method"), ("budget", "budget"), ("vendi", "selected.vendi"),
               ("uniform_vendi", "uniform_same_size.vendi"), ("redundancy_rate", "selected.redundancy_rate"),
               ("uniform_redundancy_rate", "uniform_same_size.redundancy_rate")],
    "rollout": [("sft_records", "sft_records"), ("exit_status", "exit_status")],
    "ideation": [("retries", "retries")],
}


def _lookup(stats: dict[str, Any], path: str) -> Any:
    value: Any = stats
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}:{_show(v)}" for k, v in value.items()) + "}"
    return str(value)


def summary_line(stage: str, stats: dict[str, Any] | None, width: int = 13) -> str:
    """``stage accepted=N rejected=M [figures] reasons=...``, or ``stage not run`` when it wrote no stats."""
    if stats is None:
        return f"{stage:{width}s} not run"
    accepted = stats.get("accepted", stats.get("environments"))
    parts = [f"{stage:{width}s} accepted={accepted} rejected={stats.get('rejected', 0)}"]
    for label, path in HEADLINE_FIGURES.get(stage, []):
        value = _lookup(stats, path)
        if value is not None:
            parts.append(f"{label}={_show(value)}")
    if stats.get("reject_reasons"):
        parts.append("reasons=" + ", ".join(f"{k}:{v}" for k, v in stats["reject_reasons"].items()))
    return " ".join(parts)
