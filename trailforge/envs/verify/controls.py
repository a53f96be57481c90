"""The eval's controls: answers the statement allows (each must be accepted), plausible wrong answers and the
outputs of negative programs (each must be rejected), and the sandboxed runs of the eval that judge them."""
from __future__ import annotations

import copy
import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

from ...cache import ContentCache
from ...config.schema import VerifierConfig
from ...io import StageRecorder, TaskRow
from ...sandbox import RunRequest, Sandbox, run_cached
from ..tasks import statement
from ..answers import answer_from_run, missing_value_answers
from ..protocol import RunProtocol, recorded_request
from ..spread import numbers
from ..tasks import eval_script
from .rejected import Rejected
from .tolerances import element_tolerance


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
    if run_eval(expected, answer, sandbox, env, cache, cfg.eval_timeout_s, recorder):
        raise Rejected(f"eval_accepts_{control['name']}",
                       f"eval.py accepts the output of the {control['name']} program", control=control["name"])
    return "rejected"  # how the program ended (crash, timeout) is timing-dependent: not recorded in the row


@functools.cache
def _grader():
    """The exported eval's own field check, loaded from the template (our code): what the statement claims
    about each field is judged exactly as the agent's answer will be."""
    spec = importlib.util.spec_from_file_location("trailforge_eval_template", Path(__file__).parents[1] / "templates"
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
        rtol, atol = element_tolerance(tol, *place)
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


def run_eval(expected: dict, answer: dict, sandbox: Sandbox, env, cache: ContentCache, timeout_s: float,
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
        if not run_eval(expected, answer, sandbox, env, cache, cfg.eval_timeout_s, recorder):
            raise Rejected("eval_rejects_reference", f"eval.py rejects reference answer #{index}")
    allowed = {}
    for name, answer in allowed_answers(task, tolerances).items():
        if not run_eval(expected, answer, sandbox, env, cache, cfg.eval_timeout_s, recorder, keep_order=True):
            raise Rejected("eval_rejects_allowed", f"eval.py rejects an answer the statement allows ({name})",
                           allowed_answer=name)
        allowed[name] = "accepted"
    verdicts = {}
    for name, answer in wrong_answers(task, tolerances).items():
        accepted = run_eval(expected, answer, sandbox, env, cache, cfg.eval_timeout_s, recorder)
        if accepted:
            raise Rejected("eval_accepts_wrong", f"eval.py accepts a wrong answer ({name})", wrong_answer=name)
        verdicts[name] = "rejected"
    if len(verdicts) < cfg.min_wrong_rejected:
        raise Rejected("not_gradable", f"only {len(verdicts)} wrong answers could be built and rejected "
                       f"(< verifier.min_wrong_rejected={cfg.min_wrong_rejected})")
    return len(runs) + 1, verdicts, allowed
