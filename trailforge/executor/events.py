"""Side effects of per-item work done in another process, sent back and replayed on the driver.

A stage's item function is usually a closure over a ``StageRecorder`` (rejects, counters,
figures), a ``ContentCache`` (hit/miss stats) and sometimes an ``LLMClient`` (usage). A remote
executor ships a *copy* of the closure to a worker, so whatever the item records there would be
lost. Those objects therefore report each recording call to :func:`note`; on a worker, while an
item runs under :func:`recording`, the calls are collected with the driver-side identity the
object was given when it was pickled (:func:`identities`), returned with the item's result, and
:func:`replay`-ed into the original objects, item by item in input order.

Outside a remote item (the local executor, plain use) :func:`note` costs one attribute test and
does nothing, so local behaviour is unchanged.
"""
from __future__ import annotations

import contextlib
import copy
import threading
from typing import Any, Callable, Iterator

# Driver side: token -> original object, filled while a map's function and items are pickled.
_identities: dict[str, Any] | None = None
# Driver side, while a remote executor pickles: makes a ledger every worker copy shares; token -> ledger.
_ledger_factory: Callable[[dict[str, float]], Any] | None = None
_ledgers: dict[str, Any] | None = None
# Worker side: the events of the item now running (one Ray task at a time per worker process).
_events: list[tuple[str, str, tuple, dict]] | None = None
_events_lock = threading.Lock()  # an item may record from threads of its own


@contextlib.contextmanager
def identities() -> Iterator[dict[str, Any]]:
    """While pickling on the driver: give every replayable object a token; yields token -> object."""
    global _identities
    registry: dict[str, Any] = {}
    previous, _identities = _identities, registry
    try:
        yield registry
    finally:
        _identities = previous


def token_for(obj: Any) -> str | None:
    """The driver-side identity of ``obj`` (None when not pickling for a remote executor)."""
    if _identities is None:
        return None
    token = f"{type(obj).__name__}-{id(obj):x}"
    _identities[token] = obj  # held here, so the id cannot be reused while the map runs
    return token


@contextlib.contextmanager
def shared_ledgers(factory: Callable[[dict[str, float]], Any]) -> Iterator[dict[str, Any]]:
    """While pickling on the driver: let objects ask for a ledger shared across workers (see
    :func:`shared_ledger`); ``factory(initial totals)`` makes one. Yields token -> ledger made."""
    global _ledger_factory, _ledgers
    made: dict[str, Any] = {}
    previous, _ledger_factory, _ledgers = (_ledger_factory, _ledgers), factory, made
    try:
        yield made
    finally:
        _ledger_factory, _ledgers = previous


def shared_ledger(obj: Any, initial: dict[str, float]) -> Any | None:
    """A ledger of running totals that all worker copies of ``obj`` share for this map (one per object),
    starting at ``initial``; None outside a remote executor's pickling or when it offers none.

    The object's own counts still travel back as events; the ledger exists so that a limit on a total
    (a model budget) holds across the cluster while items run, not only after they are replayed.
    """
    token = token_for(obj)
    if token is None or _ledger_factory is None or _ledgers is None:
        return None
    if token not in _ledgers:
        _ledgers[token] = _ledger_factory(dict(initial))
    return _ledgers[token]


@contextlib.contextmanager
def recording() -> Iterator[list[tuple[str, str, tuple, dict]]]:
    """On a worker: collect the events of one item (objects unpickled inside it record into it)."""
    global _events
    log: list[tuple[str, str, tuple, dict]] = []
    previous, _events = _events, log
    try:
        yield log
    finally:
        _events = previous


def note(token: str | None, op: str, *args: Any, **kwargs: Any) -> None:
    """Record that the driver's object ``token`` must replay ``op(*args, **kwargs)``."""
    if token is None or _events is None:
        return
    with _events_lock:
        _events.append((token, op, args, kwargs))


def replay(targets: dict[str, Any], events: list[tuple[str, str, tuple, dict]]) -> None:
    """Apply one item's events to the original objects, in the order they happened on the worker."""
    for token, op, args, kwargs in events:
        getattr(targets[token], op)(*args, **kwargs)


def shipped_state(obj: Any, *copied: str) -> dict[str, Any]:
    """``obj.__getstate__`` for a replayable object: its attributes without the lock (locks do not
    pickle), the named containers copied (an item thread may be adding to them while pickling runs),
    and the driver-side token its worker copy notes events under."""
    state = {k: v for k, v in obj.__dict__.items() if k != "_lock"}
    for name in copied:
        state[name] = copy.deepcopy(state[name])
    state["_event_token"] = token_for(obj)
    return state


def restore_state(obj: Any, state: dict[str, Any]) -> None:
    """``obj.__setstate__`` counterpart of :func:`shipped_state`: the attributes and a fresh lock."""
    obj.__dict__.update(state)
    obj._lock = threading.Lock()
