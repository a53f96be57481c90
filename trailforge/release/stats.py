"""Statistics of a release: what the corpus holds, where it came from, and what each stage dropped.

Everything here is a pure function over rows and upstream stage summaries; the release stage reads
the files and the card and report render what :func:`release_statistics` returns. Figures are plain
ints, floats (rounded, so the rendered card is byte-stable), strings, lists and dicts.
"""
from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from ..io import TASK_TYPES, Reject, RepoRow, SeedRow, SnapshotRow, VerifiedTaskRow, read_rejects
from ..lineage.diversity import embed_texts, sampled_diversity

# Pipeline order of the stages whose accepted rows and rejects make up the verification funnel.
FUNNEL_STAGES = ("discover", "snapshot", "seeds", "workflows", "tasks", "statements", "verify")
UNRATED = "unrated"
# Diversity grows with the number of items, so every group is measured on samples of one size:
# at most this many statements, fewer when the smallest measurable group is smaller.
DIVERSITY_MAX_SAMPLE = 50
# A group smaller than this is not measured at all: a Vendi score over a handful of texts says little.
DIVERSITY_MIN_GROUP = 5
DIVERSITY_SEED_COUNT = 5
# Reject messages can carry whole tracebacks; the report shows the start of one example per reason.
EXAMPLE_MESSAGE_CHARS = 160
_LICENSE_NAMES = ("license", "licence", "copying", "copyright")


class StageFolderError(FileNotFoundError):
    """An upstream stage folder, or a file in it, that the release needs is missing."""


def read_stage_outcome(stage: str, folder: Path) -> dict[str, Any]:
    """One upstream stage's ``stats.json`` figures and its rejects, or an error naming the missing path."""
    folder = Path(folder)
    stats_path, rejects_path = folder / "stats.json", folder / "rejects.parquet"
    for path in (stats_path, rejects_path):
        if not path.is_file():
            raise StageFolderError(f"stage '{stage}': {path} is missing; has the {stage} stage run into {folder}?")
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    if not isinstance(stats, dict) or not isinstance(stats.get("accepted"), int):
        raise ValueError(f"stage '{stage}': {stats_path} has no integer 'accepted' count")
    return {"stage": stage, "accepted": stats["accepted"], "rejects": read_rejects(rejects_path)}


def funnel(outcomes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per stage in pipeline order: rows coming in, items rejected (by reason) and rows accepted.

    ``rows_in`` is the previous stage's accepted count (``None`` for the first stage given, which
    finds its own candidates). Rejected items are not always the rows that came in: snapshot rejects
    files inside a repository and tasks rejects candidate mutants, so ``rows_in - rejected`` need not
    equal ``accepted``. ``considered`` is ``accepted + rejected``: everything the stage decided on.
    """
    steps, previous = [], None
    for outcome in outcomes:
        rejects: list[Reject] = outcome["rejects"]
        reasons = Counter(r.reason for r in rejects)
        examples = {}
        for reject in sorted(rejects, key=lambda r: (r.reason, r.item_id)):
            examples.setdefault(reject.reason, {"item_id": reject.item_id,
                                                "message": _clip(reject.message, EXAMPLE_MESSAGE_CHARS)})
        steps.append({
            "stage": outcome["stage"],
            "rows_in": previous,
            "rejected": len(rejects),
            "accepted": outcome["accepted"],
            "considered": outcome["accepted"] + len(rejects),
            "reject_reasons": [{"reason": reason, "count": count, **examples[reason]}
                               for reason, count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))],
        })
        previous = outcome["accepted"]
    return steps


def difficulty_of(task: VerifiedTaskRow) -> str:
    level = (task.checks.get("difficulty") or {}).get("level")
    return str(level) if level is not None else UNRATED


def counts(tasks: Sequence[VerifiedTaskRow]) -> dict[str, Any]:
    """Environments by discipline, task type, difficulty and repository, and task type x discipline."""
    def tally(values) -> dict[str, int]:
        return dict(sorted(Counter(values).items()))

    types_present = [t for t in TASK_TYPES if any(task.task_type == t for task in tasks)]
    disciplines = sorted({t.discipline for t in tasks})
    pairs = Counter((t.task_type, t.discipline) for t in tasks)
    return {
        "environments": len(tasks),
        "by_discipline": tally(t.discipline for t in tasks),
        "by_task_type": {kind: sum(t.task_type == kind for t in tasks) for kind in types_present},
        "by_difficulty": tally(difficulty_of(t) for t in tasks),
        "by_repository": tally(t.repo_id for t in tasks),
        "task_type_by_discipline": {
            "task_types": types_present,
            "disciplines": disciplines,
            "cells": [[pairs[(kind, discipline)] for discipline in disciplines] for kind in types_present],
        },
    }


def repository_yield(tasks: Sequence[VerifiedTaskRow], seeds: Sequence[SeedRow] | None) -> list[dict[str, Any]]:
    """Per repository: seed programs, verified environments by task type, and environments per seed.

    ``seeds`` is ``None`` when the seeds stage was not given; the seed columns are then ``None``.
    """
    repos = sorted({t.repo_id for t in tasks} | {s.repo_id for s in seeds or []})
    seed_counts = Counter(s.repo_id for s in seeds or [])
    rows = []
    for repo in repos:
        mine = [t for t in tasks if t.repo_id == repo]
        seed_count = seed_counts[repo] if seeds is not None else None
        rows.append({
            "repo_id": repo,
            "seeds": seed_count,
            "by_task_type": {kind: sum(t.task_type == kind for t in mine) for kind in TASK_TYPES},
            "environments": len(mine),
            "environments_per_seed": round(len(mine) / seed_count, 2) if seed_count else None,
        })
    return rows


def summarise(values: Sequence[float]) -> dict[str, float]:
    """min, median, mean, 90th percentile and max (nearest-rank), rounded for a stable rendering."""
    if not values:
        return {"n": 0, "min": 0, "median": 0, "mean": 0, "p90": 0, "max": 0}
    ordered = sorted(values)
    p90 = ordered[max(0, -(-9 * len(ordered) // 10) - 1)]
    return {"n": len(ordered), "min": ordered[0], "median": round(float(statistics.median(ordered)), 1),
            "mean": round(statistics.fmean(ordered), 1), "p90": p90, "max": ordered[-1]}


def statement_words(task: VerifiedTaskRow) -> int:
    return len(task.statement.split())


def reference_lines(task: VerifiedTaskRow) -> int:
    return sum(len(text.splitlines()) for text in task.reference_program.values())


def lengths(tasks: Sequence[VerifiedTaskRow]) -> dict[str, Any]:
    """Statement length (characters and whitespace-separated words) and reference program lines,
    over all environments and per task type."""
    measures = {
        "statement_chars": lambda t: len(t.statement),
        "statement_words": statement_words,
        "reference_program_lines": reference_lines,
    }
    groups = [("all", list(tasks))] + [(kind, [t for t in tasks if t.task_type == kind]) for kind in TASK_TYPES]
    return {
        "measures": list(measures),
        "groups": [{"group": name, **{m: summarise([f(t) for t in members]) for m, f in measures.items()}}
                   for name, members in groups if members],
        # Raw word counts per task type, for the histogram.
        "statement_words_by_task_type": {
            kind: [statement_words(t) for t in sorted(tasks, key=lambda t: t.task_id) if t.task_type == kind]
            for kind in TASK_TYPES if any(t.task_type == kind for t in tasks)
        },
    }


def diversity(texts_by_group: dict[str, list[str]], seeds: Sequence[int],
              max_sample: int = DIVERSITY_MAX_SAMPLE, min_group: int = DIVERSITY_MIN_GROUP) -> dict[str, Any]:
    """Vendi score and centroid distance of each group's texts on equal-size samples, averaged over seeds.

    One sample size serves every group, so the figures compare: ``max_sample``, or the size of the
    smallest group that has at least ``min_group`` texts when that is smaller. Groups with fewer texts
    than the sample size are listed with ``None`` figures rather than measured on a smaller sample.
    """
    measurable = [len(texts) for texts in texts_by_group.values() if len(texts) >= min_group]
    size = min([max_sample, *measurable]) if measurable else 0
    rows = []
    for group, texts in texts_by_group.items():
        if size and len(texts) >= size:
            figures = sampled_diversity(embed_texts(texts), size, list(seeds))
            rows.append({"group": group, "items": len(texts), "vendi": round(figures["vendi"], 3),
                         "centroid_distance": round(figures["centroid_distance"], 4)})
        else:
            rows.append({"group": group, "items": len(texts), "vendi": None, "centroid_distance": None})
    return {"sample_size": size, "seeds": list(seeds), "embedding": "hashing", "groups": rows}


def statement_diversity(tasks: Sequence[VerifiedTaskRow], seed: int) -> dict[str, Any]:
    """Diversity of task statements: the whole release, each task type and each discipline."""
    ordered = sorted(tasks, key=lambda t: t.task_id)
    groups: dict[str, list[str]] = {"all": [t.statement for t in ordered]}
    for kind in TASK_TYPES:
        texts = [t.statement for t in ordered if t.task_type == kind]
        if texts:
            groups[f"task type: {kind}"] = texts
    for discipline in sorted({t.discipline for t in ordered}):
        groups[f"discipline: {discipline}"] = [t.statement for t in ordered if t.discipline == discipline]
    return diversity(groups, [seed + i for i in range(DIVERSITY_SEED_COUNT)])


def repositories(tasks: Sequence[VerifiedTaskRow], repos: Sequence[RepoRow] | None,
                 snapshots: Sequence[SnapshotRow] | None) -> list[dict[str, Any]]:
    """Every repository with environments in the release: origin, pinned version and license files seen."""
    by_repo = {r.repo_id: r for r in repos or []}
    by_snapshot = {s.repo_id: s for s in snapshots or []}
    rows = []
    for repo_id in sorted({t.repo_id for t in tasks}):
        repo, snapshot = by_repo.get(repo_id), by_snapshot.get(repo_id)
        origin = repo.origin if repo else snapshot.origin if snapshot else None
        rows.append({
            "repo_id": repo_id,
            "origin": origin,
            "ref": repo.ref if repo else None,
            "version": (snapshot.commit or f"content sha256 {snapshot.content_hash[:16]}") if snapshot else None,
            "license_files": sorted(f.path for f in snapshot.files if _is_license_file(f.path)) if snapshot else None,
            "discipline": next(t.discipline for t in tasks if t.repo_id == repo_id),
        })
    return rows


def isolation(tasks: Sequence[VerifiedTaskRow]) -> dict[str, int]:
    """How the sandbox isolated the verification runs, per environment (local: ``bwrap`` or ``process``; docker specs name none)."""
    return dict(sorted(Counter(str(t.sandbox_spec.get("isolation", "unknown")) for t in tasks).items()))


def release_statistics(tasks: Sequence[VerifiedTaskRow], outcomes: Sequence[dict[str, Any]], *,
                       seed: int, repos: Sequence[RepoRow] | None = None,
                       snapshots: Sequence[SnapshotRow] | None = None,
                       seed_rows: Sequence[SeedRow] | None = None) -> dict[str, Any]:
    """All figures of one release. ``outcomes`` are :func:`read_stage_outcome` results in pipeline order."""
    return {
        "counts": counts(tasks),
        "repository_yield": repository_yield(tasks, seed_rows),
        "lengths": lengths(tasks),
        "diversity": statement_diversity(tasks, seed),
        "funnel": funnel(outcomes),
        "repositories": repositories(tasks, repos, snapshots),
        "isolation": isolation(tasks),
    }


# Columns of the tables DVC plots, in file order; fixed so that an empty release still writes a header.
PLOT_COLUMNS = {
    "funnel": ("stage", "considered", "rejected", "accepted"),
    "yield": ("repo_id", "seeds", "environments", *TASK_TYPES),
}


def plot_tables(stats: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The tables DVC plots (``plots:`` in dvc.yaml), from :func:`release_statistics`: ``funnel``, one row
    per stage in pipeline order (considered, rejected, accepted), and ``yield``, one row per repository
    (seed programs, environments in all and by task type); columns as :data:`PLOT_COLUMNS`. Only counts, so
    ``dvc plots diff`` between two experiments shows what changed in the corpus."""
    funnel_rows = [{"stage": step["stage"], "considered": step["considered"], "rejected": step["rejected"],
                    "accepted": step["accepted"]} for step in stats["funnel"]]
    yield_rows = [{"repo_id": row["repo_id"], "seeds": row["seeds"], "environments": row["environments"],
                   **row["by_task_type"]} for row in stats["repository_yield"]]
    return {"funnel": funnel_rows, "yield": yield_rows}


def _is_license_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return "/" not in path and name.split(".")[0].split("-")[0] in _LICENSE_NAMES


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
