"""The standalone grader ``templates/eval.py``, run exactly as an agent's harness runs it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import trailforge.envs

EVAL = Path(trailforge.envs.__file__).parent / "templates" / "eval.py"

TABLE = {"columns": ["site", "mean"], "rows": [["A", 1.5], ["B", 2.5], ["C", 3.5]]}
EXPECTED = {
    "task_id": "t1",
    "fields": [
        {"name": "mean", "type": "number", "value": 2.3994, "rtol": 1e-6, "atol": 5.05e-5},
        {"name": "count", "type": "integer", "value": 12, "rtol": 1e-6, "atol": 1e-9},
        {"name": "month", "type": "string", "value": "Jul", "rtol": 1e-6, "atol": 1e-9},
        {"name": "converged", "type": "boolean", "value": True, "rtol": 1e-6, "atol": 1e-9},
        {"name": "series", "type": "number_list", "value": [1.0, 2.0], "rtol": 1e-6, "atol": 1e-9},
        {"name": "summary", "type": "table", "value": TABLE, "rtol": 1e-6, "atol": 0.0051},
    ],
}
GOOD = {"mean": 2.3994, "count": 12, "month": "Jul", "converged": True, "series": [1.0, 2.0], "summary": TABLE}


def grade(tmp_path: Path, answer, expected=EXPECTED, raw: str | None = None):
    answer_path = tmp_path / "answer.json"
    answer_path.write_text(raw if raw is not None else json.dumps(answer), encoding="utf-8")
    expected_path = tmp_path / "expected.json"
    expected_path.write_text(json.dumps(expected), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(EVAL), str(answer_path), str(expected_path)],
        capture_output=True, text=True, timeout=60,
    )
    return done.returncode, json.loads(done.stdout)


def with_(**changes):
    return {**GOOD, **changes}


def test_exact_answer_passes_with_report(tmp_path):
    code, report = grade(tmp_path, GOOD)
    assert code == 0
    assert report["passed"] is True
    assert report["fields"] == {name: "match" for name in GOOD}


def test_number_within_tolerance_passes(tmp_path):
    code, report = grade(tmp_path, with_(mean=2.39944))
    assert code == 0, report


def test_number_outside_tolerance_fails_only_that_field(tmp_path):
    code, report = grade(tmp_path, with_(mean=2.3996))
    assert code == 1
    assert report["passed"] is False
    assert report["fields"]["mean"] == "mismatch"
    assert report["fields"]["count"] == "match"


def test_missing_field_is_reported_missing(tmp_path):
    answer = dict(GOOD)
    del answer["month"]
    code, report = grade(tmp_path, answer)
    assert code == 1
    assert report["fields"]["month"] == "missing"


@pytest.mark.parametrize(
    "field, value",
    [
        ("mean", "2.3994"),   # a string where a number is expected
        ("mean", True),       # a bool is not a number
        ("count", 13),        # integer mismatch
        ("count", 12.5),      # not an integer
        ("count", True),
        ("month", "jul"),
        ("converged", 1),
        ("series", [1.0]),
        ("series", [1.0, 2.1]),
        ("summary", [[1, 2]]),
    ],
)
def test_wrong_values_and_types_are_rejected(tmp_path, field, value):
    code, report = grade(tmp_path, with_(**{field: value}))
    assert code == 1
    assert report["fields"][field] == "mismatch"


def test_integer_written_as_whole_float_passes(tmp_path):
    code, _ = grade(tmp_path, with_(count=12.0))
    assert code == 0


def test_table_with_reordered_columns_and_rows_passes(tmp_path):
    table = {"columns": ["mean", "site"], "rows": [[3.5, "C"], [1.5, "A"], [2.5, "B"]]}
    code, report = grade(tmp_path, with_(summary=table))
    assert code == 0, report


def test_table_numbers_as_strings_within_tolerance_pass(tmp_path):
    table = {"columns": ["site", "mean"], "rows": [["A", "1.5"], ["B", "2.502"], ["C", 3.5]]}
    code, _ = grade(tmp_path, with_(summary=table))
    assert code == 0


def test_table_with_changed_cell_fails(tmp_path):
    table = {"columns": ["site", "mean"], "rows": [["A", 1.5], ["B", 2.75], ["C", 3.5]]}
    code, report = grade(tmp_path, with_(summary=table))
    assert code == 1
    assert report["fields"]["summary"] == "mismatch"


def test_table_with_missing_row_or_column_fails(tmp_path):
    short = {"columns": ["site", "mean"], "rows": TABLE["rows"][:2]}
    narrow = {"columns": ["site"], "rows": [["A"], ["B"], ["C"]]}
    assert grade(tmp_path, with_(summary=short))[0] == 1
    assert grade(tmp_path, with_(summary=narrow))[0] == 1


def test_extra_answer_fields_are_ignored(tmp_path):
    code, _ = grade(tmp_path, with_(extra="whatever"))
    assert code == 0


def test_malformed_answer_json_exits_2(tmp_path):
    code, report = grade(tmp_path, None, raw="{not json")
    assert code == 2
    assert report["passed"] is False
    assert "cannot read answer" in report["error"]


def test_answer_that_is_not_an_object_exits_2(tmp_path):
    code, report = grade(tmp_path, [1, 2, 3])
    assert code == 2
    assert "JSON object" in report["error"]


def test_nan_answer_is_rejected(tmp_path):
    code, report = grade(tmp_path, None, raw=json.dumps(with_(mean=float("nan"))))
    assert code == 1
    assert report["fields"]["mean"] == "mismatch"


def test_huge_integer_answer_is_a_mismatch_not_a_crash(tmp_path):
    code, report = grade(tmp_path, None, raw=json.dumps(GOOD).replace('"mean": 2.3994', '"mean": ' + "9" * 400))
    assert code == 1
    assert report["fields"]["mean"] == "mismatch"


def test_wrong_argument_count_exits_2():
    done = subprocess.run([sys.executable, str(EVAL)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "usage" in json.loads(done.stdout)["error"]


# --- per-element tolerances (issue 18): lists and tables graded element by element -------------------------

JACCARD = [0.3, 0.4567, 0.1234]
PER_ELEMENT = {
    "task_id": "t2",
    "fields": [
        # the old single tolerance, set by the coarsest element (0.3 printed with one decimal) ...
        {"name": "jaccard", "type": "number_list", "value": JACCARD, "rtol": 1e-6, "atol": 0.0505,
         # ... and each element's own
         "rtols": [1e-6, 1e-6, 1e-6], "atols": [0.0505, 5.05e-5, 5.05e-5]},
        {"name": "summary", "type": "table", "value": TABLE, "rtol": 1e-6, "atol": 0.0505,
         "rtols": [[None, 1e-6], [None, 1e-6], [None, 1e-6]], "atols": [[None, 0.0505], [None, 5.05e-5], [None, 5e-9]]},
    ],
}


def test_list_element_off_by_10_percent_is_rejected_with_per_element_tolerances(tmp_path):
    off = [JACCARD[0], JACCARD[1] * 1.1, JACCARD[2]]
    assert grade(tmp_path, {"jaccard": off, "summary": TABLE}, PER_ELEMENT)[0] == 1
    # the single field tolerance alone (an old document) lets the same 10% error through
    old = {"fields": [{k: v for k, v in PER_ELEMENT["fields"][0].items() if k not in ("rtols", "atols")}]}
    assert grade(tmp_path, {"jaccard": off}, old)[0] == 0
    # the coarse element keeps its own, wider tolerance: its printed precision cannot tell more
    assert grade(tmp_path, {"jaccard": [0.33, *JACCARD[1:]], "summary": TABLE}, PER_ELEMENT)[0] == 0
    assert grade(tmp_path, {"jaccard": [0.3, 0.45674, 0.12344], "summary": TABLE}, PER_ELEMENT)[0] == 0


def test_table_cell_tolerances_follow_their_rows_when_rows_are_reordered(tmp_path):
    near = {"columns": ["site", "mean"], "rows": [["C", 3.5], ["A", 1.54], ["B", 2.50004]]}
    assert grade(tmp_path, {"jaccard": JACCARD, "summary": near}, PER_ELEMENT)[0] == 0
    for rows in ([["C", 3.5], ["A", 1.5], ["B", 2.55]], [["C", 3.5001], ["A", 1.5], ["B", 2.5]]):
        code, report = grade(tmp_path, {"jaccard": JACCARD, "summary": {"columns": ["site", "mean"], "rows": rows}},
                             PER_ELEMENT)
        assert code == 1 and report["fields"]["summary"] == "mismatch", rows


def test_old_single_tolerance_document_still_grades(tmp_path):
    old = {"task_id": "t0", "fields": [
        {"name": "series", "type": "number_list", "value": [1.0, 2.0], "rtol": 1e-6, "atol": 0.0505},
        {"name": "summary", "type": "table", "value": TABLE, "rtol": 1e-6, "atol": 0.0051},
    ]}
    assert grade(tmp_path, {"series": [1.04, 1.96], "summary": TABLE}, old)[0] == 0
    assert grade(tmp_path, {"series": [1.06, 2.0], "summary": TABLE}, old)[0] == 1
    shifted = {"columns": ["site", "mean"], "rows": [["A", 1.505], ["B", 2.5], ["C", 3.5]]}
    assert grade(tmp_path, {"series": [1.0, 2.0], "summary": shifted}, old)[0] == 0
    shifted["rows"][0][1] = 1.506
    assert grade(tmp_path, {"series": [1.0, 2.0], "summary": shifted}, old)[0] == 1


def test_per_element_tolerances_of_the_wrong_length_fall_back_to_the_field_tolerance(tmp_path):
    spec = {**PER_ELEMENT["fields"][0], "atols": [5e-9]}  # not one per element: ignored
    assert grade(tmp_path, {"jaccard": [0.33, 0.48, 0.1234]}, {"fields": [spec]})[0] == 0


def test_integer_for_whole_float_and_any_key_order_pass(tmp_path):
    expected = {"fields": [{"name": "total", "type": "number", "value": 3.0, "rtol": 1e-6, "atol": 1e-9},
                           *EXPECTED["fields"]]}
    raw = '{"summary": %s, "series": [1, 2], "converged": true, "month": "Jul", "count": 12.0, "mean": 2.3994, ' \
          '"total": 3}' % json.dumps(TABLE)
    code, report = grade(tmp_path, None, expected, raw=raw)
    assert code == 0, report


# --- missing values: one class ------------------------------------------------------------------------------

# As the ThalassinosLab reference reads a printed DataFrame: the text "NaN" in columns that hold numbers elsewhere.
MS1 = {"columns": ["Mode", "R2", "LLOD"], "rows": [["MS", 0.894716, 2.786265], ["TofMRM", 0.193697, "NaN"]]}
MS1_EXPECTED = {"task_id": "t2", "fields": [{"name": "ms1", "type": "table", "value": MS1, "rtol": 1e-6,
                                             "atol": 5.05e-7}]}


def _ms1(missing_raw: str) -> str:
    return '{"ms1": {"columns": ["Mode", "R2", "LLOD"], "rows": [["MS", 0.894716, 2.786265], ' \
           '["TofMRM", 0.193697, %s]]}}' % missing_raw


@pytest.mark.parametrize("missing_raw", ["null", "NaN", '"nan"', '"NaN"', '"<NA>"', '"None"', '"null"', '"NA"',
                                         '" NaT "', '""'])
def test_a_missing_table_cell_is_matched_by_any_missing_value(tmp_path, missing_raw):
    code, report = grade(tmp_path, None, MS1_EXPECTED, raw=_ms1(missing_raw))
    assert code == 0, (missing_raw, report)


@pytest.mark.parametrize("missing_raw", ["0", "0.0", '"0"', '"missing value"', "Infinity"])
def test_a_number_or_other_text_never_matches_a_missing_cell(tmp_path, missing_raw):
    code, _ = grade(tmp_path, None, MS1_EXPECTED, raw=_ms1(missing_raw))
    assert code == 1, missing_raw


@pytest.mark.parametrize("missing_raw", ["null", "NaN", '"NaN"'])
def test_a_missing_value_never_matches_a_number(tmp_path, missing_raw):
    raw = '{"ms1": {"columns": ["Mode", "R2", "LLOD"], "rows": [["MS", %s, 2.786265], ' \
          '["TofMRM", 0.193697, "NaN"]]}}' % missing_raw
    code, _ = grade(tmp_path, None, MS1_EXPECTED, raw=raw)
    assert code == 1, missing_raw


def test_missing_cells_match_when_the_rows_are_reordered(tmp_path):
    raw = '{"ms1": {"columns": ["LLOD", "R2", "Mode"], "rows": [[null, 0.193697, "TofMRM"], ' \
          '[2.786265, 0.894716, "MS"]]}}'
    code, report = grade(tmp_path, None, MS1_EXPECTED, raw=raw)
    assert code == 0, report


def test_the_word_none_in_a_text_field_or_column_is_text(tmp_path):
    table = {"columns": ["method", "score"], "rows": [["None", 0.5], ["lasso", 0.7]]}
    expected = {"task_id": "t3", "fields": [
        {"name": "correction", "type": "string", "value": "None", "rtol": 0.0, "atol": 0.0},
        {"name": "scores", "type": "table", "value": table, "rtol": 1e-6, "atol": 1e-9},
    ]}
    assert grade(tmp_path, {"correction": "None", "scores": table}, expected)[0] == 0
    code, report = grade(tmp_path, {"correction": None, "scores": table}, expected)
    assert report["fields"]["correction"] == "mismatch"
    code, report = grade(tmp_path, {"correction": "None",
                                    "scores": {**table, "rows": [["nan", 0.5], ["lasso", 0.7]]}}, expected)
    assert report["fields"]["scores"] == "mismatch", "a text column's 'None' is not a missing number"


def test_a_missing_number_or_list_element_is_matched_by_any_missing_value(tmp_path):
    expected = {"task_id": "t4", "fields": [
        {"name": "slope", "type": "number", "value": None, "rtol": 1e-6, "atol": 1e-9},
        {"name": "series", "type": "number_list", "value": [1.0, "NaN"], "rtol": 1e-6, "atol": 1e-9},
    ]}
    assert grade(tmp_path, None, expected, raw='{"slope": NaN, "series": [1.0, null]}')[0] == 0
    assert grade(tmp_path, None, expected, raw='{"slope": 0.0, "series": [1.0, null]}')[0] == 1
    assert grade(tmp_path, None, expected, raw='{"slope": null, "series": [1.0, 0.0]}')[0] == 1
