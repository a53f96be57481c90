"""PNG figures for a corpus audit report (see ``corpus_audit``).

Figures are drawn on standalone ``Figure`` objects with the Agg canvas, never through pyplot, so no
global backend is switched and nothing needs a display.

- ``lengths.png``: ECDFs of messages, text tokens and record tokens per trajectory; dashed line at the
  median, dotted at P95, red lines at the 64k/128k/192k/256k context sizes on the token panels.
- ``composition.png``: message share by role and character share by source.
- ``tool_calls.png``: call volume per tool.
- ``fanout.png``: calls per tool-calling assistant message.
- ``topics.png``: topic rank-frequency on log-log axes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .corpus_audit import CONTEXT_THRESHOLDS


def _figure(width: float, height: float, columns: int = 1):
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.subplots(1, columns, squeeze=False)[0]


def _save(figure: Figure, path: Path) -> Path:
    # A fixed Software tag keeps the PNG bytes identical across matplotlib patch releases.
    figure.savefig(path, dpi=110, metadata={"Software": "trailforge"})
    return path


def _empty(axis, text: str = "nothing to show") -> None:
    axis.text(0.5, 0.5, text, ha="center", va="center", transform=axis.transAxes)
    axis.set_xticks([])
    axis.set_yticks([])


def plot_lengths(report: dict, path: Path) -> Path:
    figure, axes = _figure(15, 4.2, 3)
    panels = [("messages", "messages per trajectory", "tab:blue"),
              ("text_tokens", "text tokens per trajectory", "tab:green"),
              ("record_tokens", "record tokens per trajectory", "tab:purple")]
    for axis, (key, title, colour) in zip(axes, panels):
        values = np.sort(np.asarray(report["per_record"][key], dtype=float))
        axis.set_title(title)
        if values.size == 0:
            _empty(axis)
            continue
        axis.step(values, np.arange(1, values.size + 1) / values.size, where="post", color=colour)
        stats = report["lengths"][key]
        axis.axvline(stats["p50"], color=colour, linestyle="--", label=f"median {stats['p50']:,.0f}")
        axis.axvline(stats["p95"], color="grey", linestyle=":", label=f"P95 {stats['p95']:,.0f}")
        if key != "messages":
            for name, threshold in CONTEXT_THRESHOLDS.items():
                # Only the sizes inside (or just past) the data range, so the curve keeps its scale.
                if threshold <= values.max() * 1.25:
                    axis.axvline(threshold, color="red", linewidth=0.8, alpha=0.7)
                    axis.text(threshold, 0.02, f" {name}", color="red", fontsize=8, rotation=90, va="bottom")
        axis.set_ylim(0, 1.02)
        axis.set_ylabel("share of trajectories")
        axis.legend(loc="lower right", fontsize=8)
    return _save(figure, path)


def plot_composition(report: dict, path: Path) -> Path:
    figure, (by_role, by_source) = _figure(12, 4.2, 2)
    roles = report["composition"]["messages_by_role"]
    sources = report["composition"]["characters_by_source"]
    for axis, data, key, title in [(by_role, roles, "count", "messages by role"),
                                   (by_source, sources, "chars", "characters by source")]:
        axis.set_title(title)
        if not data:
            _empty(axis)
            continue
        names = list(data)[::-1]
        shares = [100 * (data[n]["share"] or 0) for n in names]
        bars = axis.barh(names, shares, color="tab:blue")
        axis.bar_label(bars, labels=[f"{s:.1f}% ({data[n][key]:,})" for s, n in zip(shares, names)], fontsize=8)
        axis.set_xlabel("share (%)")
        axis.set_xlim(0, 115)
    return _save(figure, path)


def plot_tool_calls(report: dict, path: Path) -> Path:
    per_tool = report["tools"]["per_tool"]
    figure, (axis,) = _figure(max(6, 0.6 * len(per_tool) + 3), 4.2)
    axis.set_title("tool-call volume")
    if not per_tool:
        _empty(axis)
    else:
        names = list(per_tool)
        bars = axis.bar(names, [per_tool[n]["calls"] for n in names], color="tab:orange")
        axis.bar_label(bars, labels=[f"{100 * (per_tool[n]['share'] or 0):.1f}%" for n in names], fontsize=8)
        axis.set_ylabel("calls")
        axis.tick_params(axis="x", rotation=45)
    return _save(figure, path)


def plot_fanout(report: dict, path: Path) -> Path:
    histogram = report["tools"]["fanout"]["histogram"]
    figure, (axis,) = _figure(7, 4.2)
    axis.set_title("calls per tool-calling assistant message")
    if not histogram:
        _empty(axis)
    else:
        axis.bar([int(k) for k in histogram], list(histogram.values()), color="tab:cyan", width=0.8)
        axis.set_xlabel("calls in the message")
        axis.set_ylabel("assistant messages")
    return _save(figure, path)


def plot_topics(report: dict, path: Path) -> Path:
    counts = report["topics"]["rank_frequency"]
    figure, (axis,) = _figure(7, 4.2)
    axis.set_title("topic rank-frequency")
    if not counts:
        _empty(axis, "no topic matched the pattern")
    else:
        axis.loglog(np.arange(1, len(counts) + 1), counts, marker=".", linestyle="-", color="tab:red")
        axis.set_xlabel("topic rank")
        axis.set_ylabel("trajectories")
    return _save(figure, path)


def write_plots(report: dict, out_dir: Path) -> list[Path]:
    out_dir = Path(out_dir)
    return [plot_lengths(report, out_dir / "lengths.png"), plot_composition(report, out_dir / "composition.png"),
            plot_tool_calls(report, out_dir / "tool_calls.png"), plot_fanout(report, out_dir / "fanout.png"),
            plot_topics(report, out_dir / "topics.png")]
