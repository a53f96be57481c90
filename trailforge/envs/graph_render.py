"""Drawing a workflow graph (``trailforge graph``): Graphviz text and a self-contained SVG picture.

Kept apart from ``workflow.py``, which the ``workflows`` stage imports: how a graph is drawn is not part of
what the pipeline builds, so changing a picture re-runs no DVC stage.
"""
from __future__ import annotations

from html import escape
from pathlib import PurePosixPath
from typing import Any

import networkx as nx

# Node kinds in the order the legend lists them, with what the legend calls each, its SVG fill and DOT shape.
KINDS: dict[str, tuple[str, str, str]] = {
    "data_file": ("data file read", "#d8f0d2", "folder"),
    "operation": ("operation (file:line)", "#dbe9f6", "box"),
    "variable": ("variable (observed value)", "#fdf0d5", "ellipse"),
    "return": ("function return", "#e8e0f4", "diamond"),
    "output": ("output (printed, written, drawn)", "#f6d8d8", "note"),
}
EDGE_LEGEND = "data flows along the arrow"


def value_label(summary: dict[str, Any] | None) -> str:
    if not summary:
        return "(not observed)"
    kind = summary.get("type", "?")
    if "value" in summary:
        value = summary["value"]
        return f"{kind} {value:.4g}" if isinstance(value, float) else f"{kind} {value}"
    if "shape" in summary:
        return f"{kind} {'x'.join(str(s) for s in summary['shape'])}"
    if "len" in summary:
        return f"{kind} len {summary['len']}"
    return kind


def node_lines(node: str, attrs: dict[str, Any], operations: int = 3) -> tuple[str, str]:
    """The two lines a node is labelled with: what it is, then what it does or holds."""
    kind = attrs.get("kind", "")
    if kind == "operation":
        return f"{PurePosixPath(attrs['path']).name}:{attrs['line']}", ", ".join(attrs.get("operations", [])[:operations])
    if kind == "variable":
        return attrs["name"], value_label(attrs.get("value"))
    return kind.replace("_", " "), node.split(":", 1)[-1]


def dot_string(text: str) -> str:
    """``text`` as a DOT double-quoted string, its line breaks as DOT's ``\\n`` label escape.

    JSON quoting is not DOT quoting: it doubles the backslash of ``\\n`` (Graphviz then draws a literal ``\\n``)
    and writes non-ASCII as ``\\uXXXX``, which Graphviz does not read either.
    """
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def render_dot(graph: nx.DiGraph, title: str = "workflow") -> str:
    """Graphviz text of a workflow graph (``dot -Tsvg`` draws it)."""
    lines = [f"digraph {dot_string(title)} {{", "  rankdir=LR;", "  node [fontsize=10];"]
    for node, attrs in sorted(graph.nodes(data=True)):
        kind = attrs.get("kind", "")
        top, bottom = node_lines(node, attrs)
        label = f"{top}\n{bottom}" if kind in ("operation", "variable") else bottom
        shape = KINDS[kind][2] if kind in KINDS else "plain"
        lines.append(f"  {dot_string(node)} [shape={shape}, label={dot_string(label)}];")
    for source, target in sorted(graph.edges()):
        lines.append(f"  {dot_string(source)} -> {dot_string(target)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _columns(graph: nx.DiGraph) -> dict[str, int]:
    """One column per dependency layer; the members of a cycle share one."""
    condensed = nx.condensation(graph)
    column = {}
    for depth, layer in enumerate(nx.topological_generations(condensed)):
        for component in layer:
            for node in condensed.nodes[component]["members"]:
                column[node] = depth
    return column


def render_svg(graph: nx.DiGraph, title: str = "workflow") -> str:
    """A self-contained SVG picture of a workflow graph: one column per dependency layer, left to right.

    Edges end in an arrowhead at the node they feed, and a legend under the title names the colour of each
    node kind the graph has, so the picture reads without this docstring.
    """
    width, height, gap_x, gap_y, top = 150, 34, 60, 12, 70
    column = _columns(graph)
    rows: dict[int, int] = {}
    position = {}
    for node in sorted(graph.nodes, key=lambda n: (column[n], graph.nodes[n].get("line", 0), n)):
        row = rows.get(column[node], 0)
        rows[column[node]] = row + 1
        position[node] = (20 + column[node] * (width + gap_x), top + row * (height + gap_y))
    kinds = [k for k in KINDS if any(a.get("kind") == k for _, a in graph.nodes(data=True))]
    kinds += sorted({a.get("kind", "") for _, a in graph.nodes(data=True)} - set(KINDS))
    legend_w = 20 + sum(30 + 6 * len(KINDS.get(k, (k,))[0]) for k in kinds) + 30 + 6 * len(EDGE_LEGEND)
    total_w = max(40 + (max(column.values(), default=0) + 1) * (width + gap_x), legend_w)
    total_h = top + 20 + max(rows.values(), default=1) * (height + gap_y)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" font-family="sans-serif" '
             f'font-size="10">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#666"/></marker></defs>',
             f'<text x="20" y="20" font-size="13">{escape(title)}</text>']
    parts.append('<g class="legend">')
    x = 20
    for kind in kinds:
        name, colour, _ = KINDS.get(kind, (kind or "other", "#eee", ""))
        parts.append(f'<rect x="{x}" y="32" width="22" height="14" rx="3" fill="{colour}" stroke="#555" '
                     'stroke-width="0.6"/>')
        parts.append(f'<text x="{x + 27}" y="43">{escape(name)}</text>')
        x += 30 + 6 * len(name)
    parts.append(f'<line x1="{x}" y1="39" x2="{x + 22}" y2="39" stroke="#666" stroke-width="0.8" '
                 'marker-end="url(#arrow)"/>')
    parts.append(f'<text x="{x + 27}" y="43">{escape(EDGE_LEGEND)}</text>')
    parts.append("</g>")
    parts.append('<g class="edges">')
    for source, target in sorted(graph.edges()):
        (x1, y1), (x2, y2) = position[source], position[target]
        if column[target] > column[source]:  # forward: right side of the source to the left side of the target
            a, b, c, d = x1 + width, y1 + height / 2, x2, y2 + height / 2
        else:  # within a cycle (one column): bottom to top, or top to bottom when the target is above
            down = y2 > y1
            a, b = x1 + width / 2, y1 + (height if down else 0)
            c, d = x2 + width / 2, y2 + (0 if down else height)
        parts.append(f'<line x1="{a}" y1="{b}" x2="{c}" y2="{d}" stroke="#888" stroke-width="0.8" '
                     'marker-end="url(#arrow)"/>')
    parts.append("</g>")
    parts.append('<g class="nodes">')
    for node, (x, y) in sorted(position.items()):
        attrs = graph.nodes[node]
        kind = attrs.get("kind", "")
        first, second = node_lines(node, attrs, operations=2)
        colour = KINDS[kind][1] if kind in KINDS else "#eee"
        parts.append(f'<g class="node"><title>{escape(node)}</title>')
        parts.append(f'<rect x="{x}" y="{y}" width="{width}" height="{height}" rx="4" fill="{colour}" stroke="#555" '
                     'stroke-width="0.6"/>')
        parts.append(f'<text x="{x + 4}" y="{y + 13}">{escape(first[:28])}</text>')
        parts.append(f'<text x="{x + 4}" y="{y + 27}" fill="#444">{escape(second[:28])}</text></g>')
    parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
