"""What of a ``dvc.lock`` a cold build must reproduce, and how two builds differ in it.

"Reproducible" means: the same recipe, code and library versions give the same bytes. The part of a lock that
says so is, per stage, the md5 of every output DVC caches and the ``versions.yaml`` params it ran with. The rest
is left out on purpose: code and data deps change with every commit that touches them without changing a single
output (a refactor), and outputs declared ``cache: false`` in ``dvc.yaml`` are measured figures (each stage's
``timings.json``: wall time, cache hits), which differ between runs over the same inputs by nature.

A *reference* is that part of a lock, written as YAML (``tests/e2e/tiny.lock.yaml`` for the tiny recipe); the e2e
test builds the recipe cold in a fresh copy and requires :func:`reference_differences` to be empty.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..config.versions import VERSIONS_FILE


class LockError(Exception):
    """A dvc.lock or dvc.yaml lacks what a reference is made of; the message names the stage and key."""


def measured_outs(dvc: dict[str, Any]) -> dict[str, set[str]]:
    """Per stage, the outputs ``dvc.yaml`` declares ``cache: false``: measured figures, not results."""
    measured: dict[str, set[str]] = {}
    for name, stage in (dvc.get("stages") or {}).items():
        for section in ("outs", "metrics", "plots"):
            for entry in stage.get(section) or []:
                if isinstance(entry, dict):
                    for path, options in entry.items():
                        if isinstance(options, dict) and options.get("cache") is False:
                            measured.setdefault(name, set()).add(path)
    return measured


def reproducible_record(lock: dict[str, Any], dvc: dict[str, Any]) -> dict[str, Any]:
    """``{stage: {"versions": {...}, "outs": {path: md5}}}`` from a parsed dvc.lock and the dvc.yaml it built."""
    stages = lock.get("stages")
    if not isinstance(stages, dict) or not stages:
        raise LockError("dvc.lock has no stages: was the pipeline run (`dvc repro`)?")
    measured = measured_outs(dvc)
    record = {}
    for name, stage in stages.items():
        outs = {}
        for out in stage.get("outs") or []:
            if out["path"] in measured.get(name, ()):
                continue
            if "md5" not in out:
                raise LockError(f"dvc.lock: stages.{name}.outs {out['path']} has no md5")
            outs[out["path"]] = out["md5"]
        versions = (stage.get("params") or {}).get(VERSIONS_FILE)
        if versions is None:
            raise LockError(f"dvc.lock: stages.{name}.params has no {VERSIONS_FILE}: every stage must list the "
                            f"versions it computes with in dvc.yaml")
        record[name] = {"versions": versions, "outs": outs}
    return record


def record_of_build(project: Path) -> dict[str, Any]:
    """The reproducible record of the lock a ``dvc repro`` left in ``project``."""
    read = lambda name: yaml.safe_load((Path(project) / name).read_text(encoding="utf-8")) or {}  # noqa: E731
    return reproducible_record(read("dvc.lock"), read("dvc.yaml"))


def write_reference(record: dict[str, Any], path: Path, how: str) -> None:
    header = ("# Output md5s (and the versions.yaml params they were made with) that a cold build must reproduce;\n"
              "# timings.json and other `cache: false` outs are measured and left out (trailforge/io/reference_lock.py).\n"
              f"# Regenerate: {how}\n")
    Path(path).write_text(header + yaml.safe_dump(record, sort_keys=True), encoding="utf-8")


def read_reference(path: Path) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}


def _flat(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    # DVC records `libraries.numpy: 2.4.6` flat and `programs:` as a mapping; compare leaf by leaf either way.
    flat = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def reference_differences(reference: dict[str, Any], built: dict[str, Any]) -> list[str]:
    """Every way ``built`` differs from ``reference``, one readable line each (empty: reproduced exactly).

    Version lines come first: when an interpreter or library differs, the outputs that differ are its effect."""
    versions, outs = [], []
    for name in sorted(set(reference) | set(built)):
        if name not in built or name not in reference:
            outs.append(f"stage {name}: only in the {'reference' if name in reference else 'build'}")
            continue
        old, new = _flat(reference[name]["versions"]), _flat(built[name]["versions"])
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                versions.append(f"stage {name}: {VERSIONS_FILE} {key} is {new.get(key)!r}, "
                                f"the reference was built with {old.get(key)!r}")
        ref_outs, got_outs = reference[name]["outs"], built[name]["outs"]
        for path in sorted(set(ref_outs) | set(got_outs)):
            if ref_outs.get(path) != got_outs.get(path):
                outs.append(f"stage {name}: {path} md5 {got_outs.get(path)}, reference {ref_outs.get(path)}")
    return versions + outs
