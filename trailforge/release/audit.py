"""An audit sample for blind human review: stratified, with a floor per stratum, and nothing that unblinds.

Strata are discipline x task type x difficulty (``unrated`` when no review ran). Allocation is
proportional to stratum size, with at least ``min_per_stratum`` from every non-empty stratum (or
all of it when smaller), and the draw within a stratum is seeded. The sheet carries what a
reviewer needs to judge a task: the statement, the input files, the execution requirements, the
reference program and the grader. It leaves out what would bias them: the verifier's verdicts and
scores, review history, difficulty, revision notes and the reference answer.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..envs.tasks import eval_script
from ..io import VerifiedTaskRow

SHEET_FIELDS = ["audit_id", "discipline", "task_type", "statement", "input_files", "execution_requirements",
                "reference_program", "entrypoint", "eval_script"]
JUDGEMENT_FIELDS = ["scientific_relevance", "task_identifiability", "scientific_correctness", "program_correctness",
                    "artifact_consistency", "execution_reproducibility", "evaluation_validity", "notes"]


def stratum(task: VerifiedTaskRow) -> tuple[str, str, str]:
    level = task.checks.get("difficulty", {}).get("level")
    return task.discipline, task.task_type, str(level) if level is not None else "unrated"


def allocate(sizes: dict[Any, int], total: int, minimum: int) -> dict[Any, int]:
    """Proportional allocation of ``total`` with a floor of ``minimum`` per non-empty stratum (capped by its size).

    The floors win when they alone exceed ``total``: every non-empty stratum is represented.
    """
    population = sum(sizes.values())
    quota = {key: min(size, max(minimum, math.floor(total * size / population))) for key, size in sizes.items()}
    # Floors may overshoot the total: take the excess back from the largest strata, never below a floor.
    floor = {key: min(size, minimum) for key, size in sizes.items()}
    while sum(quota.values()) > total and any(quota[k] > floor[k] for k in quota):
        largest = max((k for k in quota if quota[k] > floor[k]), key=lambda k: (quota[k], str(k)))
        quota[largest] -= 1
    # Hand out what rounding left over to the strata with the largest remainders, deterministically.
    left = total - sum(quota.values())
    order = sorted(sizes, key=lambda k: (-(total * sizes[k] / population - math.floor(total * sizes[k] / population)),
                                         str(k)))
    while left > 0 and any(quota[k] < sizes[k] for k in order):
        for key in order:
            if left > 0 and quota[key] < sizes[key]:
                quota[key] += 1
                left -= 1
    return quota


def audit_sample(tasks: list[VerifiedTaskRow], total: int, minimum: int, seed: int) -> list[VerifiedTaskRow]:
    by_stratum: dict[tuple, list[VerifiedTaskRow]] = defaultdict(list)
    for task in sorted(tasks, key=lambda t: t.task_id):
        by_stratum[stratum(task)].append(task)
    quota = allocate({k: len(v) for k, v in by_stratum.items()}, total, minimum)
    chosen = []
    for key in sorted(by_stratum):
        rng = random.Random(f"{seed}:{'/'.join(key)}")
        chosen += rng.sample(by_stratum[key], quota[key])
    return sorted(chosen, key=lambda t: t.task_id)


def sheet_row(task: VerifiedTaskRow, seed: int) -> dict[str, Any]:
    audit_id = hashlib.sha256(f"{seed}:{task.task_id}".encode()).hexdigest()[:12]  # ids do not name the source
    return {
        "audit_id": audit_id,
        "discipline": task.discipline,
        "task_type": task.task_type,
        "statement": task.statement,
        "input_files": json.dumps([f.path for f in task.workspace_files] + sorted(task.workspace_program)),
        "execution_requirements": json.dumps({"python": task.sandbox_spec.get("python"),
                                              "packages": task.sandbox_spec.get("packages", {})}, sort_keys=True),
        "reference_program": json.dumps(task.reference_program, sort_keys=True),
        "entrypoint": task.entrypoint,
        "eval_script": eval_script(),
    }


def write_audit(tasks: list[VerifiedTaskRow], out: Path, total: int, minimum: int, seed: int) -> dict[str, Any]:
    sample = audit_sample(tasks, total, minimum, seed)
    out.mkdir(parents=True, exist_ok=True)
    rows = [sheet_row(t, seed) for t in sample]
    with open(out / "sheet.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=SHEET_FIELDS + JUDGEMENT_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, **{k: "" for k in JUDGEMENT_FIELDS}})
    # The key that maps audit ids back to environments stays with the organisers, not the reviewers.
    key = {sheet_row(t, seed)["audit_id"]: t.task_id for t in sample}
    (out / "key.json").write_text(json.dumps(key, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    strata = defaultdict(int)
    for task in sample:
        strata["/".join(stratum(task))] += 1
    return {"sampled": len(sample), "population": len(tasks), "strata": dict(sorted(strata.items()))}
