"""Benchmark: do fresh clones rebuild a recipe to the output hashes of a reference lock?

Each clone is a ``git clone`` of the project's committed HEAD into a temporary folder (no outputs, no run
cache, no DVC cache), built with ``trailforge compose recipe=<recipe> && dvc repro`` by the interpreter of a
virtual environment (``--python``; default: this one). Its ``dvc.lock`` is then reduced to what must
reproduce (``trailforge/io/reference_lock.py``: per stage, the md5 of every cached out and the
``versions.yaml`` params) and compared with the reference: the committed ``dvc.lock`` for the demo recipe,
``tests/e2e/tiny.lock.yaml`` for the tiny one, or ``--reference``. Printed per clone: the interpreter, wall
time, stages and outs compared, and every difference (versions first). Exit status 1 when any clone differs.

    python bench/reproduce.py --recipe demo --clones 2
    python bench/reproduce.py --recipe tiny --python /tmp/lock-venv/bin/python   # a venv made from constraints.txt

It asserts nothing about speed; it can fail, and does when a library version or a result byte differs.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from trailforge.io.reference_lock import (  # noqa: E402
    LockError, read_reference, record_of_build, reference_differences, reproducible_record,
)

DEFAULT_REFERENCES = {"demo": "dvc.lock", "tiny": "tests/e2e/tiny.lock.yaml"}


def reference_record(path: Path) -> dict:
    """A reference from a lock file (reduced with the committed dvc.yaml) or from a reference YAML."""
    if path.name == "dvc.lock":
        lock = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        dvc = yaml.safe_load((path.parent / "dvc.yaml").read_text(encoding="utf-8")) or {}
        return reproducible_record(lock, dvc)
    return read_reference(path)


def build_clone(dest: Path, recipe: str, python: Path) -> float:
    subprocess.run(["git", "clone", "-q", str(PROJECT_ROOT), str(dest)], check=True)
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("TRAILFORGE_CACHE_DIR", None)  # the clone's own, empty run cache
    start = time.monotonic()
    for cmd in ([str(python), "-m", "trailforge.cli.main", "compose", f"recipe={recipe}"],
                [str(python), "-m", "dvc", "repro", "--quiet"]):
        done = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[1:4])} failed in {dest} (exit {done.returncode}):\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", default="tiny")
    parser.add_argument("--clones", type=int, default=1)
    parser.add_argument("--python", type=Path, default=Path(sys.executable),
                        help="interpreter of the virtual environment that builds (default: this one)")
    parser.add_argument("--reference", type=Path, help="default: dvc.lock (demo), tests/e2e/tiny.lock.yaml (tiny)")
    parser.add_argument("--keep", action="store_true", help="keep the clones and print where they are")
    args = parser.parse_args(argv)
    reference_path = args.reference or PROJECT_ROOT / DEFAULT_REFERENCES.get(args.recipe, "dvc.lock")
    try:
        reference = reference_record(reference_path)
    except (LockError, OSError) as error:  # a lock from before versions.yaml: build anyway, compare nothing
        print(f"the reference {reference_path} cannot be compared with: {error}")
        reference = None
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=PROJECT_ROOT,
                           capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT,
                          capture_output=True, text=True).stdout.strip()
    print(f"recipe {args.recipe}, commit {head}{' (uncommitted changes are not in the clones)' if dirty else ''}, "
          f"reference {reference_path}: "
          + (f"{len(reference)} stages, {sum(len(s['outs']) for s in reference.values())} outs" if reference else "none"))
    failed = 0
    root = Path(tempfile.mkdtemp(prefix="trailforge-bench-reproduce-"))
    for index in range(args.clones):
        dest = root / f"clone{index + 1}"
        seconds = build_clone(dest, args.recipe, args.python.absolute())
        if reference is None:
            failed += 1
            print(f"clone {index + 1} ({args.python}): built in {seconds:.0f} s, no reference to compare with")
            continue
        differences = reference_differences(reference, record_of_build(dest))
        failed += bool(differences)
        print(f"clone {index + 1} ({args.python}): built in {seconds:.0f} s, "
              + ("reproduces the reference exactly" if not differences else f"{len(differences)} difference(s):"))
        for line in differences[:40]:
            print(f"  {line}")
    if args.keep:
        print(f"clones kept under {root}")
    else:
        subprocess.run(["rm", "-rf", str(root)], check=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
