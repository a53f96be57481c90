"""Executors map per-item work over items; pick one with the `executor` config group.

``executor.map(fn, items, label=..., cache_hits=..., cost_usd=..., figures=...)`` shows progress on
stderr and returns results in input order. ``executor=local`` runs items on a thread pool;
``executor=ray`` runs them as Ray tasks on a cluster with the same results, rejects and stats
(see ``trailforge.executor.ray``). Ray is imported only when ``executor=ray`` maps something.
"""
from .local import LocalExecutor
from .ray import RayExecutor


def build_executor(config) -> LocalExecutor | RayExecutor:
    if config.kind == "local":
        return LocalExecutor(max_workers=config.max_workers)
    if config.kind == "ray":
        return RayExecutor.from_config(config)
    raise ValueError(f"executor.kind: unknown executor '{config.kind}'; available: local, ray")


__all__ = ["LocalExecutor", "RayExecutor", "build_executor"]
