"""Adaptive runs on Dask's local schedulers (threaded, synchronous, processes).

:func:`adaptive` wires an :class:`~asafe.AdaptiveRuntime` into Dask's local
schedulers with a :class:`dask.callbacks.Callback`:

* ``start_state``: every task ready at the start is added to the mode tracker;
* ``pretask``: the start time of the task is noted;
* ``posttask``: its duration is measured, its dependents that became ready are
  added, and the controller is evaluated (throttled to one evaluation per
  ``interval``);
* ``finish``: the scheduled set is cleared.

All four run on the scheduler's own loop, never inside tasks, and do O(1) work
per task plus O(1) per dependency edge.

Types. Dask lowers the graph before the callbacks see it and the lowered graph
has no annotations, so :func:`adaptive` also sets ``dask.config`` ``scheduler``
to a thin ``get`` that reads the ``asafe_type`` annotations of the expression it
receives and then runs the scheduler you chose. A ``dask.compute(...,
scheduler=...)`` call that names a scheduler explicitly bypasses that ``get``:
its tasks are still tracked, typed by :func:`asafe.typed` and the default type.

States reach tasks through :mod:`asafe.board`: in-process for threads and the
synchronous scheduler, through a shared memory map for the processes scheduler.
"""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import dask
import dask.base
from dask.callbacks import Callback
from dask.utils import key_split

from . import board
from .runtime import AdaptiveRuntime
from .types import ANNOTATION, resolve_type

__all__ = ["adaptive"]

_run = threading.local()  # per calling thread: the annotations of the pending compute


class _TrackingCallback(Callback):
    """Feeds scheduler events of Dask's local schedulers to a runtime's tracker."""

    def __init__(self, runtime: AdaptiveRuntime) -> None:
        super().__init__()
        self.runtime = runtime
        self.tracker = runtime.tracker
        self.default_type = runtime.default_type
        self._runs = threading.local()

    # Dask's local schedulers call these on the thread that called compute.
    def _start(self, dsk: Mapping) -> None:
        self._runs.annotations = getattr(_run, "annotations", None) or {}
        self._runs.types = {}  # key -> (type, prefix) of scheduled tasks only
        self._runs.started = {}  # key -> start time of running tasks only

    def _start_state(self, dsk: Mapping, state: dict) -> None:
        for key in state["ready"]:
            self._add(key, dsk)

    def _pretask(self, key: Any, dsk: Mapping, state: dict) -> None:
        self._runs.started[key] = time.perf_counter()

    def _posttask(self, key: Any, result: Any, dsk: Mapping, state: dict, worker_id: Any) -> None:
        runs = self._runs
        duration = time.perf_counter() - runs.started.pop(key, time.perf_counter())
        task_type, prefix = runs.types.pop(key, None) or self._type_of(key, dsk)
        self.tracker.finish(task_type, prefix, duration)
        waiting = state["waiting"]
        for dependent in state["dependents"][key]:
            if dependent not in waiting and dependent not in runs.types:
                self._add(dependent, dsk)
        self.runtime.maybe_evaluate()

    def _finish(self, dsk: Mapping, state: dict, errored: bool) -> None:
        runs = self._runs
        for task_type, prefix in getattr(runs, "types", {}).values():
            self.tracker.discard(task_type, prefix)
        runs.types, runs.started = {}, {}
        self.runtime.evaluate()

    def _add(self, key: Any, dsk: Mapping) -> None:
        group = self._runs.types[key] = self._type_of(key, dsk)
        self.tracker.add(*group)

    def _type_of(self, key: Any, dsk: Mapping) -> tuple[str, str]:
        annotated = self._runs.annotations.get(key)
        return resolve_type(annotated, dsk.get(key), self.default_type), key_split(key)


class _AnnotatedGet:
    """A scheduler ``get`` that reads type annotations, then runs the chosen scheduler."""

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler

    def __call__(self, dsk: Any, keys: Any, **kwargs: Any) -> Any:
        annotations_of = getattr(dsk, "__dask_annotations__", None)
        annotations = annotations_of().get(ANNOTATION, {}) if annotations_of else {}
        get = dask.base.get_scheduler(scheduler=self.scheduler)
        previous = getattr(_run, "annotations", None)
        _run.annotations = annotations
        try:
            return get(dsk, keys, **kwargs)
        finally:
            _run.annotations = previous


@contextlib.contextmanager
def adaptive(runtime: AdaptiveRuntime | None = None, scheduler: Any = None) -> Iterator[AdaptiveRuntime]:
    """Run the Dask computations inside the block adaptively.

    Parameters
    ----------
    runtime : AdaptiveRuntime, optional
        Default: a runtime built from configuration.
    scheduler : str or callable, optional
        ``"threads"``, ``"sync"``, ``"processes"`` or a ``get`` function. Default:
        the scheduler configured on entry, else the threaded scheduler.

    Yields
    ------
    AdaptiveRuntime
        The runtime, whose ``mode``, ``state()`` and ``history`` the block can read.

    Notes
    -----
    On exit the states seen by :func:`asafe.is_on` are restored to what they were
    on entry (``False`` everywhere outside any run); the runtime keeps its history.

    Examples
    --------
    >>> import dask, asafe
    >>> rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))])
    >>> with asafe.adaptive(rt, scheduler="sync"):
    ...     dask.compute(dask.delayed(sum)([1, 2, 3]))
    (6,)
    """
    if runtime is None:
        runtime = AdaptiveRuntime()
    if not isinstance(runtime, AdaptiveRuntime):
        raise TypeError(f"adaptive() needs an asafe.AdaptiveRuntime, got {type(runtime).__name__}")
    if isinstance(scheduler, str) and scheduler not in _LOCAL_SCHEDULERS:
        raise ValueError(
            f"adaptive() runs on Dask's local schedulers {sorted(_LOCAL_SCHEDULERS)}; got "
            f"scheduler={scheduler!r} (for a cluster use asafe.install(client, runtime))"
        )
    underlying = scheduler if scheduler is not None else dask.config.get("scheduler", None) or "threads"
    previous_states = board.publish(runtime.states, shared=True)
    unsubscribe = runtime.subscribe(lambda states, _: board.publish(states, shared=True))
    callback = _TrackingCallback(runtime)
    try:
        with dask.config.set(scheduler=_AnnotatedGet(underlying)), callback:
            yield runtime
    finally:
        unsubscribe()
        board.restore(previous_states)


_LOCAL_SCHEDULERS = {"threads", "threading", "sync", "synchronous", "single-threaded", "processes", "multiprocessing"}
