"""Which settings of a recipe make a stage call a model.

The one home of that fact: each stage asks it at start (``trailforge.io.stage.model_or_exit``) and
``trailforge validate`` / ``compose`` ask it for every stage of ``dvc repro``, so a recipe that needs a model
and has ``llm=none`` fails before DVC deletes any output, with the same keys named.
"""
from __future__ import annotations

from typing import Iterable

from .compose import ConfigError
from .schema import TrailforgeConfig


def model_settings(cfg: TrailforgeConfig) -> dict[str, list[str]]:
    """For each stage that can call a model, the settings of ``cfg`` that make it do so (empty: it needs none)."""
    source, seeds = cfg.source, cfg.tasks.seeds
    return {
        "discover": ["source.expand_keywords=true"] if source.kind == "github" and source.expand_keywords else [],
        "seeds": [f"tasks.seeds.{step}=true" for step in ("judge", "consolidate") if getattr(seeds, step)],
        "statements": ["tasks.statements=model"] if cfg.tasks.statements == "model" else [],
        "verify": ["verifier.review=true"] if cfg.verifier.review else [],
        # The agent stages exist to call a model whatever their settings; neither is part of `dvc repro`.
        "rollout": ["the rollout stage"],
        "ideation": ["the ideation stage (recipe=ideatrail)"],
    }


def unmet_model_settings(cfg: TrailforgeConfig, stages: Iterable[str]) -> dict[str, list[str]]:
    """The stages among ``stages`` whose settings need a model that ``cfg`` does not configure (llm=none)."""
    if cfg.llm.provider != "none":
        return {}
    needs = model_settings(cfg)
    return {stage: needs[stage] for stage in stages if needs.get(stage)}


def check_model_settings(cfg: TrailforgeConfig, stages: Iterable[str]) -> None:
    """Raise a ConfigError naming every setting among ``stages`` that needs a model the recipe lacks."""
    from ..llm import model_required_message

    unmet = unmet_model_settings(cfg, stages)
    if unmet:
        what = ", ".join(f"{' and '.join(settings)} (stage {stage})" for stage, settings in unmet.items())
        several = sum(len(settings) for settings in unmet.values()) > 1
        raise ConfigError(model_required_message(what, several))
