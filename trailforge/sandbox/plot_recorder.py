"""Run a Python script and record the data its matplotlib figures show.

This file is copied into the sandbox next to the program and run as ``python .tf_plots.py SCRIPT
[ARGS]``; the tracer (``.tf_trace.py``) loads it too and calls ``install()``, so a traced run records
the same. It uses only the standard library and never imports matplotlib itself: a finder on
``sys.meta_path`` waits until the script imports ``matplotlib.figure``, ``matplotlib.pyplot``,
``matplotlib._pylab_helpers`` or ``matplotlib.axes._axes`` and wraps, once that module has run:

- ``Figure.savefig``: the figure is recorded as it is when saved;
- ``pyplot.show``: every open figure is recorded;
- ``Gcf.destroy`` / ``Gcf.destroy_all`` (``plt.close`` and pyplot's own exit hook): a figure is
  recorded as it closes, so figures still open at exit are recorded too;
- ``Axes.hist``: its counts and bin edges are kept on the axes, since the bars it draws do not say
  they are a histogram;
- ``Axes.bxp`` (what ``Axes.boxplot`` and seaborn draw boxes with): each box's median and quartiles are kept on the axes, since its whiskers, caps,
  medians and fliers are drawn as plain lines whose order and empty flier lines are no result.

Each wrapper calls the original and returns what it returns: the script does what it did. A figure
recorded twice keeps its latest state. At exit, however the script ends, the records go to
``.tf_plots.json`` at the root of the scratch folder; nothing is written when no figure was recorded.

A record is bounded: per figure its suptitle and axes; per axes its title, labels and artists
(lines, scatters, bars, histograms, error bars, images, texts); per series at most ``MAX_VALUES``
values plus its count, minimum, maximum and mean over all of them.
"""
import atexit
import json
import math
import os
import runpy
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
PLOTS_FILE = ".tf_plots.json"
MAX_FIGURES = 30
MAX_AXES = 16
MAX_ARTISTS = 24  # per kind and axes
MAX_VALUES = 100
MAX_TEXT = 120
_TARGETS = ("matplotlib.figure", "matplotlib.pyplot", "matplotlib._pylab_helpers", "matplotlib.axes._axes")
_records = []  # one per figure, in the order first recorded
_state = {"installed": False, "patched": set()}
_MARK = "_tf_plot_index"  # attribute set on a recorded Figure: its place in _records
_HISTS = "_tf_hists"  # attribute set on an Axes: [(ids of the artists drawn, record)] of its hist calls
_BOXES = "_tf_boxes"  # the same for its boxplot calls


def _text(value):
    try:
        text = value if isinstance(value, str) else value.get_text()
    except Exception:
        return ""
    return str(text)[:MAX_TEXT]


def _finite(value):
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _series(values):
    """Count, min, max, mean over the finite values of a sequence, and the first ``MAX_VALUES`` of them."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            array = numpy.ma.filled(numpy.ma.asarray(values, dtype=float).ravel(), numpy.nan)
            finite = array[numpy.isfinite(array)]
            out = {"n": int(array.size), "finite": int(finite.size),
                   "values": [_finite(v) for v in array[:MAX_VALUES].tolist()]}
            if finite.size:
                out.update(min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()))
            return out
        except (TypeError, ValueError):
            return None  # dates, categories: not numbers anyone can grade here
    numbers = [_finite(v) for v in list(values)]
    finite = [v for v in numbers if v is not None]
    out = {"n": len(numbers), "finite": len(finite), "values": numbers[:MAX_VALUES]}
    if finite:
        out.update(min=min(finite), max=max(finite), mean=math.fsum(finite) / len(finite))
    return out


def _label(artist):
    """The legend label the script gave, or "" (matplotlib names unlabelled artists ``_child0`` etc.)."""
    try:
        label = artist.get_label()
    except Exception:
        return ""
    label = "" if label is None else str(label)
    return "" if label.startswith("_") else label[:MAX_TEXT]


def _guarded(kind, build, artist, out):
    try:
        record = build(artist)
    except Exception as exc:  # an odd artist costs its own record, never the script's run
        record = {"error": type(exc).__name__}
    if record is not None:
        record["kind"] = kind
        out.append(record)


def _line(line):
    return {"label": _label(line), "x": _series(line.get_xdata()), "y": _series(line.get_ydata())}


def _scatter(collection):
    offsets = collection.get_offsets()
    return {"label": _label(collection), "x": _series(offsets[:, 0]), "y": _series(offsets[:, 1])}


def _bars(container):
    horizontal = getattr(container, "orientation", "vertical") == "horizontal"
    patches = list(container.patches)
    return {"label": _label(container), "orientation": "horizontal" if horizontal else "vertical",
            "heights": _series([p.get_width() if horizontal else p.get_height() for p in patches]),
            "positions": _series([p.get_y() + p.get_height() / 2 if horizontal else p.get_x() + p.get_width() / 2
                                  for p in patches])}


def _errorbar(container):
    data_line, _, bar_lines = container.lines
    out = {"label": _label(container)}
    if data_line is not None:
        out["x"], out["y"] = _series(data_line.get_xdata()), _series(data_line.get_ydata())
    for lines, axis in zip(bar_lines, ("x", "y") if container.has_xerr else ("y",)):
        # Each segment runs from value - lower error to value + upper error; half its length is the error shown.
        out[f"{axis}err"] = _series([abs(s[1][1 if axis == "y" else 0] - s[0][1 if axis == "y" else 0]) / 2
                                     for s in lines.get_segments()])
    return out


def _image(image):
    array = image.get_array()
    out = {"shape": [int(s) for s in getattr(array, "shape", ())]}
    summary = _series(array) if array is not None else None
    if summary is not None:
        summary.pop("values", None)
        out.update(summary)
    return out


def _axes_record(ax):
    record = {"title": _text(ax.get_title()), "xlabel": _text(ax.get_xlabel()), "ylabel": _text(ax.get_ylabel()),
              "artists": []}
    artists = record["artists"]
    consumed = set()  # artists that belong to a container (error bars, histogram bars) already recorded
    for ids, hist in getattr(ax, _HISTS, [])[:MAX_ARTISTS]:
        consumed |= ids
        artists.append(dict(hist))
    for ids, box in getattr(ax, _BOXES, [])[:MAX_ARTISTS]:
        consumed |= ids
        artists.append(dict(box))
    containers = list(getattr(ax, "containers", []))
    for container in containers:
        if type(container).__name__ == "ErrorbarContainer":
            for part in container.get_children() if hasattr(container, "get_children") else []:
                consumed.add(id(part))
            _guarded("errorbar", _errorbar, container, artists)
    bars = [c for c in containers if type(c).__name__ == "BarContainer" and id(c) not in consumed]
    for container in bars[:MAX_ARTISTS]:
        _guarded("bars", _bars, container, artists)
    lines = [line for line in ax.get_lines() if id(line) not in consumed]
    for line in lines[:MAX_ARTISTS]:
        _guarded("line", _line, line, artists)
    scatters = [c for c in ax.collections if type(c).__name__ == "PathCollection" and id(c) not in consumed]
    for collection in scatters[:MAX_ARTISTS]:
        _guarded("scatter", _scatter, collection, artists)
    for image in list(ax.images)[:MAX_ARTISTS]:
        _guarded("image", _image, image, artists)
    for text in list(ax.texts)[:MAX_ARTISTS]:
        artists.append({"kind": "text", "text": _text(text)})
    return record


def _hist_record(ax, label, counts, edges, patches):
    """What one ``ax.hist`` call drew (a 2-D ``counts`` is one histogram per data set)."""
    rows = counts.tolist() if hasattr(counts, "tolist") else list(counts)
    rows = rows if rows and isinstance(rows[0], list) else [rows]
    labels = label if isinstance(label, (list, tuple)) else [label] * len(rows)
    ids, stack = set(), [patches]
    while stack:  # a BarContainer, a list of them, or a list of Polygons
        item = stack.pop()
        ids.add(id(item))
        if isinstance(item, (list, tuple)) or type(item).__name__ in ("BarContainer", "silent_list"):
            stack.extend(list(item))
    return [(ids if i == 0 else set(),
             {"kind": "hist", "label": "" if lab is None or str(lab).startswith("_") else str(lab)[:MAX_TEXT],
              "counts": _series(row), "edges": _series(edges)})
            for i, (row, lab) in enumerate(zip(rows, labels))]


def _box_record(parts, label):
    """What one ``ax.boxplot`` call drew: per box its median and quartiles, read off the lines drawn (the
    median line and the box outline lie along the value axis, whichever way the boxes stand)."""
    ids = {id(artist) for key in ("whiskers", "caps", "boxes", "medians", "fliers", "means")
           for artist in parts.get(key, [])}
    medians, lower, upper = [], [], []
    for median, box in zip(parts.get("medians", []), parts.get("boxes", [])):
        xs, ys = list(median.get_xdata()), list(median.get_ydata())
        vertical = len(ys) >= 2 and ys[0] == ys[-1]  # a horizontal median line: the boxes stand upright
        medians.append(ys[0] if vertical else xs[0])
        if hasattr(box, "get_ydata"):
            outline = list(box.get_ydata() if vertical else box.get_xdata())
        else:  # patch_artist=True draws each box as a PathPatch
            vertices = box.get_path().vertices
            outline = [v[1] if vertical else v[0] for v in vertices.tolist()]
        outline = [v for v in (_finite(v) for v in outline) if v is not None]
        lower.append(min(outline) if outline else None)
        upper.append(max(outline) if outline else None)
    return ids, {"kind": "boxplot", "label": "" if label is None else str(label)[:MAX_TEXT],
                 "medians": _series(medians), "q1": _series(lower), "q3": _series(upper)}


def record_figure(figure):
    """Record (or re-record) ``figure`` as it is now; never raises."""
    try:
        index = getattr(figure, _MARK, None)
        if index is None and len(_records) >= MAX_FIGURES:
            return
        suptitle = getattr(figure, "_suptitle", None)
        axes = list(figure.axes)
        record = {"suptitle": _text(suptitle) if suptitle is not None else "", "axes_count": len(axes),
                  "axes": []}
        for ax in axes[:MAX_AXES]:
            try:
                record["axes"].append(_axes_record(ax))
            except Exception as exc:
                record["axes"].append({"error": type(exc).__name__, "artists": []})
        if index is None:
            setattr(figure, _MARK, len(_records))
            _records.append(record)
        else:
            _records[index] = record
    except Exception:
        pass


def _open_figures(gcf):
    try:
        return [manager.canvas.figure for manager in list(gcf.figs.values())]
    except Exception:
        return []


def _patch(name, module):
    """Wrap what ``module`` defines that draws or ends a figure (once per module)."""
    if name in _state["patched"]:
        return
    _state["patched"].add(name)
    if name == "matplotlib.figure":
        original_savefig = module.Figure.savefig

        def savefig(self, *args, **kwargs):
            record_figure(self)
            return original_savefig(self, *args, **kwargs)

        module.Figure.savefig = _like(savefig, original_savefig)
    elif name == "matplotlib.pyplot":
        original_show = module.show

        def show(*args, **kwargs):
            for figure in _open_figures(sys.modules["matplotlib._pylab_helpers"].Gcf):
                record_figure(figure)
            return original_show(*args, **kwargs)

        module.show = _like(show, original_show)
    elif name == "matplotlib._pylab_helpers":
        gcf = module.Gcf
        original_destroy, original_destroy_all = gcf.destroy.__func__, gcf.destroy_all.__func__

        def destroy(cls, num):
            try:
                manager = num if hasattr(num, "canvas") else cls.figs.get(num)
                if manager is not None:
                    record_figure(manager.canvas.figure)
            except Exception:
                pass
            return original_destroy(cls, num)

        def destroy_all(cls):
            for figure in _open_figures(cls):
                record_figure(figure)
            return original_destroy_all(cls)

        gcf.destroy = classmethod(_like(destroy, original_destroy))
        gcf.destroy_all = classmethod(_like(destroy_all, original_destroy_all))
        # The module registered the unwrapped destroy_all at exit; exit hooks run last first, so this one,
        # registered after it, records the figures still open before that closes them.
        atexit.register(lambda: [record_figure(figure) for figure in _open_figures(gcf)])
    elif name == "matplotlib.axes._axes":
        original_hist = module.Axes.hist

        def hist(self, *args, **kwargs):
            result = original_hist(self, *args, **kwargs)
            try:
                counts, edges, patches = result
                label = kwargs.get("label")
                found = getattr(self, _HISTS, None)
                if found is None:
                    found = []
                    setattr(self, _HISTS, found)
                found.extend(_hist_record(self, label, counts, edges, patches))
            except Exception:
                pass
            return result

        module.Axes.hist = _like(hist, original_hist)
        # Axes.boxplot draws through Axes.bxp, and so does seaborn's boxplot: wrapping bxp sees both, once.
        original_bxp = module.Axes.bxp

        def bxp(self, *args, **kwargs):
            result = original_bxp(self, *args, **kwargs)
            try:
                found = getattr(self, _BOXES, None)
                if found is None:
                    found = []
                    setattr(self, _BOXES, found)
                found.append(_box_record(result, None))
            except Exception:
                pass
            return result

        module.Axes.bxp = _like(bxp, original_bxp)


def _like(wrapper, original):
    for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(wrapper, attribute, getattr(original, attribute))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = original
    return wrapper


class _PatchingLoader:
    """Runs the real loader, then wraps what the module defines; everything else goes to the real loader."""

    def __init__(self, loader, name):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            _patch(self._name, module)
        except Exception:
            pass

    def __getattr__(self, attribute):
        return getattr(self._loader, attribute)


class _Finder:
    """Finds nothing itself: for the modules it waits for, it asks the other finders and wraps the loader."""

    def find_spec(self, name, path=None, target=None):
        if name not in _TARGETS or name in _state["patched"]:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader, name)
                return spec
        return None


def write_plots():
    pyplot_helpers = sys.modules.get("matplotlib._pylab_helpers")
    if pyplot_helpers is not None:
        for figure in _open_figures(pyplot_helpers.Gcf):
            record_figure(figure)
    if not _records:
        return
    try:
        with open(os.path.join(ROOT, PLOTS_FILE), "w", encoding="utf-8") as fh:
            json.dump({"figures": _records}, fh, sort_keys=True, allow_nan=False, default=str)
    except (OSError, ValueError):
        pass


def install():
    """Record figures from now on (idempotent); the runner that runs the script calls this before it starts."""
    if _state["installed"]:
        return
    _state["installed"] = True
    atexit.register(write_plots)
    for name in _TARGETS:  # already imported (a site hook): wrap now
        if name in sys.modules:
            _patch(name, sys.modules[name])
    sys.meta_path.insert(0, _Finder())


def main():
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    install()
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
