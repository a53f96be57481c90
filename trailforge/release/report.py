"""The release's plots, static HTML report and dataset card, written from one set of statistics.

Layout under the release folder::

    README.md                 dataset card: Hugging Face YAML metadata and the Markdown body
    report/index.html         the same content as a static page (no scripts, no external assets)
    report/*.png              the plots both of them show
    plots/funnel.csv          the verification funnel and the yield per repository as tables, for
    plots/yield.csv           ``dvc plots show`` (dvc.yaml's ``plots:``)

The PNGs are byte-identical for the same statistics: drawing goes through the Agg canvas with
Matplotlib's default style and the bundled DejaVu Sans font (any user ``matplotlibrc`` ignored), at a
fixed size and dpi, and without the ``Software`` metadata entry that names the Matplotlib version.
"""
from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..io import TASK_TYPES
from .card import render_card, report_context, template_environment
from .stats import PLOT_COLUMNS, plot_tables

DPI = 100
FIGURE_SIZE = (8.0, 4.5)  # inches; 800 x 450 pixels at DPI
_STYLE = {"font.family": "DejaVu Sans", "font.size": 9, "figure.dpi": DPI, "savefig.dpi": DPI,
          "axes.spines.top": False, "axes.spines.right": False}
# One colour per task type in every plot (colour-blind-safe Okabe-Ito hues).
TASK_TYPE_COLOURS = dict(zip(TASK_TYPES, ("#0072B2", "#E69F00", "#009E73", "#CC79A7")))
_ACCEPTED, _REJECTED = "#0072B2", "#D55E00"


def _figure() -> tuple[Figure, Any]:
    figure = Figure(figsize=FIGURE_SIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _save(figure: Figure, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=DPI, metadata={"Software": None})


def plot_task_type_by_discipline(stats: dict[str, Any], path: Path) -> None:
    cross = stats["counts"]["task_type_by_discipline"]
    figure, axes = _figure()
    bottoms = [0] * len(cross["disciplines"])
    for kind, cells in zip(cross["task_types"], cross["cells"]):
        axes.bar(cross["disciplines"], cells, bottom=bottoms, label=kind, color=TASK_TYPE_COLOURS.get(kind))
        bottoms = [b + c for b, c in zip(bottoms, cells)]
    for x, total in enumerate(bottoms):
        axes.annotate(str(total), (x, total), ha="center", va="bottom", xytext=(0, 2), textcoords="offset points")
    axes.set_ylabel("verified environments")
    axes.set_title("Environments by discipline and task type")
    axes.legend(title="task type", frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.tick_params(axis="x", labelrotation=20)
    _save(figure, path)


def plot_funnel(stats: dict[str, Any], path: Path) -> None:
    steps = stats["funnel"]
    stages = [s["stage"] for s in steps][::-1]  # first stage at the top
    accepted = [s["accepted"] for s in steps][::-1]
    rejected = [s["rejected"] for s in steps][::-1]
    figure, axes = _figure()
    axes.barh(stages, accepted, color=_ACCEPTED, label="accepted")
    axes.barh(stages, rejected, left=accepted, color=_REJECTED, label="rejected")
    for y, (a, r) in enumerate(zip(accepted, rejected)):
        label = f"{a} accepted" + (f", {r} rejected" if r else "")
        axes.annotate(label, (a + r, y), va="center", xytext=(3, 0), textcoords="offset points")
    axes.set_xlim(0, max([a + r for a, r in zip(accepted, rejected)] + [1]) * 1.35)
    axes.set_xlabel("items (repositories, seed programs, tasks, or files and candidate defects when rejected)")
    axes.set_title("Verification funnel: accepted and rejected per stage")
    axes.legend(frameon=False, loc="lower right")
    _save(figure, path)


def plot_statement_lengths(stats: dict[str, Any], path: Path) -> None:
    by_type = stats["lengths"]["statement_words_by_task_type"]
    values = [v for words in by_type.values() for v in words]
    figure, axes = _figure()
    if values:
        low, high = min(values), max(values)
        edges = [low + (high - low + 1) * i / 20 for i in range(21)]
        axes.hist(list(by_type.values()), bins=edges, stacked=True, label=list(by_type),
                  color=[TASK_TYPE_COLOURS.get(kind) for kind in by_type])
        axes.legend(title="task type", frameon=False)
    axes.set_xlabel("statement length (whitespace-separated words)")
    axes.set_ylabel("environments")
    axes.set_title("Statement length")
    _save(figure, path)


def plot_repository_yield(stats: dict[str, Any], path: Path) -> None:
    rows = stats["repository_yield"][::-1]  # alphabetical from the top
    names = [r["repo_id"] for r in rows]
    figure, axes = _figure()
    lefts = [0] * len(rows)
    for kind in TASK_TYPES:
        widths = [r["by_task_type"][kind] for r in rows]
        if any(widths):
            axes.barh(names, widths, left=lefts, label=kind, color=TASK_TYPE_COLOURS[kind])
            lefts = [a + b for a, b in zip(lefts, widths)]
    for y, row in enumerate(rows):
        label = f"{row['environments']}" + (f" from {row['seeds']} seeds" if row["seeds"] is not None else "")
        axes.annotate(label, (row["environments"], y), va="center", xytext=(3, 0), textcoords="offset points")
    axes.set_xlim(0, max(lefts + [1]) * 1.3)
    axes.set_xlabel("verified environments")
    axes.set_title("Yield per repository")
    axes.legend(title="task type", frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _save(figure, path)


PLOTS = [
    ("task_type_by_discipline.png", "Environments by discipline and task type", plot_task_type_by_discipline,
     "Stacked bars: verified environments per discipline, split by task type"),
    ("funnel.png", "Verification funnel", plot_funnel,
     "Horizontal bars: accepted and rejected items for each pipeline stage"),
    ("statement_length.png", "Statement length", plot_statement_lengths,
     "Histogram of task statement length in words, stacked by task type"),
    ("repository_yield.png", "Yield per repository", plot_repository_yield,
     "Horizontal bars: verified environments per source repository, split by task type"),
]


def write_plots(stats: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
    """Draw every plot into ``folder``; return what the templates need to show them."""
    folder.mkdir(parents=True, exist_ok=True)
    shown = []
    with matplotlib.rc_context():
        matplotlib.rcdefaults()  # ignore any matplotlibrc on this machine; restored when the context ends
        matplotlib.rcParams.update(_STYLE)
        for file, title, draw, alt in PLOTS:
            draw(stats, folder / file)
            shown.append({"file": file, "title": title, "alt": alt,
                          "width": int(FIGURE_SIZE[0] * DPI), "height": int(FIGURE_SIZE[1] * DPI)})
    return shown


def write_plot_tables(stats: dict[str, Any], folder: Path) -> list[Path]:
    """One CSV per table of :func:`~trailforge.release.stats.plot_tables` (a header even when empty);
    returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, rows in plot_tables(stats).items():
        path = folder / f"{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=PLOT_COLUMNS[name], lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        paths.append(path)
    return paths


def render_html(context: dict[str, Any]) -> str:
    return template_environment(autoescape=True).get_template("report.html.j2").render(**context)


def write_release_report(out: Path, *, name: str, recipe: str, params_hash: str, version: dict[str, Any],
                         stats: dict[str, Any], recipe_facts: dict[str, Any]) -> dict[str, Path]:
    """Write ``out/report/`` (plots and ``index.html``) and the card ``out/README.md``."""
    report_dir = out / "report"
    if report_dir.exists():
        shutil.rmtree(report_dir)  # no stale plot from an earlier layout
    plots = write_plots(stats, report_dir)
    context = report_context(name=name, recipe=recipe, params_hash=params_hash, version=version, stats=stats,
                             recipe_facts=recipe_facts, plots=plots)
    (report_dir / "index.html").write_text(render_html(context), encoding="utf-8")
    card = out / "README.md"
    card.write_text(render_card(context, image_prefix="report/"), encoding="utf-8")
    return {"card": card, "report": report_dir / "index.html"}
