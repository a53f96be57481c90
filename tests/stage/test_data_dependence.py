"""Stage tier: answers must move with the data. A value computed from the program's own constants (the step
of an ``np.arange`` grid, its number of points) is neither a Reproduction field nor a Subflow target."""
from __future__ import annotations

import pytest

from conftest import make_repo, run_stage, stats, write_params
from trailforge.io import TaskRow, read_rejects, read_rows

SCRIPT = '''import numpy as np

rows = np.loadtxt("data/masses.csv", delimiter=",", skiprows=1)
masses = rows[:, 1]
grid = np.arange(0.0, 1.0, 0.005)
dm = grid[1] - grid[0]
npoints = len(grid) * 3
density = np.histogram(masses / masses.max(), bins=grid)[0].sum() * dm
log_mass = np.log10(masses)
mean_log_mass = float(np.mean(log_mass))
spread = float(np.std(log_mass))
print(f"Mean log mass: {mean_log_mass:.4f}")
print(f"Log mass spread: {spread:.4f}")
print(f"Grid points: {npoints}")
print(f"Integrated density: {density:.4f}")
'''
DATA = "id,mass\n" + "".join(f"{i},{1.0 + (i * 37 % 11) * 0.731:.3f}\n" for i in range(1, 31))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("dependence")
    project = root / "project"
    project.mkdir()
    repo = make_repo(root / "repos" / "star-masses", {
        "README.md": "Stellar mass distribution from a survey catalogue; astrophysics.\n",
        "masses.py": SCRIPT, "data/masses.csv": DATA,
    })
    overrides = ["tasks.types=[reproduction,subflow]", "tasks.subflow.max_per_seed=20",
                 "tasks.subflow.min_upstream_ops=1"]
    write_params(project, [str(repo)], overrides + ["tasks.data_dependence.enabled=false"])
    run_stage(project, "discover", "--out", "out/discover")
    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")
    run_stage(project, "workflows", "--seeds", "out/seeds", "--out", "out/workflows")
    run_stage(project, "tasks", "--seeds", "out/seeds", "--workflows", "out/workflows", "--out", "out/unchecked")
    write_params(project, [str(repo)], overrides)
    run_stage(project, "tasks", "--seeds", "out/seeds", "--workflows", "out/workflows", "--out", "out/tasks")
    return project


def test_constant_fields_are_dropped_from_the_reproduction(built):
    tasks = read_rows(built / "out/tasks/data", TaskRow)
    reproduction = next(t for t in tasks if t.task_type == "reproduction")
    names = [f.name for f in reproduction.answer_schema]
    assert "mean_log_mass" in names and "log_mass_spread" in names
    assert "grid_points" not in names  # 600 whatever the data
    unchecked = next(t for t in read_rows(built / "out/unchecked/data", TaskRow) if t.task_type == "reproduction")
    assert "grid_points" in [f.name for f in unchecked.answer_schema]  # what the check removes
    figures = stats(built / "out/tasks")["counters"]
    assert figures["answer_fields_not_data_dependent"] >= 1
    assert figures["answer_fields_data_dependent"] >= 2


def test_grid_derived_intermediates_are_not_subflow_targets(built):
    unchecked = {t.construction["target"] for t in read_rows(built / "out/unchecked/data", TaskRow)
                 if t.task_type == "subflow"}
    assert "npoints" in unchecked  # without the check, a count of grid points is a target
    targets = {t.construction["target"] for t in read_rows(built / "out/tasks/data", TaskRow)
               if t.task_type == "subflow"}
    assert not targets & {"dm", "grid", "npoints"}
    assert targets & {"log_mass", "mean_log_mass", "spread", "masses"}, targets
    rejects = read_rejects(built / "out/tasks/rejects.parquet")
    constant = [r.item_id for r in rejects if r.reason == "not_data_dependent"]
    assert any("subflow__npoints" in item for item in constant), constant


PICKLED = '''import pickle

with open("data/peaks.dump", "rb") as fh:
    peaks = pickle.load(fh)
areas = peaks["areas"]
mean_area = sum(areas) / len(areas)
print(f"Mean peak area: {mean_area:.4f}")
print(f"Runs: {peaks['runs']}")
'''


def test_a_program_reading_a_pickle_gets_data_dependent_fields(tmp_path):
    """Pickled inputs (a lab's ``.dump`` of fitted peaks) are perturbed inside the sandbox; before, a seed whose
    only data were pickles was ``data_not_perturbable`` and gave no task."""
    import pickle

    from conftest import build_to_tasks

    peaks = pickle.dumps({"areas": [12.5, 14.25, 9.75, 11.0, 13.5], "runs": 5}, protocol=3)
    project, _ = build_to_tasks(tmp_path, "peak-areas", {
        "README.md": "Mass spectrometry peak areas; analytical chemistry.\n",
        "areas.py": PICKLED, "data/peaks.dump": peaks,
    }, ["tasks.types=[reproduction]"])
    tasks = read_rows(project / "out/tasks/data", TaskRow)
    assert [f.name for f in tasks[0].answer_schema] == ["mean_peak_area"], "the run count is not a result of the data"
    figures = stats(project / "out/tasks")["counters"]
    assert figures["pickle_perturbations_total"] >= 1
    assert not [r for r in read_rejects(project / "out/tasks/rejects.parquet") if r.reason == "data_not_perturbable"]
