"""TasksConfig.for_repository: a repository with few seeds gets higher per-seed caps, bounded, and no other."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from trailforge.config.schema import TasksConfig


def _caps(cfg: TasksConfig) -> tuple[int, int, int, int]:
    return (cfg.subflow.max_per_seed, cfg.completion.max_per_seed, cfg.correction.max_per_seed,
            cfg.correction.max_candidates_per_seed)


def test_one_seed_gets_its_share_of_the_target_and_many_seeds_keep_the_caps():
    cfg = TasksConfig()  # caps 5 / 4 / 6, so 16 tasks a seed; target 48, at most 3x
    assert _caps(cfg.for_repository(1)) == (15, 12, 18, 120)
    assert _caps(cfg.for_repository(2)) == (8, 6, 9, 60)  # 1.5x, rounded up
    assert cfg.for_repository(3) is cfg and cfg.for_repository(10) is cfg


def test_the_scale_is_bounded_and_a_zero_target_turns_it_off():
    cfg = TasksConfig.model_validate({"repository": {"target": 1000, "max_scale": 1.5}})
    assert _caps(cfg.for_repository(1)) == (8, 6, 9, 60)
    off = TasksConfig.model_validate({"repository": {"target": 0}})
    assert off.for_repository(1) is off


def test_a_cap_of_zero_stays_zero():
    cfg = TasksConfig.model_validate({"subflow": {"max_per_seed": 0}})
    assert _caps(cfg.for_repository(1))[0] == 0


def test_a_scale_below_one_is_refused_naming_the_key():
    with pytest.raises(ValidationError, match="max_scale"):
        TasksConfig.model_validate({"repository": {"max_scale": 0.5}})
