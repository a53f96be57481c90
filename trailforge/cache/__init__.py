"""Content-addressed per-item cache (see ``store``)."""
from .store import CacheStats, ContentCache, cache_dir_from_env, sha256_bytes, stable_hash

__all__ = ["CacheStats", "ContentCache", "cache_dir_from_env", "sha256_bytes", "stable_hash"]
