"""Pure helpers of the verifier: reproducibility, tolerance calibration, wrong answers, isolation."""
from __future__ import annotations

import copy
import hashlib
import importlib.util
from pathlib import Path

import pytest

import trailforge.envs
from trailforge.config.schema import VerifierConfig
from trailforge.envs.verify import (
    Rejected,
    calibrate,
    check_isolation,
    check_reproducible,
    expected_document,
    leak_needles,
    wrong_answers,
)
from trailforge.io import AnswerField, FileEntry, TaskRow

PROGRAM = (
    "import csv\n"
    "rows = list(csv.DictReader(open('data/temps.csv', encoding='utf-8')))\n"
    "values = [float(row['temperature_kelvin']) for row in rows if row['station_name'] != '']\n"
    "print('Mean anomaly (K): %.4f' % (sum(values) / len(values) - 288.0))\n"
    "print('Warmest month: ' + max(rows, key=lambda row: float(row['temperature_kelvin']))['month'])\n"
)
DATA = b"station_name,month,temperature_kelvin\nA,Jan,287.1\nA,Jul,289.9\n"
TABLE = {"columns": ["site", "mean"], "rows": [["A", 1.5], ["B", 2.5]]}

SCHEMA = [
    AnswerField(name="mean_anomaly", type="number", label="Mean anomaly", unit="K", source="stdout", decimals=4,
                resolution=5e-5),
    AnswerField(name="warmest_month", type="string", label="Warmest month", source="stdout"),
    AnswerField(name="count", type="integer", label="Count", source="stdout", decimals=0),
    AnswerField(name="summary", type="table", label="table written to summary.csv", source="file:summary.csv",
                resolution=0.05),
]
REFERENCE = {"mean_anomaly": 0.4312, "warmest_month": "Jul", "count": 12, "summary": TABLE}
STATEMENT = (
    "# Reproduce an analysis from `org/climate` (earth science)\n\n"
    "## Input data (in your working directory)\n- `data/temps.csv` (table, 2 rows)\n\n"
    "## What to report\n- `mean_anomaly`: a number; printed as \"Mean anomaly\"\n"
)


def make_task(schema=SCHEMA, reference=REFERENCE, statement=STATEMENT, program=None) -> TaskRow:
    data_entry = FileEntry(path="data/temps.csv", sha256=hashlib.sha256(DATA).hexdigest(), size=len(DATA),
                           kind="data")
    return TaskRow(
        task_id="org__climate__analysis.py__reproduction",
        task_type="reproduction",
        seed_id="org/climate:analysis.py",
        repo_id="org/climate",
        discipline="earth_science",
        statement=statement,
        answer_schema=list(schema),
        reference_answer=copy.deepcopy(reference),
        entrypoint="analysis.py",
        reference_program=program or {"analysis.py": PROGRAM},
        workspace_files=[data_entry],
        tree="/nonexistent",
        distributions=[],
        sandbox_spec={},
    )


def _grader():
    path = Path(trailforge.envs.__file__).parent / "templates" / "eval.py"
    spec = importlib.util.spec_from_file_location("tf_eval_template_for_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.grade


# --- reproducibility -------------------------------------------------------------------------------------

def test_identical_runs_have_zero_spread():
    task = make_task()
    spreads = check_reproducible(task, [copy.deepcopy(REFERENCE), copy.deepcopy(REFERENCE)], 0.05)
    assert spreads == {"mean_anomaly": 0.0, "warmest_month": 0.0, "count": 0.0, "summary": 0.0}


def test_small_numeric_drift_is_measured():
    run = {**REFERENCE, "mean_anomaly": 0.4312 * (1 + 1e-4)}
    spreads = check_reproducible(make_task(), [REFERENCE, run], 0.05)
    assert spreads["mean_anomaly"] == pytest.approx(1e-4)


def test_changed_string_field_is_not_reproducible():
    run = {**REFERENCE, "warmest_month": "Aug"}
    with pytest.raises(Rejected) as info:
        check_reproducible(make_task(), [REFERENCE, run], 0.05)
    assert info.value.reason == "not_reproducible"
    assert "warmest_month" in info.value.message


def test_changed_table_label_is_not_reproducible():
    table = {"columns": ["site", "mean"], "rows": [["A", 1.5], ["Z", 2.5]]}
    with pytest.raises(Rejected, match="summary"):
        check_reproducible(make_task(), [REFERENCE, {**REFERENCE, "summary": table}], 0.05)


def test_numeric_drift_above_max_rel_spread_is_rejected():
    run = {**REFERENCE, "mean_anomaly": 0.4312 * 1.2}
    with pytest.raises(Rejected) as info:
        check_reproducible(make_task(), [REFERENCE, run], 0.05)
    assert info.value.reason == "not_reproducible"
    assert info.value.detail["field"] == "mean_anomaly"
    assert info.value.detail["spread"] == pytest.approx(0.2)


def test_run_missing_a_field_is_not_reproducible():
    run = {k: v for k, v in REFERENCE.items() if k != "count"}
    with pytest.raises(Rejected, match="count"):
        check_reproducible(make_task(), [REFERENCE, run], 0.05)


# --- calibration -----------------------------------------------------------------------------------------

def test_calibrate_uses_rtol_floor_without_spread():
    cfg = VerifierConfig(rtol=1e-6, atol=1e-9, spread_factor=10.0)
    tol = calibrate(make_task(), {"mean_anomaly": 0.0}, cfg)
    assert tol["mean_anomaly"]["rtol"] == pytest.approx(1e-6)


def test_calibrate_widens_rtol_by_spread_factor():
    cfg = VerifierConfig(rtol=1e-6, spread_factor=10.0)
    tol = calibrate(make_task(), {"mean_anomaly": 1e-3}, cfg)
    assert tol["mean_anomaly"]["rtol"] == pytest.approx(1e-2)


def test_calibrate_atol_from_field_resolution_or_floor():
    cfg = VerifierConfig(atol=1e-9)
    tol = calibrate(make_task(), {}, cfg)
    assert tol["mean_anomaly"]["atol"] == pytest.approx(5e-5 * 1.01)
    assert tol["summary"]["atol"] == pytest.approx(0.05 * 1.01)
    assert tol["count"]["atol"] == pytest.approx(1e-9)
    assert set(tol) == {f.name for f in SCHEMA}


def test_calibrated_tolerance_accepts_value_rounded_to_printed_precision():
    task = make_task()
    tol = calibrate(task, {}, VerifierConfig())
    grade = _grader()
    report = grade({**REFERENCE, "mean_anomaly": 0.43124}, expected_document(task, tol))
    assert report["passed"], report


# --- wrong answers ---------------------------------------------------------------------------------------

def _numeric_task():
    schema = [SCHEMA[0], SCHEMA[1]]
    return make_task(schema=schema, reference={"mean_anomaly": 0.4312, "warmest_month": "Jul"})


def test_wrong_answers_for_numeric_task_include_expected_kinds():
    task = _numeric_task()
    wrong = wrong_answers(task, calibrate(task, {}, VerifierConfig()))
    assert {"scaled_value", "sign_flipped", "unit_error_x1000", "missing_field"} <= set(wrong)
    assert wrong["sign_flipped"]["mean_anomaly"] == -0.4312
    assert wrong["unit_error_x1000"]["mean_anomaly"] == pytest.approx(431.2)
    assert "mean_anomaly" not in wrong["missing_field"]


def test_every_wrong_answer_differs_from_reference():
    task = make_task()
    wrong = wrong_answers(task, calibrate(task, {}, VerifierConfig()))
    assert {"integer_off_by_one", "different_string", "table_cell_changed"} <= set(wrong)
    for name, answer in wrong.items():
        assert answer != task.reference_answer, name
    assert task.reference_answer == REFERENCE, "building wrong answers must not mutate the reference"


def test_every_wrong_answer_is_rejected_by_the_grader():
    task = make_task()
    tol = calibrate(task, {"mean_anomaly": 1e-3}, VerifierConfig())
    expected = expected_document(task, tol)
    grade = _grader()
    assert grade(task.reference_answer, expected)["passed"]
    for name, answer in wrong_answers(task, tol).items():
        assert not grade(answer, expected)["passed"], name


def test_scaled_value_clears_a_wide_tolerance():
    task = _numeric_task()
    tol = {"mean_anomaly": {"rtol": 0.02, "atol": 0.0}, "warmest_month": {"rtol": 0.0, "atol": 0.0}}
    scaled = wrong_answers(task, tol)["scaled_value"]["mean_anomaly"]
    assert abs(scaled - 0.4312) > 0.02 * 0.4312 * 10


def test_table_cell_changed_differs_when_first_cell_is_minus_two():
    table = {"columns": ["site", "delta"], "rows": [["A", -2.0], ["B", 3.0]]}
    task = make_task(schema=[SCHEMA[3]], reference={"summary": table})
    wrong = wrong_answers(task, {"summary": {"rtol": 1e-6, "atol": 1e-9}})
    assert wrong["table_cell_changed"]["summary"] != table


# --- isolation -------------------------------------------------------------------------------------------

def test_leak_needles_cover_repr_and_printed_form():
    needles = leak_needles(make_task(), workspace_text="")
    assert "0.4312" in needles
    assert "Jul" in needles


def test_string_present_in_data_is_not_a_needle():
    needles = leak_needles(make_task(), workspace_text=DATA.decode())
    assert "Jul" not in needles


def test_clean_task_passes_isolation():
    check_isolation(make_task(), {"data/temps.csv": DATA})


def test_statement_with_reference_value_is_answer_leak():
    statement = STATEMENT.replace("## What to report", "The mean anomaly is 0.4312 K.\n\n## What to report")
    with pytest.raises(Rejected) as info:
        check_isolation(make_task(statement=statement), {"data/temps.csv": DATA})
    assert info.value.reason == "answer_leak"


def test_value_inside_a_longer_number_is_not_a_leak():
    statement = STATEMENT.replace("## What to report", "Station id 10.43125.\n\n## What to report")
    check_isolation(make_task(statement=statement), {"data/temps.csv": DATA})


def test_workspace_file_identical_to_reference_program_is_program_leak():
    workspace = {"data/temps.csv": DATA, "data/copy_of_script.txt": PROGRAM.encode()}
    with pytest.raises(Rejected) as info:
        check_isolation(make_task(), workspace)
    assert info.value.reason == "program_leak"


def test_workspace_file_named_like_program_is_program_leak():
    with pytest.raises(Rejected, match="analysis.py") as info:
        check_isolation(make_task(), {"data/temps.csv": DATA, "analysis.py": b"print(1)\n"})
    assert info.value.reason == "program_leak"


def test_workspace_results_file_with_long_value_is_answer_leak():
    schema = [AnswerField(name="rate", type="number", label="Rate", source="stdout", decimals=6,
                          resolution=5e-7)]
    task = make_task(schema=schema, reference={"rate": 0.123457})
    with pytest.raises(Rejected) as info:
        check_isolation(task, {"data/temps.csv": DATA, "data/results.txt": b"rate = 0.123457\n"})
    assert info.value.reason == "answer_leak"


def test_statement_with_value_in_printed_scientific_form_is_answer_leak():
    schema = [AnswerField(name="factor", type="number", label="Pre-exponential factor", unit="1/s", source="stdout",
                          decimals=4, resolution=50.0)]
    statement = STATEMENT.replace("## What to report", "The factor is 4.1523e+06.\n\n## What to report")
    task = make_task(schema=schema, reference={"factor": 4152300.0}, statement=statement)
    with pytest.raises(Rejected):
        check_isolation(task, {"data/temps.csv": DATA})


# ---------------------------------------------------------------- derived task types

from trailforge.envs.verify import check_construction  # noqa: E402

LIST_SCHEMA = [AnswerField(name="shares", type="number_list", label="shares", source="result", resolution=1e-12)]


def test_wrong_answers_cover_lists_and_tables():
    task = make_task(schema=LIST_SCHEMA, reference={"shares": [0.1, -0.7, 0.2]})
    wrong = wrong_answers(task, {"shares": {"rtol": 1e-6, "atol": 1e-9}})
    assert wrong["list_value_changed"]["shares"] == pytest.approx([0.1, -1.05, 0.2])
    assert wrong["list_value_dropped"]["shares"] == [0.1, -0.7]
    table_wrong = wrong_answers(make_task(), calibrate(make_task(), {}, VerifierConfig()))
    assert table_wrong["table_row_dropped"]["summary"]["rows"] == [["A", 1.5]]


def _derived(task_type, **update):
    return make_task().model_copy(update={"task_type": task_type, **update})


def test_statement_must_not_contain_a_value_the_answer_is_derived_from():
    task = _derived("subflow", derived_values=[3.14159265], statement=STATEMENT.replace("(table, 2 rows)",
                                                                                        "(mean 3.14159)"))
    with pytest.raises(Rejected) as err:
        check_construction(task)
    assert err.value.reason == "answer_leak"
    check_construction(_derived("subflow", derived_values=[3.14159265]))


def _completion(stub, statement=STATEMENT):
    program = {"analysis.py": "def f(x):\n    total = sum(x) * 2.5\n    return total\n"}
    given = {"analysis.py": "def f(x):\n" + stub}
    return _derived("completion", reference_program=program, workspace_program=given, statement=statement,
                    construction={"path": "analysis.py", "line": 1, "stub": "def f(x):\n" + stub,
                                  "removed": "    total = sum(x) * 2.5\n    return total\n"})


def test_completion_stub_must_hold_no_removed_code():
    check_construction(_completion('    raise NotImplementedError("implement f")\n'))
    with pytest.raises(Rejected) as err:
        check_construction(_completion("    total = sum(x) * 2.5\n    raise NotImplementedError\n"))
    assert err.value.reason == "hole_leak"
    with pytest.raises(Rejected) as err:
        check_construction(_completion("    raise NotImplementedError\n", STATEMENT + "hint: total = sum(x) * 2.5\n"))
    assert err.value.reason == "hole_leak"


def test_correction_must_carry_the_defect_and_not_state_the_fix():
    reference = {"analysis.py": "y = np.log(x)\n"}
    mutant = {"analysis.py": "y = np.log10(x)\n"}
    info = {"path": "analysis.py", "original": "y = np.log(x)", "mutated": "y = np.log10(x)"}
    check_construction(_derived("correction", reference_program=reference, workspace_program=mutant, construction=info))
    with pytest.raises(Rejected) as err:
        check_construction(_derived("correction", reference_program=reference, workspace_program=reference,
                                    construction=info))
    assert err.value.reason == "defect_missing"
    with pytest.raises(Rejected) as err:
        check_construction(_derived("correction", reference_program=reference, workspace_program=mutant,
                                    construction=info, statement=STATEMENT + "Hint: y = np.log(x)\n"))
    assert err.value.reason == "fix_leak"


def test_a_stochastic_program_gets_extra_runs_and_a_tolerance_from_its_spread(tmp_path):
    from trailforge.cache import ContentCache
    from trailforge.envs.verify import verify_task
    from trailforge.io import StageRecorder
    from trailforge.sandbox import LocalSandbox

    (tmp_path / "tree" / "data").mkdir(parents=True)
    (tmp_path / "tree" / "data" / "temps.csv").write_bytes(DATA)
    noisy = ("import random\nrows = open('data/temps.csv').read().splitlines()\n"
             "print('Mean level (K): %.9f' % (287.0 + random.random() * 1e-3))\n")
    schema = [AnswerField(name="mean_level", type="number", label="Mean level", unit="K", source="stdout",
                          decimals=9, resolution=5e-10)]
    statement = STATEMENT + "\n## Parameters of the original analysis\n- `287.0 + random.random() * 0.001`\n"
    task = make_task(schema=schema, reference={"mean_level": 287.0004}, program={"analysis.py": noisy},
                     statement=statement)
    task = task.model_copy(update={"tree": str(tmp_path / "tree")})
    recorder = StageRecorder("verify")
    cfg = VerifierConfig(repeats=2, stochastic_repeats=5)
    row = verify_task(task, cfg, LocalSandbox(timeout_s=20), ContentCache(tmp_path / "cache"), recorder, 24, 50)
    assert row is not None, recorder.rejects
    assert row.checks["reference_runs"] == 5
    assert recorder.counters["stochastic_tasks"] == 1
    assert 1e-7 < row.tolerances["mean_level"]["rtol"] < 1e-4, "the spread of the draws, widened, not the floor"


def test_a_number_the_agent_cannot_know_makes_the_task_underspecified():
    from trailforge.envs.verify import check_specified, unstated_numbers

    program = {"analysis.py": "import numpy as np\nrows = np.loadtxt('data/temps.csv', delimiter=',', skiprows=1)\n"
                              "np.random.seed(42)\nboot = np.random.choice(rows[:, 1], 500).mean() * 1.08\n"}
    workspace = {"data/temps.csv": DATA}
    with pytest.raises(Rejected) as err:
        check_specified(make_task(program=program), workspace)
    assert err.value.reason == "underspecified"
    assert {v for v, *_ in unstated_numbers(make_task(program=program), workspace)} == {42, 500, 1.08}
    stated = STATEMENT + ("\n## Parameters of the original analysis\n- `np.random.seed(42)`\n"
                          "- `np.random.choice(rows[:, 1], 500)`\n- the result is scaled by 1.08\n")
    check_specified(make_task(program=program, statement=stated), workspace)  # every number given: no reject
    # Where the agent is given the program (Completion, Correction), it can read the numbers there.
    given = make_task(program=program).model_copy(update={"workspace_program": program, "task_type": "correction"})
    assert unstated_numbers(given, workspace) == []


def test_a_completion_must_state_the_numbers_of_the_step_it_removed():
    """The agent has the program with its hole, not the removed line: a weight written only there (0.25) must be
    stated; one the rest of the program also writes (1.08 below) can be read there."""
    from trailforge.envs.verify import check_specified, unstated_numbers

    program = {"analysis.py": "import numpy as np\nrows = np.loadtxt('data/temps.csv', delimiter=',', skiprows=1)\n"
                              "w = 0.25 * rows[:, 1] * 1.08\nprint('mean:', w.mean() * 1.08)\n"}
    holed = {"analysis.py": program["analysis.py"].replace("w = 0.25 * rows[:, 1] * 1.08",
                                                           "raise NotImplementedError('missing step: compute w')")}
    task = make_task(program=program).model_copy(update={
        "task_type": "completion", "workspace_program": holed,
        "construction": {"kind": "block", "path": "analysis.py", "line": 3, "removed_lines": [3, 3]}})
    workspace = {"data/temps.csv": DATA}
    assert [v for v, *_ in unstated_numbers(task, workspace)] == [0.25]
    with pytest.raises(Rejected) as err:
        check_specified(task, workspace)
    assert err.value.reason == "underspecified"
    stated = task.model_copy(update={"statement": STATEMENT + "\nThe removed code wrote these numbers: `0.25`.\n"})
    check_specified(stated, workspace)


def test_numbers_and_texts_of_functions_the_program_never_uses_need_not_be_stated():
    """The outline leaves out what nothing reachable names; the check must ask for no more than it shows."""
    from trailforge.envs.verify import check_specified, unstated_choices, unstated_numbers

    program = {"analysis.py": "import numpy as np\nrows = np.loadtxt('data/temps.csv', delimiter=',', skiprows=1)\n"
                              "print('mean:', rows[:, 1].mean())\n\ndef old_variant(r):\n"
                              "    return r[r[:, 0] == 'C2R'].mean() * 1.08\n"}
    workspace = {"data/temps.csv": DATA}
    assert unstated_numbers(make_task(program=program), workspace) == []
    assert unstated_choices(make_task(program=program)) == []
    check_specified(make_task(program=program), workspace)
    # once the program uses it, its number and its category are asked for
    used = {"analysis.py": program["analysis.py"] + "print('variant:', old_variant(rows))\n"}
    assert [v for v, *_ in unstated_numbers(make_task(program=used), workspace)] == [1.08]
    assert [t for t, *_ in unstated_choices(make_task(program=used))] == ["C2R"]


def test_a_category_the_analysis_keeps_must_be_stated_even_when_it_is_in_the_data():
    """A reviewer could not tell that only animal C2R counted: the category is in the data, which says nothing
    about which one the analysis picks."""
    from trailforge.envs.verify import check_specified, unstated_choices

    program = {"analysis.py": "import pandas as pd\nif __name__ == '__main__':\n    d = pd.read_csv('data/t.csv')\n"
                              "    kept = d[(d['animal'] == 'C2R') | d['site'].isin(['north', 'east'])]\n"
                              "    print('mean:', kept['time'].mean())\n"}
    workspace = {"data/t.csv": b"animal,site,time\nC2R,north,1.5\nB1,south,2.5\n"}
    assert sorted(text for text, *_ in unstated_choices(make_task(program=program))) == ["C2R", "east", "north"]
    with pytest.raises(Rejected) as err:
        check_specified(make_task(program=program), workspace)
    assert err.value.reason == "underspecified" and "C2R" not in err.value.message  # repository text is not quoted
    stated = STATEMENT + "\n1. `kept = d[(d['animal'] == 'C2R') | d['site'].isin(['north', 'east'])]`\n"
    assert unstated_choices(make_task(program=program, statement=stated)) == []
    # A slice's own report helper compares a type name ("RangeIndex"): ours, not a choice of the analysis.
    from trailforge.envs.slicing import REPORT_HELPER
    sliced = {"analysis.py": program["analysis.py"] + REPORT_HELPER}
    assert unstated_choices(make_task(program=sliced, statement=stated)) == []


# ---------------------------------------------------------------- fair evals: per-element tolerances, controls

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from trailforge.envs.answers import parse_table, resolution  # noqa: E402
from trailforge.envs.verify import allowed_answers, answer_bytes, element_spreads  # noqa: E402

EVAL = Path(trailforge.envs.__file__).parent / "templates" / "eval.py"


def _eval_exit(tmp_path, expected, raw: bytes) -> int:
    (tmp_path / "answer.json").write_bytes(raw)
    (tmp_path / "expected.json").write_text(json.dumps(expected), encoding="utf-8")
    return subprocess.run([sys.executable, str(EVAL), str(tmp_path / "answer.json"), str(tmp_path / "expected.json")],
                          capture_output=True, timeout=60).returncode


JACCARD = [0.3, 0.4567, 0.1234]  # as json.dump writes them: 0.3 has one decimal, the others four
JACCARD_FIELD = AnswerField(name="jaccard", type="number_list", label="jaccard in out/sim.json",
                            source="file:out/sim.json", resolution=max(resolution(repr(v)) for v in JACCARD))


def test_list_element_off_by_10_percent_is_a_negative_control_the_eval_rejects():
    task = make_task(schema=[JACCARD_FIELD], reference={"jaccard": list(JACCARD)})
    tol = calibrate(task, {"jaccard": 0.0}, VerifierConfig(), element_spreads(task, [task.reference_answer]))
    assert tol["jaccard"]["atol"] == pytest.approx(0.0505), "the field's own tolerance is unchanged"
    assert tol["jaccard"]["atols"] == pytest.approx([0.0505, 5.05e-5, 5.05e-5])
    wrong = wrong_answers(task, tol)["list_value_off_10pct"]["jaccard"]
    assert sum(w != v for w, v in zip(wrong, JACCARD)) == 1
    changed = next(i for i, (w, v) in enumerate(zip(wrong, JACCARD)) if w != v)
    assert wrong[changed] == pytest.approx(JACCARD[changed] * 1.1) and changed != 0, "a well-resolved element"
    expected = expected_document(task, tol)
    grade = _grader()
    assert not grade({"jaccard": wrong}, expected)["passed"]
    assert not grade({"jaccard": [JACCARD[0], JACCARD[1] * 1.1, JACCARD[2]]}, expected)["passed"]
    assert grade({"jaccard": [0.33, 0.45674, 0.12344]}, expected)["passed"], "each element within its own precision"


def test_each_element_gets_its_own_spread():
    task = make_task(schema=[JACCARD_FIELD], reference={"jaccard": list(JACCARD)})
    noisy = {"jaccard": [0.3, 0.4567 * (1 + 1e-3), 0.1234]}
    spreads = check_reproducible(task, [task.reference_answer, noisy], 0.05)
    tol = calibrate(task, spreads, VerifierConfig(rtol=1e-6, spread_factor=10.0),
                    element_spreads(task, [task.reference_answer, noisy]))
    assert tol["jaccard"]["rtol"] == pytest.approx(1e-2)
    assert tol["jaccard"]["rtols"] == pytest.approx([1e-6, 1e-2, 1e-6])


def test_table_cells_take_their_own_printed_precision_from_the_file():
    text = "site,mean,rate\nA,0.5,2.8144e-03\nB,1.2345,1.5e+03\n"
    table, coarsest = parse_table(text, ",", 50)
    field = AnswerField(name="summary", type="table", label="table written to summary.csv",
                        source="file:summary.csv", resolution=coarsest)
    task = make_task(schema=[field], reference={"summary": table})
    tol = calibrate(task, {}, VerifierConfig(), printed={"summary": text})
    assert tol["summary"]["atol"] == pytest.approx(50 * 1.01), "the coarsest cell, for an old eval"
    atols = tol["summary"]["atols"]
    assert [row[0] for row in atols] == [None, None], "text cells"
    assert [c for row in atols for c in row[1:]] == pytest.approx([0.0505, 5.05e-8, 5.05e-5, 50.5])
    # without the file: the shortest form of each cell, never coarser than the coarsest one
    fallback = calibrate(task, {}, VerifierConfig())
    assert fallback["summary"]["atols"][0][1] == pytest.approx(0.0505)
    wrong = wrong_answers(task, tol)
    assert "table_cell_off_10pct" in wrong
    grade = _grader()
    expected = expected_document(task, tol)
    assert not grade(wrong["table_cell_off_10pct"], expected)["passed"]
    one_cell_off = copy.deepcopy(table)
    one_cell_off["rows"][1][1] *= 1.01  # 1% off in a cell printed with four decimals
    assert not grade({"summary": one_cell_off}, expected)["passed"]
    assert grade({"summary": {**table, "rows": [["A", 0.54, 0.00281444], ["B", 1.23454, 1549.0]]}}, expected)["passed"]


def test_answers_the_statement_allows_are_accepted_by_the_eval_file_for_file(tmp_path):
    schema = [
        AnswerField(name="rate", type="number", label="Rate", unit="1/s", source="stdout", decimals=4,
                    resolution=resolution("2.8144e-03")),
        AnswerField(name="count", type="integer", label="Count", source="stdout", decimals=0),
        AnswerField(name="total", type="number", label="Total", source="stdout", decimals=1, resolution=0.05),
        JACCARD_FIELD.model_copy(update={"name": "sizes", "resolution": None}),
        SCHEMA[3],
    ]
    reference = {"rate": 0.0028144, "count": 3, "total": 12.0, "sizes": [1.0, 2.0, 5.0], "summary": TABLE}
    task = make_task(schema=schema, reference=reference)
    tol = calibrate(task, {}, VerifierConfig(), element_spreads(task, [reference]))
    allowed = allowed_answers(task, tol)
    assert {"rounded_as_stated", "unrounded_within_printed_precision", "integers_as_floats",
            "whole_numbers_as_integers", "lists_as_floats", "key_order_reversed"} <= set(allowed)
    assert allowed["integers_as_floats"]["count"] == 3.0 and isinstance(allowed["integers_as_floats"]["count"], float)
    as_ints = allowed["whole_numbers_as_integers"]
    assert as_ints["total"] == 12 and as_ints["sizes"] == [1, 2, 5]
    assert list(allowed["key_order_reversed"]) == list(reversed(list(reference)))
    assert allowed["key_order_reversed"]["summary"]["columns"] == ["mean", "site"]
    expected = expected_document(task, tol)
    for name, answer in allowed.items():
        raw = answer_bytes(answer, keep_order=True)
        assert _eval_exit(tmp_path, expected, raw) == 0, (name, raw)
    assert answer_bytes(allowed["key_order_reversed"], keep_order=True).startswith(b'{"summary"')
    for name, answer in wrong_answers(task, tol).items():
        assert _eval_exit(tmp_path, expected, answer_bytes(answer)) == 1, name


def test_correction_symptoms_must_match_the_defective_output_field_by_field():
    from trailforge.envs.verify import check_symptoms

    expected = {"fields": [{"name": "slope", "type": "number", "value": 2.0, "rtol": 1e-6, "atol": 1e-3},
                           {"name": "count", "type": "integer", "value": 12, "rtol": 0, "atol": 0}]}
    task = make_task().model_copy(update={"task_type": "correction", "construction": {"changed_fields": ["slope"]}})
    check_symptoms(task, expected, {"slope": 2.5, "count": 12})  # the named field is off, the other right
    with pytest.raises(Rejected) as err:  # "count is already correct", but the defective program miscounts
        check_symptoms(task, expected, {"slope": 2.5, "count": 13})
    assert err.value.reason == "symptom_mismatch" and "count" in str(err.value)
    with pytest.raises(Rejected) as err:  # "slope is wrong", yet it passes within tolerance
        check_symptoms(task, expected, {"slope": 2.0004, "count": 12})
    assert err.value.reason == "symptom_mismatch" and "slope" in str(err.value)


def test_printed_table_cells_take_their_own_precision_from_stdout():
    """A table printed to stdout with trailing zeros: each cell is graded at the places it was printed to,
    not at the shortest form of its number (0.100 is three decimals, not one)."""
    from trailforge.envs.answers import extract_answer

    stdout = "Fit summary\nsite  slope  rate\nA     1.50   0.100\nB     2.25   0.475\nC     3.00   0.950\n"
    precision: dict = {}
    schema, answer, _ = extract_answer(stdout, {}, precision=precision)
    (field,) = [f for f in schema if f.type == "table"]
    assert precision[field.name] == [[None, 0.005, 0.0005]] * 3
    task = make_task(schema=[field], reference={field.name: answer[field.name]})
    tol = calibrate(task, {}, VerifierConfig(), printed={field.name: precision[field.name]})
    assert tol[field.name]["atols"][0] == [None, pytest.approx(0.00505), pytest.approx(0.000505)]
    fallback = calibrate(task, {}, VerifierConfig())
    assert fallback[field.name]["atols"][0][2] == pytest.approx(0.00505), "0.1's shortest form, capped"
    expected = expected_document(task, tol)
    off = copy.deepcopy(answer[field.name])
    off["rows"][0][2] = 0.103  # right to the shortest form's 2 places, wrong at the 3 printed
    assert not _grader()({field.name: off}, expected)["passed"]
    assert _grader()({field.name: answer[field.name]}, expected)["passed"]


def test_printed_precision_that_does_not_fit_the_value_is_not_used():
    field = AnswerField(name="jaccard", type="number_list", label="jaccard", source="stdout", resolution=0.0005)
    task = make_task(schema=[field], reference={"jaccard": [0.3, 0.4567, 0.1234]})
    tol = calibrate(task, {}, VerifierConfig(), printed={"jaccard": [0.5, 0.5]})  # two resolutions, three values
    assert tol["jaccard"]["atols"] == calibrate(task, {}, VerifierConfig())["jaccard"]["atols"]
    assert tol["jaccard"]["atols"] != pytest.approx([0.505] * 3)


def test_minimum_of_read_values_found_in_the_data_is_not_a_leak():
    # A figure that plots a raw column: its minimum is one of the file's values (the Ryn-Oliphant tensile data).
    schema = [AnswerField(name="stress_y_min", type="number", label="minimum of the y values of the line",
                          source="plot:fig1/ax1/line1#y.min", resolution=5e-4)]
    task = make_task(schema=schema, reference={"stress_y_min": -115.099})
    check_isolation(task, {"data/temps.csv": DATA, "data/raw.txt": b"0.0 12.019\n0.5 -115.099\n1.0 56.806\n"})


def test_computed_value_next_to_a_minimum_in_a_results_file_is_still_a_leak():
    schema = [AnswerField(name="y_min", type="number", label="minimum of the y values", source="plot:f#y.min"),
              AnswerField(name="y_mean", type="number", label="mean of the y values", source="plot:f#y.mean")]
    task = make_task(schema=schema, reference={"y_min": -115.099, "y_mean": 0.3263773655982925})
    with pytest.raises(Rejected) as info:
        check_isolation(task, {"data/temps.csv": DATA, "out.txt": b"min -115.099 mean 0.3263773655982925\n"})
    assert info.value.reason == "answer_leak"


def test_selects_a_value_reads_plot_anchor_and_printed_label():
    from trailforge.envs.verify import selects_a_value
    assert selects_a_value(AnswerField(name="a", type="number", label="x", source="plot:f1/ax1/line1#y.max"))
    assert selects_a_value(AnswerField(name="b", type="number", label="depth, maximum of column d", source="stdout"))
    # AriaKoul's Subflow asks for ``max_parallax = np.max(parallax)``: the largest parallax is in the data
    assert selects_a_value(AnswerField(name="max_parallax", type="number", label="max_parallax", source="result"))
    assert not selects_a_value(AnswerField(name="climax_rate", type="number", label="climax rate", source="stdout"))
    assert not selects_a_value(AnswerField(name="c", type="number", label="mean of the y values",
                                           source="plot:f1/ax1/line1#y.mean"))


def test_a_field_the_statement_leaves_unclaimed_is_not_checked_either_way():
    from trailforge.envs.verify import check_symptoms

    expected = {"fields": [{"name": "slope", "type": "number", "value": 2.0, "rtol": 1e-6, "atol": 1e-9},
                           {"name": "resid_min", "type": "number", "value": -10.4531872906, "rtol": 1e-6,
                            "atol": 1e-9}]}
    construction = {"changed_fields": ["slope"], "unclaimed_fields": ["resid_min"]}
    task = make_task().model_copy(update={"task_type": "correction", "construction": construction})
    check_symptoms(task, expected, {"slope": 2.5, "resid_min": -10.4531999})  # moved below the bar: no claim
    claimed = task.model_copy(update={"construction": {"changed_fields": ["slope"]}})
    with pytest.raises(Rejected):  # without the mark, "already correct" is checked and is false
        check_symptoms(claimed, expected, {"slope": 2.5, "resid_min": -10.4531999})


def test_missing_values_written_as_null_or_nan_are_positive_controls_the_eval_accepts(tmp_path):
    """ThalassinosLab's tables hold the text "NaN" a DataFrame print shows; an agent's ``json.dump`` writes NaN
    or null. Both are answers the statement allows, so verify proves the eval file accepts them."""
    table = {"columns": ["Mode", "R2", "LLOD"], "rows": [["MS", 0.894716, 2.786265], ["TofMRM", 0.193697, "NaN"]]}
    field = AnswerField(name="ms1", type="table", label="table printed after MS1", source="stdout",
                        resolution=5e-7)
    task = make_task(schema=[field], reference={"ms1": table})
    tol = calibrate(task, {}, VerifierConfig(), element_spreads(task, [task.reference_answer]))
    allowed = allowed_answers(task, tol)
    assert {"missing_values_as_null", "missing_values_as_nan"} <= set(allowed)
    raw = answer_bytes(allowed["missing_values_as_nan"], keep_order=True)
    assert b"NaN]" in raw and b'"NaN"' not in raw
    expected = expected_document(task, tol)
    for name in ("missing_values_as_null", "missing_values_as_nan"):
        assert _eval_exit(tmp_path, expected, answer_bytes(allowed[name], keep_order=True)) == 0, name
    assert "missing_values_as_null" not in allowed_answers(make_task(), calibrate(make_task(), {}, VerifierConfig()))


def _kernel_task(tmp_path, shift: float):
    """A program whose value moves by ``shift`` (relative) when the numerical kernels are not the default ones,
    as a least-squares fit or an optimiser does under another BLAS."""
    (tmp_path / "tree" / "data").mkdir(parents=True, exist_ok=True)
    (tmp_path / "tree" / "data" / "temps.csv").write_bytes(DATA)
    program = ("import os\nrows = open('data/temps.csv').read().splitlines()\n"
               f"scale = 1 + ({shift!r} if os.environ.get('OPENBLAS_CORETYPE') else 0.0)\n"
               "print('Fitted rate (1/s): %.12f' % (0.0426260596 * len(rows) * scale))\n")
    schema = [AnswerField(name="fitted_rate", type="number", label="Fitted rate", unit="1/s", source="stdout",
                          decimals=12, resolution=5e-13)]
    from trailforge.envs.analysis import parameters

    statement = STATEMENT + "\n## Parameters of the original analysis\n" + "".join(f"- `{p}`\n" for p in parameters(program))
    task = make_task(schema=schema, reference={"fitted_rate": 0.127878178800}, program={"analysis.py": program},
                     statement=statement)
    return task.model_copy(update={"tree": str(tmp_path / "tree")})


def test_a_field_that_moves_with_other_numerical_kernels_is_graded_with_a_tolerance_that_covers_the_move(tmp_path):
    from trailforge.cache import ContentCache
    from trailforge.envs.verify import verify_task
    from trailforge.io import StageRecorder
    from trailforge.sandbox import LocalSandbox

    task, sandbox, cache = _kernel_task(tmp_path, 2e-5), LocalSandbox(timeout_s=20), ContentCache(tmp_path / "c")
    recorder = StageRecorder("verify")
    row = verify_task(task, VerifierConfig(), sandbox, cache, recorder, 24, 50)
    assert row is not None, recorder.rejects
    assert row.checks["kernel_runs"] == 1 and recorder.counters["kernel_sensitive_tasks"] == 1
    assert row.tolerances["fitted_rate"]["rtol"] >= 2e-4, "ten times the move, not the 1e-6 floor"
    # the value another machine computes is accepted; one 10% off is still rejected
    grade = _grader()
    expected = {"fields": [{"name": "fitted_rate", "type": "number", "value": 0.1278781788,
                            **row.tolerances["fitted_rate"]}]}
    assert grade({"fitted_rate": 0.1278781788 * (1 + 2e-5)}, expected)["passed"]
    assert not grade({"fitted_rate": 0.1278781788 * 1.1}, expected)["passed"]

    # without the probe, the floor stays
    recorder = StageRecorder("verify")
    row = verify_task(task, VerifierConfig(kernel_probe_env={}), sandbox, cache, recorder, 24, 50)
    assert row.checks["kernel_runs"] == 0 and row.tolerances["fitted_rate"]["rtol"] == 1e-6


def test_a_field_that_other_kernels_move_beyond_the_spread_bar_rejects_the_task(tmp_path):
    from trailforge.cache import ContentCache
    from trailforge.envs.verify import verify_task
    from trailforge.io import StageRecorder
    from trailforge.sandbox import LocalSandbox

    recorder = StageRecorder("verify")
    row = verify_task(_kernel_task(tmp_path, 0.2), VerifierConfig(), LocalSandbox(timeout_s=20),
                      ContentCache(tmp_path / "c"), recorder, 24, 50)
    assert row is None
    assert [r.reason for r in recorder.rejects] == ["kernel_sensitive"]
