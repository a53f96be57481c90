"""Tolerances: the verifier's floor widened by run-to-run spread and by how precisely each value, list element
or table cell was printed; and the expected document the exported eval grades against."""
from __future__ import annotations

import csv
import io
from typing import Any

from ...config.schema import VerifierConfig
from ...io import TaskRow
from ..answers import parse_scalar, resolution
from ..spread import relative


def element_spreads(task: TaskRow, runs: list[dict[str, Any]]) -> dict[str, list]:
    """Run-to-run spread of each element of a number list, or each numeric cell of a table (None: a text cell).

    Runs are compared with the reference position by position (``check_reproducible`` has made sure the
    shapes and the text cells agree)."""
    spreads: dict[str, list] = {}
    for field in task.answer_schema:
        ref = task.reference_answer[field.name]
        if field.type == "number_list":
            spreads[field.name] = [max([relative(float(run[field.name][i]), float(y)) for run in runs], default=0.0)
                                   for i, y in enumerate(ref)]
        elif field.type == "table":
            spreads[field.name] = [
                [max([relative(float(run[field.name]["rows"][r][c]), float(y)) for run in runs], default=0.0)
                 if _is_number(y) else None for c, y in enumerate(row)]
                for r, row in enumerate(ref["rows"])]
    return spreads


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def printed_tables(task: TaskRow, files: dict[str, bytes]) -> dict[str, str]:
    """The text of each table field's file as a run wrote it (``file:<path>`` sources), by field name."""
    texts = {}
    for field in task.answer_schema:
        path = field.source[len("file:"):] if field.type == "table" and field.source.startswith("file:") else None
        if path and path in files:
            try:
                texts[field.name] = files[path].decode("utf-8")
            except UnicodeDecodeError:
                pass
    return texts


def _cell_resolutions(text: str, delimiter: str) -> list[list[float | None]]:
    """Half a unit in the last printed place of each cell, read as ``answers.parse_table`` reads the table:
    a printed integer is exact (0.0), a text cell None."""
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if r]
    cells = []
    for row in rows[1:]:
        out: list[float | None] = []
        for cell in row:
            parsed = parse_scalar(cell) if cell.strip() else None
            kind = parsed[0] if parsed else None
            out.append(resolution(cell) if kind == "number" else 0.0 if kind == "integer" else None)
        cells.append(out)
    return cells


def element_resolutions(field, value: Any, text: str | list | None = None) -> list:
    """The printed resolution of each element of a number list or cell of a table (None: a text cell).

    Each element's own printed form, when it is at hand: ``text`` is the file a table was read from, or the
    resolutions the stdout reader recorded (a list, per element or per row of cells); else the shortest form
    of the number (what ``json`` and ``pandas`` write), never coarser than the field's coarsest cell. Printed
    forms that do not fit the value's shape are not used."""
    coarsest = field.resolution or 0.0
    own = lambda v: min(coarsest, resolution(repr(float(v))))  # noqa: E731
    if field.type == "number_list":
        if isinstance(text, list) and len(text) == len(value) and all(isinstance(r, (int, float)) for r in text):
            return [float(r) for r in text]
        return [own(v) for v in value]
    rows = value["rows"]
    if text is not None:
        cells = text if isinstance(text, list) else _cell_resolutions(
            text, "\t" if field.source.lower().endswith(".tsv") else ",")
        fits = len(cells) == len(rows) and all(
            len(c) == len(r) and all((t is None) != _is_number(v) for t, v in zip(c, r)) for c, r in zip(cells, rows))
        if fits:
            return cells
    return [[own(v) if _is_number(v) else None for v in row] for row in rows]


def calibrate(task: TaskRow, spreads: dict[str, float], cfg: VerifierConfig, elements: dict[str, list] | None = None,
              printed: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Per-field tolerances: the verifier floor, widened by observed spread and printed precision.

    A number list or table also gets ``rtols``/``atols``, one per element or cell, from that element's own
    printed precision and its own spread (``elements``, from ``element_spreads``), so that one coarsely
    printed cell does not loosen the grading of the others. The field's ``rtol``/``atol`` stay what they
    were (its coarsest cell, its largest spread): what an eval that predates per-element tolerances applies."""
    tolerances: dict[str, dict[str, Any]] = {}
    for field in task.answer_schema:
        rtol = max(cfg.rtol, cfg.spread_factor * spreads.get(field.name, 0.0))
        atol = max(cfg.atol, (field.resolution or 0.0) * 1.01)
        tolerances[field.name] = {"rtol": rtol, "atol": atol}
        if field.type not in ("number_list", "table"):
            continue
        value = task.reference_answer[field.name]
        res = element_resolutions(field, value, (printed or {}).get(field.name))
        spread = (elements or {}).get(field.name)
        if field.type == "number_list":
            spread = spread if spread and len(spread) == len(value) else [spreads.get(field.name, 0.0)] * len(value)
            tolerances[field.name]["rtols"] = [max(cfg.rtol, cfg.spread_factor * s) for s in spread]
            tolerances[field.name]["atols"] = [max(cfg.atol, r * 1.01) for r in res]
        else:
            if not spread or len(spread) != len(res):
                spread = [[None if r is None else spreads.get(field.name, 0.0) for r in row] for row in res]
            tolerances[field.name]["rtols"] = [[None if s is None else max(cfg.rtol, cfg.spread_factor * s)
                                                for s in row] for row in spread]
            tolerances[field.name]["atols"] = [[None if r is None else max(cfg.atol, r * 1.01) for r in row]
                                               for row in res]
    return tolerances


def element_tolerance(tol: dict[str, Any], *index: int) -> tuple[float, float]:
    """(rtol, atol) of one element (list) or cell (table), from the per-element lists when there are some."""
    rtol, atol = tol["rtol"], tol["atol"]
    rtols, atols = tol.get("rtols"), tol.get("atols")
    try:
        for i in index:
            rtols, atols = rtols[i], atols[i]
    except (TypeError, IndexError):
        return rtol, atol
    return (rtol if rtols is None else rtols), (atol if atols is None else atols)


def expected_document(task: TaskRow, tolerances: dict[str, dict[str, float]]) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "fields": [
            {"name": f.name, "type": f.type, "value": task.reference_answer[f.name], **tolerances[f.name]}
            for f in task.answer_schema
        ],
    }
