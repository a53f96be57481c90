"""Answer extraction from printed lines, JSON files and CSV tables."""
from __future__ import annotations

import json

import pytest

from trailforge.envs.answers import extract_answer, parse_scalar, parse_table, resolution, slug, table_delimiter

STDOUT = """== Results ==
Summary:
Shannon diversity index: 2.3994
Mean anomaly (K): 0.4312
Warmest month: Jul
Count: 12
Pre-exponential factor (1/s): 4.1523e+06
"""


def _fields(stdout="", files=None, **kw):
    schema, answer, dropped = extract_answer(stdout, files or {}, **kw)
    return {f.name: f for f in schema}, answer, dropped


def test_stdout_lines_become_named_fields_in_order():
    schema, answer, dropped = extract_answer(STDOUT, {})
    assert [f.name for f in schema] == [
        "shannon_diversity_index", "mean_anomaly", "warmest_month", "count", "pre_exponential_factor",
    ]
    assert dropped == 0
    assert set(answer) == {f.name for f in schema}


def test_header_lines_without_values_are_ignored():
    fields, answer, _ = _fields("== Results ==\nSummary:\nStatistics =\n")
    assert fields == {} and answer == {}


def test_number_with_four_decimals():
    fields, answer, _ = _fields(STDOUT)
    field = fields["shannon_diversity_index"]
    assert answer["shannon_diversity_index"] == 2.3994
    assert field.type == "number"
    assert field.decimals == 4
    assert field.resolution == pytest.approx(0.00005)
    assert field.unit is None
    assert field.source == "stdout"
    assert field.label == "Shannon diversity index"


def test_unit_in_parentheses_is_split_from_label():
    fields, answer, _ = _fields(STDOUT)
    field = fields["mean_anomaly"]
    assert field.unit == "K"
    assert field.label == "Mean anomaly"
    assert answer["mean_anomaly"] == 0.4312


def test_short_word_is_a_string_field():
    fields, answer, _ = _fields(STDOUT)
    assert fields["warmest_month"].type == "string"
    assert answer["warmest_month"] == "Jul"
    assert fields["warmest_month"].resolution is None


def test_whole_number_is_an_integer_field():
    fields, answer, _ = _fields(STDOUT)
    assert fields["count"].type == "integer"
    assert answer["count"] == 12 and isinstance(answer["count"], int)
    assert fields["count"].resolution is None


def test_scientific_notation_resolution_follows_exponent():
    fields, answer, _ = _fields(STDOUT)
    field = fields["pre_exponential_factor"]
    assert field.type == "number"
    assert answer["pre_exponential_factor"] == pytest.approx(4.1523e6)
    assert field.unit == "1/s"
    assert field.resolution == pytest.approx(50.0)


def test_boolean_and_negative_values():
    fields, answer, _ = _fields("Converged: True\nTrend: -0.25\n")
    assert fields["converged"].type == "boolean" and answer["converged"] is True
    assert answer["trend"] == -0.25
    assert fields["trend"].resolution == pytest.approx(0.005)


def test_trailing_punctuation_is_dropped_from_value():
    _, answer, _ = _fields("Mean depth: 3.5.\n")
    assert answer == {"mean_depth": 3.5}


@pytest.mark.parametrize("text", ["1e999", "[1, 2, 3]", "{'a': 1}", "<object at 0x7f>"])
def test_non_result_values_are_not_fields(text):
    assert parse_scalar(text) is None


@pytest.mark.parametrize("text", ["nan", "inf"])
def test_non_finite_words_are_not_fields(text):
    assert parse_scalar(text) is None


@pytest.mark.parametrize(
    "text, expected",
    [("2.3994", 0.00005), ("12", 0.5), ("4.1523e+06", 50.0), ("1.5e-3", 0.00005), ("0.10", 0.005)],
)
def test_resolution_is_half_unit_in_last_place(text, expected):
    assert resolution(text) == pytest.approx(expected)


def test_slug_lowercases_and_joins_words():
    assert slug("Pre-exponential factor") == "pre_exponential_factor"
    assert slug("!!!") == "value"


def test_duplicate_labels_get_suffixed_names():
    _, answer, _ = _fields("Total: 1\nTotal: 2\nTotal: 3\n")
    assert answer == {"total": 1, "total_2": 2, "total_3": 3}


def test_max_fields_cap_counts_dropped_fields():
    schema, answer, dropped = extract_answer("a: 1\nb: 2\nc: 3\nd: 4\n", {}, max_fields=2)
    assert [f.name for f in schema] == ["a", "b"]
    assert answer == {"a": 1, "b": 2}
    assert dropped == 2


def test_json_file_nested_dicts_are_flattened():
    data = {"fit": {"slope": 1.25, "stats": {"r2": 0.5, "n": 10}}, "flag": False, "site": "North"}
    fields, answer, _ = _fields(files={"out/results.json": json.dumps(data)})
    assert answer == {
        "results_fit_slope": 1.25,
        "results_fit_stats_n": 10,
        "results_fit_stats_r2": 0.5,
        "results_flag": False,
        "results_site": "North",
    }
    assert fields["results_fit_stats_n"].type == "integer"
    assert fields["results_flag"].type == "boolean"
    assert fields["results_fit_slope"].source == "file:out/results.json#fit.slope"
    assert fields["results_fit_slope"].resolution == pytest.approx(0.005)


def test_json_deeper_than_three_levels_is_not_extracted():
    fields, _, _ = _fields(files={"r.json": json.dumps({"a": {"b": {"c": {"d": 1.5}}}})})
    assert fields == {}


def test_json_numeric_list_becomes_number_list():
    fields, answer, _ = _fields(files={"r.json": json.dumps({"series": [1, 2.25, 3]})})
    assert fields["r_series"].type == "number_list"
    assert answer["r_series"] == [1.0, 2.25, 3.0]
    assert fields["r_series"].resolution == pytest.approx(0.005)


@pytest.mark.parametrize("value", [[], [1, "a"], [True, False], list(range(60))])
def test_json_lists_that_are_not_short_numeric_lists_are_skipped(value):
    fields, _, _ = _fields(files={"r.json": json.dumps({"x": value})})
    assert fields == {}


def test_unreadable_json_and_binary_files_are_skipped():
    fields, _, _ = _fields(files={"bad.json": "{not json", "img.json": None})
    assert fields == {}


def test_csv_table_parsed_with_columns_and_rows():
    text = "site,mean,n\nA,1.25,3\nB,2.5,4\n"
    fields, answer, _ = _fields(files={"summary.csv": text})
    field = fields["summary"]
    assert field.type == "table"
    assert field.source == "file:summary.csv"
    assert answer["summary"] == {"columns": ["site", "mean", "n"], "rows": [["A", 1.25, 3.0], ["B", 2.5, 4.0]]}
    assert field.resolution == pytest.approx(0.05)  # the coarsest printed cell (2.5) sets it


def test_tsv_uses_tab_delimiter():
    _, answer, _ = _fields(files={"t.tsv": "a\tb\n1\tx\n"})
    assert answer["t"] == {"columns": ["a", "b"], "rows": [[1.0, "x"]]}


def test_table_with_too_many_rows_is_summarised_not_dropped():
    text = "k,v\n" + "".join(f"r{i},{i}\n" for i in range(4))
    assert parse_table(text, ",", max_rows=4) is not None
    assert parse_table(text, ",", max_rows=3) is None
    fields, answer, _ = _fields(files={"big.csv": text}, max_table_rows=3)
    assert "big" not in fields  # never the whole table
    assert answer["big_rows"] == 4 and answer["big_v_max"] == 3.0 and answer["big_v_min"] == 0.0
    assert len(answer["big_first_rows"]["rows"]) == 3


def test_a_tab_separated_txt_file_is_a_table():
    """pySeqDiff writes its per-gene results with ``to_csv(out, sep="\\t")`` to a ``.txt`` name: it was read as
    nothing, and the program's only results were its plots."""
    text = "gene_id\tlog2fold_change\tp_value\n" + "".join(f"g{i}\t{i * 0.25 - 1:.4f}\t{0.01 * (i + 1):.3f}\n"
                                                          for i in range(6))
    fields, answer, _ = _fields(files={"results.txt": text}, max_table_rows=3)
    assert answer["results_rows"] == 6 and answer["results_log2fold_change_max"] == 0.25
    assert fields["results_rows"].source == "file:results.txt"


@pytest.mark.parametrize("text", [
    "The fit converged after 12 iterations.\nResidual 0.03\n",    # prose
    "a, b\nc\n",                                                   # a comma, but no table
    "x\ty\n1\t2\t3\n",                                              # unequal rows
])
def test_a_txt_file_that_is_no_table_is_not_read_as_one(text):
    assert table_delimiter("notes.txt", text) is None


def test_only_plain_text_names_are_sniffed():
    assert table_delimiter("fit.py", "a\tb\n1\t2\n") is None
    assert table_delimiter("counts.dat", "a\tb\n1\t2\n") == "\t"
    assert table_delimiter("x.csv", "anything") == ","


@pytest.mark.parametrize("text", ["only,header\n", "a,a\n1,2\n", "a,b\n1,2,3\n"])
def test_malformed_tables_are_skipped(text):
    assert parse_table(text, ",", 50) is None


def test_stdout_and_file_fields_share_cap_and_names():
    schema, answer, dropped = extract_answer("Result: 1\n", {"result.json": json.dumps(2)}, max_fields=5)
    assert answer == {"result": 1, "result_2": 2}
    assert [f.source for f in schema] == ["stdout", "file:result.json"]
    assert dropped == 0


@pytest.mark.parametrize("line, value, unit", [
    ("Mean depth: 3.25 m", 3.25, "m"), ("count: 12 stations", 12, "stations"), ("share = 12.5 %", 12.5, "%"),
])
def test_label_value_with_a_unit_word_is_a_number_not_a_string(line, value, unit):
    """Was the string "3.25 m": an agent answering 3.25 was rejected, and no tolerance applied."""
    schema, answer, _ = extract_answer(line + "\n", {})
    (field,) = schema
    assert answer[field.name] == value and field.unit == unit and field.type != "string"


def test_category_values_that_start_with_a_digit_stay_strings():
    schema, answer, _ = extract_answer("site: 3A\nbest model: ridge\n", {})
    assert answer == {"site": "3A", "best_model": "ridge"}


def test_the_rest_of_a_sentence_after_an_equals_sign_is_not_a_string_field():
    """A real script printed "Hit count for condition = long adjusted to 19": the field graded the wording
    of the print's format, not a result; a one-word category after the sign still is one."""
    schema, answer, _ = extract_answer("Hit count for condition = long adjusted to 19\nbest model = ridge\n", {})
    assert answer == {"best_model": "ridge"}


def test_subflow_results_are_read_under_the_working_folder():
    """A script run from its own folder saves result/x.json there: the run's paths are relative to the
    scratch root (scripts/result/x.json), which every Subflow of such a script missed (slice_no_result)."""
    from types import SimpleNamespace

    from trailforge.envs.answers import answer_from_run

    run = SimpleNamespace(stdout="ignored: 1\n", files={"scripts/result/slope.json": b"2.5",
                                                        "result/other.json": b"3.5"})
    assert answer_from_run(run, "result_files", 24, 50, cwd="scripts")[1] == {"slope": 2.5}
    assert answer_from_run(run, "result_files", 24, 50)[1] == {"other": 3.5}


def test_identifier_columns_of_a_large_table_are_not_aggregated():
    """pySeqDiff's table starts with Entrez gene ids: "the mean of gene_id" was a field."""
    text = "gene_id\tlog2fold_change\n" + "".join(f"{1000 + 7 * i}\t{i * 0.5 - 1:.2f}\n" for i in range(6))
    _, answer, _ = _fields(files={"res.txt": text}, max_table_rows=3)
    assert not any(name.startswith("res_gene_id") for name in answer)
    assert answer["res_log2fold_change_mean"] == pytest.approx(0.25)
    keyed = "year,flux\n" + "".join(f"{2000 + i},{i * 1.5:.1f}\n" for i in range(6))  # a first column of keys
    _, answer, _ = _fields(files={"flux.csv": keyed}, max_table_rows=3)
    assert "flux_year_mean" not in answer and "flux_flux_mean" in answer


# --- missing values, as the eval grades them -----------------------------------------------------------------

def _eval_template():
    import importlib.util
    from pathlib import Path

    import trailforge.envs

    spec = importlib.util.spec_from_file_location(
        "tf_eval_for_answers_tests", Path(trailforge.envs.__file__).parent / "templates" / "eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_missing_value_rule_is_the_eval_s():
    from trailforge.envs.answers import MISSING_TEXTS

    assert MISSING_TEXTS == _eval_template().MISSING_TEXTS


def test_missing_places_are_cells_of_number_columns_only():
    from trailforge.envs.answers import missing_places

    table = {"columns": ["mode", "llod", "note", "all_nan"],
             "rows": [["MS", 2.5, "None", "NaN"], ["TofMRM", "NaN", "ok", "NaN"], ["None", None, "x", "NaN"]]}
    # "None" in the text columns is a word; a null is missing anywhere; a column of only "NaN" holds no number
    assert missing_places("table", table) == [(1, 1), (2, 1)]
    assert missing_places("number_list", [1.0, float("nan"), "NaN"]) == [(1,), (2,)]
    assert missing_places("number", None) == [()] and missing_places("number", 2.0) == []
    assert missing_places("string", "None") == []


def test_missing_value_answers_write_each_missing_cell_as_null_and_as_nan_and_the_eval_accepts_both():
    import math

    from trailforge.envs.answers import missing_value_answers
    from trailforge.io import AnswerField

    table = {"columns": ["mode", "r2", "llod"], "rows": [["MS", 0.89, 2.78], ["TofMRM", 0.19, "NaN"]]}
    schema = [AnswerField(name="ms1", type="table", label="table printed after MS1", source="stdout"),
              AnswerField(name="mode", type="string", label="Mode", source="stdout")]
    answer = {"ms1": table, "mode": "None"}
    controls = missing_value_answers(schema, answer)
    assert set(controls) == {"missing_values_as_null", "missing_values_as_nan"}
    assert controls["missing_values_as_null"]["ms1"]["rows"][1] == ["TofMRM", 0.19, None]
    assert math.isnan(controls["missing_values_as_nan"]["ms1"]["rows"][1][2])
    assert controls["missing_values_as_null"]["mode"] == "None" and table["rows"][1][2] == "NaN", "nothing else changes"
    expected = {"fields": [{"name": "ms1", "type": "table", "value": table, "rtol": 1e-6, "atol": 1e-9},
                           {"name": "mode", "type": "string", "value": "None"}]}
    grade = _eval_template().grade
    for name, control in controls.items():
        assert grade(json.loads(json.dumps(control)), expected)["passed"], name
    assert missing_value_answers(schema, {"ms1": {**table, "rows": table["rows"][:1]}, "mode": "None"}) == {}
