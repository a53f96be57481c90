"""Stage tier: a simulation that reads no data file becomes verified environments whose data are its parameters.

The script below sets its inputs as constants and only draws (``plt.show()``), as teaching and modelling scripts do.
The seeds stage moves the constants into ``parameters.json``; tasks perturb that file's numbers; the exported
workspace holds it and the statement describes it; Correction defects are in the model, not in the lines that read
the file.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import build_to_tasks, run_stage, stats
from trailforge.io import SeedRow, VerifiedTaskRow, read_rejects, read_rows

MODEL = '''"""Logistic growth of a population, stepped with Euler's method."""
import numpy as np
import matplotlib.pyplot as plt

r = 0.35
K = 500.0
P0 = 12.0
dt = 0.1
steps = 400

P = np.zeros(steps)
P[0] = P0
for k in range(steps - 1):
    P[k + 1] = P[k] + dt * r * P[k] * (1 - P[k] / K)
half = np.argmax(P > K / 2) * dt

plt.plot(np.arange(steps) * dt, P, label="population")
plt.title(f"Logistic growth, half capacity at t={half:.2f}")
plt.ylabel("population")
plt.legend()
plt.show()
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    project, _ = build_to_tasks(tmp_path_factory.mktemp("parameters"), "logistic-growth", {
        "README.md": "Logistic population growth model for an ecology course.\n",
        "growth.py": MODEL,
    }, [])
    run_stage(project, "verify", "--tasks", "out/tasks", "--out", "out/verify")
    return project


def test_the_seed_reads_its_constants_from_a_generated_file_outside_the_snapshot(built):
    [seed] = read_rows(built / "out/seeds/data", SeedRow)
    assert seed.parameters_file == "parameters.json"
    assert [f.path for f in seed.data_files] == ["parameters.json"]
    tree = Path(seed.tree) if Path(seed.tree).is_absolute() else built / seed.tree
    assert json.loads((tree / "parameters.json").read_text()) == {"r": 0.35, "K": 500.0, "P0": 12.0, "dt": 0.1,
                                                                   "steps": 400}
    assert 'r = _params["r"]' in (tree / "growth.py").read_text()
    index = json.loads((built / "out/seeds/trees/index.json").read_text())
    assert list(index) == [seed.seed_id]
    assert stats(built / "out/seeds")["counters"]["seeds_from_parameters"] == 1


def test_verified_environments_hold_the_parameters_and_say_what_they_are(built):
    verified = read_rows(built / "out/verify/data", VerifiedTaskRow)
    kinds = {t.task_type for t in verified}
    assert "correction" in kinds, (kinds, read_rejects(built / "out/verify/rejects.parquet"))
    # Its only data are its own constants: a Reproduction would need the model, which only the code states.
    assert "reproduction" not in kinds and "subflow" not in kinds
    reasons = {r.reason for r in read_rejects(built / "out/tasks/rejects.parquet")}
    assert {"reproduction_needs_the_model", "subflow_needs_the_model"} <= reasons, reasons
    for task in verified:
        assert [f.path for f in task.workspace_files] == ["parameters.json"]
        assert "numeric parameters of the analysis" in task.statement and "keys: r, K, P0, dt, steps" in task.statement
    for task in verified:
        if task.task_type == "correction":
            assert "_params" not in task.construction["original"], "a defect in the plumbing, not the model"
    counters = stats(built / "out/tasks")["counters"]
    assert counters["answer_fields_data_dependent"] >= 1
