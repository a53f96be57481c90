"""spread.py: which fields reproduce between runs, by how much they vary, and the bar a move must clear."""
from __future__ import annotations

import math

from trailforge.envs.spread import REFERENCE_RUN_SALT, answer_spreads, noise_bars, reference_runs
from trailforge.io import AnswerField

MEAN = AnswerField(name="mean", type="number", label="mean", source="stdout")
TAG = AnswerField(name="tag", type="string", label="tag", source="stdout")
SERIES = AnswerField(name="series", type="number_list", label="series", source="stdout")


def test_a_deterministic_program_runs_the_repeats_only():
    salts = []
    runs = reference_runs(lambda salt: salts.append(salt) or {"mean": 1.0}, {"mean": 1.0}, 2, 5)
    assert len(runs) == 2 and salts == [REFERENCE_RUN_SALT.format(index=i) for i in range(2)]


def test_fields_a_run_prints_beyond_the_answer_do_not_make_it_stochastic():
    # a task's answer keeps only the fields that moved with the data; the run prints the others too
    runs = reference_runs(lambda salt: {"mean": 1.0, "grid_step": 0.005}, {"mean": 1.0}, 2, 5)
    assert len(runs) == 2


def test_a_run_that_differs_brings_the_stochastic_repeats():
    values = iter([1.0, 1.001, 0.999, 1.0, 1.002])
    salts = []
    runs = reference_runs(lambda salt: salts.append(salt) or {"mean": next(values)}, {"mean": 1.0}, 2, 5)
    assert len(runs) == 5 and salts[-1] == "reference-run-4"


def test_spreads_and_the_fields_that_do_not_reproduce():
    reference = {"mean": 2.0, "tag": "a", "series": [1.0, 2.0]}
    runs = [{"mean": 2.002, "tag": "a", "series": [1.0, 2.0]}, {"mean": 1.999, "tag": "b", "series": [1.0]}]
    spreads, failing = answer_spreads([MEAN, TAG, SERIES], reference, runs, max_rel_spread=0.05)
    assert set(spreads) == {"mean"} and math.isclose(spreads["mean"], 0.001)
    assert set(failing) == {"tag", "series"}
    assert failing["tag"][0] == "changed between runs" and failing["series"][0] == "changed shape between runs"


def test_beyond_the_spread_limit_a_field_fails_with_its_spread():
    spreads, failing = answer_spreads([MEAN], {"mean": 1.0}, [{"mean": 1.2}], max_rel_spread=0.05)
    assert spreads == {} and math.isclose(failing["mean"][1], 0.2)
    _, missing = answer_spreads([MEAN], {"mean": 1.0}, [{}], max_rel_spread=0.05)
    assert missing["mean"] == ("missing from a run", None)


def test_only_varying_fields_get_a_noise_bar():
    assert noise_bars({"mean": 0.001, "count": 0.0}, spread_factor=10) == {"mean": 0.02}


def test_a_move_within_the_noise_bar_is_no_change():
    from trailforge.envs.tasks.compare import differences

    assert differences([MEAN], {"mean": 1.0}, {"mean": 1.01}) == {"mean": "it comes out too high"}
    assert differences([MEAN], {"mean": 1.0}, {"mean": 1.01}, noise={"mean": 0.02}) == {}
    assert differences([MEAN], {"mean": 1.0}, {"mean": 1.03}, noise={"mean": 0.02}) == {"mean": "it comes out too high"}
