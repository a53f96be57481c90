"""The stage graph as ``dvc.yaml`` declares it: stage names in pipeline order, and what each stage folder holds.

``dvc.yaml`` is the one place the stages are listed; the CLI reads it instead of keeping its own list, so
a stage added there is reported and validated without another edit.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

STATS_FILE = "stats.json"


def pipeline_stages(root: Path) -> list[str]:
    """The stages of ``root/dvc.yaml`` in the order it lists them (the pipeline's order), [] without one."""
    path = Path(root) / "dvc.yaml"
    if not path.is_file():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return list(data.get("stages") or {})


def read_stage_stats(outputs: Path, stages: list[str]) -> dict[str, dict[str, Any] | None]:
    """Each stage's ``stats.json`` under ``outputs/<stage>/`` (None where it has not run), in pipeline order.

    Stage folders outside the list that hold a ``stats.json`` (``rollout`` and ``ideation`` run outside
    ``dvc repro``) follow, by name.
    """
    outputs = Path(outputs)
    extra = sorted(p.parent.name for p in outputs.glob(f"*/{STATS_FILE}") if p.parent.name not in stages)
    found: dict[str, dict[str, Any] | None] = {}
    for stage in [*stages, *extra]:
        path = outputs / stage / STATS_FILE
        try:
            found[stage] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not valid JSON ({exc}); re-run the {stage} stage") from None
    return found
