"""Map per-item work over a Ray cluster, with the same results, rejects and stats as ``executor=local``.

Each item runs as one Ray task. What makes the outcome identical to the local thread pool:

- **Side effects come back.** The item function is usually a closure over the stage's
  ``StageRecorder``, ``ContentCache`` and ``LLMClient``; the worker runs a pickled copy, so those
  objects note every reject, counter, figure, cache lookup and usage addition made on the worker,
  and the driver replays the notes into the originals, item by item in input order
  (``trailforge.executor.events``).
- **Order is the input order.** Results are returned, and notes replayed, in input order whatever
  order the tasks finish in.
- **Failures are the local ones.** An exception raised by the item function is caught on the
  worker and re-raised on the driver as the same exception (type and arguments, plus a note with
  the remote traceback); the first failing item in input order raises, after all items ran, as
  with the local pool. Such exceptions are never retried. A task lost to a dead worker process or
  node is retried by Ray up to ``executor.max_retries`` times; item work is cached and written
  atomically, so a re-run repeats or reuses what the lost attempt did.
- **The cache is shared, not shipped.** ``ContentCache`` is a directory; on a cluster it must be
  on a filesystem every node mounts at the same path (here: the same machine), as must the
  project folder, since stages use paths relative to it. Each task runs in the driver's working
  directory.

Sandboxes run on whichever node executes the item (a docker sandbox talks to that node's engine).
In-flight work is bounded by ``executor.max_in_flight``; each item asks for
``num_cpus_per_item`` / ``memory_mb_per_item`` or the ``operations[<label>]`` override. Progress
lines and, when the stage passes ``figures=recorder.figures``, its stats carry per-node throughput
under ``executor.<label>`` (a measured quantity, like ``wall_s``).

Limitation: state that an item function writes into plain driver objects other than those three
(a dict the closure fills, say) stays on the worker; such a stage must return its results instead.
Model budgets (``budget.max_llm_*``) are checked by each item against the usage at the map's start
plus its own, since workers cannot see each other's spending.
"""
from __future__ import annotations

import io
import os
import pickle
import socket
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TypeVar

from ..io.progress import Progress
from . import events

Item = TypeVar("Item")
Result = TypeVar("Result")

# Variables a stage reads on the worker at call time (cache location, offline litellm); model API
# keys are deliberately not shipped: set them on the nodes.
_FORWARDED_ENV_PREFIXES = ("TRAILFORGE_", "LITELLM_LOCAL_MODEL_COST_MAP", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")


class ExecutorUnavailable(RuntimeError):
    """Ray is missing or the configured cluster cannot be reached."""


class ItemLost(RuntimeError):
    """An item's task failed for a reason other than its own exception (its worker or node died)."""


class _TotalsLedger:
    """Running totals checked against limits; one Ray actor per shared ledger, so calls are serial."""

    def __init__(self, initial: dict[str, float]):
        self.totals = dict(initial)

    def reserve(self, adding: dict[str, float], limits: dict[str, float | None]) -> str | None:
        """Add ``adding`` unless a total already reached its limit; returns the name of that total."""
        for name, limit in limits.items():
            if limit is not None and self.totals.get(name, 0) >= limit:
                return name
        self.add(adding)
        return None

    def add(self, adding: dict[str, float]) -> None:
        for name, value in adding.items():
            self.totals[name] = self.totals.get(name, 0) + value

    def read(self) -> dict[str, float]:
        return dict(self.totals)


class RayLedger:
    """What a worker copy holds of a shared ledger (``events.shared_ledger``): a handle on its actor."""

    def __init__(self, actor):
        self._actor = actor

    @classmethod
    def start(cls, ray, initial: dict[str, float]) -> "RayLedger":
        return cls(ray.remote(num_cpus=0)(_TotalsLedger).remote(initial))

    def reserve(self, adding: dict[str, float], limits: dict[str, float | None]) -> str | None:
        import ray

        return ray.get(self._actor.reserve.remote(adding, limits))

    def add(self, adding: dict[str, float]) -> None:
        self._actor.add.remote(adding)  # a caller's calls to one actor run in order, so no wait is needed

    def read(self) -> dict[str, float]:
        import ray

        return ray.get(self._actor.read.remote())

    def stop(self) -> None:
        import ray

        ray.kill(self._actor)


@dataclass
class NodeThroughput:
    """Items done per node during one map: the figure a stage records and the progress line shows."""

    started: float = field(default_factory=time.monotonic)
    items: dict[str, int] = field(default_factory=dict)
    busy_s: dict[str, float] = field(default_factory=dict)

    def add(self, node: str, busy_s: float) -> None:
        self.items[node] = self.items.get(node, 0) + 1
        self.busy_s[node] = self.busy_s.get(node, 0.0) + busy_s

    def as_dict(self) -> dict[str, Any]:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        total = sum(self.items.values())
        return {
            "kind": "ray",
            "items": total,
            "wall_s": round(elapsed, 3),
            "items_per_s": round(total / elapsed, 3),
            "nodes": {node: {"items": n, "items_per_s": round(n / elapsed, 3),
                             "busy_s": round(self.busy_s[node], 3)} for node, n in sorted(self.items.items())},
        }

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return ", ".join(f"{node} {n} ({n / elapsed:.2f}/s)" for node, n in sorted(self.items.items()))


class _NodeProgress(Progress):
    """The usual progress line with items and items/s per node appended."""

    def __init__(self, *args, throughput: NodeThroughput, **kwargs):
        super().__init__(*args, **kwargs)
        self.throughput = throughput

    def line(self, now: float | None = None) -> str:
        nodes = self.throughput.line()
        return super().line(now) + (f" | nodes: {nodes}" if nodes else "")


class RayExecutor:
    def __init__(self, address: str | None = None, max_in_flight: int = 64, num_cpus_per_item: float = 1.0,
                 memory_mb_per_item: int | None = None, operations: dict[str, Any] | None = None,
                 max_retries: int = 2, runtime_env: dict[str, Any] | None = None):
        if max_in_flight < 1:
            raise ValueError("executor.max_in_flight must be at least 1")
        if max_retries < 0:
            raise ValueError("executor.max_retries must be at least 0")
        self.address = address or None
        self.max_in_flight = max_in_flight
        self.num_cpus_per_item = num_cpus_per_item
        self.memory_mb_per_item = memory_mb_per_item
        self.operations = dict(operations or {})
        self.max_retries = max_retries
        self.runtime_env = dict(runtime_env or {})

    @classmethod
    def from_config(cls, config) -> "RayExecutor":
        operations = {label: {"num_cpus": r.num_cpus, "memory_mb": r.memory_mb}
                      for label, r in config.operations.items()}
        return cls(address=config.address, max_in_flight=config.max_in_flight,
                   num_cpus_per_item=config.num_cpus_per_item, memory_mb_per_item=config.memory_mb_per_item,
                   operations=operations, max_retries=config.max_retries, runtime_env=config.runtime_env)

    # ------------------------------------------------------------------ public

    def map(self, fn: Callable[[Item], Result], items: Iterable[Item], *, label: str = "items",
            cache_hits: Callable[[], int] | None = None,
            cost_usd: Callable[[], float] | None = None,
            figures: dict[str, Any] | None = None) -> list[Result]:
        """``[fn(item) for item in items]`` as Ray tasks, in input order, reporting progress under ``label``.

        ``cache_hits`` and ``cost_usd`` read the driver's objects, which are brought up to date as
        items finish (in input order). With ``figures`` (a recorder's figures), per-node throughput
        is stored under ``figures["executor"][label]``.
        """
        items = list(items)
        ray = self._connect()
        remote = _remote_item_function(ray)
        options = self._task_options(label)
        cwd = os.getcwd()
        throughput = NodeThroughput()
        outcomes: dict[int, tuple] = {}
        with events.identities() as targets, events.shared_ledgers(lambda initial: RayLedger.start(ray, initial)) \
                as ledgers:
            try:
                fn_ref = ray.put(_dumps(fn))  # pickling creates the shared ledgers the function's objects ask for
                item_blobs = [_dumps(item) for item in items]
                pending: dict[Any, int] = {}
                submitted = replayed = 0
                with _NodeProgress(label, len(items), cache_hits=cache_hits, cost_usd=cost_usd,
                                   throughput=throughput) as progress:
                    while submitted < len(items) or pending:
                        while submitted < len(items) and len(pending) < self.max_in_flight:
                            ref = remote.options(**options).remote(fn_ref, item_blobs[submitted], cwd)
                            pending[ref] = submitted
                            item_blobs[submitted] = None  # held by Ray now
                            submitted += 1
                        ready, _ = ray.wait(list(pending), num_returns=1)
                        for ref in ready:
                            index = pending.pop(ref)
                            outcomes[index] = self._outcome(ray, ref, index, label)
                            if outcomes[index][3] is not None:
                                throughput.add(outcomes[index][3], outcomes[index][4])
                            progress.advance()
                        # Replay in input order, as far as items are done, so the driver's counters (and
                        # the progress line's cache hits) never depend on the order tasks finished in.
                        while replayed in outcomes:
                            events.replay(targets, outcomes[replayed][2])
                            replayed += 1
            finally:
                for ledger in ledgers.values():
                    ledger.stop()
        if figures is not None:
            figures.setdefault("executor", {})[label] = throughput.as_dict()
        results = []
        for index in range(len(items)):
            ok, value = outcomes[index][:2]
            if not ok:
                raise value
            results.append(value)
        return results

    # ------------------------------------------------------------------ internals

    def _task_options(self, label: str) -> dict[str, Any]:
        hints = self.operations.get(label, {})
        num_cpus = hints.get("num_cpus", self.num_cpus_per_item)
        memory_mb = hints.get("memory_mb", self.memory_mb_per_item) if hints else self.memory_mb_per_item
        options: dict[str, Any] = {"num_cpus": num_cpus, "max_retries": self.max_retries,
                                   "retry_exceptions": False, "name": f"trailforge:{label}"}
        if memory_mb:
            options["memory"] = int(memory_mb) * 1024 * 1024
        return options

    def _outcome(self, ray, ref, index: int, label: str) -> tuple:
        """``(ok, result or exception, events, node, busy_s)`` of one finished task."""
        try:
            ok, value, log, node, busy_s = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # the task itself ended abnormally (SystemExit, ...)
            return False, ItemLost(f"{label} item {index}: {exc}"), [], None, 0.0
        except ray.exceptions.RayError as exc:  # worker or node died more than max_retries times
            return (False, ItemLost(f"{label} item {index} was lost after executor.max_retries={self.max_retries} "
                                    f"retries ({type(exc).__name__}): {str(exc)[:500]}"), [], None, 0.0)
        return ok, value, log, node, busy_s

    def _connect(self):
        try:
            import ray
        except ImportError:
            raise ExecutorUnavailable("executor=ray needs Ray: pip install 'trailforge[ray]' "
                                      "(or use executor=local)") from None
        if ray.is_initialized():
            return ray
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never phone home
        runtime_env = dict(self.runtime_env)
        forwarded = {k: v for k, v in os.environ.items() if k.startswith(_FORWARDED_ENV_PREFIXES)}
        runtime_env["env_vars"] = {**forwarded, **runtime_env.get("env_vars", {})}
        # Items must not print into a stage's stdout (its summary line); worker logs stay in the session dir.
        kwargs: dict[str, Any] = {"runtime_env": runtime_env, "log_to_driver": False, "logging_level": "WARNING"}
        if self.address:
            check_reachable(self.address)
        try:
            if self.address:
                ray.init(address=self.address, **kwargs)
            else:
                ray.init(include_dashboard=False, **kwargs)
        except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
            where = f"executor.address={self.address}" if self.address else "executor.address (empty: a local cluster)"
            raise ExecutorUnavailable(f"{where}: could not start or reach a Ray cluster: {exc}") from None
        return ray


def check_reachable(address: str, timeout_s: float = 10.0) -> None:
    """Fail fast with the key's name: ray.init would retry an unreachable head for minutes."""
    if "://" in address or address == "auto":
        return  # ray:// clients and discovery by "auto" do their own checks
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ExecutorUnavailable(f"executor.address={address}: expected host:port of a Ray head (or empty)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ExecutorUnavailable(
            f"executor.address={address}: no Ray head answers there ({exc}); start one with "
            "`ray start --head` or leave executor.address empty for a local cluster") from None


# ---------------------------------------------------------------------- the worker side

_remote = None
_remote_lock = threading.Lock()


def _remote_item_function(ray):
    global _remote
    with _remote_lock:
        if _remote is None:
            _remote = ray.remote(_run_item)
        return _remote


def _run_item(fn_blob: bytes, item_blob: bytes, cwd: str) -> tuple:
    """Run one item on a worker: ``(ok, result or exception, events, node, busy_s)``."""
    import ray

    try:
        os.chdir(cwd)  # stages use paths relative to the project root (DVC runs them there)
    except OSError as exc:
        raise ItemLost(f"executor=ray needs the project folder {cwd} on every node (a shared filesystem): "
                       f"{exc}") from None
    context = ray.get_runtime_context()
    node = f"{socket.gethostname()}/{context.get_node_id()[:8]}"
    with events.recording() as log:
        # Unpickled here, inside the recording, so the recorder, cache and usage copies note what they do.
        fn = _loads(fn_blob)
        item = _loads(item_blob)
        started = time.perf_counter()
        try:
            return True, fn(item), log, node, time.perf_counter() - started
        except Exception as exc:  # handed back and raised on the driver, like a local item's exception
            return False, _portable(exc, node), log, node, time.perf_counter() - started


def _portable(exc: Exception, node: str) -> Exception:
    """The exception itself if it survives pickling, else a RuntimeError with its text; plus the remote traceback."""
    remote_trace = "".join(traceback.format_exception(exc))
    try:
        copy = _loads(_dumps(exc))
        if type(copy) is not type(exc) or copy.args != exc.args:
            raise TypeError("changed in pickling")
    except Exception:
        copy = RuntimeError(f"{type(exc).__name__}: {exc}")
    copy.__traceback__ = None
    try:
        copy.add_note(f"raised by an item on Ray node {node}:\n{remote_trace}")
    except AttributeError:
        pass
    return copy


# ---------------------------------------------------------------------- pickling

def _dumps(value: Any) -> bytes:
    from ray import cloudpickle

    class _Pickler(cloudpickle.CloudPickler):
        # Locks and semaphores guard threads of one process; a copy in another process gets fresh ones
        # (LLMClient holds a Semaphore and a Lock; the recorder and stats drop theirs themselves).
        def reducer_override(self, obj):
            fresh = _fresh_sync_primitive(obj)
            if fresh is not None:
                return fresh
            return super().reducer_override(obj)

    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def _loads(blob: bytes) -> Any:
    return pickle.loads(blob)


_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def _fresh_sync_primitive(obj):
    if isinstance(obj, _LOCK_TYPES):
        return (threading.RLock if isinstance(obj, type(threading.RLock())) else threading.Lock), ()
    if isinstance(obj, threading.BoundedSemaphore):
        return threading.BoundedSemaphore, (obj._initial_value,)
    if isinstance(obj, threading.Semaphore):
        return threading.Semaphore, (obj._value,)
    if isinstance(obj, threading.Event):
        return threading.Event, ()
    return None
