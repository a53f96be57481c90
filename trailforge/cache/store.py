"""Content-addressed cache for per-item work (sandbox executions, later LLM calls).

An entry's key hashes the operation name, its version and every input. Entries are
written atomically (temp file + rename), so a run killed at any moment leaves either a
complete entry or none: the next run repeats only unfinished work. The cache lives
outside DVC outputs so that DVC deleting a stage's outs never loses it.

A blob is named by the sha256 of its bytes, and every read checks that name against what
is on disk: a blob truncated by a full disk or edited by hand is reported, never served,
and the entry that needed it becomes a miss, so the cost of damage is a re-run, not a
wrong result.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..executor import events as executor_events

DEFAULT_CACHE_DIR = ".trailforge/cache"
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class CacheCorruption(LookupError):
    """A cached entry cannot be used as stored (a blob it names is missing or damaged, or the
    record is not of the expected shape). ``get_or_compute`` treats it as a miss and heals it."""


class CorruptBlob(CacheCorruption):
    """The blob ``digest`` is missing, or its bytes no longer hash to ``digest``."""

    def __init__(self, digest: str, problem: str):
        super().__init__(f"cache blob {digest}: {problem}")
        self.digest = digest
        self.problem = problem


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
    # Misses whose entry existed but was unusable (see CacheCorruption) and was recomputed; a
    # subset of ``misses``, kept apart because a non-zero count means the cache directory is damaged.
    healed: int = 0
    by_op: dict[str, dict[str, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _event_token: str | None = field(default=None, repr=False, compare=False)

    def record(self, op: str, hit: bool, healed: bool = False) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1
                if healed:
                    self.healed += 1
            counts = self.by_op.setdefault(op, {"hits": 0, "misses": 0})
            counts["hits" if hit else "misses"] += 1
        executor_events.note(self._event_token, "record", op, hit, healed=healed)

    def record_not_kept(self, op: str) -> None:
        """A fresh value the caller chose not to store (see ``get_or_compute``'s ``keep``)."""
        with self._lock:
            counts = self.by_op.setdefault(op, {"hits": 0, "misses": 0})
            counts["not_kept"] = counts.get("not_kept", 0) + 1
        executor_events.note(self._event_token, "record_not_kept", op)

    # A remote executor pickles the cache with the item function; the copy on the worker counts as usual
    # and notes every lookup, which the driver replays into these stats (trailforge.executor.events).
    # The entries themselves need no replay: the cache root is a directory every node reads and writes.
    def __getstate__(self) -> dict[str, Any]:
        return executor_events.shipped_state(self, "by_op")

    def __setstate__(self, state: dict[str, Any]) -> None:
        executor_events.restore_state(self, state)

    def as_dict(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "healed": self.healed,
                "by_op": dict(sorted(self.by_op.items()))}


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
        # Missing, truncated or garbled entries are misses; so is absurdly deep nesting, which
        # only a hand-edited file can hold and which json reports as RecursionError.
        except (OSError, ValueError, RecursionError):
            return None

    def put(self, op: str, key: str, value: Any) -> None:
        _atomic_write(self._entry_path(op, key), json.dumps(value, sort_keys=True).encode("utf-8"))

    def _discard(self, op: str, key: str) -> None:
        self._entry_path(op, key).unlink(missing_ok=True)

    def get_or_compute(
        self, op: str, version: int, inputs: Any, compute: Callable[[], Any],
        load: Callable[[Any], Any] | None = None, keep: Callable[[Any], bool] | None = None,
    ) -> tuple[Any, bool]:
        """Return ``(value, hit)``; compute and store the value on a miss.

        ``None`` marks a miss, so ``compute`` must return a value that is not ``None``.
        Nothing is stored when ``compute`` raises, so a failure (a host fault, a crash) is
        retried on the next call instead of being replayed from the cache.

        ``load``, when given, turns the stored value into the returned one (e.g. reads the
        blobs it names); it runs on fresh values too, so both paths return the same thing.
        If it raises :class:`CacheCorruption` for a cached value, that entry is dropped,
        recomputed and stored again, and counted as a healed miss.

        ``keep``, when given, decides whether a fresh value is stored: one it refuses is returned but
        computed again on the next call (counted as ``not_kept``); a stored value it refuses is a miss.
        """
        key = self.key(op, version, inputs)
        cached = self.get(op, key)
        healed = False
        if cached is not None and keep is not None and not keep(cached):
            cached = None  # stored before the caller's rule, or by another version: not an answer now
        if cached is not None:
            try:
                value = cached if load is None else load(cached)
            except CacheCorruption:
                # Drop it first: if the recompute fails, no entry known to be bad is left behind.
                self._discard(op, key)
                healed = True
            else:
                self.stats.record(op, True)
                return value, True
        self.stats.record(op, False, healed=healed)
        stored = compute()
        if keep is None or keep(stored):
            self.put(op, key, stored)
        else:
            self.stats.record_not_kept(op)
        return (stored if load is None else load(stored)), False

    def _blob_path(self, digest: str) -> Path:
        return self.root / "blobs" / digest[:2] / digest

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` and return its digest.

        Always rewrites, even when a file of that name exists: the existing one may be the
        damaged copy that made an entry miss, and skipping the write would keep it forever.
        """
        digest = sha256_bytes(data)
        _atomic_write(self._blob_path(digest), data)
        return digest

    def get_blob(self, digest: str) -> bytes:
        """The bytes stored under ``digest``; :class:`CorruptBlob` when missing or damaged."""
        # The digest comes from an entry on disk; a malformed one must not become a path.
        if not isinstance(digest, str) or not _SHA256_HEX.fullmatch(digest):
            raise CorruptBlob(str(digest), "not a sha256 hex digest")
        try:
            data = self._blob_path(digest).read_bytes()
        except FileNotFoundError:
            raise CorruptBlob(digest, "missing") from None
        if sha256_bytes(data) != digest:
            raise CorruptBlob(digest, f"content does not match its digest ({len(data)} bytes on disk)")
        return data


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
