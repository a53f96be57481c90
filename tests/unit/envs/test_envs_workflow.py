"""Workflow graphs: statement analysis, the value tracer run for real, graph shape and informative targets."""
from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import xml.dom.minidom

import networkx as nx
import pytest

from trailforge.envs.workflow import (
    PLAN_FILE, analyse_program, analyse_statement, build_graph, graph_from_json, graph_json, import_aliases,
    informative_targets, result_kind, trace_plan, upstream_operations,
)
from trailforge.envs.graph_render import render_dot, render_svg
from trailforge.sandbox import TRACE_RUNNER


def _stmt(code: str):
    module = ast.parse(code)
    return analyse_statement(module.body[-1], import_aliases(module))


@pytest.mark.parametrize("code, defs, kills, uses", [
    ("x = a + b", {"x"}, {"x"}, {"a", "b"}),
    ("x += a", {"x"}, set(), {"x", "a"}),
    ("rows.append(v)", {"rows"}, set(), {"rows", "v"}),
    ("df['c'] = df['a'] * 2", {"df"}, set(), {"df"}),
    ("df.sort_values('a', inplace=True)", {"df"}, set(), {"df"}),
    ("a, (b, c) = f(x)", {"a", "b", "c"}, {"a", "b", "c"}, {"f", "x"}),
    ("total = sum(v for v in values if v > t)", {"total"}, {"total"}, {"sum", "values", "t"}),
    ("for i in range(n):\n    acc += i", {"i", "acc"}, set(), {"range", "n", "acc", "i"}),
])
def test_statement_definitions_and_uses(code, defs, kills, uses):
    info = _stmt(code)
    assert info["defs"] == defs
    assert info["kills"] == kills
    assert info["uses"] == uses


def test_library_calls_resolve_import_aliases_and_module_methods_do_not_redefine():
    info = _stmt("import numpy as np\nimport pandas as pd\ny = np.log(pd.read_csv('d.csv')['v']).mean()")
    assert info["calls"][:3] == ["numpy.log", "pandas.read_csv", ".mean"] or set(info["calls"]) >= {
        "numpy.log", "pandas.read_csv", ".mean"}
    assert "np" not in info["defs"] and "pd" not in info["defs"]


def test_function_definition_uses_only_its_free_names():
    info = _stmt("def f(a, b=DEFAULT):\n    c = a * SCALE\n    return helper(c, b)")
    assert info["defs"] == {"f"}
    assert info["uses"] == {"SCALE", "helper", "DEFAULT"}


PROGRAM = '''import json

SCALE = 2.5


def weight(values):
    total = sum(values)
    return [v / total for v in values]


def main():
    with open("data/obs.json") as fh:
        raw = json.load(fh)
    counts = [float(r["count"]) for r in raw]
    shares = weight(counts)
    peak = max(shares) * SCALE
    acc = 0.0
    for s in shares:
        acc += s * s
    simpson = 1.0 - acc
    for i in range(3):
        step = i * 2
    print(f"Peak share: {peak:.4f}")
    print(f"Simpson: {simpson:.4f}")


if __name__ == "__main__":
    main()
'''


@pytest.fixture
def traced(tmp_path):
    """The program above, run for real under the value tracer."""
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "obs.json").write_text(json.dumps([{"count": c} for c in (4, 1, 3, 2)]))
    (work / "prog.py").write_text(PROGRAM)
    program = analyse_program({"prog.py": PROGRAM}, "prog.py")
    (work / PLAN_FILE).write_text(json.dumps(trace_plan(program)))
    shutil.copy(TRACE_RUNNER, work / ".tf_trace.py")
    done = subprocess.run([sys.executable, ".tf_trace.py", "--values", "prog.py"], cwd=work, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Peak share: 1.0000" in done.stdout
    trace = json.loads((work / ".tf_trace.json").read_text())
    return program, trace


def test_tracer_records_values_runs_coverage_and_calls(traced):
    program, trace = traced
    values = {(v["line"], v["name"]): v for v in trace["values"]}
    main_line = next(key for key in program.scopes if program.scope_name(key) == "main")[1]
    lines = {u.line: u for u in program.scopes[("prog.py", main_line)]}
    peak_line = next(line for line, u in lines.items() if "peak" in u.defs)
    assert values[(peak_line, "peak")]["summary"] == {"type": "float", "value": 0.4 * 2.5}
    simpson_line = next(line for line, u in lines.items() if "simpson" in u.defs)
    assert values[(simpson_line, "simpson")]["summary"]["value"] == pytest.approx(1 - (0.16 + 0.01 + 0.09 + 0.04))
    # the accumulating loop finishes once; its value is the value after the loop
    loop_line = next(line for line, u in lines.items() if u.kind == "For" and "acc" in u.defs)
    assert values[(loop_line, "acc")]["summary"]["value"] == pytest.approx(0.3)
    runs = {(u["path"], u["line"]): u["count"] for u in trace["units"]}
    assert runs[("prog.py", loop_line)] == 1
    calls = {c["function"]: c for c in trace["calls"]}
    assert calls["weight"]["count"] == 1
    assert calls["weight"]["returns"]["len"] == 4
    assert calls["weight"]["args"]["values"]["type"] == "list"
    assert peak_line in trace["lines"]["prog.py"]


def test_graph_links_data_operations_variables_and_outputs(traced):
    program, trace = traced
    graph = build_graph(program, trace, ["data/obs.json"], [])
    kinds = {a["kind"] for _, a in graph.nodes(data=True)}
    assert {"operation", "variable", "data_file", "output", "return"} <= kinds
    simpson = next(n for n, a in graph.nodes(data=True) if a.get("name") == "simpson")
    ancestors = nx.ancestors(graph, simpson)
    assert "data:data/obs.json" in ancestors, "the result depends on the file read"
    assert "return:prog.py:weight" in ancestors, "the dependency crosses into the function the program defines"
    assert not any(graph.nodes[n].get("name") == "step" for n in ancestors), "an unrelated loop is not upstream"
    assert upstream_operations(graph, simpson) >= 4
    again = graph_from_json(json.loads(json.dumps(graph_json(graph))))
    assert sorted(again.edges()) == sorted(graph.edges())
    dot = render_dot(graph, "prog")
    assert dot.startswith('digraph "prog"') and "simpson" in dot and "->" in dot
    picture = xml.dom.minidom.parseString(render_svg(graph, "prog <&>"))
    groups = {g.getAttribute("class"): g for g in picture.getElementsByTagName("g") if g.getAttribute("class")}
    assert len(groups["nodes"].getElementsByTagName("rect")) == graph.number_of_nodes()
    assert len(groups["edges"].getElementsByTagName("line")) == graph.number_of_edges()


def test_targets_are_single_run_informative_results_not_loop_leftovers(traced):
    program, trace = traced
    graph = build_graph(program, trace, ["data/obs.json"], [])
    targets = {t["name"]: t for t in informative_targets(program, graph, trace, {2.5, 3, 2}, 2, 50)}
    assert {"peak", "simpson", "acc", "shares", "counts"} <= set(targets)
    assert "step" not in targets and "i" not in targets and "s" not in targets  # last pass of a loop
    assert "SCALE" not in targets  # a constant the program states
    assert targets["simpson"]["kind"] == "number"
    assert targets["shares"]["kind"] == "number_list"
    strict = informative_targets(program, graph, trace, set(), 6, 50)
    assert {t["name"] for t in strict} < set(targets), "min_upstream_ops drops shallow results"


@pytest.mark.parametrize("summary, kind", [
    ({"type": "float", "value": 1.5}, "number"),
    ({"type": "int", "value": 1}, None),
    ({"type": "int", "value": 42}, "integer"),
    ({"type": "Series", "shape": [5], "numeric": True}, "table"),
    ({"type": "Series", "shape": [500], "numeric": True}, None),
    ({"type": "DataFrame", "shape": [4, 3], "numeric_columns": ["a"]}, "table"),
    ({"type": "DataFrame", "shape": [4, 30], "numeric_columns": ["a"]}, None),
    ({"type": "dict", "len": 3, "numeric": True}, "mapping"),
    ({"type": "str", "len": 3}, None),
    (None, None),
])
def test_result_kind(summary, kind):
    assert result_kind(summary, 50) == kind


def test_tracer_records_files_opened_for_writing_even_when_unchanged(tmp_path):
    """A script that re-exports a file the repository ships, byte for byte, changes nothing a run can see;
    the trace still says it wrote there, so the seed keeps that folder for runs on other data."""
    work = tmp_path / "work"
    (work / "exported").mkdir(parents=True)
    (work / "exported" / "out.csv").write_text("a,b\n1,2\n")
    (work / "prog.py").write_text('open("exported/out.csv", "w").write("a,b\\n1,2\\n")\n'
                                  'print(open("exported/out.csv").read())\n')
    shutil.copy(TRACE_RUNNER, work / ".tf_trace.py")
    done = subprocess.run([sys.executable, ".tf_trace.py", "prog.py"], cwd=work, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    trace = json.loads((work / ".tf_trace.json").read_text())
    assert "exported/out.csv" in trace["writes"]
    assert "exported/out.csv" in trace["reads"]
    from trailforge.envs.seeds import output_folders

    assert output_folders(work, trace["writes"]) == ["exported"]


CLASS_PROGRAM = '''import json


class Bucket:
    def __init__(self, tau):
        self.tau = tau
        self.stored = 0.0
        self.out = []

    def run(self, rain):
        for r in rain:
            self.stored += r
            q = self.stored / self.tau
            self.stored -= q
            self.out.append(q)

    def finalize(self):
        mean_q = sum(self.out) / len(self.out)
        print(f"Mean discharge: {mean_q:.4f}")


def main():
    with open("data/rain.json") as fh:
        rain = json.load(fh)
    b = Bucket(3.0)
    b.run(rain)
    b.finalize()


if __name__ == "__main__":
    main()
'''


def test_methods_of_a_class_are_traced_and_feed_what_the_program_prints(tmp_path):
    from trailforge.envs.tasks.context import feeds_output, innermost_unit

    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "rain.json").write_text(json.dumps([1.0, 0.0, 2.0, 4.0]))
    (work / "prog.py").write_text(CLASS_PROGRAM)
    program = analyse_program({"prog.py": CLASS_PROGRAM}, "prog.py")
    assert {program.scope_name(k) for k in program.scopes} >= {"Bucket.run", "Bucket.finalize", "Bucket.__init__"}
    (work / PLAN_FILE).write_text(json.dumps(trace_plan(program)))
    shutil.copy(TRACE_RUNNER, work / ".tf_trace.py")
    done = subprocess.run([sys.executable, ".tf_trace.py", "--values", "prog.py"], cwd=work, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    trace = json.loads((work / ".tf_trace.json").read_text())
    q_line = CLASS_PROGRAM.splitlines().index("            q = self.stored / self.tau") + 1
    assert q_line in trace["lines"]["prog.py"]  # a line inside a method executed and was recorded
    graph = build_graph(program, trace, ["data/rain.json"], [])
    # the discharge computed in run() reaches the print in finalize() through the object
    assert feeds_output(graph, innermost_unit(program, "prog.py", q_line).node_id)
    tau_line = CLASS_PROGRAM.splitlines().index("        self.tau = tau") + 1
    assert feeds_output(graph, innermost_unit(program, "prog.py", tau_line).node_id)


def test_a_figure_that_is_only_shown_is_an_output_of_the_steps_that_draw_it():
    # Teaching scripts and simulations draw and call show(); the figure's data are the answer (plot recorder), so
    # the loop that fills the plotted arrays feeds an output and can hold a Completion hole or a Correction defect.
    source = ("import numpy as np\nimport matplotlib.pyplot as plt\nn = 50\nx = np.zeros(n)\n"
              "for i in range(n - 1):\n    x[i + 1] = x[i] + 0.1 * np.sin(i)\n"
              "unused = np.ones(3) * 2\nplt.plot(np.arange(n), x)\nplt.show()\n")
    program = analyse_program({"sim.py": source}, "sim.py")
    graph = build_graph(program, {"lines": {}, "values": [], "calls": []}, [], [])
    outputs = {n for n, a in graph.nodes(data=True) if a["kind"] == "output"}
    assert outputs == {"plotted:sim.py:8"}
    loop = next(u for u in program.scopes[("sim.py", 0)] if u.kind == "For")
    assert "plotted:sim.py:8" in nx.descendants(graph, loop.node_id)
    spare = next(u for u in program.scopes[("sim.py", 0)] if "unused" in u.defs)
    assert not any(graph.nodes[n]["kind"] == "output" for n in nx.descendants(graph, spare.node_id))



MAIN_PROGRAM = """import numpy as np
import matplotlib.pyplot as plt


def normalise(counts):
    return counts / counts.sum()


def unused_summary(counts):
    return counts.max()


def volcano(values, threshold):
    shown = -np.log10(values)
    plt.scatter(np.arange(len(shown)), shown, c=np.where(values < threshold, "red", "black"))
    plt.show()


def main():
    counts = np.loadtxt("data/counts.txt")
    values = normalise(counts)
    spare = unused_summary(counts)
    volcano(values, 0.05)


main()
"""


def test_what_main_passes_to_a_plotting_function_feeds_the_figure():
    """pySeqDiff: every step returns into main(), which hands the results to volcano_plot(results). The call's
    arguments did not flow into the function's body, so no step upstream fed an output: one Completion hole and
    few Correction sites in a 200-line analysis."""
    from trailforge.envs.tasks.context import feeds_output

    program = analyse_program({"de.py": MAIN_PROGRAM}, "de.py")
    graph = build_graph(program, {"lines": {}, "values": [], "calls": []}, ["data/counts.txt"], [])
    assert feeds_output(graph, "return:de.py:normalise")
    assert not feeds_output(graph, "return:de.py:unused_summary")  # its value goes nowhere


PRINTS = '''import contextlib, io, pickle, sys

class Noisy:
    calls = 0
    def __str__(self):
        Noisy.calls += 1
        return f"noisy {Noisy.calls}"

print(Noisy())
with contextlib.redirect_stdout(io.StringIO()):
    print(42)
print(7)
print(pickle.loads(pickle.dumps(print)) is print)
print("to stderr", file=sys.stderr)
'''


def test_the_tracer_records_prints_onto_stdout_and_changes_nothing_they_do(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "prog.py").write_text(PRINTS)
    shutil.copy(TRACE_RUNNER, work / ".tf_trace.py")
    done = subprocess.run([sys.executable, ".tf_trace.py", "prog.py"], cwd=work, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "noisy 1\n7\nTrue\n", "each __str__ ran once, and print still pickles as print"
    prints = json.loads((work / ".tf_trace.json").read_text())["prints"]
    assert prints == [["prog.py", 9, "noisy 1\n"], ["prog.py", 12, "7\n"], ["prog.py", 13, "True\n"]], \
        "captured output and stderr are not stdout"
