"""Backward slices on programs with functions, loops, branches and reassignment, checked by running them."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trailforge.envs.slicing import SliceError, backward, slice_program
from trailforge.envs.workflow import analyse_program


def _slice(source: str, name: str, nth: int = 1, extra: dict[str, str] | None = None):
    sources = {"prog.py": source, **(extra or {})}
    program = analyse_program(sources, "prog.py")
    units = [u for u in program.units() if u.path == "prog.py" and name in u.defs and u.kind != "FunctionDef"]
    return slice_program(program, sources, units[nth - 1], name)


def _run(tmp_path, text: str, name: str, extra: dict[str, str] | None = None):
    (tmp_path / "prog.py").write_text(text)
    for path, body in (extra or {}).items():
        (tmp_path / path).write_text(body)
    done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "result" / f"{name}.json").read_text()), done.stdout


REASSIGN = """x = 1
y = x * 2
x = 5
unused = x * 100
z = x + y
print("z:", z)
"""


def test_reassignment_keeps_the_definition_that_reaches(tmp_path):
    sliced = _slice(REASSIGN, "y")
    assert "x = 5" not in sliced.text and "unused" not in sliced.text and "print" not in sliced.text
    value, stdout = _run(tmp_path, sliced.text, "y")
    assert value == 2 and stdout == ""
    sliced_z = _slice(REASSIGN, "z")
    assert "x = 1" in sliced_z.text and "x = 5" in sliced_z.text and "unused" not in sliced_z.text
    assert _run(tmp_path, sliced_z.text, "z")[0] == 7


BRANCH_LOOP = """import math
values = [3.0, 1.0, 4.0, 1.0, 5.0]
noise = [v * 7 for v in values]
if len(values) > 3:
    scale = 2.0
else:
    scale = 1.0
total = 0.0
for v in values:
    if v > 1.0:
        total += math.log(v) * scale
count = len(noise)
mean_log = total / len(values)
"""


def test_branches_and_accumulating_loops_are_kept_whole(tmp_path):
    sliced = _slice(BRANCH_LOOP, "mean_log")
    assert "noise" not in sliced.text and "count" not in sliced.text
    assert "else:" in sliced.text and "for v in values:" in sliced.text
    expected = sum(math_log(v) * 2.0 for v in [3.0, 4.0, 5.0]) / 5
    assert _run(tmp_path, sliced.text, "mean_log")[0] == pytest.approx(expected)


def math_log(v):
    import math
    return math.log(v)


FUNCTIONS = '''"""Module docstring that is dropped."""
import json
from helpers import normalise

LIMIT = 3


def load(path):
    with open(path) as fh:
        return json.load(fh)


def summarise(values):
    shares = normalise(values)
    top = sorted(shares, reverse=True)[:LIMIT]
    spread = max(top) - min(top)
    print("top shares", top)
    return spread


def main():
    values = load("obs.json")
    ignored = [v * 2 for v in values]
    spread = summarise(values)
    print(f"Spread: {spread}")


if __name__ == "__main__":
    main()
'''
HELPERS = "def normalise(values):\n    total = sum(values)\n    return [v / total for v in values]\n"


def test_target_inside_a_function_is_reached_through_its_call_chain(tmp_path):
    (tmp_path / "obs.json").write_text("[4, 1, 3, 2]")
    sliced = _slice(FUNCTIONS, "top", extra={"helpers.py": HELPERS})
    text = sliced.text
    assert "ignored" not in text, "statements the target does not depend on are dropped"
    assert "spread = max(top)" not in text and 'print("top shares"' not in text, "nothing after the target"
    assert "def load(path):" in text and "LIMIT = 3" in text, "helpers and constants it needs stay"
    assert "Module docstring" not in text
    assert text.index("def report_result") > text.index("from helpers import normalise")
    value, stdout = _run(tmp_path, text, "top", extra={"helpers.py": HELPERS})
    assert value == pytest.approx([0.4, 0.3, 0.2]) and stdout == ""
    assert {"top"} in [set(step[0]) for step in sliced.steps]


def test_a_function_called_from_two_places_cannot_be_sliced():
    source = "def f(x):\n    y = x * 2\n    return y\n\na = f(1)\nb = f(2)\n"
    with pytest.raises(SliceError) as err:
        _slice(source, "y")
    assert err.value.reason == "ambiguous_call_chain"


def test_statements_sharing_a_line_are_refused():
    with pytest.raises(SliceError) as err:
        _slice("a = 1; b = a + 1\nc = b * 2\n", "c")
    assert err.value.reason == "unsliceable"


def test_hidden_state_changes_are_kept(tmp_path):
    source = "import random\nrandom.seed(7)\nnoise = [1, 2]\nx = random.random()\n"
    sliced = _slice(source, "x")
    assert "random.seed(7)" in sliced.text and "noise" not in sliced.text
    import random
    random.seed(7)
    assert _run(tmp_path, sliced.text, "x")[0] == random.random()


def test_backward_walk_stops_needing_a_fully_rebound_name():
    program = analyse_program({"p.py": "a = 1\nb = 2\na = b\nc = a\n"}, "p.py")
    units = program.scopes[("p.py", 0)]
    keep, free = backward(units, 3, set())
    assert keep == {1, 2, 3} and free == set()


def test_step_names_follow_the_unpacking_order():
    from trailforge.envs.slicing import _in_written_order

    assert _in_written_order({"intercept", "slope"}, "slope, intercept = np.polyfit(x, y, 1)\n") == (
        "slope", "intercept")
    assert _in_written_order({"b", "a"}, "for b, a in pairs:\n    pass\n") == ("b", "a")


def test_statement_keeps_bar_and_caret_in_names():
    from trailforge.envs.untrusted_text import clean

    assert clean("MDW-01|MDW-02") == "MDW-01|MDW-02"
    assert clean("R^2") == "R^2"


def test_a_slice_that_does_not_parse_is_a_counted_reject_not_a_program(monkeypatch):
    # The guard behind every slice: should the cut text ever fail to parse (a slicer bug on code it has not
    # seen), slice_program raises the reason the tasks stage counts, and no program reaches a task.
    import trailforge.envs.slicing as slicing

    real = slicing._insert_helper
    monkeypatch.setattr(slicing, "_insert_helper", lambda *a, **k: real(*a, **k) + "if z:\n")
    with pytest.raises(SliceError) as caught:
        _slice(REASSIGN, "z")
    assert caught.value.reason == "slice_unparseable" and "does not parse" in caught.value.message


BUCKETS = '''"""A linear-reservoir model written as a class, as hydrology codes often are."""
import json


class Bucket:
    """One reservoir."""

    def __init__(self, k):
        self.k = k
        self.levels = []

    def load(self, path):
        self.rain = json.load(open(path))

    def run(self):
        level = 0.0
        for rain in self.rain:
            level = level + rain - self.k * level
            self.levels.append(level)
        self.score()

    def score(self):
        peak = max(self.levels)
        mean = sum(self.levels) / len(self.levels)
        ratio = peak / mean
        print("ratio:", ratio)

    def unused(self):
        return "never called"


b = Bucket(0.25)
b.load("rain.json")
b.run()
print("levels:", len(b.levels))
'''


def test_a_target_inside_a_method_is_reached_through_the_methods_that_call_it(tmp_path):
    (tmp_path / "rain.json").write_text("[4.0, 0.0, 2.5, 1.0, 0.0]")
    sliced = _slice(BUCKETS, "ratio")
    text = sliced.text
    assert "def unused(self):" in text, "the class keeps its other methods whole"
    assert 'print("ratio:", ratio)' not in text and 'print("levels:"' not in text, "nothing after the target"
    assert "b.load(\"rain.json\")" in text, "a call that sets the object's state stays"
    value, _ = _run(tmp_path, text, "ratio")
    levels, level = [], 0.0
    for rain in [4.0, 0.0, 2.5, 1.0, 0.0]:
        level = level + rain - 0.25 * level
        levels.append(level)
    assert value == pytest.approx(max(levels) / (sum(levels) / len(levels)))


def test_a_method_two_classes_define_is_not_sliced():
    source = BUCKETS + "\n\nclass Other:\n    def score(self):\n        return 1\n"
    with pytest.raises(SliceError) as err:
        _slice(source, "ratio")
    assert err.value.reason == "ambiguous_call_chain" and "2 classes define score" in err.value.message


MODEL_MODULE = '''"""The model lives in a package module; the entry script only drives it."""
import json

SCALE = 2.0


class Fit:
    def __init__(self, path):
        self.values = json.load(open(path))

    def run(self):
        self.centred()
        print("done")

    def centred(self):
        mean = sum(self.values) / len(self.values)
        centred = [SCALE * (v - mean) for v in self.values]
        print("first", centred[0])
        return centred
'''
DRIVER = "from model.fit import Fit\n\nfit = Fit('obs.json')\nfit.run()\nprint('after')\n"


def test_a_target_in_a_helper_module_is_reported_from_that_module(tmp_path):
    (tmp_path / "obs.json").write_text("[4, 1, 3, 2]")
    sources = {"prog.py": DRIVER, "model/fit.py": MODEL_MODULE, "model/__init__.py": ""}
    program = analyse_program(sources, "prog.py")
    [unit] = [u for u in program.units() if u.path == "model/fit.py" and "centred" in u.defs]
    sliced = slice_program(program, sources, unit, "centred")
    assert set(sliced.files) == {"prog.py", "model/fit.py"} and sliced.target_path == "model/fit.py"
    helper = sliced.files["model/fit.py"]
    assert "SCALE = 2.0" in helper and "def __init__(self, path):" in helper, "its module level stays whole"
    assert 'print("first"' not in helper and "report_result('centred', centred)" in helper
    assert "print('after')" not in sliced.files["prog.py"]
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("")
    (tmp_path / "model" / "fit.py").write_text(helper)
    value, stdout = _run(tmp_path, sliced.files["prog.py"], "centred")
    assert value == pytest.approx([3.0, -3.0, 1.0, -1.0]) and stdout == ""


def test_a_helper_line_that_runs_at_import_is_no_target():
    sources = {"prog.py": DRIVER, "model/fit.py": MODEL_MODULE + "\nOFFSET = SCALE * 3\n", "model/__init__.py": ""}
    program = analyse_program(sources, "prog.py")
    [unit] = [u for u in program.units() if u.path == "model/fit.py" and "OFFSET" in u.defs]
    with pytest.raises(SliceError) as err:
        slice_program(program, sources, unit, "OFFSET")
    assert err.value.reason == "not_in_entry"


def test_an_entry_statement_that_changes_a_helper_module_stays_in_the_slice(tmp_path):
    helper = "SCALE = 1.0\n\n\ndef compute(xs):\n    zs = [SCALE * x + x for x in xs]\n    return sum(zs)\n"
    entry = "import helper\nfrom helper import compute\n\nhelper.SCALE = 3.0\nout = compute([1.0, 2.0])\nprint(out)\n"
    sources = {"prog.py": entry, "helper.py": helper}
    program = analyse_program(sources, "prog.py")
    [unit] = [u for u in program.units() if u.path == "helper.py" and "zs" in u.defs]
    sliced = slice_program(program, sources, unit, "zs")
    assert "helper.SCALE = 3.0" in sliced.files["prog.py"]
    (tmp_path / "helper.py").write_text(sliced.files["helper.py"])
    value, _ = _run(tmp_path, sliced.files["prog.py"], "zs")
    assert value == [4.0, 8.0]


def test_a_helper_that_defines_its_own_main_does_not_hide_the_entry_main():
    entry = "def main():\n    data = [3, 1, 2]\n    total = sum(data) * 2\n    print(total)\n\nmain()\n"
    sources = {"prog.py": entry, "tools.py": "def main():\n    return 0\n"}
    program = analyse_program(sources, "prog.py")
    [unit] = [u for u in program.units() if u.path == "prog.py" and "total" in u.defs]
    assert "report_result('total', total)" in slice_program(program, sources, unit, "total").text


def test_a_method_whose_body_is_on_its_def_line_is_a_counted_reject():
    source = "class K:\n    def __init__(self):\n        self.k = 2\n    def score(self, x): z = x * self.k; return z\n\n" \
             "print(K().score(3))\n"
    program = analyse_program({"prog.py": source}, "prog.py")
    units = [u for u in program.units() if "z" in u.defs]
    if not units:
        pytest.skip("the analyser keeps no statement unit for a body on the def line")
    with pytest.raises(SliceError) as err:
        slice_program(program, {"prog.py": source}, units[0], "z")
    assert err.value.reason in ("unsliceable", "ambiguous_call_chain")
