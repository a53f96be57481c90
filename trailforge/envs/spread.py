"""How much a program's answer varies from run to run, and what that means for its fields.

A real program is not always deterministic: an unseeded sampler, a threaded reduction or a randomised
solver moves its results a little on every run. ``verify`` grades such a field with a tolerance of
``spread_factor`` times its observed spread, so the stages before it must know that spread too: a
field that does not reproduce cannot be an answer, a Correction cannot call a field "wrong" when its
defect moved it by less than that tolerance, and a field does not "move with the data" when the move is
only noise. The reference runs are made with the salts verify uses, so verify finds them in the cache
and both stages judge one and the same set of runs.
"""
from __future__ import annotations

import math
from typing import Any, Callable

REFERENCE_RUN_SALT = "reference-run-{index}"
KERNEL_RUN_SALT = "reference-run-other-kernels"  # verify's run with other numerical kernels


def reference_runs(run: Callable[[str], dict[str, Any]], answer: dict[str, Any], repeats: int,
                   stochastic_repeats: int) -> list[dict[str, Any]]:
    """Answers of the reference runs verify makes: ``repeats`` of them, ``stochastic_repeats`` in all when one
    differs from ``answer`` (the program is stochastic, and one more draw would not show its spread).

    ``run(salt)`` runs the reference once and returns its answer (it may raise to stop). Runs are compared on
    ``answer``'s fields only: a task's answer keeps the fields that moved with the data, and the others a run
    also prints say nothing about whether the program is stochastic."""
    runs = [run(REFERENCE_RUN_SALT.format(index=index)) for index in range(repeats)]
    if any({name: got.get(name) for name in answer} != answer for got in runs):
        runs += [run(REFERENCE_RUN_SALT.format(index=index))
                 for index in range(repeats, max(repeats, stochastic_repeats))]
    return runs


def numbers(value: Any) -> list[float]:
    """The numbers a field's value holds, in order (a table's numeric cells row by row)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, list):
        return [float(v) for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if isinstance(value, dict):
        return [float(c) for row in value.get("rows", []) for c in row
                if isinstance(c, (int, float)) and not isinstance(c, bool)]
    return []


def non_numbers(value: Any) -> Any:
    """What of a field's value is not a number (a table's columns and text cells): it must not vary."""
    if isinstance(value, dict):
        return [value.get("columns"), [[c for c in row if not isinstance(c, (int, float))] for row in value["rows"]]]
    return None if numbers(value) or isinstance(value, list) and not value else value


def relative(x: float, y: float) -> float:
    return abs(x - y) / max(abs(y), 1e-12) if x != y else 0.0


def field_spread(field_type: str, reference: Any, runs: list[Any]) -> tuple[float | None, str]:
    """``(worst relative spread, "")`` of one field over ``runs`` against ``reference``, or ``(None, why)`` when
    it does not reproduce at all (a text or count that changed, a list that changed length)."""
    worst = 0.0
    for got in runs:
        if field_type in ("string", "boolean", "integer") and got != reference:
            return None, "changed between runs"
        if non_numbers(got) != non_numbers(reference):
            return None, "changed between runs"
        a, b = numbers(got), numbers(reference)
        if len(a) != len(b):
            return None, "changed shape between runs"
        for x, y in zip(a, b):
            if not (math.isfinite(x) and math.isfinite(y)):
                if x != y and not (math.isnan(x) and math.isnan(y)):
                    return None, "changed between runs"
                continue
            worst = max(worst, relative(x, y))
    return worst, ""


def answer_spreads(schema, reference: dict[str, Any], runs: list[dict[str, Any]],
                   max_rel_spread: float) -> tuple[dict[str, float], dict[str, tuple[str, float | None]]]:
    """``(spread of each reproducible field, (why, spread) of each other one)``: a field missing from a run, one
    that changed its text or shape (spread None), or one that varies by more than ``max_rel_spread`` does not
    reproduce."""
    spreads, failing = {}, {}
    for field in schema:
        if any(field.name not in run for run in runs):
            failing[field.name] = ("missing from a run", None)
            continue
        worst, why = field_spread(field.type, reference[field.name], [run[field.name] for run in runs])
        if worst is None:
            failing[field.name] = (why, None)
        elif worst > max_rel_spread:
            failing[field.name] = (f"varies by {worst:.3g} between runs (> verifier.max_rel_spread={max_rel_spread})",
                                   worst)
        else:
            spreads[field.name] = worst
    return spreads, failing


def noise_bars(spreads: dict[str, float], spread_factor: float, margin: float = 2.0) -> dict[str, float]:
    """Per field, the relative change below which a move may be the program's own noise: ``margin`` times the
    tolerance verify will grade it with (``spread_factor`` x spread). Only fields that vary at all get one."""
    return {name: margin * spread_factor * spread for name, spread in spreads.items() if spread > 0}


__all__ = ["KERNEL_RUN_SALT", "REFERENCE_RUN_SALT", "answer_spreads", "field_spread", "noise_bars", "non_numbers", "numbers",
           "reference_runs", "relative"]
