"""Map per-item work over a bounded local thread pool.

Items are sandboxed subprocesses or file work, so threads suffice; results come back in
input order so stage outputs never depend on scheduling. Progress (done/total, rate, ETA and,
when the caller passes them, cache hits and cost so far) goes to stderr as items finish; see
``trailforge.io.progress``.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, Iterable, TypeVar

from ..io.progress import Progress

Item = TypeVar("Item")
Result = TypeVar("Result")


class LocalExecutor:
    def __init__(self, max_workers: int = 2):
        if max_workers < 1:
            raise ValueError("executor.max_workers must be at least 1")
        self.max_workers = max_workers

    def map(self, fn: Callable[[Item], Result], items: Iterable[Item], *, label: str = "items",
            cache_hits: Callable[[], int] | None = None,
            cost_usd: Callable[[], float] | None = None,
            figures: dict | None = None) -> list[Result]:
        """``[fn(item) for item in items]``, in input order, reporting progress under ``label``.

        ``cache_hits`` and ``cost_usd`` are read each time progress is shown, e.g.
        ``cache_hits=lambda: cache.stats.hits`` or ``cost_usd=lambda: llm.usage.cost_usd``.
        ``figures`` is where a distributed executor records per-node throughput; one machine has
        nothing to add, so it is left as it is.
        """
        items = list(items)
        with Progress(label, len(items), cache_hits=cache_hits, cost_usd=cost_usd) as progress:
            if self.max_workers == 1 or len(items) <= 1:
                results = []
                for item in items:
                    results.append(fn(item))
                    progress.advance()
                return results
            with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
                futures = [pool.submit(fn, item) for item in items]
                # Count items as they finish, whatever their order; results are read in input order,
                # so the first failing item (in input order) raises, as with pool.map.
                for _ in as_completed(futures):
                    progress.advance()
                return [future.result() for future in futures]
