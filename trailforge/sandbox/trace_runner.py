"""Run a Python script and record which files it read and which local modules it loaded.

This file is copied into the sandbox next to the program and run as
``python .tf_trace.py SCRIPT``. It uses only the standard library. The trace is written
to ``.tf_trace.json`` at exit, whatever way the script ends.
"""
import atexit
import json
import os
import runpy
import sys

ROOT = os.getcwd()
TRACE_FILE = ".tf_trace.json"
_reads = []
_seen = set()


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
    else:
        reading = (flags or 0) & (os.O_WRONLY | os.O_RDWR) == 0 or (flags or 0) & os.O_RDWR != 0
    if not reading:
        return
    try:
        full = os.path.abspath(os.fsdecode(path))
    except Exception:
        return
    if full in _seen or not full.startswith(ROOT + os.sep):
        return
    _seen.add(full)
    _reads.append(os.path.relpath(full, ROOT))


def _write_trace():
    modules = []
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if origin and os.path.abspath(origin).startswith(ROOT + os.sep):
            modules.append(os.path.relpath(os.path.abspath(origin), ROOT))
    with open(os.path.join(ROOT, TRACE_FILE), "w", encoding="utf-8") as fh:
        json.dump({"reads": _reads, "local_modules": sorted(set(modules))}, fh)


def main():
    script = sys.argv[1]
    sys.argv = [script] + sys.argv[2:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    atexit.register(_write_trace)
    sys.addaudithook(_record_open)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
