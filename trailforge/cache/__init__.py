"""Content-addressed per-item cache (see ``store``)."""
from .store import (
    CacheCorruption, CacheStats, ContentCache, CorruptBlob, cache_dir_from_env, sha256_bytes, stable_hash,
)

__all__ = [
    "CacheCorruption", "CacheStats", "ContentCache", "CorruptBlob", "cache_dir_from_env", "sha256_bytes",
    "stable_hash",
]
