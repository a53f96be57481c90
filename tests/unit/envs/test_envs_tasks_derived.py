"""Pieces of derived-task construction that need no sandbox."""
from __future__ import annotations

import ast

from trailforge.envs.tasks.completion import _zero_fill


def test_zero_fill_of_a_function_hole_returns_zero_and_keeps_the_header():
    hole = {"kind": "function", "stub": 'def rate(x, y):\n    """Slope."""\n    raise NotImplementedError("implement rate")\n'}
    filled = _zero_fill(hole)
    assert filled == 'def rate(x, y):\n    """Slope."""\n    return 0\n'
    ast.parse(filled)


def test_zero_fill_of_a_block_hole_binds_every_defined_name():
    hole = {"kind": "block", "defines": {"rarest": None, "count": None},
            "stub": '    raise NotImplementedError("missing step: compute rarest, count")\n'}
    assert _zero_fill(hole) == "    rarest = count = 0\n"


def test_block_holes_are_found_in_an_imported_module_of_the_program():
    from types import SimpleNamespace

    from trailforge.config.schema import TasksConfig
    from trailforge.envs.tasks.completion import completion_holes
    from trailforge.envs.workflow import analyse_program, build_graph

    sources = {
        "main.py": "from helper import fit\nprint('Slope:', fit([1.0, 2.0, 3.0], [2.0, 4.1, 6.2]))\n",
        "helper.py": ("import numpy as np\n\n\ndef fit(x, y):\n"
                      "    slope = np.polyfit(np.asarray(x), np.asarray(y), 1)[0]\n"
                      "    return slope\n"),
    }
    program = analyse_program(sources, "main.py")
    units = [{"path": u.path, "line": u.line, "count": 1} for u in program.units()]
    trace = {"units": units, "values": [], "calls": [{"path": "helper.py", "line": 4, "function": "fit", "count": 1}]}
    ctx = SimpleNamespace(program=program, sources=sources, graph=build_graph(program, trace, [], []),
                          workflow=SimpleNamespace(trace=trace), cfg=TasksConfig(), modules={"np", "fit"},
                          seed=SimpleNamespace(script="main.py"))
    blocks = [h for h in completion_holes(ctx) if h["kind"] == "block"]
    assert [(h["path"], h["line"], h["name"]) for h in blocks] == [("helper.py", 5, "slope")]


def test_slightly_moved_fields_are_those_off_the_reference_but_not_changed():
    from trailforge.envs.tasks.compare import differences, slightly_moved
    from trailforge.io import AnswerField

    schema = [AnswerField(name=n, type="number", label=n, source="stdout") for n in ("slope", "rmin", "mean")]
    ref = {"slope": 2.0, "rmin": -10.45318729, "mean": 0.5}
    got = {"slope": 2.5, "rmin": -10.45318999, "mean": 0.5}
    changed = differences(schema, ref, got)
    assert changed == {"slope": "it comes out too high"}
    assert slightly_moved(schema, ref, got, changed) == ["rmin"]


def test_corrections_never_edit_the_lines_that_read_a_generated_parameters_file():
    import random
    from types import SimpleNamespace

    from trailforge.config.schema import TasksConfig
    from trailforge.envs.tasks.correction import correction_candidates
    from trailforge.envs.parameters import parameterize
    from trailforge.envs.workflow import analyse_program, build_graph

    original = ("import matplotlib.pyplot as plt\nn = 40\ndt = 0.05\nk = 1.5\nx = [1.0]\n"
                "for i in range(n - 1):\n    x.append(x[-1] - k * x[-1] * dt)\nplt.plot(x)\nplt.show()\n")
    rewritten = parameterize(original, "decay.py", ".", set())
    sources = {"decay.py": rewritten.program}
    program = analyse_program(sources, "decay.py")
    trace = {"lines": {"decay.py": list(range(1, len(rewritten.program.splitlines()) + 1))}, "values": [],
             "calls": []}

    def candidates(parameters_file):
        ctx = SimpleNamespace(program=program, sources=sources, graph=build_graph(program, trace, [], []),
                              workflow=SimpleNamespace(trace=trace), cfg=TasksConfig(),
                              seed=SimpleNamespace(script="decay.py", program_files=["decay.py"],
                                                   parameters_file=parameters_file),
                              rng=lambda purpose: random.Random(purpose))
        return {m.line for m in correction_candidates(ctx)}

    reads = {n for n, line in enumerate(rewritten.program.splitlines(), 1) if "_params" in line or "json" in line}
    assert candidates(None) & reads, "without the mark, the key swap on a read line is a candidate"
    edited = candidates(rewritten.path)
    assert edited and not edited & reads, "the model's own lines (the Euler step) are still candidates"


def test_a_hole_reached_only_after_every_graded_field_is_reported_is_rejected():
    """ZLS92: the hole sat in a figure drawn after the graded results; the unfilled program crashed there, yet
    its answer was complete and the eval accepted it (verify: eval_accepts_incomplete)."""
    from trailforge.envs.tasks.completion import graded_hole_problem
    from trailforge.io import AnswerField

    schema = [AnswerField(name=n, type="number", label=n, source="stdout") for n in ("slope", "rmse")]
    answer = {"slope": 2.5, "rmse": 0.31}
    crashed_late = (False, dict(answer))
    assert graded_hole_problem(schema, answer, {}, crashed_late, (True, {"slope": 0.0, "rmse": 9.0}))[0] \
        == "hole_after_results"
    assert graded_hole_problem(schema, answer, {}, (True, dict(answer)), (True, dict(answer)))[0] == "hole_not_needed"
    crashed_early = (False, {})
    assert graded_hole_problem(schema, answer, {}, crashed_early, (True, dict(answer)))[0] == "hole_not_graded"
    assert graded_hole_problem(schema, answer, {}, crashed_early, (True, {"slope": 0.0, "rmse": 0.31})) is None
    # judged on the fields the statement grades: a change only in a field it dropped does not count
    assert graded_hole_problem(schema[:1], {"slope": 2.5}, {}, (False, {"slope": 2.5, "rmse": 7.0}),
                               (False, {}))[0] == "hole_after_results"


def test_the_numbers_of_a_removed_step_are_stated():
    """The agent never sees the removed code: AndrehChu's shrinkage weight (0.25) or ZoharBNH5's bin edges
    (np.arange(0, 600 + 150, 150)) must come from the statement, and verify asks for them."""
    from trailforge.envs.tasks.statement import completion_statement
    from trailforge.envs.tasks.completion import removed_numbers

    source = ("import numpy as np\nv = np.loadtxt('d.txt')\nshrunk = 0.25 * v + 0.25 * v.var()\n"
              "edges = np.arange(0, 600 + 150, 150)\nprint('Mean:', shrunk.mean(), np.histogram(v, edges)[0])\n")
    assert removed_numbers(source, 3, 3) == [0.25]
    assert sorted(removed_numbers(source, 4, 4)) == [150, 600]
    hole = {"kind": "block", "path": "a.py", "line": 3, "end_line": 3, "scope": "<module>",
            "defines": {"shrunk": None}, "reads": ["v"], "operations": ["v.var"], "numbers": [0.25]}
    text = completion_statement("r", "ecology", "a.py", [], hole, ["a.py"], [], {})
    assert "`0.25`" in text


def test_a_single_call_with_a_number_of_its_own_is_a_hole_and_a_bare_conversion_is_not():
    """Ryn-Oliphant's Young's modulus is one np.polyfit over rows 0:200: a call and a window are two choices
    (and the statement gives the 200). ``np.asarray(x)`` alone is one choice: no step worth a task."""
    from types import SimpleNamespace

    from trailforge.config.schema import TasksConfig
    from trailforge.envs.tasks.completion import completion_holes
    from trailforge.envs.workflow import analyse_program, build_graph

    sources = {"main.py": ("import numpy as np\nd = np.loadtxt('t.txt')\narr = np.asarray(d)\n"
                           "fit = np.polyfit(arr[0:200, 5], arr[0:200, 1], 1)\nprint('Modulus:', fit[0])\n")}
    program = analyse_program(sources, "main.py")
    units = [{"path": u.path, "line": u.line, "count": 1} for u in program.units()]
    trace = {"units": units, "values": [], "calls": []}
    ctx = SimpleNamespace(program=program, sources=sources, graph=build_graph(program, trace, [], []),
                          workflow=SimpleNamespace(trace=trace), cfg=TasksConfig(), modules={"np"},
                          seed=SimpleNamespace(script="main.py"))
    holes = {h["line"]: h for h in completion_holes(ctx) if h["kind"] == "block"}
    assert 3 not in holes
    assert holes[4]["numbers"] == [200] and holes[4]["operations"] == ["numpy.polyfit"]


def test_an_undocumented_function_too_big_to_infer_is_no_hole_and_a_small_one_names_its_calls():
    """andrehchu's calculate_p_values (a bespoke test: shrinkage, then negative binomial or Poisson, two-sided)
    was a hole whose statement gave a signature and `0.25`: a reviewer's seven plausible bodies all missed."""
    from types import SimpleNamespace

    from trailforge.config.schema import TasksConfig
    from trailforge.envs.tasks.statement import completion_statement
    from trailforge.envs.tasks.completion import completion_holes
    from trailforge.envs.workflow import analyse_program, build_graph

    branches = "".join(f"        if v > {k}:\n            t = t + {k}\n" for k in range(3, 9))
    sources = {"main.py": ("from scipy.stats import norm\n\n\ndef crit(h, f):\n    return -0.5 * (norm.ppf(h) + norm.ppf(f))\n"
                           "\n\ndef bespoke(vals):\n    t = 0\n    for v in vals:\n" + branches + "    return t\n\n\n"
                           "print('c:', crit(0.8, 0.2), 'b:', bespoke([4, 9]))\n")}
    program = analyse_program(sources, "main.py")
    units = [{"path": u.path, "line": u.line, "count": 1} for u in program.units()]
    calls = [{"path": "main.py", "line": line, "count": 1, "args": {}, "returns": None}
             for line in (program.functions["crit"][1], program.functions["bespoke"][1])]
    trace = {"units": units, "values": [], "calls": calls}
    ctx = SimpleNamespace(program=program, sources=sources, graph=build_graph(program, trace, [], []),
                          workflow=SimpleNamespace(trace=trace), cfg=TasksConfig(), modules={"norm"},
                          seed=SimpleNamespace(script="main.py"))
    functions = {h["name"]: h for h in completion_holes(ctx) if h["kind"] == "function"}
    assert "bespoke" not in functions  # 15 statements, no docstring
    ctx.cfg = TasksConfig(completion={"max_undocumented_statements": 20})
    assert "bespoke" in {h["name"] for h in completion_holes(ctx) if h["kind"] == "function"}
    assert functions["crit"]["operations"] == ["scipy.stats.norm.ppf"] and functions["crit"]["numbers"] == [-0.5]
    text = completion_statement("r", "neuroscience", "main.py", [], functions["crit"], ["main.py"], [], {})
    assert "The original body used `scipy.stats.norm.ppf`." in text and "`-0.5`" in text
