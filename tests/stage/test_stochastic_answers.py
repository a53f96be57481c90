"""Stage tier: a program whose results move a little on every run (an unseeded Monte Carlo estimate) and that prints a value
that changes completely (a random batch id).

Before, the tasks stage judged the program by its one seed run: every task graded the batch id, and verify's repeat
runs rejected all of them (``not_reproducible``); a Correction could call the resampled mean "wrong" when its defect
moved it by less than the run-to-run spread, which verify then found within tolerance (``symptom_mismatch``). The
tasks stage now repeats the seed run as verify will (the same requests, so verify reads them from the cache), drops
the field that does not reproduce, and treats a move within the spread as no move.
"""
from __future__ import annotations

import json

import pytest

from conftest import build_to_tasks, run_stage
from trailforge.io import TaskRow, VerifiedTaskRow, read_rejects, read_rows

GROWTH = '''import csv
import random
import statistics

rows = list(csv.DictReader(open("data/growth.csv")))
rates = [float(r["rate"]) for r in rows]
mass = [float(r["mass"]) for r in rows]
mean_rate = statistics.mean(rates)
mean_mass = statistics.mean(mass)
slope = (sum((m - mean_mass) * (r - mean_rate) for m, r in zip(mass, rates))
         / sum((m - mean_mass) ** 2 for m in mass))
# An unseeded Monte Carlo estimate of the mean rate: it moves a little on every run.
estimate = statistics.mean(r * (1 + random.gauss(0, 1e-4)) for r in rates)
print(f"Mean growth rate: {mean_rate:.6f}")
print(f"Allometric slope: {slope:.6f}")
print(f"Monte Carlo mean rate: {estimate:.8f}")
print(f"Batch id: {random.randrange(10**6, 10**7)}")
'''
DATA = "mass,rate\n" + "".join(f"{m},{r}\n" for m, r in [
    (1.2, 0.31), (2.5, 0.52), (3.1, 0.58), (4.8, 0.81), (5.5, 0.86), (7.0, 1.07), (8.2, 1.19), (9.9, 1.38),
    (11.4, 1.52), (12.0, 1.61)])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    project, _ = build_to_tasks(tmp_path_factory.mktemp("stochastic"), "growth-bootstrap", {
        "README.md": "Growth rate against body mass of cultured specimens, with a Monte Carlo estimate of the mean.\n",
        "growth.py": GROWTH,
        "data/growth.csv": DATA,
    }, [])
    run_stage(project, "verify", "--tasks", "out/tasks", "--out", "out/verify")
    return project


def test_a_field_that_does_not_reproduce_is_dropped_before_any_task(built):
    counters = json.loads((built / "out/tasks/stats.json").read_text())["counters"]
    assert counters["stochastic_seeds"] == 1
    assert counters["answer_fields_not_reproducible"] == 1
    tasks = read_rows(built / "out/tasks/data", TaskRow)
    assert tasks
    for task in tasks:
        assert not any("batch" in f.name for f in task.answer_schema), task.task_id
    # The noisy estimate stays: it moves with the data by far more than between runs.
    [reproduction] = [t for t in tasks if t.task_type == "reproduction"]
    assert "monte_carlo_mean_rate" in reproduction.reference_answer


def test_verify_finds_the_seed_runs_and_rejects_nothing_for_noise(built):
    verify_reasons = [r.reason for r in read_rejects(built / "out/verify/rejects.parquet")]
    assert "not_reproducible" not in verify_reasons
    assert "symptom_mismatch" not in verify_reasons
    verified = read_rows(built / "out/verify/data", VerifiedTaskRow)
    assert {"reproduction", "correction"} <= {t.task_type for t in verified}
    stats = json.loads((built / "out/verify/stats.json").read_text())["counters"]
    assert stats.get("stochastic_tasks", 0) >= 1
    # The Reproduction's reference runs are the tasks stage's repeats: none runs again.
    timings = json.loads((built / "out/verify/timings.json").read_text())["counters"]
    assert timings["reference_runs_cached"] >= 5


def test_a_correction_calls_wrong_only_a_move_beyond_the_spread(built):
    corrections = [t for t in read_rows(built / "out/verify/data", VerifiedTaskRow) if t.task_type == "correction"]
    assert any(t.checks["max_rel_spread"].get("monte_carlo_mean_rate", 0) > 0 for t in corrections)
    for task in corrections:
        mutant = json.loads(task.construction["mutant_answer_fingerprint"])  # the mutant's answer, to 6 digits
        for name in task.construction["changed_fields"]:
            # Twice the tolerance verify grades the field with: a move the program's own noise cannot make.
            tolerance = max(1e-6, 10 * task.checks["max_rel_spread"][name])
            ref = task.reference_answer[name]
            assert abs(float(mutant[name]) - ref) > 2 * tolerance * abs(ref) * 0.999, (task.task_id, name)
