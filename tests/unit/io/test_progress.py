"""Progress lines: figures from a fake clock, terminal redraws versus throttled log lines."""
from __future__ import annotations

import io
import threading

import pytest

from trailforge.executor import LocalExecutor
from trailforge.io.progress import Progress, format_duration


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Figures:
    """Stand-ins for a stage's cache stats and model usage, read whenever a line is shown."""

    def __init__(self):
        self.hits, self.cost = 0, 0.0


def make(total=10, interval_s=30.0, terminal=False, figures=None):
    clock, stream = FakeClock(), io.StringIO()
    progress = Progress("verify", total, stream=stream, clock=clock, interval_s=interval_s, terminal=terminal,
                        cache_hits=(lambda: figures.hits) if figures else None,
                        cost_usd=(lambda: figures.cost) if figures else None)
    return progress, clock, stream


def test_log_line_has_done_total_rate_eta_cache_hits_and_cost():
    figures = Figures()
    progress, clock, stream = make(total=10, interval_s=30, figures=figures)
    clock.now += 40
    figures.hits, figures.cost = 3, 0.01234
    progress.advance(4)
    assert stream.getvalue() == "progress verify: 4/10 (40%) | 0.10 items/s | ETA 1m00s | cache hits 3 | cost $0.0123\n"


def test_not_a_terminal_writes_at_most_one_line_per_interval_and_one_at_the_end():
    progress, clock, stream = make(total=100, interval_s=30)
    for _ in range(100):
        clock.now += 1  # one item per second: 100 s in all
        progress.advance()
    progress.close()
    lines = stream.getvalue().splitlines()
    assert [line.split(" | ")[0] for line in lines] == [
        "progress verify: 30/100 (30%)", "progress verify: 60/100 (60%)", "progress verify: 90/100 (90%)",
        "progress verify: 100/100 (100%)"]
    assert lines[0] == "progress verify: 30/100 (30%) | 1.00 items/s | ETA 1m10s"
    assert lines[-1] == "progress verify: 100/100 (100%) | 1.00 items/s | took 1m40s"
    assert "\r" not in stream.getvalue()


def test_terminal_redraws_one_line_in_place_and_ends_it_on_close():
    progress, clock, stream = make(total=3, terminal=True)
    for _ in range(3):
        clock.now += 2
        progress.advance()
    progress.close()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    redraws = text.rstrip("\n").split("\r")[1:]
    assert [r.replace("\x1b[K", "").split(" | ")[0] for r in redraws] == [
        "verify: 1/3 (33%)", "verify: 2/3 (66%)", "verify: 3/3 (100%)", "verify: 3/3 (100%)"]
    assert "ETA 4s" in redraws[0] and "took 6s" in redraws[-1]


def test_before_any_item_finishes_the_eta_is_unknown():
    progress, clock, stream = make(total=5)
    assert progress.line() == "verify: 0/5 (0%) | - items/s | ETA ?"


def test_close_is_idempotent_and_silent_for_no_work():
    progress, _, stream = make(total=0)
    progress.close()
    progress.close()
    assert stream.getvalue() == ""


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (59.4, "59s"), (61, "1m01s"), (3600 + 125, "1h02m")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("workers", [1, 3])
def test_executor_map_reports_progress_on_stderr_only_and_keeps_input_order(capsys, workers):
    hits = []
    lock = threading.Lock()

    def square(n):
        with lock:
            hits.append(n)
        return n * n

    results = LocalExecutor(workers).map(square, range(7), label="square", cache_hits=lambda: len(hits),
                                         cost_usd=lambda: 0.5)
    assert results == [n * n for n in range(7)]
    captured = capsys.readouterr()
    assert captured.out == ""
    final = captured.err.strip().splitlines()[-1]
    assert final.startswith("progress square: 7/7 (100%) | ") and final.endswith(" | cache hits 7 | cost $0.5000")


def test_executor_map_raises_the_first_failure_in_input_order(capsys):
    def fail_on_odd(n):
        if n % 2:
            raise ValueError(f"item {n}")
        return n

    with pytest.raises(ValueError, match="item 1"):
        LocalExecutor(3).map(fail_on_odd, range(6), label="odd")
    assert "progress odd: 6/6" in capsys.readouterr().err
