"""Run a Python script and record what it read, which local modules it loaded and, on request, its values.

This file is copied into the sandbox next to the program and run as
``python .tf_trace.py [--values] SCRIPT``. It uses only the standard library. The trace
is written to ``.tf_trace.json`` at exit, whatever way the script ends.

With ``--values`` it reads a plan, ``.tf_plan.json`` (for each program file and scope: the
first line of each top-level statement and the names it binds), follows the frames of
those scopes with ``sys.settrace`` and records:

- ``lines``: the lines each program file executed (coverage);
- ``units``: how often each planned statement finished;
- ``values``: a bounded summary (type, shape, a few elements, the exact number for scalars)
  of each name a statement binds, taken the first time the statement finished;
- ``calls``: for each function the program defines, how often it was called and a summary of
  its first arguments and return value.

When the plot recorder (``.tf_plots.py``, see plot_recorder.py) sits beside this file, the run
records its matplotlib figures too, exactly as a run under the recorder alone would.

Every run also records ``prints``: for each ``print()`` call the program's own files make onto stdout
(at most ``MAX_PRINTS`` and ``MAX_PRINT_BYTES``), its file, line and the text it printed (capped at
``MAX_PRINT_TEXT``; a cut record has, fourth, the number of lines the whole text had). A bare
number on stdout says nothing of what it is; the call that printed it does (``print(calc_gc(seq))``).

Summaries never hold whole objects: a workflow graph needs to know that ``beta`` was a
float 1.42 and ``abund`` a 4 x 18 table, not the table itself.
"""
import atexit
import json
import math
import os
import runpy
import sys

# The runner sits at the root of the scratch folder; the script may be started from a subfolder.
ROOT = os.path.dirname(os.path.abspath(__file__))
TRACE_FILE = ".tf_trace.json"
PLAN_FILE = ".tf_plan.json"
PLOT_SCRIPT = ".tf_plots.py"
MAX_EVENTS = 3_000_000  # a runaway loop must not turn tracing into the bottleneck
PREVIEW = 6
MAX_PRINTS = 5000
MAX_PRINT_TEXT = 200
MAX_PRINT_BYTES = 200_000  # all records together: the trace file must stay far below the output file limit
_prints = []  # [path, line, text] of the program's print() calls onto stdout, in order
_reads = []
_seen = set()
_writes = set()  # files opened for writing: their folders must exist in any later run
_plan = {}  # path -> scope first line ("0" = module) -> statement first line -> names it binds
_rel_paths = {}
_ignored = set()
_lines = {}
_unit_runs = {}
_values = {}
_calls = {}
_state = {"events": 0, "truncated": False, "print_bytes": 0}


def _record_open(event, args):
    if event != "open" or not args:
        return
    path = args[0]
    if path is None or isinstance(path, int):
        return
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else 0
    if isinstance(mode, str):
        reading = "r" in mode or "+" in mode
        writing = any(c in mode for c in "wax+")
    else:
        reading = (flags or 0) & (os.O_WRONLY | os.O_RDWR) == 0 or (flags or 0) & os.O_RDWR != 0
        writing = (flags or 0) & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) != 0
    try:
        full = os.path.abspath(os.fsdecode(path))
    except Exception:
        return
    if writing and full.startswith(ROOT + os.sep) and len(_writes) < 10_000:
        _writes.add(os.path.relpath(full, ROOT))
    if not reading or full in _seen or not full.startswith(ROOT + os.sep):
        return
    _seen.add(full)
    _reads.append(os.path.relpath(full, ROOT))


def _number(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value if not isinstance(value, float) or math.isfinite(value) else None
    return None


def summarise(value):
    """A small JSON-able description of any value; never raises."""
    try:
        return _summarise(value)
    except Exception as exc:  # a __repr__ or property of user code may fail
        return {"type": type(value).__name__, "error": type(exc).__name__}


def _summarise(value):
    kind = type(value).__name__
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, (int, float)):
        return {"type": "int" if isinstance(value, int) else "float", "value": _number(value)}
    if isinstance(value, str):
        return {"type": "str", "len": len(value), "preview": value[:40]}
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and hasattr(value, "tolist"):
        shape = [int(s) for s in shape]
        if not shape:  # a numpy scalar
            item = value.item()
            out = _summarise(item)
            out["type"] = "float" if isinstance(item, float) else out["type"]
            return out
        out = {"type": kind, "shape": shape, "dtype": str(dtype), "numeric": getattr(dtype, "kind", "") in "iuf"}
        if kind == "Series":
            out["index"] = [str(i)[:40] for i in list(value.index[:PREVIEW])]
            out["preview"] = [_number(v) if _number(v) is not None else str(v)[:40] for v in value.tolist()[:PREVIEW]]
            out["name"] = None if value.name is None else str(value.name)[:40]
        elif kind == "ndarray" and len(shape) == 1:
            out["preview"] = [_number(v) if _number(v) is not None else str(v)[:40] for v in value.tolist()[:PREVIEW]]
        return out
    if kind == "DataFrame":
        columns = [str(c)[:40] for c in list(value.columns)]
        numeric = [str(c)[:40] for c, t in value.dtypes.items() if getattr(t, "kind", "") in "iuf"]
        return {"type": kind, "shape": [int(s) for s in value.shape], "columns": columns[:30],
                "numeric_columns": numeric[:30], "index_type": type(value.index).__name__}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)[:PREVIEW] if not isinstance(value, (set, frozenset)) else []
        numbers = [_number(v) for v in items]
        out = {"type": kind, "len": len(value)}
        if items and all(n is not None for n in numbers):
            out["preview"] = numbers
            out["numeric"] = all(_number(v) is not None for v in list(value)[:1000])
        else:
            out["element_types"] = sorted({type(v).__name__ for v in list(value)[:50]})
        return out
    if isinstance(value, dict):
        keys = list(value)[:PREVIEW]
        out = {"type": "dict", "len": len(value), "keys": [str(k)[:40] for k in keys]}
        numbers = [_number(_item(v)) for v in list(value.values())[:1000]]
        out["numeric"] = bool(numbers) and all(n is not None for n in numbers)
        return out
    if callable(value):
        return {"type": "callable"}
    return {"type": kind}


def _item(value):
    return value.item() if hasattr(value, "item") and getattr(value, "shape", None) == () else value


def _scope_units(code):
    """The plan's statements for the scope this code object runs, or None when it is not followed."""
    filename = code.co_filename
    if filename in _ignored:
        return None
    rel = _rel_paths.get(filename)
    if rel is None:
        full = os.path.abspath(filename)
        rel = os.path.relpath(full, ROOT)
        if not full.startswith(ROOT + os.sep) or rel not in _plan:
            _ignored.add(filename)
            return None
        _rel_paths[filename] = rel
    scope = "0" if code.co_name == "<module>" else str(code.co_firstlineno)
    units = _plan[rel].get(scope)
    return None if units is None else (rel, units)


def _observe(rel, line, names, frame_locals):
    key = (rel, line)
    _unit_runs[key] = _unit_runs.get(key, 0) + 1
    for name in names:
        if name not in frame_locals:
            continue
        key = (rel, line, name)
        seen = _values.get(key)
        if seen is None:
            _values[key] = {"count": 1, "summary": summarise(frame_locals[name])}
        else:
            seen["count"] += 1


def _global_tracer(frame, event, arg):
    if event != "call":
        return None
    code = frame.f_code
    found = _scope_units(code)
    if found is None:
        return None
    rel, units = found
    call_key = (rel, code.co_name, code.co_firstlineno)
    record = _calls.get(call_key)
    if record is None:
        args = {name: summarise(frame.f_locals[name]) for name in code.co_varnames[:code.co_argcount]
                if name in frame.f_locals}
        record = _calls[call_key] = {"count": 0, "args": args, "returns": None}
    record["count"] += 1
    covered = _lines.setdefault(rel, set())
    current = [None]

    def local_tracer(frame, event, arg):
        _state["events"] += 1
        if _state["events"] > MAX_EVENTS:
            _state["truncated"] = True
            sys.settrace(None)
            return None
        if event == "line":
            line = frame.f_lineno
            covered.add(line)
            # A statement is finished when the next statement of its scope starts. Coming back to
            # its own first line (a loop header, a multi-line call) does not finish it.
            if str(line) in units and line != current[0]:
                if current[0] is not None:
                    _observe(rel, current[0], units[str(current[0])], frame.f_locals)
                current[0] = line
        elif event == "return":
            if current[0] is not None:
                _observe(rel, current[0], units[str(current[0])], frame.f_locals)
            current[0] = None
            if record["returns"] is None and code.co_name != "<module>":
                record["returns"] = summarise(arg)
        return local_tracer

    return local_tracer


class _Tap:
    """Stands in for stdout during one print(): what print writes goes on to stdout and is kept, so each
    argument's ``__str__`` runs once, as it would without the recorder."""

    def __init__(self, target):
        self._target, self.parts = target, []

    def write(self, text):
        self.parts.append(text)
        return self._target.write(text)

    def __getattr__(self, name):
        return getattr(self._target, name)


def _install_print_recorder():
    """Wrap ``builtins.print``: a call from a program file onto the real stdout is recorded (file, line, text),
    then printed exactly as before; output the program captures (``redirect_stdout``, ``file=``) is not."""
    import builtins
    import functools

    original = builtins.print
    real = sys.stdout

    @functools.wraps(original)  # keeps builtins.print's name, so pickle and introspection see print
    def print(*args, sep=" ", end="\n", file=None, flush=False):
        tap = None
        try:
            if (file is None and sys.stdout is real or file is real) and len(_prints) < MAX_PRINTS \
                    and _state["print_bytes"] < MAX_PRINT_BYTES:
                caller = sys._getframe(1)
                full = os.path.abspath(caller.f_code.co_filename)
                if full.startswith(ROOT + os.sep) and not os.path.basename(full).startswith(".tf_"):
                    tap = _Tap(real)
        except Exception:
            tap = None  # recording must never change what the program does
        if tap is None:
            return original(*args, sep=sep, end=end, file=file, flush=flush)
        try:
            return original(*args, sep=sep, end=end, file=tap, flush=flush)
        finally:
            try:
                text = "".join(tap.parts)
                record = [os.path.relpath(full, ROOT), caller.f_lineno, text[:MAX_PRINT_TEXT]]
                # a cut text: how many lines it printed, so the lining up can step over all of them
                _prints.append(record if len(text) <= MAX_PRINT_TEXT else record + [text.count("\n")])
                _state["print_bytes"] += min(len(text), MAX_PRINT_TEXT)
            except Exception:
                pass

    builtins.print = print


def _write_trace():
    sys.settrace(None)
    modules = []
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if origin and os.path.abspath(origin).startswith(ROOT + os.sep):
            modules.append(os.path.relpath(os.path.abspath(origin), ROOT))
    trace = {"reads": _reads, "writes": sorted(_writes), "local_modules": sorted(set(modules)), "prints": _prints}
    if _plan:
        trace["lines"] = {path: sorted(lines) for path, lines in sorted(_lines.items())}
        trace["units"] = [{"path": path, "line": line, "count": count}
                          for (path, line), count in sorted(_unit_runs.items())]
        trace["values"] = [
            {"path": path, "line": line, "name": name, **record}
            for (path, line, name), record in sorted(_values.items())
        ]
        trace["calls"] = [
            {"path": path, "function": function, "line": line, **record}
            for (path, function, line), record in sorted(_calls.items())
        ]
        trace["truncated"] = _state["truncated"]
    with open(os.path.join(ROOT, TRACE_FILE), "w", encoding="utf-8") as fh:
        json.dump(trace, fh, sort_keys=True)


def _install_plot_recorder():
    """Run the plot recorder's module (not imported: that would list it as a local module and could leave
    bytecode in the scratch folder) and start it, when it was placed beside this file."""
    path = os.path.join(ROOT, PLOT_SCRIPT)
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as fh:
        code = compile(fh.read(), path, "exec")
    namespace = {"__name__": "tf_plot_recorder", "__file__": path}
    exec(code, namespace)
    namespace["install"]()


def main():
    _state["self"] = os.path.abspath(sys.argv[0])
    _install_plot_recorder()
    _install_print_recorder()
    values = sys.argv[1] == "--values"
    script = sys.argv[2] if values else sys.argv[1]
    sys.argv = [script] + sys.argv[(3 if values else 2):]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    atexit.register(_write_trace)
    sys.addaudithook(_record_open)
    if values:
        with open(os.path.join(ROOT, PLAN_FILE), encoding="utf-8") as fh:
            _plan.update(json.load(fh))
        sys.settrace(_global_tracer)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
