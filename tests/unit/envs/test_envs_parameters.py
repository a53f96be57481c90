"""Parameters as data: a script that reads no data file gets its numeric constants from a generated parameters.json.

The rewrite is read from the syntax tree only; whether it reproduces the original is decided by running both in the
sandbox, as the seeds stage does (the tests below run the real local sandbox).
"""
from __future__ import annotations

import ast
import hashlib
import json
import random
from pathlib import Path

import pytest

from trailforge.cache import ContentCache
from trailforge.envs.answers import extract_answer
from trailforge.envs.parameters import (
    PARAMETERS_FILE, format_number, generated_lines, parameter_assignments, parameterize,
)
from trailforge.envs.seeds import find_candidates, run_repository
from trailforge.envs.data_files import describe_data_file
from trailforge.envs.tasks import still_fields
from trailforge.io import FileEntry, SnapshotRow, StageRecorder
from trailforge.sandbox import LocalSandbox

SIMULATION = '''"""An SIR epidemic, stepped day by day."""
from __future__ import annotations

import numpy as np

N = 1000
beta = 0.3
gamma = 1 / 10
days = 60
y0 = [0.99, 0.01]
SEED = 7
figsize = (6, 4)
total = 0

rng = np.random.default_rng(SEED)
s, i = y0[0] * N, y0[1] * N
for day in range(days):
    new = beta * s * i / N
    s, i = s - new, i + new - gamma * i
    total += new
print(f"Final infected: {i:.4f}")
print(f"Total infections: {total:.4f}")
print(f"Noise draw: {rng.normal():.6f}")
'''


def _names(source: str) -> list[str]:
    return [name for name, _, _ in parameter_assignments(ast.parse(source))]


def test_numeric_constants_become_parameters_and_state_seeds_and_presentation_do_not():
    assert _names(SIMULATION) == ["N", "beta", "gamma", "days", "y0"]
    # SEED feeds the generator (stays in the code, the statement lists it), figsize is never read,
    # total is rebound by the loop (state, not an input).


def test_a_name_bound_twice_a_zero_or_a_figure_setting_is_not_a_parameter():
    source = ("import matplotlib.pyplot as plt\nk = 3\nk = 4\nstart = 0.0\nfs = 14\nwidth = 2.5\nrate = 0.2\n"
              "def f(x, r=rate):\n    return x * r * k * width\n"
              "plt.title('a', fontsize=fs)\nprint(f(2.0) + start)\n")
    assert _names(source) == ["width", "rate"]


def test_the_rewrite_reads_each_value_from_the_file_and_keeps_the_rest_of_the_program():
    done = parameterize(SIMULATION, "sim/sir.py", "sim", set())
    assert done.path == f"sim/{PARAMETERS_FILE}" and done.names == ("N", "beta", "gamma", "days", "y0")
    values = json.loads(done.text)
    assert values == {"N": 1000, "beta": 0.3, "gamma": 0.1, "days": 60, "y0": [0.99, 0.01]}
    assert isinstance(values["N"], int) and isinstance(values["gamma"], float)
    program = ast.parse(done.program)  # it parses
    # The docstring and the __future__ import stay first; the prelude loads the file before anything else runs.
    assert isinstance(program.body[0], ast.Expr) and program.body[1].module == "__future__"
    assert "open(\"parameters.json\"" in done.program.split("import numpy")[0]
    assert 'N = _params["N"]' in done.program and 'y0 = _params["y0"]' in done.program
    assert "SEED = 7" in done.program and "total = 0" in done.program and "0.3" not in done.program
    # Only the values changed: the original and the rewrite differ in the prelude and the assigned values alone.
    kept = [line for line in SIMULATION.splitlines() if not line.startswith(("N =", "beta =", "gamma =", "days =",
                                                                             "y0 ="))]
    assert all(line in done.program.splitlines() for line in kept)


def test_a_tuple_is_read_back_as_a_tuple_and_names_the_script_uses_are_not_taken():
    source = "_params = 'mine'\n_json = 1\nshape = (3, 4)\nprint(shape, _params, _json)\n"
    done = parameterize(source, "a.py", ".", set())
    assert 'shape = tuple(_params2["shape"])' in done.program and "import json as _json2" in done.program
    assert "_params = 'mine'" in done.program


def test_a_repository_file_of_the_same_name_is_never_overwritten():
    done = parameterize("n = 10\nprint(n * 2)\n", "run.py", ".", {PARAMETERS_FILE})
    assert done.path == "run.parameters.json"


def test_no_parameters_means_no_rewrite():
    assert parameterize("import math\nprint(math.pi)\n", "a.py", ".", set()) is None


@pytest.mark.parametrize("value", [0.04, 0.1, 1 / 3, 1e-5, 6.02e23, -0.5, 3.0, 1000.0, 2.5e-300, 123456.789])
def test_floats_are_written_with_digits_to_perturb_and_read_back_exactly(value):
    text = format_number(value)
    assert float(text) == value and json.loads(text) == value
    digits = text.split("e")[0].replace("-", "").replace(".", "").lstrip("0")
    assert len(digits) >= 4


def test_random_floats_round_trip():
    rng = random.Random(3)
    for _ in range(2000):
        value = rng.uniform(-1, 1) * 10 ** rng.randint(-12, 12)
        assert json.loads(format_number(value)) == value


def test_the_statement_says_the_file_holds_the_parameters():
    text = parameterize(SIMULATION, "sir.py", ".", set()).text.encode()
    entry = FileEntry(path=PARAMETERS_FILE, sha256=hashlib.sha256(text).hexdigest(), size=len(text), kind="data")
    line = describe_data_file(entry, text, parameters=True)
    assert "parameters of the analysis" in line and "N, beta, gamma, days, y0" in line
    assert "parameters" not in describe_data_file(entry, text).split("(", 1)[1]


# ---------------------------------------------------------------- through the sandbox, as the seeds stage runs them


def _snapshot(root, files: dict[str, str]) -> SnapshotRow:
    entries = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        entries.append(FileEntry(path=rel, sha256=hashlib.sha256(text.encode()).hexdigest(), size=len(text.encode()),
                                 kind="python" if rel.endswith(".py") else "doc" if rel.endswith(".md") else "data"))
    return SnapshotRow(repo_id="sir-teaching", origin=str(root), discipline="epidemiology", commit=None,
                       content_hash="0", tree=str(root), files=entries, requirements=[], imports=[],
                       distributions=[], local_modules=[])


@pytest.fixture(scope="module")
def sandbox():
    return LocalSandbox(timeout_s=60)


def _seeds(tmp_path, sandbox, files: dict[str, str], trees=True):
    snapshot = _snapshot(tmp_path / "repo", files)
    recorder = StageRecorder("seeds")
    candidates = find_candidates(snapshot, set(), recorder)
    cache = ContentCache(tmp_path / "cache")
    rows = run_repository(candidates, sandbox, cache, 60, 5, 600, recorder, tmp_path / "trees" if trees else None)
    return rows, recorder, cache


SIR = SIMULATION.replace("import numpy as np\n", "").replace("SEED = 7\n", "").replace(
    "rng = np.random.default_rng(SEED)\n", "").replace('print(f"Noise draw: {rng.normal():.6f}")\n', "")


def test_a_simulation_becomes_a_seed_whose_data_is_its_parameters_and_whose_answer_moves_with_them(tmp_path, sandbox):
    rows, recorder, cache = _seeds(tmp_path, sandbox, {"sir.py": SIR})
    assert [r.seed_id for r in rows] == ["sir-teaching:sir.py"], recorder.rejects
    seed = rows[0]
    assert seed.parameters_file == PARAMETERS_FILE and [f.path for f in seed.data_files] == [PARAMETERS_FILE]
    tree = tmp_path / "trees" / "sir-teaching"
    assert seed.tree.startswith(str(tree)) and (tmp_path / "repo" / PARAMETERS_FILE).exists() is False
    written = (tmp_path / "trees").glob("sir-teaching/*/parameters.json")
    assert json.loads(next(written).read_text())["beta"] == 0.3
    assert "Final infected:" in seed.stdout and recorder.counters["seeds_from_parameters"] == 1
    # The answer moves when the parameters move: the perturbation of tasks' data-dependence check.
    schema, answer, _ = extract_answer(seed.stdout, {}, 20, 20)
    program = {p: (Path(seed.tree) / p).read_text(encoding="utf-8") for p in seed.program_files}
    env = sandbox.prepare(seed.distributions)
    still, why = still_fields(seed, program, schema, answer, 0, 0.1, (20, 20), sandbox, cache, env,
                              StageRecorder("tasks"))
    assert why is None and still == [], f"fields that did not move with the parameters: {still}"


def test_a_rewrite_that_changes_what_the_program_prints_is_a_counted_reject(tmp_path, sandbox):
    source = ("rate = 0.25\nsteps = 12\nprint('Total:', rate * steps)\n"
              "print('Source size:', len(open(__file__).read()))\n")
    rows, recorder, _ = _seeds(tmp_path, sandbox, {"selfread.py": source})
    assert rows == []
    [reject] = [r for r in recorder.rejects if r.item_id == "sir-teaching:selfread.py"]
    assert reject.reason == "parameters_unreproduced" and "prints something else" in reject.message
    assert reject.detail["parameters"] == ["rate", "steps"]


def test_a_script_that_reads_data_keeps_its_constants_in_the_code(tmp_path, sandbox):
    source = "import csv\nscale = 2.5\nrows = list(csv.reader(open('obs.csv')))[1:]\n" \
             "print(f'Mean: {scale * sum(float(r[1]) for r in rows) / len(rows):.4f}')\n"
    data = "id,value\n1,3.25\n2,4.5\n3,5.75\n"
    rows, recorder, _ = _seeds(tmp_path, sandbox, {"mean.py": source, "obs.csv": data})
    [seed] = rows
    assert seed.parameters_file is None and [f.path for f in seed.data_files] == ["obs.csv"]
    assert seed.tree == str(tmp_path / "repo") and "parameter_rewrites_tried" not in recorder.counters


def test_without_constants_or_with_the_step_off_no_data_read_stays(tmp_path, sandbox):
    rows, recorder, _ = _seeds(tmp_path / "a", sandbox, {"hello.py": "import math\nprint('Pi:', math.pi)\n"})
    assert rows == [] and [r.reason for r in recorder.rejects] == ["no_data_read"]
    assert "no numeric constant" in recorder.rejects[0].message
    rows, recorder, _ = _seeds(tmp_path / "b", sandbox, {"sir.py": SIR}, trees=False)
    assert rows == [] and [r.reason for r in recorder.rejects] == ["no_data_read"]


def test_the_generated_lines_are_the_prelude_and_the_reads_and_nothing_else():
    done = parameterize(SIMULATION, "sir.py", ".", set())
    lines = done.program.splitlines()
    marked = generated_lines(done.program, done.path)
    assert sorted(lines[n - 1].split(" ")[0] for n in marked) == sorted(
        ["import", "with", "", "N", "beta", "gamma", "days", "y0"])
    assert all("_params" in lines[n - 1] or "json" in lines[n - 1] for n in marked)
    assert generated_lines(SIMULATION, PARAMETERS_FILE) == set(), "a program nobody rewrote has none"


def _run(files: dict[str, bytes], stdout: str = "S = 3.5\n"):
    from trailforge.sandbox.base import OK, RunResult
    return RunResult(exit_code=0, reason=OK, stdout=stdout, stderr="", stdout_truncated=False, files=files,
                     oversized_files=[], duration_s=0.1)


def test_a_library_cache_only_the_rewritten_run_wrote_is_no_difference_but_a_figure_or_result_is():
    from trailforge.envs.seeds import reproduction_problem
    from trailforge.sandbox import PLOTS_FILE, TRACE_FILE

    trace = json.dumps({"reads": ["parameters.json"]}).encode()
    original = _run({TRACE_FILE: b"{}", PLOTS_FILE: b"[1]", "out/table.csv": b"a\n1\n"})
    # An environment's first run leaves fontconfig's cache under the scratch HOME; the second finds it there.
    warm = _run({TRACE_FILE: trace, PLOTS_FILE: b"[1]", "out/table.csv": b"a\n1\n",
                 ".cache/fontconfig/3047814df9a2f067bd2d96a2b9c36e5a-le64.cache-8": b"\0"})
    assert reproduction_problem(original, warm, "parameters.json") is None
    other_figure = _run({TRACE_FILE: trace, PLOTS_FILE: b"[2]", "out/table.csv": b"a\n1\n"})
    assert "differ" in reproduction_problem(original, other_figure, "parameters.json")
    extra_result = _run({TRACE_FILE: trace, PLOTS_FILE: b"[1]", "out/table.csv": b"a\n1\n", "out/more.csv": b"b\n"})
    assert "other files" in reproduction_problem(original, extra_result, "parameters.json")


MODEL_CLI = '''import argparse
import json

RATE = 0.35


def main():
    parser = argparse.ArgumentParser(description="Run the bucket model from a config file.")
    parser.add_argument("-y", "--configfile", help="JSON file with every input")
    args = parser.parse_args()
    if args.configfile is None:
        parser.print_help()
        return
    config = json.load(open(args.configfile))
    print("Outflow:", RATE * sum(config["rain"]))


if __name__ == "__main__":
    main()
'''


def test_a_readme_start_that_reads_data_wins_over_a_parameter_seed_of_the_bare_start(tmp_path, sandbox):
    """The bare start runs cleanly but prints a help text; its RATE would make a parameter seed. The README's
    command (with the tree's config in place of its example name) reads data: that start is the seed."""
    files = {"model/model.py": MODEL_CLI, "README.md": "Run it:\n\n    model -y config.json\n",
             "examples/forward/cfg.json": '{"rain": [1.0, 2.5, 4.0]}'}
    rows, recorder, _ = _seeds(tmp_path, sandbox, files)
    [seed] = rows
    assert (seed.cwd, seed.args, seed.parameters_file) == ("examples/forward", ["-y", "cfg.json"], None)
    assert "Outflow: 2.625" in seed.stdout and "parameter_rewrites_tried" not in recorder.counters


def test_a_bare_start_that_only_prints_its_usage_is_no_parameter_seed(tmp_path, sandbox):
    rows, recorder, _ = _seeds(tmp_path, sandbox, {"model.py": MODEL_CLI})
    assert rows == [], "a help text is not the program at work"
    [reject] = [r for r in recorder.rejects if r.item_id == "sir-teaching:model.py"]
    assert reject.reason == "no_data_read" and "printed its usage text" in reject.message
    assert "parameter_rewrites_tried" not in recorder.counters
