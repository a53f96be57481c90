"""Content-addressed cache for per-item work (sandbox executions, later LLM calls).

An entry's key hashes the operation name, its version and every input. Entries are
written atomically (temp file + rename), so a run killed at any moment leaves either a
complete entry or none: the next run repeats only unfinished work. The cache lives
outside DVC outputs so that DVC deleting a stage's outs never loses it.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..executor import events as executor_events

DEFAULT_CACHE_DIR = ".trailforge/cache"


def cache_dir_from_env() -> Path:
    """Where the cache lives: ``$TRAILFORGE_CACHE_DIR`` or ``.trailforge/cache``.

    Deliberately not a recipe value: moving the cache must not change any result, so it
    must not invalidate DVC stages either.
    """
    return Path(os.environ.get("TRAILFORGE_CACHE_DIR", DEFAULT_CACHE_DIR))


def stable_hash(value: Any) -> str:
    payload = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    by_op: dict[str, dict[str, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _event_token: str | None = field(default=None, repr=False, compare=False)

    def record(self, op: str, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1
            counts = self.by_op.setdefault(op, {"hits": 0, "misses": 0})
            counts["hits" if hit else "misses"] += 1
        executor_events.note(self._event_token, "record", op, hit)

    # A remote executor pickles the cache with the item function; the copy on the worker counts as usual
    # and notes every lookup, which the driver replays into these stats (trailforge.executor.events).
    # The entries themselves need no replay: the cache root is a directory every node reads and writes.
    def __getstate__(self) -> dict[str, Any]:
        return executor_events.shipped_state(self, "by_op")

    def __setstate__(self, state: dict[str, Any]) -> None:
        executor_events.restore_state(self, state)

    def as_dict(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "by_op": dict(sorted(self.by_op.items()))}


class ContentCache:
    """JSON values and raw blobs under one root, keyed by content hashes."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.stats = CacheStats()

    def key(self, op: str, version: int, inputs: Any) -> str:
        return stable_hash({"op": op, "version": version, "inputs": inputs})

    def _entry_path(self, op: str, key: str) -> Path:
        return self.root / "entries" / op / key[:2] / f"{key}.json"

    def get(self, op: str, key: str) -> Any | None:
        path = self._entry_path(op, key)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing, truncated or garbled entries are misses
            return None

    def put(self, op: str, key: str, value: Any) -> None:
        _atomic_write(self._entry_path(op, key), json.dumps(value, sort_keys=True).encode("utf-8"))

    def get_or_compute(self, op: str, version: int, inputs: Any, compute: Callable[[], Any]) -> tuple[Any, bool]:
        """Return ``(value, hit)``; compute and store the value on a miss.

        ``None`` marks a miss, so ``compute`` must return a value that is not ``None``.
        """
        key = self.key(op, version, inputs)
        cached = self.get(op, key)
        if cached is not None:
            self.stats.record(op, True)
            return cached, True
        self.stats.record(op, False)
        value = compute()
        self.put(op, key, value)
        return value, False

    def put_blob(self, data: bytes) -> str:
        digest = sha256_bytes(data)
        path = self.root / "blobs" / digest[:2] / digest
        if not path.exists():
            _atomic_write(path, data)
        return digest

    def get_blob(self, digest: str) -> bytes:
        return (self.root / "blobs" / digest[:2] / digest).read_bytes()


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
