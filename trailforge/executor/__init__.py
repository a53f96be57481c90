"""Executors map per-item work over items; pick one with the `executor` config group.

``executor.map(fn, items, label=..., cache_hits=..., cost_usd=...)`` shows progress on stderr.
"""
from .local import LocalExecutor


def build_executor(config) -> LocalExecutor:
    if config.kind == "local":
        return LocalExecutor(max_workers=config.max_workers)
    raise ValueError(f"executor.kind: unknown executor '{config.kind}'; available: local")


__all__ = ["LocalExecutor", "build_executor"]
