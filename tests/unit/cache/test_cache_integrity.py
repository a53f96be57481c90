"""Damaged cache contents: blobs are checked against their digest, puts heal, bad entries are misses."""
from __future__ import annotations

import pytest

from trailforge.cache import CacheCorruption, ContentCache, CorruptBlob, sha256_bytes

DATA = b"\x00\x01output bytes\xff" * 50


def _blob_path(cache: ContentCache, digest: str):
    return cache.root / "blobs" / digest[:2] / digest


def test_truncated_blob_raises_corrupt_blob_naming_the_digest(tmp_path):
    cache = ContentCache(tmp_path)
    digest = cache.put_blob(DATA)
    _blob_path(cache, digest).write_bytes(DATA[:10])
    with pytest.raises(CorruptBlob, match=digest) as caught:
        cache.get_blob(digest)
    assert caught.value.digest == digest
    assert isinstance(caught.value, LookupError)


def test_tampered_blob_of_the_same_length_raises(tmp_path):
    cache = ContentCache(tmp_path)
    digest = cache.put_blob(DATA)
    _blob_path(cache, digest).write_bytes(b"X" + DATA[1:])
    with pytest.raises(CorruptBlob):
        cache.get_blob(digest)


@pytest.mark.parametrize("digest", ["../../etc/passwd", "AB" + "0" * 62, "ab", 42])
def test_malformed_digest_raises_corrupt_blob_without_touching_disk(tmp_path, digest):
    with pytest.raises(CorruptBlob):
        ContentCache(tmp_path).get_blob(digest)


def test_put_blob_over_a_corrupt_file_heals_it(tmp_path):
    cache = ContentCache(tmp_path)
    digest = sha256_bytes(DATA)
    path = _blob_path(cache, digest)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"half a blo")
    assert cache.put_blob(DATA) == digest
    assert path.read_bytes() == DATA
    assert cache.get_blob(digest) == DATA
    assert not list(tmp_path.rglob(".tmp-*"))


class Compute:
    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def _load_blob(cache: ContentCache):
    return lambda record: cache.get_blob(record["blob"])


def test_entry_whose_blob_is_damaged_is_a_healed_miss(tmp_path):
    cache = ContentCache(tmp_path)
    compute = Compute({"blob": cache.put_blob(DATA)})
    assert cache.get_or_compute("op", 1, {"x": 1}, compute, load=_load_blob(cache)) == (DATA, False)
    _blob_path(cache, compute.value["blob"]).unlink()

    def recompute():
        return {"blob": cache.put_blob(DATA)}

    assert cache.get_or_compute("op", 1, {"x": 1}, recompute, load=_load_blob(cache)) == (DATA, False)
    assert cache.get_or_compute("op", 1, {"x": 1}, compute, load=_load_blob(cache)) == (DATA, True)
    stats = cache.stats.as_dict()
    assert (stats["hits"], stats["misses"], stats["healed"]) == (1, 2, 1)


def test_entry_rejected_by_load_is_dropped_even_when_recompute_fails(tmp_path):
    cache = ContentCache(tmp_path)
    cache.get_or_compute("op", 1, {"x": 1}, Compute({"blob": "ab" + "0" * 62}))
    key = cache.key("op", 1, {"x": 1})

    def failing():
        raise RuntimeError("host fault")

    with pytest.raises(RuntimeError):
        cache.get_or_compute("op", 1, {"x": 1}, failing, load=_load_blob(cache))
    assert cache.get("op", key) is None


def test_load_raising_cache_corruption_on_a_malformed_record_is_a_miss(tmp_path):
    cache = ContentCache(tmp_path)
    cache.get_or_compute("op", 1, {"x": 1}, Compute(["not", "a", "record"]))

    def load(record):
        if not isinstance(record, dict):
            raise CacheCorruption("not a record")
        return record

    assert cache.get_or_compute("op", 1, {"x": 1}, Compute({"ok": 1}), load=load) == ({"ok": 1}, False)
    assert cache.stats.healed == 1


def test_compute_that_raises_stores_nothing(tmp_path):
    cache = ContentCache(tmp_path)

    def failing():
        raise RuntimeError("host fault")

    with pytest.raises(RuntimeError):
        cache.get_or_compute("op", 1, {"x": 1}, failing)
    assert cache.get("op", cache.key("op", 1, {"x": 1})) is None
    assert cache.get_or_compute("op", 1, {"x": 1}, Compute("v")) == ("v", False)


def test_deeply_nested_entry_is_a_miss_not_a_crash(tmp_path):
    cache = ContentCache(tmp_path)
    cache.get_or_compute("op", 1, {"x": 1}, Compute("v"))
    key = cache.key("op", 1, {"x": 1})
    (tmp_path / "entries" / "op" / key[:2] / f"{key}.json").write_text("[" * 100_000 + "]" * 100_000)
    assert cache.get_or_compute("op", 1, {"x": 1}, Compute("again")) == ("again", False)
