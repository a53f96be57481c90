"""How a run's answer differs from the reference: the one bar for "changes the answer" (above the printed
resolution, 1e-4 relative and the program's own noise), symptoms, and fingerprints of answers."""
from __future__ import annotations

import json
from typing import Any


from ...io import AnswerField


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbers_differ(a: float, b: float, resolution: float | None, noise: float = 0.0) -> bool:
    return abs(a - b) > max(1e-4 * abs(b), 2 * (resolution or 0.0), 1e-12, noise * abs(b))


def _canonical_rows(table: dict) -> list[list]:
    return sorted(table.get("rows", []), key=lambda row: [str(c) if not is_number(c) else f"{c:.6g}" for c in row])


def field_difference(field: AnswerField, ref: Any, got: Any, noise: float = 0.0) -> str | None:
    """None when ``got`` matches ``ref`` materially, else a short description of how it differs. ``noise``: the
    relative change the program's own run-to-run spread can make (``spread.noise_bars``), which is no change."""
    if field.type == "number" and is_number(ref) and is_number(got):
        if not _numbers_differ(got, ref, field.resolution, noise):
            return None
        if ref != 0 and got != 0 and (got > 0) != (ref > 0):
            return "it has the wrong sign"
        return "it comes out too high" if got > ref else "it comes out too low"
    if field.type == "number_list" and isinstance(ref, list) and isinstance(got, list):
        if len(ref) != len(got):
            return "it has the wrong number of values"
        return None if not any(_numbers_differ(g, r, field.resolution, noise) for g, r in zip(got, ref)) else ""
    if field.type == "table" and isinstance(ref, dict) and isinstance(got, dict):
        if ref.get("columns") != got.get("columns") or len(ref["rows"]) != len(got["rows"]):
            return "its shape is wrong"
        for row_ref, row_got in zip(_canonical_rows(ref), _canonical_rows(got)):
            for r, g in zip(row_ref, row_got):
                if is_number(r) and is_number(g):
                    if _numbers_differ(g, r, field.resolution, noise):
                        return ""
                elif r != g:
                    return ""
        return None
    return None if got == ref else ""


def differences(schema: list[AnswerField], ref: dict, got: dict, noise: dict[str, float] | None = None
                ) -> dict[str, str] | None:
    """Changed fields with a symptom each; None when a field is missing (not a clean symptom). ``noise``: per
    field, the relative change that is within the program's own spread."""
    if any(f.name not in got for f in schema):
        return None
    out = {}
    for spec in schema:
        diff = field_difference(spec, ref[spec.name], got[spec.name], (noise or {}).get(spec.name, 0.0))
        if diff is not None:
            out[spec.name] = diff
    return out


def slightly_moved(schema: list[AnswerField], ref: dict, got: dict, changed: dict) -> list[str]:
    """Fields not in ``changed`` whose value still differs from the reference at all (a residual's minimum moved
    in its ninth digit): a statement must not call them correct."""
    return [f.name for f in schema if f.name not in changed and f.name in got and got[f.name] != ref[f.name]]


def fingerprint(schema: list[AnswerField], answer: dict) -> str:
    def rounded(value):
        if is_number(value):
            return f"{value:.6g}"
        if isinstance(value, list):
            return [rounded(v) for v in value]
        if isinstance(value, dict):
            return {"columns": value.get("columns"), "rows": [[rounded(c) for c in row] for row in _canonical_rows(value)]}
        return value
    return json.dumps({f.name: rounded(answer.get(f.name)) for f in schema}, sort_keys=True)
