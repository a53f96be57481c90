"""Map per-item work over a bounded local thread pool.

Items are sandboxed subprocesses or file work, so threads suffice; results come back in
input order so stage outputs never depend on scheduling.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class LocalExecutor:
    def __init__(self, max_workers: int = 2):
        if max_workers < 1:
            raise ValueError("executor.max_workers must be at least 1")
        self.max_workers = max_workers

    def map(self, fn: Callable[[Item], Result], items: Iterable[Item]) -> list[Result]:
        items = list(items)
        if self.max_workers == 1 or len(items) <= 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            return list(pool.map(fn, items))
