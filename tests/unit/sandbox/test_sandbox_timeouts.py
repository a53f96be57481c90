"""Run time is owned in one place: a run gets the timeout its request asks for, bounded by max_timeout_s.

Before, both backends clamped every run to sandbox.timeout_s, so the tracer's longer time, the verifier's
eval timeout and an agent's command timeout were silently cut to it.
"""
from __future__ import annotations

import pytest

from trailforge.config.schema import DockerSandboxConfig, LocalSandboxConfig
from trailforge.sandbox import LocalSandbox, RunRequest
from trailforge.sandbox.base import OK, TIMEOUT

SLEEP = "import time\ntime.sleep({s})\nprint('done')\n"


def _run(box: LocalSandbox, sleep_s: float, timeout_s: float):
    request = RunRequest(("python", "main.py"), {"main.py": SLEEP.format(s=sleep_s).encode()}, timeout_s=timeout_s)
    return box.run(box.prepare([]), request)


def test_a_request_may_ask_for_more_than_the_default_run_time():
    box = LocalSandbox(timeout_s=1, max_timeout_s=10)
    result = _run(box, 2.0, timeout_s=6)
    assert result.reason == OK and result.stdout.strip() == "done"


def test_the_ceiling_bounds_what_a_request_asks_for():
    box = LocalSandbox(timeout_s=1, max_timeout_s=1.5)
    result = _run(box, 4.0, timeout_s=30)
    assert result.reason == TIMEOUT
    assert result.duration_s < 4.0


@pytest.mark.parametrize("config", [LocalSandboxConfig, DockerSandboxConfig])
def test_a_default_above_the_ceiling_is_refused_naming_both_keys(config):
    with pytest.raises(ValueError) as caught:
        config(timeout_s=700, max_timeout_s=600)
    assert "sandbox.timeout_s" in str(caught.value) and "sandbox.max_timeout_s" in str(caught.value)
    assert config().timeout_s == 120 and config().max_timeout_s == 600
