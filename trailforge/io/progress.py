"""Progress of long per-item work: items done/total, rate, ETA, cache hits and cost so far.

On a terminal it is one line on stderr, redrawn in place; anywhere else (DVC logs, CI, a pipe) it
is a plain line at most every ``interval_s`` seconds and one at the end, so a log shows the pace
without thousands of lines. It writes to stderr only, never to stdout or a stage's outputs.

    progress = Progress("verify", len(tasks), cache_hits=lambda: cache.stats.hits)
    for task in tasks:
        ...
        progress.advance()
    progress.close()
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable, TextIO

TERMINAL_REDRAW_S = 0.1  # a terminal line redrawn faster than this only costs time
LOG_INTERVAL_S = 30.0


class Progress:
    def __init__(self, label: str, total: int, *, cache_hits: Callable[[], int] | None = None,
                 cost_usd: Callable[[], float] | None = None, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, interval_s: float = LOG_INTERVAL_S,
                 terminal: bool | None = None):
        self.label = label
        self.total = total
        self.cache_hits = cache_hits
        self.cost_usd = cost_usd
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.interval_s = interval_s
        self.terminal = _is_terminal(self.stream) if terminal is None else terminal
        self.done = 0
        self.started = clock()
        self._last_shown = self.started
        self._closed = False
        self._lock = threading.Lock()  # advance may be called from worker threads

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            now = self.clock()
            wait = TERMINAL_REDRAW_S if self.terminal else self.interval_s
            if now - self._last_shown >= wait:
                self._show(now)

    def close(self) -> None:
        """Show the final figures (on a terminal, end the line)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.total or self.done:  # nothing to map is nothing to report
                self._show(self.clock(), final=True)

    def line(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        elapsed = max(now - self.started, 0.0)
        parts = [f"{self.label}: {self.done}/{self.total}"]
        if self.total:
            parts[0] += f" ({100 * self.done // self.total}%)"
        rate = self.done / elapsed if elapsed > 0 else 0.0
        parts.append(f"{rate:.2f} items/s" if rate else "- items/s")
        remaining = self.total - self.done
        if remaining <= 0:
            parts.append(f"took {format_duration(elapsed)}")
        else:
            parts.append(f"ETA {format_duration(remaining / rate)}" if rate else "ETA ?")
        if self.cache_hits is not None:
            parts.append(f"cache hits {self.cache_hits()}")
        if self.cost_usd is not None:
            parts.append(f"cost ${self.cost_usd():.4f}")
        return " | ".join(parts)

    def _show(self, now: float, final: bool = False) -> None:
        self._last_shown = now
        text = self.line(now)
        if self.terminal:
            # \r returns to the line start and ESC[K clears what a longer earlier line left behind.
            self.stream.write(f"\r{text}\x1b[K" + ("\n" if final else ""))
        else:
            self.stream.write(f"progress {text}\n")
        self.stream.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def format_duration(seconds: float) -> str:
    """45s, 3m04s, 2h05m: short enough for a progress line."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False
