"""Turn what a program's figures showed into answer fields.

Many research scripts print nothing and only draw. The plot recorder (``sandbox/plot_recorder.py``)
writes what each matplotlib figure showed to ``.tf_plots.json``; this module reads that record and
proposes fields, in figure, axes and artist order:

- a line, scatter or error bar series with few points: the list of its y values; with more, its point
  count and the minimum, maximum and mean of its y values (a long curve is graded by what summarises it,
  and the answer stays a few fields);
- bars: their heights; a histogram: its counts and bin edges (summaries again when there are many);
- a box plot: each box's median and quartiles (its whiskers, caps and fliers are not separate lines);
- an image: its rows, columns and mean value.

Names come from the axes title (else its y label, else the figure's place) and the artist's legend
label. Titles, axis labels and legend labels are the program's text, untrusted like any label: each
one a field's name or label quotes must pass ``label_problem``; a field that would quote a refused one
is refused with that reason (and counted by the extractor), never rewritten.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from . import printed
from .answers import field_name, has_instruction_words, label_problem, resolution

SHORT_SERIES = 20  # a series of at most this many values is asked for whole
MAX_LABEL = 120  # what the extractor keeps of a field's label
_UNIT = re.compile(r"^(?P<name>.*?)\s*(?:\((?P<unit>[^()]{1,20})\)|\[(?P<bracketed>[^\[\]]{1,20})\])\s*$")
_KIND_WORDS = {"line": "line", "scatter": "scatter points", "errorbar": "error bar series", "bars": "bars",
               "hist": "histogram", "boxplot": "box plot", "image": "image"}


def read_plots(data: bytes | None) -> dict[str, Any]:
    """The recorder's record (``{"figures": [...]}``), or ``{}`` when there is none or it cannot be read."""
    if not data:
        return {}
    try:
        record = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return {}
    figures = record.get("figures") if isinstance(record, dict) else None
    if not isinstance(figures, list) or not figures:
        return {}
    return {"figures": [f for f in figures if isinstance(f, dict)]}


def plot_fields(plots: dict[str, Any], max_list: int) -> list[dict[str, Any]]:
    """The fields the figures make, as keyword arguments of the extractor's ``add`` (name, refusal, type,
    value, label, source, unit, resolution)."""
    fields: list[dict[str, Any]] = []
    short = min(SHORT_SERIES, max_list)
    for f, figure in enumerate(plots.get("figures") or [], start=1):
        axes_list = [a for a in figure.get("axes") or [] if isinstance(a, dict)]
        for a, axes in enumerate(axes_list, start=1):
            place = f"figure {f}" if len(axes_list) == 1 else f"figure {f} axes {a}"
            _axes_fields(fields, axes, place, f"plot:fig{f}/ax{a}", short, several=len(plots["figures"]) > 1)
    return fields


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


_MATH = re.compile(r"\$([^$]{0,80})\$")
_MATH_FONT = re.compile(r"\\(?:mathrm|mathit|mathbf|text|rm|it|bf)\s*\{([^{}]*)\}")


def _plain(text: str) -> str:
    """Text as the figure shows it: matplotlib mathtext (``s$^2$``, ``$\\mu$m``) written without its
    markup (``s^2``, ``mum``), so that a unit in a label is not refused for its dollar signs."""
    def inner(match: re.Match) -> str:
        body = _MATH_FONT.sub(r"\1", match.group(1))
        body = re.sub(r"\\([A-Za-z]+)", r"\1", body).replace("\\,", " ")
        return re.sub(r"[{}]", "", body)

    return _MATH.sub(inner, text)


def _descriptive(text: str) -> bool:
    """A title refused for its length or its characters (a sentence describing the plot, ``beta=0.35,
    R0=2.33``), not for speaking to the reader: it is not quoted, and names come from elsewhere."""
    return label_problem(text) is not None and not has_instruction_words(text)


def _axes_fields(fields: list, axes: dict, place: str, source: str, short: int, several: bool = False) -> None:
    """``several``: the analysis draws more than one figure, so a title alone may not say which axes (ZLS92
    titles the residuals 'Residuals' in each of its four figures): the place is given with it."""
    raw_title, ylabel = _plain(_text(axes.get("title"))), _plain(_text(axes.get("ylabel")))
    title = raw_title
    if title and _descriptive(title) and (ylabel or place):
        title = ""  # a descriptive sentence as the title: the fields are named from the y label, else the place
    unit_match = _UNIT.match(ylabel) if ylabel else None
    unit = (unit_match.group("unit") or unit_match.group("bracketed")).strip() if unit_match else None
    if unit_match:  # "Luminosity [L_sun]" is quoted as "Luminosity (L_sun)": one way to write a unit
        ylabel = f"{unit_match.group('name').strip()} ({unit})"
    axes_name = title or (unit_match.group("name").strip() if unit_match else ylabel) or place
    quoted = [t for t in (title, ylabel) if t]
    where = f"in the plot of {place}"
    if title:
        where = f"in the axes titled '{title}'" + (f" ({place})" if several else "")
    y_axis = f" (y axis '{ylabel}')" if ylabel else ""
    artists = [r for r in axes.get("artists") or [] if isinstance(r, dict) and r.get("kind") in _KIND_WORDS]
    per_kind: dict[str, int] = {}
    for record in artists:
        per_kind[record["kind"]] = per_kind.get(record["kind"], 0) + 1
    seen: dict[str, int] = {}
    for record in artists:
        kind = record["kind"]
        seen[kind] = seen.get(kind, 0) + 1
        legend = _text(record.get("label"))
        numbered = f"{kind} {seen[kind]}" if per_kind[kind] > 1 else kind
        parts = [axes_name, legend or numbered]
        artist = f"{_KIND_WORDS[kind]} '{legend}'" if legend else (
            f"{_KIND_WORDS[kind]} {seen[kind]}" if per_kind[kind] > 1 else f"the {_KIND_WORDS[kind]}")
        problem = next(filter(None, (label_problem(t) for t in [*quoted, legend] if t)), None)
        context = {"fields": fields, "parts": parts, "problem": problem, "artist": artist, "where": where,
                   "place": f"in the plot of {place}",
                   "y_axis": y_axis, "source": f"{source}/{kind}{seen[kind]}", "short": short}
        if kind in ("line", "scatter", "errorbar"):
            _series_fields(context, record.get("y"), "y values", "y", unit)
            if kind == "errorbar":
                _series_fields(context, record.get("yerr"), "y error sizes", "yerr", unit, summary=False)
        elif kind == "bars":
            horizontal = record.get("orientation") == "horizontal"
            _series_fields(context, record.get("heights"), "widths" if horizontal else "heights", "heights",
                           None if horizontal else unit)
        elif kind == "hist":
            _series_fields(context, record.get("counts"), "counts per bin", "counts", None)
            _series_fields(context, record.get("edges"), "bin edges", "edges", None, summary=False)
        elif kind == "boxplot":  # one value per box, in the order the boxes were drawn
            _series_fields(context, record.get("medians"), "medians of the boxes", "medians", unit, summary=False)
            _series_fields(context, record.get("q1"), "lower quartiles (box bottoms)", "q1", unit, summary=False)
            _series_fields(context, record.get("q3"), "upper quartiles (box tops)", "q3", unit, summary=False)
        elif kind == "image":
            shape = record.get("shape") or []
            if len(shape) >= 2 and all(isinstance(s, int) for s in shape[:2]):
                _add(context, "rows", "integer", shape[0], "number of rows of", "#rows")
                _add(context, "columns", "integer", shape[1], "number of columns of", "#columns")
            if _number(record.get("mean")) is not None:
                _add(context, "mean", "number", record["mean"], "mean pixel value of", "#mean")
    texts = [(raw_title, f"the title of {place}", "#title")] + [
        (_plain(_text(r.get("label"))), f"the legend of {place}", f"#legend{n}")
        for n, r in enumerate(artists, start=1)]
    _quoted_numbers(fields, axes_name, texts, source)


def _quoted_numbers(fields: list, axes_name: str, texts: list[tuple[str, str, str]], source: str) -> None:
    """Results a figure states in words: ``beta=0.35, R0=2.33`` in a title, ``Age = 0.27 +- 0.04 Ma`` in a
    legend entry, read line by line as printed lines are and named by the words before each number.
    Only numbers with a decimal point or exponent: a whole number in a legend is mostly a name (``run 3``,
    ``sample 12``). A text that speaks to the reader gives nothing; each name and unit is checked as any
    label is."""
    for text, where, anchor in texts:
        if not text or has_instruction_words(text):
            continue
        for line in text.splitlines():
            for reading in printed.line_readings(line):
                if reading.kind != "number":
                    continue
                name, problem = field_name(axes_name, *reading.labels)
                problem = problem or next(filter(None, (label_problem(t) for t in reading.checked)), None)
                fields.append({
                    "base": name, "problem": problem, "kind": reading.kind, "value": reading.value,
                    "label": f"{reading.label} stated in {where}"[:MAX_LABEL], "source": source + anchor,
                    "unit": reading.unit, "resolution": reading.resolution, "decimals": reading.decimals,
                })


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _series_fields(context: dict, series, what: str, key: str, unit: str | None, summary: bool = True) -> None:
    """A whole short series as a list; for a longer one (``summary``) its count, minimum, maximum and mean."""
    if not isinstance(series, dict) or not isinstance(series.get("n"), int) or series["n"] < 1:
        return
    values = series.get("values") or []
    whole = [_number(v) for v in values]
    if series["n"] <= context["short"] and len(whole) == series["n"] and None not in whole:
        _add(context, key, "number_list", whole, f"{what} of", f"#{key}", unit)
        return
    if not summary or not isinstance(series.get("finite"), int) or not series["finite"]:
        return
    _add(context, f"{key} count", "integer", series["n"], f"number of {what} of", f"#{key}.count")
    for stat, words in (("min", "minimum"), ("max", "maximum"), ("mean", "mean")):
        if _number(series.get(stat)) is not None:
            finite = "" if series["finite"] == series["n"] else "finite "
            _add(context, f"{key} {stat}", "number", series[stat], f"{words} of the {finite}{what} of",
                 f"#{key}.{stat}", unit)


def _add(context: dict, suffix: str, kind: str, value, what: str, anchor: str, unit: str | None = None) -> None:
    name, problem = field_name(*context["parts"], suffix)
    # The first form that fits: a label cut at MAX_LABEL ends mid-word ("...(180 Days)' (f"), so a long one
    # drops its y label, then names the axes by figure and axes number instead of by title.
    forms = [f"{what} {context['artist']} {where}{y_axis}" for where in (context["where"], context["place"])
             for y_axis in (context["y_axis"], "")]
    label = next((form for form in forms if len(form) <= MAX_LABEL), forms[-1])
    if kind == "number":
        res = resolution(repr(float(value)))
    elif kind == "number_list":
        res = max((resolution(repr(v)) for v in value), default=None)
    else:
        res = None
    context["fields"].append({
        "base": name, "problem": context["problem"] or problem, "kind": kind,
        "value": float(value) if kind == "number" else value, "label": label,
        "source": context["source"] + anchor, "unit": unit, "resolution": res,
    })
