"""Workflow graph pictures: DOT text Graphviz reads as written, an SVG with arrowheads and a legend."""
from __future__ import annotations

import re
import xml.dom.minidom

import networkx as nx
import pytest

from trailforge.envs.graph_render import KINDS, dot_string, render_dot, render_svg

DOT_STRING = r'"(?:[^"\\]|\\.)*"'
NODE_LINE = re.compile(rf"^  ({DOT_STRING}) \[shape=(\w+), label=({DOT_STRING})\];$")
EDGE_LINE = re.compile(rf"^  ({DOT_STRING}) -> ({DOT_STRING});$")


def _dot_text(quoted: str) -> str:
    """What Graphviz shows for a quoted DOT label: ``\\n`` is a line break, ``\\"`` and ``\\\\`` one character."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), quoted[1:-1])


@pytest.fixture
def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_node("data:data/mesures_é.csv", kind="data_file", path="data/mesures_é.csv")
    g.add_node("op:prog.py:3", kind="operation", path="src/prog.py", line=3, operations=["pandas.read_csv"])
    g.add_node("var:df@prog.py:3", kind="variable", name="df", value={"type": "DataFrame", "shape": [4, 2]})
    g.add_node('op:prog.py:5', kind="operation", path="src/prog.py", line=5, operations=['str.format("x")'])
    g.add_node("var:total@prog.py:5", kind="variable", name="total", value={"type": "float", "value": 2.5})
    g.add_node("printed:prog.py:5", kind="output", path="prog.py", line=5)
    g.add_edges_from([("data:data/mesures_é.csv", "op:prog.py:3"), ("op:prog.py:3", "var:df@prog.py:3"),
                      ("var:df@prog.py:3", "op:prog.py:5"), ("op:prog.py:5", "var:total@prog.py:5"),
                      ("op:prog.py:5", "printed:prog.py:5"),
                      ("var:total@prog.py:5", "op:prog.py:5")])  # a loop-carried value: a cycle
    return g


def test_dot_labels_break_lines_instead_of_printing_a_backslash_n(graph):
    lines = render_dot(graph, "prog").splitlines()
    nodes = {_dot_text(m.group(1)): (m.group(2), _dot_text(m.group(3))) for m in map(NODE_LINE.match, lines) if m}
    assert set(nodes) == set(graph.nodes), "every node line is one well-quoted DOT statement"
    assert nodes["op:prog.py:3"] == ("box", "prog.py:3\npandas.read_csv")
    assert nodes["var:total@prog.py:5"] == ("ellipse", "total\nfloat 2.5")
    assert nodes["var:df@prog.py:3"] == ("ellipse", "df\nDataFrame 4x2")
    assert nodes["op:prog.py:5"][1] == 'prog.py:5\nstr.format("x")', "quotes inside a label survive"
    assert nodes["data:data/mesures_é.csv"] == ("folder", "data/mesures_é.csv"), "non-ASCII stays as it is"
    assert "\\\\n" not in render_dot(graph) and "\\u00e9" not in render_dot(graph)
    edges = {(_dot_text(m.group(1)), _dot_text(m.group(2))) for m in map(EDGE_LINE.match, lines) if m}
    assert edges == set(graph.edges)


@pytest.mark.parametrize("text", ["a\nb", 'say "hi"', "C:\\temp\\new", "ünïcode"])
def test_dot_string_round_trips(text):
    assert _dot_text(dot_string(text)) == text


def test_svg_edges_end_in_an_arrowhead_and_a_legend_names_every_kind(graph):
    picture = xml.dom.minidom.parseString(render_svg(graph, "prog <&>"))
    markers = {m.getAttribute("id"): m for m in picture.getElementsByTagName("marker")}
    assert "arrow" in markers and markers["arrow"].getElementsByTagName("path")
    groups = {g.getAttribute("class"): g for g in picture.getElementsByTagName("g") if g.getAttribute("class")}
    edges = groups["edges"].getElementsByTagName("line")
    assert len(edges) == graph.number_of_edges()
    assert all(line.getAttribute("marker-end") == "url(#arrow)" for line in edges)
    assert len(groups["nodes"].getElementsByTagName("rect")) == graph.number_of_nodes()
    legend = [t.firstChild.data for t in groups["legend"].getElementsByTagName("text")]
    assert legend == [KINDS[k][0] for k in ("data_file", "operation", "variable", "output")] + [
        "data flows along the arrow"], "one entry per kind present, in a fixed order, and one for the arrow"
    swatches = [r.getAttribute("fill") for r in groups["legend"].getElementsByTagName("rect")]
    assert swatches == [KINDS[k][1] for k in ("data_file", "operation", "variable", "output")]


def test_svg_forward_edges_point_at_the_target_and_cycle_edges_stay_in_their_column(graph):
    picture = xml.dom.minidom.parseString(render_svg(graph))
    boxes = {}
    for node in picture.getElementsByTagName("g"):
        if node.getAttribute("class") == "node":
            rect = node.getElementsByTagName("rect")[0]
            boxes[node.getElementsByTagName("title")[0].firstChild.data] = tuple(
                float(rect.getAttribute(a)) for a in ("x", "y", "width", "height"))
    ends = [tuple(float(line.getAttribute(a)) for a in ("x2", "y2"))
            for line in picture.getElementsByTagName("line") if line.parentNode.getAttribute("class") == "edges"]
    for source, target in sorted(graph.edges()):
        x, y, w, h = boxes[target]
        assert any(x <= ex <= x + w and y <= ey <= y + h for ex, ey in ends), (source, target)
    sx, _, _, _ = boxes["var:total@prog.py:5"]
    tx, _, _, _ = boxes["op:prog.py:5"]
    assert sx == tx, "members of a cycle share a column"


def test_an_empty_graph_still_draws():
    picture = xml.dom.minidom.parseString(render_svg(nx.DiGraph(), "empty"))
    assert picture.getElementsByTagName("svg")
    assert render_dot(nx.DiGraph(), "empty") == 'digraph "empty" {\n  rankdir=LR;\n  node [fontsize=10];\n}\n'
