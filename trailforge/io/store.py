"""Stage inputs and outputs: parquet shards of typed rows, rejects, and stats.

Layout of one stage folder (paths come from ``dvc.yaml``)::

    outputs/<stage>/data/data-00000.parquet   accepted rows
    outputs/<stage>/rejects.parquet           every dropped item, with stage, reason code and message
    outputs/<stage>/stats.json                counts and reject reasons: the same for the same inputs (a DVC metric)
    outputs/<stage>/timings.json              measured figures: timings, cache hits, throughput, model usage

Rows are pydantic models. Nested fields (lists, dicts, sub-models) are stored as JSON
text so every shard has a flat, stable schema that ``datasets`` loads as-is.
"""
from __future__ import annotations

import json
import os
import shutil
import threading
import types
import typing
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from ..executor import events as executor_events
from .rows import Reject

Row = TypeVar("Row", bound=BaseModel)
SHARD_ROWS = 1000
STATS_FILE, TIMINGS_FILE = "stats.json", "timings.json"
_SCALARS = (str, int, float, bool)

# Figures that describe how a run went rather than what it built: they differ between two runs over the
# same inputs (a warm cache, another machine, Ray scheduling), so they go to timings.json and never to the
# stats.json that DVC compares as metrics. A figure key not named here is a count of the corpus.
MEASURED_FIGURES = frozenset({
    "wall_s",              # stage time (io.stage.timed)
    "cache",               # content-cache hits, misses, healed entries
    "executor",            # per-node throughput of a distributed map
    "durations_s",         # seeds: how long each seed program ran
    "environment_ladder",  # seeds: attempts and seconds per rung of the dependency ladder
    "traced_slowdown",     # workflows: seeds whose traced run was much slower than the plain one
    "llm",                 # model calls made vs served from cache, tokens and cost spent
    "github",              # API requests sent and rate-limit waits
})
# Counters that split one count of runs into cache hits and executions. Which items hit depends on the
# cache's history and, within a cold run, on scheduling: two items sharing a run race for it when they
# are in flight together. Only their sum describes the corpus: stats.json holds ``<name>_total``,
# timings.json the split.
RUN_COUNTER_SUFFIXES = ("_cached", "_executed", "_run")


def _is_scalar(annotation: Any) -> bool:
    if annotation in _SCALARS:
        return True
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return True
    return bool(args) and origin in (typing.Union, types.UnionType) and all(
        _is_scalar(a) for a in args
    )


def _arrow_type(annotation: Any) -> pa.DataType:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if args and typing.get_origin(annotation) is not typing.Literal else annotation
    if typing.get_origin(annotation) is typing.Literal:
        return pa.string()
    return {bool: pa.bool_(), int: pa.int64(), float: pa.float64()}.get(base, pa.string())


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    fields = []
    for name, field in model.model_fields.items():
        kind = _arrow_type(field.annotation) if _is_scalar(field.annotation) else pa.string()
        fields.append(pa.field(name, kind))
    return pa.schema(fields)


def to_record(row: BaseModel) -> dict[str, Any]:
    record = {}
    for name, field in type(row).model_fields.items():
        value = getattr(row, name)
        if _is_scalar(field.annotation):
            record[name] = value
        else:
            dumped = row.model_dump(mode="json", include={name})[name]
            record[name] = json.dumps(dumped, sort_keys=True, ensure_ascii=False)
    return record


def from_record(model: type[Row], record: dict[str, Any]) -> Row:
    values = {}
    for name, field in model.model_fields.items():
        if name not in record:
            continue
        value = record[name]
        values[name] = value if _is_scalar(field.annotation) or value is None else json.loads(value)
    return model.model_validate(values)


def write_rows(rows: list[BaseModel], folder: Path, model: type[BaseModel]) -> list[Path]:
    """Write rows as deterministic parquet shards (same rows give the same bytes)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    schema = arrow_schema(model)
    paths = []
    chunks = [rows[i : i + SHARD_ROWS] for i in range(0, len(rows), SHARD_ROWS)] or [[]]
    for index, chunk in enumerate(chunks):
        table = pa.Table.from_pylist([to_record(r) for r in chunk], schema=schema)
        path = folder / f"data-{index:05d}.parquet"
        _write_table(table, path)
        paths.append(path)
    return paths


def _write_table(table: pa.Table, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)


def read_rows(folder: Path, model: type[Row]) -> list[Row]:
    folder = Path(folder)
    shards = sorted(folder.glob("data-*.parquet"))
    if not shards:
        raise FileNotFoundError(f"no data-*.parquet shards in {folder}; has the upstream stage run?")
    rows: list[Row] = []
    for shard in shards:
        for record in pq.read_table(shard).to_pylist():
            rows.append(from_record(model, record))
    return rows


def read_rejects(path: Path) -> list[Reject]:
    return [from_record(Reject, r) for r in pq.read_table(path).to_pylist()]


class StageRecorder:
    """Collects one stage's accepted rows, rejects and counters, then writes them together."""

    def __init__(self, stage: str):
        self.stage = stage
        self.rejects: list[Reject] = []
        self.counters: Counter[str] = Counter()
        self.figures: dict[str, Any] = {}
        self._lock = threading.Lock()  # executors call in from worker threads
        self._event_token: str | None = None  # set on copies a remote executor runs items with

    def reject(self, item_id: str, reason: str, message: str, **detail: Any) -> None:
        reject = Reject(stage=self.stage, item_id=item_id, reason=reason, message=message[:2000], detail=detail)
        with self._lock:
            self.rejects.append(reject)
        executor_events.note(self._event_token, "reject", item_id, reason, message, **detail)

    def count(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self.counters[name] += amount
        executor_events.note(self._event_token, "count", name, amount)

    # A remote executor pickles the recorder with the item function; the copy on the worker records as
    # usual and also notes every call, which the driver replays into this object (trailforge.executor.events).
    def __getstate__(self) -> dict[str, Any]:
        return executor_events.shipped_state(self, "figures")

    def __setstate__(self, state: dict[str, Any]) -> None:
        executor_events.restore_state(self, state)
        if self._event_token is not None:
            self.figures = _NotedFigures(self.figures, self._event_token, ())

    def _replay_figure(self, how: str, path: tuple[str, ...], value: Any) -> None:
        figures = self.figures
        for key in path[:-1]:
            figures = figures.setdefault(key, {})
        if how == "set":
            figures[path[-1]] = value
        else:  # setdefault: an earlier item may already have filled it
            figures.setdefault(path[-1], value)

    def write(self, rows: Iterable[BaseModel], model: type[BaseModel], out: Path) -> dict[str, Any]:
        """Write rows, rejects, ``stats.json`` (counts) and ``timings.json`` (measured figures); returns
        everything recorded in one dict, as before the split (for the stage's summary line)."""
        rows = list(rows)
        out.mkdir(parents=True, exist_ok=True)
        write_rows(rows, out / "data", model)
        rejects = sorted(self.rejects, key=lambda r: (r.item_id, r.reason))
        _write_table(
            pa.Table.from_pylist([to_record(r) for r in rejects], schema=arrow_schema(Reject)),
            out / "rejects.parquet",
        )
        recorded = {
            "stage": self.stage,
            "accepted": len(rows),
            "rejected": len(rejects),
            "reject_reasons": dict(sorted(Counter(r.reason for r in rejects).items())),
            "counters": dict(sorted(self.counters.items())),
            **self.figures,
        }
        counts, measured = split_measured(recorded)
        write_json(out / STATS_FILE, counts)
        write_json(out / TIMINGS_FILE, measured)
        return recorded


def split_measured(recorded: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(counts, measured) of one stage's figures: the counts are what stats.json holds and depend only on
    the stage's inputs; the measured figures (:data:`MEASURED_FIGURES`, and the cache/execution split of
    run counters) go to timings.json. Both keep ``stage`` so either file says where it came from."""
    counts = {k: v for k, v in recorded.items() if k not in MEASURED_FIGURES}
    measured = {"stage": recorded["stage"], **{k: v for k, v in recorded.items() if k in MEASURED_FIGURES}}
    if "counters" in recorded:
        totals: dict[str, int] = {}
        split: dict[str, int] = {}
        for name, count in recorded["counters"].items():
            base = next((name[: -len(s)] for s in RUN_COUNTER_SUFFIXES if name.endswith(s)), None)
            if base is None:
                totals[name] = totals.get(name, 0) + count
            else:
                totals[f"{base}_total"] = totals.get(f"{base}_total", 0) + count
                split[name] = count
        counts["counters"] = dict(sorted(totals.items()))
        if split:
            measured["counters"] = dict(sorted(split.items()))
    return counts, measured


def write_json(path: Path, value: Any) -> None:
    """A stats-style JSON file with sorted keys, so the same figures give the same bytes."""
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


class _NotedFigures(dict):
    """``figures`` of a recorder copy on a remote worker: assignments (also nested ones made through
    ``setdefault`` or ``[]``) are noted so the driver's recorder ends up with the same figures."""

    def __init__(self, values: dict, token: str, path: tuple[str, ...]):
        super().__init__(values)
        self._token, self._path = token, path

    def _wrap(self, key: Any, value: Any) -> Any:
        if isinstance(value, dict) and not isinstance(value, _NotedFigures):
            value = _NotedFigures(value, self._token, self._path + (key,))
            dict.__setitem__(self, key, value)
        return value

    def __getitem__(self, key: Any) -> Any:
        return self._wrap(key, dict.__getitem__(self, key))

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        executor_events.note(self._token, "_replay_figure", "set", self._path + (key,), _plain(value))

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            dict.__setitem__(self, key, default)
            executor_events.note(self._token, "_replay_figure", "setdefault", self._path + (key,), _plain(default))
        return self._wrap(key, dict.__getitem__(self, key))

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __reduce__(self):  # goes back to the driver as a plain dict
        return dict, (_plain(self),)


def _plain(value: Any) -> Any:
    import copy

    if isinstance(value, dict):
        return {k: _plain(v) for k, v in dict.items(value)}
    return copy.deepcopy(value)
