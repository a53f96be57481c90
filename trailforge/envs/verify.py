"""Execution-based verification of one task: a chain of checks, the first failure rejects.

1. data integrity   every workspace file exists with the hash recorded at snapshot time;
2. executability    the reference program runs cleanly on the workspace alone;
3. reproducibility  ``verifier.repeats`` independent runs give the same answer fields,
                    with numbers within ``verifier.max_rel_spread``; tolerances are
                    calibrated from that spread and from the printed precision;
4. gradability      the standalone eval accepts every reference run and every answer the
                    statement allows (rounded as stated, 3.0 for 3, keys in another order, ...),
                    and rejects at least ``verifier.min_wrong_rejected`` plausible wrong
                    answers (and accepts none);
5. controls         the eval rejects the output of every negative program of the task (the
                    defective program of a Correction, the program with the hole of a
                    Completion, the cut-short slice of a Subflow);
6. isolation        neither the statement nor the workspace reveals the answer, the values it
                    is derived from, the removed code or the fix.

Reference runs go through the content-addressed cache independently of every verifier
threshold, so changing a threshold re-grades without re-executing programs.
"""
from __future__ import annotations

import ast
import copy
import csv
import functools
import hashlib
import importlib.util
import io
import json
import math
import re
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any

from ..cache import ContentCache
from ..config.schema import VerifierConfig
from ..io import StageRecorder, TaskRow, VerifiedTaskRow
from ..sandbox import RunRequest, Sandbox, run_cached
from . import statement
from .answers import answer_from_run, missing_value_answers, parse_scalar, resolution
from .protocol import RunProtocol, recorded_request
from .slicing import REPORT_FUNCTION
from .spread import answer_spreads, numbers, reference_runs, relative
from .statement import analysis_numbers, contains_number as _contains_number, field_needles, prose as _prose
from .tasks import eval_script


class Rejected(Exception):
    def __init__(self, reason: str, message: str, **detail: Any):
        super().__init__(message)
        self.reason, self.message, self.detail = reason, message, detail


def verify_task(task: TaskRow, cfg: VerifierConfig, sandbox: Sandbox, cache: ContentCache, recorder: StageRecorder,
                max_fields: int, max_table_rows: int) -> VerifiedTaskRow | None:
    try:
        return _verify(task, cfg, sandbox, cache, recorder, max_fields, max_table_rows)
    except Rejected as rej:
        recorder.reject(task.task_id, rej.reason, rej.message, **rej.detail)
        return None


def _verify(task, cfg, sandbox, cache, recorder, max_fields, max_table_rows) -> VerifiedTaskRow:
    workspace = check_data_integrity(task)
    env = sandbox.prepare(task.distributions)
    if not env.ready:
        raise Rejected("missing_dependency", f"the sandbox lacks {', '.join(env.missing)}")
    program = {path: text.encode("utf-8") for path, text in task.reference_program.items()}
    # The first run's printed form of each list element and table cell: a written table's text, or the
    # resolutions read from stdout (answers.extract_answer's ``precision``).
    printed: dict[str, str | list] = {}

    def reference_run(salt: str) -> dict[str, Any]:
        request = recorded_request(RunProtocol.of(task), task.entrypoint, {**workspace, **program},
                                   sandbox.timeout_s)
        result, hit = run_cached(cache, sandbox, env, request, salt=salt)
        recorder.count("reference_runs_cached" if hit else "reference_runs_executed")
        if not result.ok:
            tail = (result.stderr.strip().splitlines() or [""])[-1]
            raise Rejected("not_executable", f"reference run {salt} ended with {result.reason}: {tail[:300]}")
        first = not printed_once
        precision: dict[str, list] | None = {} if first else None
        answer = answer_from_run(result, task.answer_from, max_fields, max_table_rows, precision, cwd=task.cwd,
                                 like=task.answer_schema)[1]
        if first:
            printed_once.append(True)
            printed.update(precision)
            printed.update(printed_tables(task, result.files))
        return answer

    printed_once: list[bool] = []
    # A stochastic program gets more runs, so the tolerance reflects its real spread, not one draw.
    runs = reference_runs(reference_run, task.reference_answer, cfg.repeats, cfg.stochastic_repeats)
    if len(runs) > cfg.repeats:
        recorder.count("stochastic_tasks")
    spreads = check_reproducible(task, runs, cfg.max_rel_spread)
    tolerances = calibrate(task, spreads, cfg, element_spreads(task, runs), printed)
    expected = expected_document(task, tolerances)
    positives, negatives, allowed = check_gradable(task, runs, expected, tolerances, cfg, sandbox, env, cache,
                                                   recorder)
    for control in task.negative_programs:
        negatives[f"program:{control['name']}"] = check_negative_program(
            task, control, workspace, expected, cfg, sandbox, env, cache, recorder, max_fields, max_table_rows)
    check_isolation(task, workspace)
    check_construction(task)
    check_specified(task, workspace)
    # The row records the environment it was verified in (backend, lock), which is what an export rebuilds.
    return VerifiedTaskRow(
        **{**task.model_dump(), "sandbox_spec": env.spec},
        tolerances=tolerances,
        checks={
            "data_files": len(workspace),
            "reference_runs": len(runs),
            "max_rel_spread": spreads,
            "positive_controls": positives,
            "positive_answer_controls": allowed,
            "negative_controls": negatives,
            "isolation": "clean",
        },
    )


def run_answer(task: TaskRow, result, max_fields: int, max_table_rows: int) -> dict[str, Any]:
    """The structured answer of one run of a task's program, read the way the task defines."""
    return answer_from_run(result, task.answer_from, max_fields, max_table_rows, cwd=task.cwd,
                           like=task.answer_schema)[1]


def check_negative_program(task, control, workspace, expected, cfg, sandbox, env, cache, recorder, max_fields,
                           max_table_rows) -> str:
    """Run a defective or incomplete program; the eval must reject whatever it produces."""
    files = {**workspace, **{p: t.encode("utf-8") for p, t in control["files"].items()}}
    request = recorded_request(RunProtocol.of(task), control["entrypoint"], files, sandbox.timeout_s)
    result, hit = run_cached(cache, sandbox, env, request, salt="negative-control")
    recorder.count("negative_runs_cached" if hit else "negative_runs_executed")
    answer = run_answer(task, result, max_fields, max_table_rows)
    if task.task_type == "correction" and control["name"] == "defective":
        check_symptoms(task, expected, answer)
    if _run_eval(expected, answer, sandbox, env, cache, cfg.eval_timeout_s, recorder):
        raise Rejected(f"eval_accepts_{control['name']}",
                       f"eval.py accepts the output of the {control['name']} program", control=control["name"])
    return "rejected"  # how the program ended (crash, timeout) is timing-dependent: not recorded in the row


@functools.cache
def _grader():
    """The exported eval's own field check, loaded from the template (our code): what the statement claims
    about each field is judged exactly as the agent's answer will be."""
    spec = importlib.util.spec_from_file_location("trailforge_eval_template", Path(__file__).parent / "templates"
                                                  / "eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_symptoms(task: TaskRow, expected: dict, defective: dict) -> None:
    """A Correction statement names the wrong fields and calls the rest correct: under the calibrated
    tolerances, each named field of the defective program's output must fail and each other one pass."""
    named = set(task.construction.get("changed_fields", []))
    unclaimed = set(task.construction.get("unclaimed_fields", []))  # the statement calls these neither way
    for spec in expected["fields"]:
        if spec["name"] in unclaimed:
            continue
        ok = spec["name"] in defective and bool(_grader().check_field(spec, defective[spec["name"]]))
        if spec["name"] in named and ok:
            raise Rejected("symptom_mismatch", f"the statement calls {spec['name']} wrong, but the defective "
                           "program's value passes the eval")
        if spec["name"] not in named and not ok:
            raise Rejected("symptom_mismatch", f"the statement calls {spec['name']} correct, but the defective "
                           "program's value fails the eval")


def check_data_integrity(task: TaskRow) -> dict[str, bytes]:
    tree = Path(task.tree)
    files = {}
    for entry in task.workspace_files:
        path = tree / entry.path
        if not path.is_file():
            raise Rejected("data_missing", f"workspace file {entry.path} is missing from the snapshot")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise Rejected("data_changed", f"workspace file {entry.path} no longer matches its snapshot hash")
        files[entry.path] = data
    if not files:
        raise Rejected("data_missing", "the task has no input data")
    return files


def check_reproducible(task: TaskRow, runs: list[dict[str, Any]], max_rel_spread: float) -> dict[str, float]:
    spreads, failing = answer_spreads(task.answer_schema, task.reference_answer, runs, max_rel_spread)
    for field in task.answer_schema:  # the first failing field in the schema's order names the reject
        if field.name in failing:
            why, spread = failing[field.name]
            if spread is None:
                raise Rejected("not_reproducible", f"field {field.name} {why}", field=field.name)
            raise Rejected("not_reproducible", f"field {field.name} {why}", field=field.name, spread=spread)
    return spreads


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


def _element_tolerance(tol: dict[str, Any], *index: int) -> tuple[float, float]:
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


def wrong_answers(task: TaskRow, tolerances: dict[str, dict[str, float]]) -> dict[str, dict[str, Any]]:
    """Plausible but materially wrong answers, each differing from the reference in one field."""
    ref = task.reference_answer
    wrong: dict[str, dict[str, Any]] = {}
    numeric = [f for f in task.answer_schema if f.type == "number" and ref[f.name] != 0]
    if numeric:
        field = numeric[0]
        value, tol = ref[field.name], tolerances[field.name]
        factor = 1 + max(0.1, 20 * tol["rtol"], 20 * tol["atol"] / abs(value))
        wrong["scaled_value"] = {**ref, field.name: value * factor}
        wrong["sign_flipped"] = {**ref, field.name: -value}
        wrong["unit_error_x1000"] = {**ref, field.name: value * 1000}
    integers = [f for f in task.answer_schema if f.type == "integer"]
    if integers:
        wrong["integer_off_by_one"] = {**ref, integers[0].name: ref[integers[0].name] + 1}
    strings = [f for f in task.answer_schema if f.type == "string"]
    if strings:
        wrong["different_string"] = {**ref, strings[0].name: ref[strings[0].name] + "_x"}
    tables = [f for f in task.answer_schema if f.type == "table" and numbers(ref[f.name])]
    if tables:
        table = copy.deepcopy(ref[tables[0].name])
        for row in table["rows"]:
            cells = [i for i, c in enumerate(row) if isinstance(c, float) and c != 0]
            if cells:
                row[cells[0]] = row[cells[0]] + max(1.0, abs(row[cells[0]]))  # never equal to the original
                break
        wrong["table_cell_changed"] = {**ref, tables[0].name: table}
    lists = [f for f in task.answer_schema if f.type == "number_list" and len(ref[f.name]) >= 2]
    if lists:
        values = list(ref[lists[0].name])
        index = max(range(len(values)), key=lambda i: abs(values[i]))
        scaled = values[:index] + [values[index] * 1.5 + (1.0 if values[index] == 0 else 0.0)] + values[index + 1:]
        wrong["list_value_changed"] = {**ref, lists[0].name: scaled}
        wrong["list_value_dropped"] = {**ref, lists[0].name: values[:-1]}
    for field in (f for f in task.answer_schema if f.type == "number_list"):
        values, tol = list(ref[field.name]), tolerances[field.name]
        index = _best_resolved([(i,) for i in range(len(values))], [values[i] for i in range(len(values))], tol)
        if index is not None:
            (i,) = index
            wrong["list_value_off_10pct"] = {**ref, field.name: values[:i] + [values[i] * 1.1] + values[i + 1:]}
            break
    for field in (f for f in task.answer_schema if f.type == "table"):
        table, tol = ref[field.name], tolerances[field.name]
        places = [(r, c) for r, row in enumerate(table["rows"]) for c, v in enumerate(row) if isinstance(v, float)]
        index = _best_resolved(places, [table["rows"][r][c] for r, c in places], tol)
        if index is not None:
            changed = copy.deepcopy(table)
            changed["rows"][index[0]][index[1]] *= 1.1
            wrong["table_cell_off_10pct"] = {**ref, field.name: changed}
            break
    tables = [f for f in task.answer_schema if f.type == "table" and len(ref[f.name]["rows"]) >= 2]
    if tables:
        table = ref[tables[0].name]
        wrong["table_row_dropped"] = {**ref, tables[0].name: {**table, "rows": table["rows"][:-1]}}
    first = task.answer_schema[0].name
    wrong["missing_field"] = {k: v for k, v in ref.items() if k != first}
    return wrong


def _best_resolved(places: list[tuple[int, ...]], values: list[float], tol: dict[str, Any]) -> tuple[int, ...] | None:
    """The element whose 10% change its tolerance resolves best, or None when none resolves it by a clear margin
    (a value printed with one significant digit cannot tell a 10% error from rounding)."""
    best, best_ratio = None, 3.0
    for place, value in zip(places, values):
        if value == 0:
            continue
        rtol, atol = _element_tolerance(tol, *place)
        ratio = 0.1 * abs(value) / (atol + rtol * abs(value) * 1.1)
        if ratio > best_ratio:
            best, best_ratio = place, ratio
    return best


def _rounded_as_stated(field, value: float) -> float:
    """The value rounded the way the statement says the original analysis printed it."""
    rounding = statement.rounding(field, value)
    if rounding is None:
        return value
    count, unit = rounding
    return float(f"{value:.{count - 1}e}") if unit == "significant digits" else round(value, count)


def allowed_answers(task: TaskRow, tolerances: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Answers the statement allows that differ from the reference in form, each of which the eval must accept.

    Written to ``answer.json`` as ordered here (``key_order_reversed`` is about the order of the keys)."""
    ref = task.reference_answer
    allowed: dict[str, dict[str, Any]] = {}
    stated = {f.name: _rounded_as_stated(f, ref[f.name]) for f in task.answer_schema
              if f.type == "number" and isinstance(ref[f.name], float) and statement.rounding(f, ref[f.name])}
    if stated:
        allowed["rounded_as_stated"] = {**ref, **stated}
    # Full precision: any value that the printed one is the rounding of (here 0.9 of half a unit away).
    within = {}
    for field in task.answer_schema:
        value, tol = ref[field.name], tolerances[field.name]
        if field.type == "number" and isinstance(value, float) and field.resolution:
            within[field.name] = value + 0.9 * field.resolution
        elif field.type == "number_list" and tol.get("atols"):
            within[field.name] = [v + 0.9 * a / 1.01 for v, a in zip(value, tol["atols"])]
        elif field.type == "table" and tol.get("atols"):
            within[field.name] = {**value, "rows": [
                [c + 0.9 * a / 1.01 if isinstance(c, float) and a is not None else c for c, a in zip(row, atols)]
                for row, atols in zip(value["rows"], tol["atols"])]}
    if within:
        allowed["unrounded_within_printed_precision"] = {**ref, **within}
    as_floats = {f.name: float(ref[f.name]) for f in task.answer_schema if f.type == "integer"}
    as_ints = {}
    for field in task.answer_schema:
        value = ref[field.name]
        if field.type == "number" and isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            as_ints[field.name] = int(value)  # "a number" does not demand a float
        elif field.type == "number_list" and any(isinstance(v, float) and v.is_integer() for v in value):
            as_ints[field.name] = [int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 1e15 else v
                                   for v in value]
        elif field.type == "table" and any(isinstance(c, float) and c.is_integer() for r in value["rows"] for c in r):
            as_ints[field.name] = {**value, "rows": [[int(c) if isinstance(c, float) and c.is_integer()
                                                      and abs(c) < 1e15 else c for c in row] for row in value["rows"]]}
    if as_floats:
        allowed["integers_as_floats"] = {**ref, **as_floats}
    if as_ints:
        allowed["whole_numbers_as_integers"] = {**ref, **as_ints}
    lists = {f.name: [float(v) for v in ref[f.name]] for f in task.answer_schema if f.type == "number_list"}
    if lists:
        allowed["lists_as_floats"] = {**ref, **lists}
    allowed.update(missing_value_answers(task.answer_schema, ref))  # null and NaN for each missing value
    reordered = {}
    for name in reversed(list(ref)):
        value = ref[name]
        if isinstance(value, dict) and "rows" in value:  # keys, columns and rows in another order
            order = list(reversed(range(len(value["columns"]))))
            value = {"rows": [[row[i] for i in order] for row in reversed(value["rows"])],
                     "columns": [value["columns"][i] for i in order]}
        reordered[name] = value
    if len(ref) > 1 or reordered != ref:
        allowed["key_order_reversed"] = reordered
    return allowed


def answer_bytes(answer: dict, keep_order: bool = False) -> bytes:
    """``answer.json`` as the eval reads it: keys sorted, or (a positive control) in the order given."""
    return json.dumps(answer, sort_keys=not keep_order).encode("utf-8")


def _run_eval(expected: dict, answer: dict, sandbox: Sandbox, env, cache: ContentCache, timeout_s: float,
              recorder: StageRecorder, keep_order: bool = False) -> bool:
    files = {
        "eval.py": eval_script().encode("utf-8"),
        "expected.json": json.dumps(expected, sort_keys=True).encode("utf-8"),
        "answer.json": answer_bytes(answer, keep_order),
    }
    request = RunRequest(("python", "eval.py", "answer.json", "expected.json"), files, timeout_s=timeout_s)
    result, hit = run_cached(cache, sandbox, env, request)
    recorder.count("eval_runs_cached" if hit else "eval_runs_executed")
    if result.exit_code not in (0, 1):
        raise Rejected("eval_error", f"eval.py failed ({result.reason}): {result.stderr.strip()[-300:]}")
    return result.exit_code == 0


def check_gradable(task, runs, expected, tolerances, cfg: VerifierConfig, sandbox, env, cache,
                   recorder) -> tuple[int, dict, dict]:
    for index, answer in enumerate([task.reference_answer, *runs]):
        if not _run_eval(expected, answer, sandbox, env, cache, cfg.eval_timeout_s, recorder):
            raise Rejected("eval_rejects_reference", f"eval.py rejects reference answer #{index}")
    allowed = {}
    for name, answer in allowed_answers(task, tolerances).items():
        if not _run_eval(expected, answer, sandbox, env, cache, cfg.eval_timeout_s, recorder, keep_order=True):
            raise Rejected("eval_rejects_allowed", f"eval.py rejects an answer the statement allows ({name})",
                           allowed_answer=name)
        allowed[name] = "accepted"
    verdicts = {}
    for name, answer in wrong_answers(task, tolerances).items():
        accepted = _run_eval(expected, answer, sandbox, env, cache, cfg.eval_timeout_s, recorder)
        if accepted:
            raise Rejected("eval_accepts_wrong", f"eval.py accepts a wrong answer ({name})", wrong_answer=name)
        verdicts[name] = "rejected"
    if len(verdicts) < cfg.min_wrong_rejected:
        raise Rejected("not_gradable", f"only {len(verdicts)} wrong answers could be built and rejected "
                       f"(< verifier.min_wrong_rejected={cfg.min_wrong_rejected})")
    return len(runs) + 1, verdicts, allowed


def leak_needles(task: TaskRow, workspace_text: str) -> list[str]:
    """Strings whose presence would reveal a reference value."""
    needles = set()
    for field in task.answer_schema:
        needles.update(field_needles(field, task.reference_answer[field.name], workspace_text))
    return sorted(needles)


def _significant_forms(value: float) -> list[str]:
    """Printed forms of an intermediate value that would identify it (three or more significant digits)."""
    forms = {repr(value)}
    for decimals in range(2, 7):
        text = f"{value:.{decimals}f}"
        if len(re.sub(r"[^0-9]", "", text).lstrip("0")) >= 3:
            forms.add(text)
    return sorted(f for f in forms if len(re.sub(r"[^0-9]", "", f).lstrip("0")) >= 3)


def _code_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if len(line.strip()) >= 12 and not line.strip().startswith("#")]


def check_construction(task: TaskRow) -> None:
    """What makes a derived task a task: the hole is really empty, the defect really there, nothing given away."""
    prose = _prose(task.statement)
    for value in task.derived_values:
        for form in _significant_forms(value):
            if _contains_number(prose, form):
                raise Rejected("answer_leak", f"the statement contains the intermediate value {form}")
    info = task.construction
    if task.task_type == "completion":
        stub = info.get("stub", "")
        given = task.workspace_program.get(info["path"], "")
        if not stub or stub not in given or given == task.reference_program.get(info["path"]):
            raise Rejected("hole_missing", "the workspace program does not carry the stub in place of the step")
        for line in _code_lines(info.get("removed", "")):
            if line in stub:
                raise Rejected("hole_leak", "the stub contains code of the removed step")
            if line in task.statement:
                raise Rejected("hole_leak", "the statement contains code of the removed step")
    if task.task_type == "correction":
        if task.workspace_program == task.reference_program:
            raise Rejected("defect_missing", "the workspace program is the reference program")
        original = info.get("original", "").strip()
        if original and original in task.statement:
            raise Rejected("fix_leak", "the statement contains the original line")
        mutated = task.workspace_program.get(info["path"], "")
        if info.get("mutated", "").strip() not in mutated:
            raise Rejected("defect_missing", "the defective line is not in the workspace program")


def unstated_numbers(task: TaskRow, workspace: dict[str, bytes]) -> list[tuple[float, str, int, str]]:
    """Numbers of the reference program that can change the answer and that neither the statement nor a
    workspace file gives: ``(value, path, line, code)``. An agent that sees no code (Reproduction, Subflow)
    cannot know them; where the workspace carries the program (Completion, Correction) it can read them."""
    if task.workspace_program:
        return []
    texts = [task.statement, *(d.decode("utf-8", errors="replace") for d in workspace.values())]
    missing = []
    for path, source, kept in _answer_code(task):
        try:
            found = analysis_numbers(source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for value, line, context in found:
            if not kept(line) or context in task.statement:
                continue
            if not any(_contains_number(text, form) for form in _number_forms(value) for text in texts):
                missing.append((value, path, line, context))
    return missing


def _answer_code(task: TaskRow) -> Iterator[tuple[str, str, Callable[[int], bool]]]:
    """``(path, source, kept(line))`` of the code the answer comes from. A Subflow's is its slice: the entry
    script's cut text, and the kept statements of a helper module."""
    spans: dict[str, list] = {}
    for path, first, last in task.construction.get("slice_spans", []) if task.task_type == "subflow" else ():
        spans.setdefault(path, []).append((first, last))
    paths = [task.entrypoint, *spans] if task.task_type == "subflow" else list(task.reference_program)
    for path in paths:
        if path in task.reference_program:
            ranges = spans.get(path)
            yield path, task.reference_program[path], (
                (lambda line, ranges=ranges: any(first <= line <= last for first, last in ranges)) if ranges
                else (lambda line: True))


def unstated_choices(task: TaskRow) -> list[tuple[str, str, int]]:
    """Text the reference program compares against (``animal == 'C2R'``, ``x.isin(['a', 'b'])``) that the
    statement does not give: ``(text, path, line)``. Which category an analysis keeps is a choice the data
    cannot tell, even when the category is in them, so only the statement counts (Reproduction, Subflow)."""
    if task.workspace_program:
        return []
    missing = []
    for path, source, kept in _answer_code(task):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        # The slice's own report helper compares a type name; it is ours, not the analysis's.
        tree.body = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == REPORT_FUNCTION)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(isinstance(o, ast.Name) and o.id == "__name__" for o in operands):
                    continue  # the main guard
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "isin":
                operands = list(node.args)
            else:
                continue
            for operand in operands:
                items = operand.elts if isinstance(operand, (ast.List, ast.Tuple, ast.Set)) else [operand]
                for item in items:
                    if (isinstance(item, ast.Constant) and isinstance(item.value, str) and item.value.strip()
                            and kept(node.lineno) and item.value not in task.statement
                            and repr(item.value)[1:-1] not in task.statement):
                        missing.append((item.value, path, node.lineno))
    return missing


def _number_forms(value: float) -> list[str]:
    forms = {repr(value), str(value)}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    return sorted(forms)


def check_specified(task: TaskRow, workspace: dict[str, bytes]) -> None:
    """Every number the answer may depend on is stated or readable in the data, and every text it compares against
    is stated (else ``underspecified``)."""
    missing = unstated_numbers(task, workspace)
    if missing:
        value, path, line, context = missing[0]
        raise Rejected("underspecified", f"{len(missing)} number(s) of the reference program are given neither by "
                       f"the statement nor by the data, e.g. {value!r} in `{context}` ({path} line {line})",
                       unstated=len(missing))
    choices = unstated_choices(task)
    if choices:
        text, path, line = choices[0]
        raise Rejected("underspecified", f"{len(choices)} text(s) the reference program compares against are not "
                       f"in the statement, e.g. a {len(text)}-character text ({path} line {line})",
                       unstated=len(choices))


_ORDER_STATISTIC = re.compile(r"\b(minimum|maximum)\b", re.IGNORECASE)


def selects_a_value(field) -> bool:
    """True for a field that picks one of the values it is computed over (a minimum or maximum): its value
    may stand in the data it was picked from."""
    anchor = field.source.rpartition("#")[2]
    return anchor.rpartition(".")[2] in ("min", "max") or bool(_ORDER_STATISTIC.search(field.label))


def check_isolation(task: TaskRow, workspace: dict[str, bytes]) -> None:
    program_hashes = {hashlib.sha256(t.encode("utf-8")).hexdigest() for t in task.reference_program.values()}
    for path, data in workspace.items():
        if path in task.reference_program or hashlib.sha256(data).hexdigest() in program_hashes:
            raise Rejected("program_leak", f"workspace file {path} is part of the reference program")
    texts = {path: data.decode("utf-8", errors="replace") for path, data in workspace.items()}
    needles = leak_needles(task, "\n".join(texts.values()))
    # Field labels may legitimately name other values (a JSON key that is a year, say); the
    # rest of the statement, and each field's own label, must not contain its value.
    prose = _prose(task.statement)
    for needle in needles:
        if _contains_number(prose, needle):
            raise Rejected("answer_leak", f"the statement contains the reference value {needle!r}")
    for field in task.answer_schema:
        own = field_needles(field, task.reference_answer[field.name], "")
        if any(_contains_number(field.label, n) for n in own):
            raise Rejected("answer_leak", f"the label of field {field.name} contains its own value")
    # The minimum or maximum of values the program read is one of those values: finding it in the data is
    # what the question asks for, not evidence of a results file (a plotted raw column, a GC-skew table).
    joined = "\n".join(texts.values())
    computed = sorted({n for field in task.answer_schema if not selects_a_value(field)
                       for n in field_needles(field, task.reference_answer[field.name], joined)})
    for path, text in texts.items():
        # Integers in input data are usually years, counts or ids the answer picks among: only
        # non-integer values count as evidence of a results file.
        found = [n for n in computed if re.search(r"\d[.eE]", n) and _contains_number(text, n)]
        digits = [len(re.sub(r"\D", "", n).lstrip("0")) for n in found]
        # One short number can match input data by chance; a long one, or several, means a results file.
        if any(d >= 6 for d in digits) or sum(d >= 4 for d in digits) >= 2:
            raise Rejected("answer_leak", f"workspace file {path} contains reference values {found[:3]}")
    for source in task.reference_program.values():
        body = [line.strip() for line in source.splitlines() if len(line.strip()) > 40]
        for path, text in texts.items():
            if body and sum(line in text for line in body) >= max(3, len(body) // 2):
                raise Rejected("program_leak", f"workspace file {path} contains the reference program's code")
