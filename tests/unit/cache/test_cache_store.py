"""The content-addressed cache: keys, hits and misses, blobs, crash leftovers."""
from __future__ import annotations

from pathlib import Path

import pytest

from trailforge.cache.store import ContentCache, CorruptBlob, cache_dir_from_env, sha256_bytes, stable_hash


class Counter:
    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def _entry_path(cache: ContentCache, op: str, version: int, inputs) -> Path:
    key = cache.key(op, version, inputs)
    return cache.root / "entries" / op / key[:2] / f"{key}.json"


def test_get_or_compute_computes_once_then_hits(tmp_path):
    cache = ContentCache(tmp_path)
    compute = Counter({"answer": 42, "items": [1, 2]})
    first = cache.get_or_compute("op", 1, {"x": 1}, compute)
    second = cache.get_or_compute("op", 1, {"x": 1}, compute)
    assert first == ({"answer": 42, "items": [1, 2]}, False)
    assert second == ({"answer": 42, "items": [1, 2]}, True)
    assert compute.calls == 1


def test_entries_survive_a_new_cache_object(tmp_path):
    ContentCache(tmp_path).get_or_compute("op", 1, [1, 2], Counter("v"))
    compute = Counter("other")
    assert ContentCache(tmp_path).get_or_compute("op", 1, [1, 2], compute) == ("v", True)
    assert compute.calls == 0


@pytest.mark.parametrize(
    "op, version, inputs",
    [("op2", 1, {"x": 1}), ("op", 2, {"x": 1}), ("op", 1, {"x": 2}), ("op", 1, {"x": 1, "y": 0})],
)
def test_key_changes_with_any_input(tmp_path, op, version, inputs):
    cache = ContentCache(tmp_path)
    assert cache.key(op, version, inputs) != cache.key("op", 1, {"x": 1})


def test_changed_input_is_recomputed(tmp_path):
    cache = ContentCache(tmp_path)
    compute = Counter(1)
    cache.get_or_compute("op", 1, {"x": 1}, compute)
    _, hit = cache.get_or_compute("op", 1, {"x": 2}, compute)
    assert hit is False
    assert compute.calls == 2


def test_key_ignores_dict_order():
    assert stable_hash({"a": 1, "b": 2}) == stable_hash({"b": 2, "a": 1})
    assert stable_hash({"a": 1}) != stable_hash({"a": "1"})


def test_stats_count_hits_and_misses_per_op(tmp_path):
    cache = ContentCache(tmp_path)
    for inputs in (1, 1, 1, 2):
        cache.get_or_compute("run", 1, inputs, Counter("v"))
    cache.get_or_compute("eval", 1, 1, Counter("v"))
    stats = cache.stats.as_dict()
    assert (stats["hits"], stats["misses"]) == (2, 3)
    assert stats["by_op"] == {"eval": {"hits": 0, "misses": 1}, "run": {"hits": 2, "misses": 2}}


def test_blobs_round_trip_by_content_hash(tmp_path):
    cache = ContentCache(tmp_path)
    data = b"\x00\x01binary\xff" * 100
    digest = cache.put_blob(data)
    assert digest == sha256_bytes(data)
    assert cache.get_blob(digest) == data
    assert cache.put_blob(data) == digest


def test_missing_blob_raises(tmp_path):
    with pytest.raises(CorruptBlob, match="ab" + "0" * 62):
        ContentCache(tmp_path).get_blob("ab" + "0" * 62)


def test_leftover_partial_temp_file_is_not_an_entry(tmp_path):
    cache = ContentCache(tmp_path)
    path = _entry_path(cache, "op", 1, {"x": 1})
    path.parent.mkdir(parents=True)
    (path.parent / ".tmp-abc123").write_text('{"stale": tr')
    compute = Counter("fresh")
    assert cache.get_or_compute("op", 1, {"x": 1}, compute) == ("fresh", False)
    assert compute.calls == 1
    assert cache.get_or_compute("op", 1, {"x": 1}, compute) == ("fresh", True)


def test_put_leaves_no_temp_files(tmp_path):
    cache = ContentCache(tmp_path)
    cache.get_or_compute("op", 1, {"x": 1}, Counter("v"))
    cache.put_blob(b"data")
    assert not [p for p in tmp_path.rglob(".tmp-*")]


def test_corrupt_entry_is_treated_as_a_miss_and_rewritten(tmp_path):
    cache = ContentCache(tmp_path)
    cache.get_or_compute("op", 1, {"x": 1}, Counter("v"))
    path = _entry_path(cache, "op", 1, {"x": 1})
    path.write_text('{"truncat')
    compute = Counter("recomputed")
    assert cache.get_or_compute("op", 1, {"x": 1}, compute) == ("recomputed", False)
    assert compute.calls == 1
    assert cache.get("op", cache.key("op", 1, {"x": 1})) == "recomputed"


def test_entry_with_invalid_utf8_is_treated_as_a_miss(tmp_path):
    cache = ContentCache(tmp_path)
    cache.get_or_compute("op", 1, {"x": 1}, Counter("v"))
    _entry_path(cache, "op", 1, {"x": 1}).write_bytes(b"\xff\xfe\x00garbage")
    assert cache.get_or_compute("op", 1, {"x": 1}, Counter("recomputed")) == ("recomputed", False)


@pytest.mark.xfail(strict=True, reason="limitation: get() returns None for a miss, so a computed value of None "
                   "is stored but never read back as a hit; it is recomputed on every call")
def test_none_value_is_cached_like_any_other(tmp_path):
    cache = ContentCache(tmp_path)
    compute = Counter(None)
    cache.get_or_compute("op", 1, {"x": 1}, compute)
    assert cache.get_or_compute("op", 1, {"x": 1}, compute) == (None, True)


def test_cache_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("TRAILFORGE_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir_from_env() == tmp_path / "c"
    monkeypatch.delenv("TRAILFORGE_CACHE_DIR")
    assert str(cache_dir_from_env()) == ".trailforge/cache"
