"""run_cached: damaged cache entries and blobs cost a re-run, and infrastructure failures are never cached."""
from __future__ import annotations

import json

import pytest

from trailforge.cache import ContentCache
from trailforge.sandbox import RunRequest, RunResult, SandboxInfrastructureError, run_cached
from trailforge.sandbox.base import PreparedEnv
from trailforge.sandbox.cached import RUN_OP

OUTPUT = b"\x00result bytes\xff" * 40
REQUEST = RunRequest(("python", "main.py"), {"main.py": b"print('hi')\n"}, timeout_s=5)


class ScriptedSandbox:
    """Stands in for the program run: returns one fixed result, or raises the queued errors first."""

    name = "scripted"
    timeout_s = 5.0

    def __init__(self, failures: list[BaseException] | None = None):
        self.failures = list(failures or [])
        self.calls = 0

    def prepare(self, distributions: list[str]) -> PreparedEnv:
        return PreparedEnv(spec={"distributions": distributions}, spec_hash="spec-" + ",".join(distributions))

    def run(self, env: PreparedEnv, request: RunRequest) -> RunResult:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return RunResult(exit_code=0, reason="ok", stdout="hi\n", stderr="", stdout_truncated=False,
                         files={"out/result.bin": OUTPUT}, oversized_files=[], duration_s=0.1)


@pytest.fixture
def cache(tmp_path) -> ContentCache:
    return ContentCache(tmp_path)


def _only_entry(cache: ContentCache):
    (path,) = (cache.root / "entries" / RUN_OP).rglob("*.json")
    return path


def _output_blob(cache: ContentCache):
    record = json.loads(_only_entry(cache).read_text())
    digest = record["files"]["out/result.bin"]
    return digest, cache.root / "blobs" / digest[:2] / digest


def test_truncated_output_blob_reruns_and_heals_the_blob(cache):
    sandbox = ScriptedSandbox()
    env = sandbox.prepare([])
    run_cached(cache, sandbox, env, REQUEST)
    digest, blob = _output_blob(cache)
    blob.write_bytes(OUTPUT[:7])

    result, hit = run_cached(cache, sandbox, env, REQUEST)
    assert hit is False and sandbox.calls == 2
    assert result.files == {"out/result.bin": OUTPUT}
    assert blob.read_bytes() == OUTPUT
    assert cache.get_blob(digest) == OUTPUT

    result, hit = run_cached(cache, sandbox, env, REQUEST)
    assert hit is True and sandbox.calls == 2 and result.files == {"out/result.bin": OUTPUT}
    stats = cache.stats.as_dict()
    assert (stats["hits"], stats["misses"], stats["healed"]) == (1, 2, 1)
    assert stats["by_op"] == {RUN_OP: {"hits": 1, "misses": 2}}


def test_missing_output_blob_reruns(cache):
    sandbox = ScriptedSandbox()
    env = sandbox.prepare([])
    run_cached(cache, sandbox, env, REQUEST)
    _, blob = _output_blob(cache)
    blob.unlink()
    result, hit = run_cached(cache, sandbox, env, REQUEST)
    assert hit is False and sandbox.calls == 2
    assert result.files == {"out/result.bin": OUTPUT}
    assert cache.stats.healed == 1


@pytest.mark.parametrize("record", [["a", "list"], {"exit_code": 0}, "text", 3])
def test_entry_that_is_not_a_run_record_is_a_miss(cache, record):
    sandbox = ScriptedSandbox()
    env = sandbox.prepare([])
    run_cached(cache, sandbox, env, REQUEST)
    _only_entry(cache).write_text(json.dumps(record))
    result, hit = run_cached(cache, sandbox, env, REQUEST)
    assert hit is False and sandbox.calls == 2 and result.ok
    assert run_cached(cache, sandbox, env, REQUEST)[1] is True


def test_infrastructure_error_is_never_cached(cache):
    sandbox = ScriptedSandbox(failures=[SandboxInfrastructureError("docker daemon not reachable")])
    env = sandbox.prepare([])
    with pytest.raises(SandboxInfrastructureError, match="docker daemon"):
        run_cached(cache, sandbox, env, REQUEST)
    assert not list(cache.root.rglob("*.json"))

    result, hit = run_cached(cache, sandbox, env, REQUEST)
    assert hit is False and sandbox.calls == 2
    assert result.ok and result.files == {"out/result.bin": OUTPUT}

    result, hit = run_cached(cache, sandbox, env, REQUEST)
    assert hit is True and sandbox.calls == 2
    assert result.stdout == "hi\n" and result.files == {"out/result.bin": OUTPUT}


class TimingOutSandbox(ScriptedSandbox):
    """The first ``timeouts`` runs hit the wall-clock limit (a busy machine); later ones finish."""

    def __init__(self, timeouts: int):
        super().__init__()
        self.timeouts = timeouts

    def run(self, env: PreparedEnv, request: RunRequest) -> RunResult:
        if self.calls < self.timeouts:
            self.calls += 1
            return RunResult(exit_code=None, reason="timeout", stdout="", stderr="", stdout_truncated=False,
                             files={}, oversized_files=[], duration_s=5.0)
        return super().run(env, request)


def test_a_timeout_is_not_kept_so_the_next_build_runs_the_program_again(cache):
    sandbox = TimingOutSandbox(timeouts=1)
    env = sandbox.prepare([])
    first, hit = run_cached(cache, sandbox, env, REQUEST)
    assert (first.reason, hit) == ("timeout", False)
    assert not list((cache.root / "entries" / RUN_OP).rglob("*.json"))
    assert cache.stats.by_op[RUN_OP]["not_kept"] == 1
    second, hit = run_cached(cache, sandbox, env, REQUEST)
    assert (second.reason, hit, sandbox.calls) == ("ok", False, 2)
    third, hit = run_cached(cache, sandbox, env, REQUEST)  # a finished run is kept as before
    assert (third.reason, hit, sandbox.calls) == ("ok", True, 2)


def test_a_timeout_stored_by_an_older_version_is_run_again(cache, monkeypatch):
    from trailforge.sandbox import cached as cached_module

    sandbox = TimingOutSandbox(timeouts=1)
    env = sandbox.prepare([])
    with monkeypatch.context() as patched:
        patched.setattr(cached_module, "TIMEOUT", "never")  # the old rule: every result is kept
        run_cached(cache, sandbox, env, REQUEST)
    assert len(list((cache.root / "entries" / RUN_OP).rglob("*.json"))) == 1
    again, hit = run_cached(cache, sandbox, env, REQUEST)
    assert (again.reason, hit, sandbox.calls) == ("ok", False, 2)
