"""Unit tier: RayExecutor on a real loopback cluster (a head and one worker-node process) behaves like LocalExecutor.

The same item function runs under both executors against their own recorder and cache; results,
exceptions, rejects, counters, figures, cache stats and model usage must come out the same.
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT

pytest.importorskip("ray")
from trailforge.cache import ContentCache  # noqa: E402
from trailforge.config import ConfigError, validate  # noqa: E402
from trailforge.executor import LocalExecutor, RayExecutor, build_executor  # noqa: E402
from trailforge.executor.ray import ExecutorUnavailable, check_reachable  # noqa: E402
from trailforge.executor.ray_cluster import LoopbackCluster, free_port  # noqa: E402
from trailforge.io import StageRecorder  # noqa: E402
from trailforge.llm.client import Usage  # noqa: E402

# Worker processes cannot import this test module, so its functions and classes travel by value.
import ray.cloudpickle  # noqa: E402

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster():
    with LoopbackCluster(workers=1, env={"PYTHONPATH": str(PROJECT_ROOT)}) as running:
        yield running


@pytest.fixture(scope="module")
def ray_executor(cluster):
    executor = RayExecutor(address=cluster.address, max_in_flight=3)
    yield executor
    import ray

    ray.shutdown()


class Odd(ValueError):
    """An item failure with arguments of its own, as stage code raises."""

    def __init__(self, item: int, why: str):
        super().__init__(item, why)
        self.item, self.why = item, why


def _stage_like(recorder: StageRecorder, cache: ContentCache, usage: Usage, fail_on: set[int] = frozenset()):
    lock = threading.Lock()  # closures over locks must travel too (LLMClient holds some)

    def one(n: int) -> dict:
        with lock:
            recorder.count("seen")
        value, hit = cache.get_or_compute("square", 1, {"n": n}, lambda: {"square": n ** 2})
        recorder.count("cached" if hit else "computed")
        usage.add(calls=1, prompt_tokens=n, cost_usd=0.5)
        if n % 4 == 0:
            recorder.reject(f"item-{n:03d}", "multiple_of_four", f"{n} is a multiple of four", n=n)
            usage.add(failure="rejected")
        recorder.figures.setdefault("durations", {})[f"item-{n:03d}"] = n
        recorder.figures["last_seen_any"] = "yes"
        if n in fail_on:
            raise Odd(n, "odd one out")
        return {"n": n, **value}

    return one


def _outcome(executor, items, fail_on=frozenset()):
    recorder, usage = StageRecorder("unit"), Usage()
    cache = ContentCache(Path(_outcome.tmp) / f"cache-{type(executor).__name__}-{len(fail_on)}")
    for n in items[::3]:  # a warm part, so that hits and misses both count
        cache.put("square", cache.key("square", 1, {"n": n}), {"square": n ** 2})
    fn = _stage_like(recorder, cache, usage, fail_on)
    try:
        result = executor.map(fn, items, label="unit", cache_hits=lambda: cache.stats.hits)
    except Odd as exc:
        result = ("raised", type(exc), exc.args, exc.item)
    return {
        "result": result,
        "rejects": sorted((r.item_id, r.reason, r.message, r.detail) for r in recorder.rejects),
        "counters": dict(recorder.counters),
        "figures": recorder.figures,
        "cache": cache.stats.as_dict(),
        "usage": usage.as_dict(),
    }


@pytest.fixture(autouse=True)
def _tmp(tmp_path):
    _outcome.tmp = tmp_path


def test_results_come_back_in_input_order(ray_executor):
    # Items sleep in reverse proportion to their index, so they finish out of order.
    import time

    def slow_first(n):
        time.sleep(0.02 * (8 - n))
        return n * n

    assert ray_executor.map(slow_first, range(8), label="order") == [n * n for n in range(8)]
    assert ray_executor.map(slow_first, [], label="empty") == []


def test_rejects_counters_figures_cache_and_usage_match_local(ray_executor):
    items = list(range(1, 13))
    local = _outcome(LocalExecutor(max_workers=1), items)
    remote = _outcome(ray_executor, items)
    assert remote == local
    assert remote["counters"]["seen"] == 12 and len(remote["rejects"]) == 3
    assert remote["cache"]["hits"] == 4 and remote["cache"]["misses"] == 8


def test_item_exception_surfaces_like_local_after_all_items_ran(ray_executor):
    items = list(range(1, 9))
    local = _outcome(LocalExecutor(max_workers=2), items, fail_on={3, 6})
    remote = _outcome(ray_executor, items, fail_on={3, 6})
    assert remote["result"] == local["result"] == ("raised", Odd, (3, "odd one out"), 3)
    assert remote["counters"] == local["counters"] and remote["rejects"] == local["rejects"]


def test_exception_carries_the_remote_traceback(ray_executor):
    def boom(n):
        raise KeyError(f"missing {n}")

    with pytest.raises(KeyError, match="missing 0") as info:
        ray_executor.map(boom, [0, 1], label="boom")
    assert any("raised by an item on Ray node" in note for note in getattr(info.value, "__notes__", []))


def test_throughput_per_node_is_recorded(ray_executor, cluster):
    import time

    figures = {}
    ray_executor.map(lambda n: time.sleep(0.5) or n, range(12), label="spread", figures=figures)
    spread = figures["executor"]["spread"]
    assert spread["items"] == 12 and spread["items_per_s"] > 0
    # One CPU per node: while the head's slot is busy, items go to the worker node (once its worker
    # process has started, which takes a second or two).
    assert len(spread["nodes"]) == 2, spread


def test_config_selects_ray_and_names_the_key():
    from trailforge.config import compose

    data = compose("tiny", ["executor=ray", "executor.address=127.0.0.1:1", "executor.max_in_flight=7"],
                   root=PROJECT_ROOT)
    executor = build_executor(validate(data).executor)
    assert isinstance(executor, RayExecutor) and executor.max_in_flight == 7
    data["executor"]["max_workers"] = 2
    with pytest.raises(ConfigError, match="executor.max_workers: unknown key"):
        validate(data)
    data = compose("tiny", ["executor=ray", "executor.max_in_flight=0"], root=PROJECT_ROOT)
    with pytest.raises(ConfigError, match="executor.max_in_flight"):
        validate(data)


def test_unreachable_address_names_the_key():
    # RayExecutor._connect runs this check before ray.init, which would retry a dead address for minutes.
    with pytest.raises(ExecutorUnavailable, match=r"executor.address=127.0.0.1:\d+: no Ray head answers"):
        check_reachable(f"127.0.0.1:{free_port()}", timeout_s=2)
    with pytest.raises(ExecutorUnavailable, match="executor.address=nohost: expected host:port"):
        check_reachable("nohost")


def test_docker_sandbox_runs_items_on_the_node_that_executes_them(ray_executor):
    from conftest import DOCKER_BASE_IMAGE, docker_client_or_skip
    from trailforge.sandbox import DockerSandbox, RunRequest

    docker_client_or_skip()
    sandbox = DockerSandbox(base_image=DOCKER_BASE_IMAGE, timeout_s=60)
    assert sandbox.prepare([]).ready  # the driver's client and prepared image stay on the driver

    def square_in_a_container(n):
        env = sandbox.prepare([])
        result = sandbox.run(env, RunRequest(("python", "-c", f"print({n} * {n})"), {}, 60))
        return result.stdout.strip() if result.ok else result.stderr

    figures = {}
    assert ray_executor.map(square_in_a_container, range(6), label="docker", figures=figures) == \
        [str(n * n) for n in range(6)]
    assert figures["executor"]["docker"]["items"] == 6


def test_a_model_budget_holds_across_the_cluster_as_it_does_locally(ray_executor, tmp_path):
    from trailforge.llm import BudgetExhausted, Endpoint, Limits, LLMClient
    from trailforge.testing.openai_server import FakeOpenAIServer

    def outcome(executor, server, name):
        endpoint = Endpoint(model="openai/fake-model", api_base=server.url, api_key_env="TF_TEST_KEY", timeout_s=5)
        llm = LLMClient({"generator": endpoint}, ContentCache(tmp_path / name), Limits(backoff_s=0.01, max_calls=5))

        def ask(n):
            try:
                return llm.complete([{"role": "user", "content": f"question {n}"}])
            except BudgetExhausted as exc:
                return str(exc)

        results = executor.map(ask, range(12), label="budget")
        return results, llm.usage.calls

    with FakeOpenAIServer(responder=lambda request: "answer") as server:
        local, local_calls = outcome(LocalExecutor(max_workers=2), server, "local")
        local_served = server.calls
        remote, remote_calls = outcome(ray_executor, server, "ray")
        remote_served = server.calls - local_served
    assert local.count("answer") == remote.count("answer") == 5
    assert remote.count("budget.max_llm_calls=5 reached") == 7
    assert local_served == remote_served == local_calls == remote_calls == 5
