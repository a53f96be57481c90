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
