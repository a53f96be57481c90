"""tasks.py: fields a statement already gives are not asked."""
from __future__ import annotations

from trailforge.envs.tasks.statement import reproduction_statement
from trailforge.envs.tasks import without_stated_fields
from trailforge.io import AnswerField, StageRecorder

COUNT = AnswerField(name="residuals_y_count", type="integer", label="number of y values", source="plot:f#y.count")
MEAN = AnswerField(name="residuals_y_mean", type="number", label="mean of the y values", source="plot:f#y.mean")


def _build(lines: str):
    return lambda schema, answer: reproduction_statement("org/gnss", "physics", "fit.py",
                                                         [f"`data/PORD.txt` (text, {lines} lines)"],
                                                         ["print(1)\n"], schema, answer)


def test_a_count_the_data_description_states_is_dropped_and_the_rest_kept():
    recorder = StageRecorder("tasks")
    statement, schema, answer = without_stated_fields(
        _build("4615"), [COUNT, MEAN], {"residuals_y_count": 4615, "residuals_y_mean": 0.0249014149}, "", recorder)
    assert [f.name for f in schema] == ["residuals_y_mean"]
    assert answer == {"residuals_y_mean": 0.0249014149}
    assert "residuals_y_count" not in statement and "residuals_y_mean" in statement
    assert recorder.counters["answer_fields_given_by_statement"] == 1


def test_a_count_the_statement_does_not_give_stays():
    statement, schema, _ = without_stated_fields(
        _build("4616"), [COUNT, MEAN], {"residuals_y_count": 4615, "residuals_y_mean": 0.0249014149}, "",
        StageRecorder("tasks"))
    assert [f.name for f in schema] == ["residuals_y_count", "residuals_y_mean"]
    assert "residuals_y_count" in statement


def test_no_statement_when_every_field_is_given():
    statement, schema, _ = without_stated_fields(_build("4615"), [COUNT], {"residuals_y_count": 4615}, "",
                                                 StageRecorder("tasks"))
    assert statement is None and schema == []


def test_fields_that_are_plain_statistics_of_an_input_column_are_found():
    from trailforge.envs.data_files import column_statistics
    from trailforge.envs.tasks.answer import raw_statistic_fields

    data = {"data/flu.csv": b"day,cases,temp\n1,3,20.125\n2,272,21.5\n3,45,19.75\n4,7,22.0\n",
            "notes.md": b"# not a table\n"}
    statistics, columns = column_statistics("data/flu.csv", data["data/flu.csv"])
    assert 4.0 in statistics and 272.0 in statistics and columns[1] == [3.0, 272.0, 45.0, 7.0]
    number = lambda name, **kw: AnswerField(name=name, type="number", label=name, source="stdout", **kw)  # noqa: E731
    schema = [number("peak_cases"), number("mean_temp", decimals=3, resolution=5e-4), number("rough_mean", decimals=1,
              resolution=0.05), number("fitted_rate"), number("days"),
              AnswerField(name="cases_drawn", type="number_list", label="cases", source="plot:f1"),
              AnswerField(name="cases_scaled", type="number_list", label="cases", source="plot:f1")]
    answer = {"peak_cases": 272.0, "mean_temp": 20.844, "rough_mean": 20.8, "fitted_rate": 0.04262605962209636,
              "days": 4, "cases_drawn": [3, 272, 45, 7], "cases_scaled": [0.3, 27.2, 4.5, 0.7]}
    # the column's maximum and its mean (as printed, 3 decimals) are read off the file; a value printed with
    # two digits, a fitted number, a small count and a transformed column are not
    assert raw_statistic_fields(schema, answer, data) == ["peak_cases", "mean_temp", "cases_drawn"]
