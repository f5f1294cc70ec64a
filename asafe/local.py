"""Adaptive runs on Dask's local schedulers (threaded, synchronous, processes).

:func:`adaptive` wires an :class:`~asafe.AdaptiveRuntime` into Dask's local
schedulers with a :class:`dask.callbacks.Callback`:

* ``start_state``: every task ready at the start is added to the mode tracker;
* ``pretask``: the start time of the task is noted;
* ``posttask``: its duration is measured, its dependents that became ready are
  added, and once per ``interval`` the buffered events reach the tracker in one
  batch and the controller is evaluated;
* ``finish``: the last events are applied and tasks that never finished (an
  error) leave the scheduled set.

All four run on the scheduler's own loop, never inside tasks, and do O(1) work
per task plus O(1) per dependency edge: 2-4.5 microseconds of CPU a task
(synchronous and threaded schedulers), against Dask's own 40-60, that is 4-12%
on graphs of trivial tasks (``python -m benchmarks overhead``; see
docs/results/overhead). A task's type is resolved once per function, not once
per task.

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

try:  # the function Dask puts in fused tasks
    from dask._task_spec import _execute_subgraph
except ImportError:  # pragma: no cover - older Dask
    _execute_subgraph = None

from . import board
from .runtime import AdaptiveRuntime
from .types import ANNOTATION, resolve_type, type_of_callable

__all__ = ["adaptive"]

_run = threading.local()  # per calling thread: the annotations of the pending compute


class _Run:
    """State of one ``get`` call: only what is in flight, never per-graph history."""

    __slots__ = ("annotations", "groups", "started", "added", "finished", "durations", "interned", "next_flush")

    def __init__(self, annotations: Mapping) -> None:
        self.annotations = annotations
        self.groups: dict = {}  # key -> (type, prefix), scheduled tasks only
        self.started: dict = {}  # key -> start time, running tasks only
        self.added: list = []  # events buffered until the next flush
        self.finished: list = []
        self.durations: list = []
        # callable -> {prefix -> (type, prefix)}: one interned group tuple per
        # function and key prefix, so the hot path allocates no tuple per task
        self.interned: dict = {}
        self.next_flush = 0.0


class _TrackingCallback(Callback):
    """Feeds scheduler events of Dask's local schedulers to a runtime's tracker.

    The hot path (``pretask``/``posttask``) only appends to per-run buffers; the
    buffers reach the tracker in one locked batch (:meth:`ModeTracker.ingest`)
    once per ``interval``, just before the controller is evaluated, so the mode
    is exact whenever it is read.
    """

    def __init__(self, runtime: AdaptiveRuntime) -> None:
        super().__init__()
        self.runtime = runtime
        self.tracker = runtime.tracker
        self.default_type = runtime.default_type
        self.interval = runtime.interval
        self._local = threading.local()

    # Dask's local schedulers call these on the thread that called compute.
    def _start(self, dsk: Mapping) -> None:
        self._local.run = _Run(getattr(_run, "annotations", None) or {})

    def _start_state(self, dsk: Mapping, state: dict) -> None:
        run = self._local.run
        for key in state["ready"]:
            run.added.append(self._group(run, key, dsk))
        self._flush(run, time.perf_counter())

    def _pretask(self, key: Any, dsk: Mapping, state: dict) -> None:
        self._local.run.started[key] = time.perf_counter()

    def _posttask(self, key: Any, result: Any, dsk: Mapping, state: dict, worker_id: Any) -> None:
        now = time.perf_counter()
        run = self._local.run
        run.finished.append(run.groups.pop(key, None) or self._resolve(run, key, dsk))
        run.durations.append(now - run.started.pop(key, now))
        waiting, groups = state["waiting"], run.groups
        for dependent in state["dependents"][key]:
            if dependent not in waiting and dependent not in groups:
                run.added.append(self._group(run, dependent, dsk))
        if now >= run.next_flush:
            self._flush(run, now)

    def _finish(self, dsk: Mapping, state: dict, errored: bool) -> None:
        run = getattr(self._local, "run", None)
        if run is None:
            return
        self.tracker.ingest(run.added, run.finished, run.durations)
        for task_type, prefix in run.groups.values():  # scheduled but never finished
            self.tracker.discard(task_type, prefix)
        self._local.run = None
        self.runtime.evaluate()

    def _flush(self, run: _Run, now: float) -> None:
        self.tracker.ingest(run.added, run.finished, run.durations)
        run.added, run.finished, run.durations = [], [], []
        run.next_flush = now + self.interval
        self.runtime.maybe_evaluate()

    def _group(self, run: _Run, key: Any, dsk: Mapping) -> tuple[str, str]:
        group = run.groups[key] = self._resolve(run, key, dsk)
        return group

    def _resolve(self, run: _Run, key: Any, dsk: Mapping) -> tuple[str, str]:
        prefix = key_split(key)  # cached by Dask
        annotated = run.annotations.get(key) if run.annotations else None
        if annotated is not None:
            return resolve_type(annotated, None, self.default_type), prefix
        task = dsk.get(key)
        func = getattr(task, "func", None)
        if func is None or func is _execute_subgraph:  # fused: the type is inside
            return resolve_type(None, task, self.default_type), prefix
        try:
            by_prefix = run.interned.get(func)
        except TypeError:  # an unhashable callable
            return (type_of_callable(func) or self.default_type), prefix
        if by_prefix is None:
            by_prefix = run.interned[func] = {}
        group = by_prefix.get(prefix)
        if group is None:
            group = by_prefix[prefix] = (type_of_callable(func) or self.default_type, prefix)
        return group


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
