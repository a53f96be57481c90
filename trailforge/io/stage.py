"""Plumbing shared by the thin stage modules in ``stages/``: arguments, params, timing."""
from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import contextmanager

from ..config import ConfigError, TrailforgeConfig, load_params


def stage_args(description: str, inputs: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", default="params.yaml", help="composed config (default: params.yaml)")
    for name in inputs:
        parser.add_argument(f"--{name}", required=True, help=f"upstream stage folder: {name}")
    parser.add_argument("--out", required=True, help="this stage's output folder")
    return parser.parse_args()


def params_or_exit(path: str) -> TrailforgeConfig:
    """The composed config, or exit naming the problem; also refuses a ``versions.yaml`` that no longer
    describes this environment (an upgrade since the last compose), so dvc.lock never pairs a stage's
    results with versions that did not make them."""
    from ..config.versions import check_recorded_versions

    try:
        cfg = load_params(path)
    except ConfigError as exc:
        sys.exit(f"error: {exc}")
    drift = check_recorded_versions(path, cfg.model_dump(mode="json"))
    if drift:
        sys.exit("error: the library versions recorded for DVC are out of date:\n  " + "\n  ".join(drift)
                 + "\nrun `trailforge versions` (or `trailforge compose ...`), then `dvc repro`: it re-runs exactly "
                 "the stages that depend on what changed (dvc checkout restores this stage's outputs meanwhile)")
    return cfg


def model_or_exit(cfg: TrailforgeConfig, stage: str, cache):
    """The model client ``stage`` needs under this recipe, or None when its settings call no model.

    Which settings need a model is decided in one place (``trailforge.config.requirements``), the same one
    ``trailforge validate`` asks; a recipe with ``llm=none`` exits here, before any work, naming them.
    """
    from ..config.requirements import model_settings
    from ..llm import ModelRequired, build_llm, require_model

    settings = model_settings(cfg)[stage]
    if not settings:
        return None
    try:
        require_model(cfg, " and ".join(settings), several=len(settings) > 1)
    except ModelRequired as exc:
        sys.exit(f"error: {exc}")
    return build_llm(cfg, cache)


@contextmanager
def timed(figures: dict, name: str = "wall_s"):
    start = time.monotonic()
    yield
    figures[name] = round(time.monotonic() - start, 3)


def print_summary(stats: dict) -> None:
    brief = {k: stats[k] for k in ("stage", "accepted", "rejected", "reject_reasons") if k in stats}
    if "cache" in stats:
        brief["cache"] = {k: stats["cache"][k] for k in ("hits", "misses")}
    print(json.dumps(brief, sort_keys=True))

