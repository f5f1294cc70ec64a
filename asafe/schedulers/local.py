"""Adaptive runs on Dask's local schedulers (threaded, synchronous, processes).

:func:`adaptive` wires an :class:`~asafe.AdaptiveRuntime` into Dask's local
schedulers with a :class:`dask.callbacks.Callback`:

* ``start_state``: every task ready at the start is counted as scheduled;
* ``pretask``: the start time of the task is noted;
* ``posttask``: its duration is measured and its dependents that became ready
  are counted as scheduled, in per-group tallies; once per ``interval`` the
  tallies reach the mode tracker in one batch and the controller is evaluated;
* ``finish``: the last tallies are applied and tasks that never finished (an
  error) leave the scheduled set.

All four run on the scheduler's own loop, never inside tasks, and do O(1) work
per task plus O(1) per dependency edge, and no work per task in the tracker
(see :meth:`asafe.ModeTracker.ingest`). How that path was made cheap, and what
it costs, is in :class:`_TrackingCallback`.

Observing, not choosing. :func:`adaptive` adds one callback to Dask's callbacks
(as :class:`dask.diagnostics.ProgressBar` does) and changes nothing else: each
collection keeps its default scheduler (a bag its processes, an array its
threads), a distributed ``Client`` stays the default where one is, the errors
Dask raises (collections with differing default schedulers) still raise, and
:func:`dask.base.get_scheduler` answers as without asafe.

Types. Dask lowers the graph before the callbacks see it and the lowered graph
has no annotations, so by default tasks are typed by :func:`asafe.typed` and the
default type. Annotations (:func:`asafe.task_type`, :func:`asafe.reuse`) are read
where the scheduler is chosen through asafe: ``adaptive(runtime,
scheduler="threads")`` sets ``dask.config`` ``scheduler`` for the block, as
``dask.config.set(scheduler=...)`` would, to a thin ``get`` that reads the
annotations of the expression it receives and then runs that scheduler. A
``dask.compute(..., scheduler=...)`` call that names a scheduler explicitly
bypasses that ``get``: its tasks are still tracked, typed by :func:`asafe.typed`
and the default type.

Declared reuse. The same ``get`` reads the ``asafe_reuse`` annotations
(:func:`asafe.reuse`): while a computation runs, the mode's ``reuse`` signal is
the mean reuse its graph declares (over the annotated tasks; a graph that
declares none reads ``nan``). The local schedulers know the whole graph at its
start, so this is the graph's value from its first task; unlike the distributed
plugin's, which follows the scheduled tasks, it does not change within one
computation.

States reach tasks through :mod:`asafe.schedulers.board`: in-process for threads and the
synchronous scheduler, through a shared memory map for the processes scheduler.
"""
from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Iterator, Mapping
from time import perf_counter
from typing import Any

import dask
import dask.base
from dask.callbacks import Callback
from dask.utils import key_split

try:  # the function Dask puts in fused tasks
    from dask._task_spec import _execute_subgraph
except ImportError:  # pragma: no cover - older Dask
    _execute_subgraph = None

from ..core import config, validate
from ..core.reuse import REUSE_ANNOTATION, validate_reuse
from ..core.runtime import AdaptiveRuntime
from ..core.types import ANNOTATION, resolve_type, type_of_callable
from . import board

__all__ = ["adaptive", "compiled_hooks_built"]

logger = logging.getLogger("asafe")
_run = threading.local()  # per calling thread: the annotations and declared reuse of the pending compute
_RUN = "asafe-run"  # the key of a run's _Run in Dask's per-run ``state`` dict


try:  # the compiled hooks (asafe/schedulers/_hotpath.c), optional: see _TrackingCallback
    from . import _hotpath
except ImportError:  # built without a C compiler: the pure-Python hooks
    _hotpath = None


class _PyTally:
    """Events of one (type, prefix) group in one run since the last flush."""

    __slots__ = ("task_type", "prefix", "added", "finished", "seconds", "in_flight")

    def __init__(self, task_type: str, prefix: str) -> None:
        self.task_type = task_type
        self.prefix = prefix
        self.added = 0
        self.finished = 0
        self.seconds = 0.0
        self.in_flight = 0  # added minus finished up to the last flush


class _PyRunState:
    """What the hooks touch per task in one run (``_hotpath.RunState`` in C)."""

    __slots__ = ("scheduled", "started", "by_func", "next_flush")

    def __init__(self) -> None:
        self.scheduled: dict = {}  # key -> its tally, from ready to finished
        self.started: dict = {}  # key -> start time, running tasks only
        # callable -> {key name or prefix -> _Tally}: a task's group is found
        # from its function and key without building a tuple (nothing here
        # allocates per task: see asafe.core.tracker on the garbage collector)
        self.by_func: dict = {}
        self.next_flush = 0.0


# The compiled types where built: both hooks use them (the Python hooks only
# read and write their attributes), the compiled ones need them.
_Tally = _hotpath.Tally if _hotpath is not None else _PyTally
_RunState = _hotpath.RunState if _hotpath is not None else _PyRunState


class _Run(_RunState):
    """State of one ``get`` call: only what is in flight, never per-graph history."""

    __slots__ = ("annotations", "tallies", "by_type", "unannotated")

    def __init__(self, annotations: Mapping) -> None:
        super().__init__()
        self.annotations = annotations
        self.tallies: list = []  # one _Tally per group seen in this run
        self.by_type: dict = {}  # type -> {prefix -> _Tally}
        self.unannotated: dict = {}  # as by_func, for the keys of an annotated run without one

    def tally(self, task_type: str, prefix: str) -> _Tally:
        """The tally of a group, created on first use."""
        by_prefix = self.by_type.get(task_type)
        if by_prefix is None:
            by_prefix = self.by_type[task_type] = {}
        tally = by_prefix.get(prefix)
        if tally is None:
            tally = by_prefix[prefix] = _Tally(task_type, prefix)
            self.tallies.append(tally)
        return tally

    def drain(self) -> list[tuple[str, str, int, int, float]]:
        """The events tallied since the last call, as :meth:`ModeTracker.ingest` takes them."""
        batch = []
        for tally in self.tallies:
            if tally.added or tally.finished:
                batch.append((tally.task_type, tally.prefix, tally.added, tally.finished, tally.seconds))
                tally.in_flight += tally.added - tally.finished
                tally.added = tally.finished = 0
                tally.seconds = 0.0
        return batch


class _TrackingCallback(Callback):
    """Feeds scheduler events of Dask's local schedulers to a runtime's tracker.

    The hooks run on the scheduler's loop, between Dask's own steps, where
    Python code runs several times slower than in a warm loop: its cost is set
    by the memory it touches (and tuple keys are hashed again at every dict
    operation) more than by its operations. So the hooks touch little: a
    task's tally (per ``(type, prefix)`` group) is found once, when the task
    becomes ready, from its function and its key's name (:meth:`_tally_of`),
    and kept in ``scheduled`` until it finishes; start times live in
    ``started`` while tasks run. Each run's state rides in Dask's own per-run
    ``state`` dict (under :data:`_RUN`).

    The tallies go to the tracker once per ``interval`` in one small batch (a
    few groups), so the tracker does no work per task.

    The per-task steps (``pretask``, ``posttask`` and the loop of
    :meth:`_schedule`) are compiled where ``asafe.schedulers._hotpath`` was built
    (``asafe/schedulers/_hotpath.c``, without the interpreter's frames) and
    ``asafe.local.compiled-hooks`` is true. The methods below are the
    reference and the fallback; both take the same slow path, as the compiled
    hooks call back :meth:`_resolve` and :meth:`_flush`. The compiled hooks
    touch less per task: a task's value in ``scheduled`` is an entry that
    also holds its start time (no ``started`` insert and pop), the run of the
    current ``state`` is cached until :meth:`_finish` (``forget``), and the
    clock is read without a Python call. What either costs is measured with
    ``python -m benchmarks overhead --python-hooks`` (docs/results/overhead)
    and, in instructions, ``python -m benchmarks instructions``.
    """

    def __init__(self, runtime: AdaptiveRuntime) -> None:
        super().__init__()
        self.runtime = runtime
        self.tracker = runtime.tracker
        self.default_type = runtime.default_type
        self.interval = runtime.interval
        #: Whether the compiled hooks run (configured, and built).
        self.compiled = _hotpath is not None and _compiled_hooks_configured()
        self._hooks = None
        self._declared: dict[int, float] = {}  # id(run) -> the reuse its graph declares, while it runs
        if self.compiled:  # instance attributes shadow the methods for Dask's Callback
            self._hooks = _hotpath.Hooks(self._resolve, self._flush, _prefix)  # clock: perf_counter's
            self._pretask = self._hooks.pretask
            self._posttask = self._hooks.posttask
            self._schedule = self._hooks.schedule

    # Dask's local schedulers call these on the thread that called compute,
    # with one ``state`` dict per run.
    def _start_state(self, dsk: Mapping, state: dict) -> None:
        run = state[_RUN] = _Run(getattr(_run, "annotations", None) or {})
        declared = getattr(_run, "reuse", None)
        if declared is not None:
            self._declared[id(run)] = declared
        self._schedule(run, state["ready"], dsk)
        self.tracker.ingest(run.drain())
        run.next_flush = time.perf_counter() + self.interval
        # the graph's ready tasks (and its declared reuse) are known now: decide
        # before its first task, as an arrival (AdaptiveRuntime.evaluate)
        self.runtime.evaluate(arrival=True)

    def declared_reuse(self) -> float:
        """The mode's ``reuse`` signal: the mean declared by the running computations' graphs, else ``nan``."""
        values = list(self._declared.values())
        return sum(values) / len(values) if values else math.nan

    def _schedule(self, run: _Run, keys: Any, dsk: Mapping) -> None:
        """Count every task of ``keys`` as scheduled in its tally."""
        scheduled = run.scheduled
        for key in keys:
            tally = scheduled[key] = self._tally_of(run, key, dsk)
            tally.added += 1

    def _pretask(self, key: Any, dsk: Mapping, state: dict) -> None:
        state[_RUN].started[key] = perf_counter()

    def _posttask(self, key: Any, result: Any, dsk: Mapping, state: dict, worker_id: Any) -> None:
        now = perf_counter()
        run = state[_RUN]
        scheduled = run.scheduled
        tally = scheduled.pop(key, None) or self._tally_of(run, key, dsk)
        tally.finished += 1
        tally.seconds += now - run.started.pop(key, now)
        # Dask has just moved the dependents whose last dependency this was out
        # of "waiting" (into "ready"): each becomes ready exactly once, here.
        waiting = state["waiting"]
        for dependent in state["dependents"][key]:
            if dependent not in waiting:
                # _tally_of(run, dependent, dsk), inlined: a call costs as much
                try:
                    names = run.by_func.get(getattr(dsk.get(dependent), "func", None))
                except TypeError:  # an unhashable callable
                    names = None
                tally = names and names.get(dependent[0] if type(dependent) is tuple else _prefix(dependent))
                if not tally:
                    tally = self._resolve(run, dependent, dsk)
                scheduled[dependent] = tally
                tally.added += 1
        if now >= run.next_flush:
            self._flush(run, now)

    def _finish(self, dsk: Mapping, state: dict, errored: bool) -> None:
        if self._hooks is not None:
            self._hooks.forget()  # the compiled hooks' cached run and state
        run = state.pop(_RUN, None)
        if run is None:  # the run failed before start_state
            return
        self._declared.pop(id(run), None)
        self.tracker.ingest(run.drain())
        for tally in run.tallies:  # scheduled but never finished (an error)
            if tally.in_flight > 0:
                self.tracker.discard(tally.task_type, tally.prefix, tally.in_flight)
        self.runtime.evaluate()

    def _flush(self, run: _Run, now: float) -> None:
        self.tracker.ingest(run.drain())
        run.next_flush = now + self.interval
        self.runtime.maybe_evaluate()

    def _tally_of(self, run: _Run, key: Any, dsk: Mapping) -> _Tally:
        """A task's tally: the inline lookup, else :meth:`_resolve`."""
        try:
            names = run.by_func.get(getattr(dsk.get(key), "func", None))
        except TypeError:  # an unhashable callable
            names = None
        tally = names and names.get(key[0] if type(key) is tuple else _prefix(key))
        return tally or self._resolve(run, key, dsk)

    def _resolve(self, run: _Run, key: Any, dsk: Mapping) -> _Tally:
        """A task's tally, the slow way, cached for the inline lookup where that is valid.

        The inline lookup is ``run.by_func[func][name]``: ``name`` is the key's
        name for a tuple key (shared by its layer; ``key_split(name)`` hits
        Dask's cache where ``key_split(key)`` would parse and cache every key)
        and the prefix of a string key (delayed keys are unique per task; see
        :func:`_prefix`). A fused task (``_execute_subgraph``) is cached only
        under a tuple key's name: the tasks of a fused layer run the same
        subgraph, while string keys of one prefix may not. Nothing is cached
        for a task with no function or for an unhashable callable.

        A run with annotations (they are per key) leaves ``by_func`` empty, so
        every key comes here and its annotation is looked at first; its keys
        without one use the same cache, ``run.unannotated``, from here only.
        """
        name = key[0] if type(key) is tuple else None
        cache = run.by_func
        if run.annotations:
            annotated = run.annotations.get(key)
            if annotated is not None:
                prefix = key_split(name) if name is not None else _prefix(key)
                return run.tally(resolve_type(annotated, None, self.default_type), prefix)
            cache = run.unannotated
        task = dsk.get(key)
        func = getattr(task, "func", None)
        try:
            names = cache.get(func)
        except TypeError:  # an unhashable callable
            names = None
        cache_as = name if name is not None else _prefix(key)
        tally = names and names.get(cache_as)
        if tally:  # a run with annotations, a key without one
            return tally
        prefix = key_split(name) if name is not None else cache_as
        if func is None or func is _execute_subgraph:  # the type is inside, if anywhere
            tally = run.tally(resolve_type(None, task, self.default_type), prefix)
            if func is None or name is None:
                return tally
        else:
            tally = run.tally(type_of_callable(func) or self.default_type, prefix)
        try:
            cache.setdefault(func, {})[cache_as] = tally
        except TypeError:  # an unhashable callable
            pass
        return tally


def compiled_hooks_built() -> bool:
    """Whether the compiled hooks (``asafe.schedulers._hotpath``) were built for this install."""
    return _hotpath is not None


def _compiled_hooks_configured() -> bool:
    """``asafe.local.compiled-hooks``, validated."""
    return validate.boolean(config.get("asafe.local.compiled-hooks"), "asafe.local.compiled-hooks")


def _prefix(key: Any) -> str:
    """``dask.utils.key_split(key)``, without parsing a fresh delayed key.

    ``key_split`` is cached per key, and a delayed key (``"inc-<token>"``) is
    new in every graph: a run of delayed tasks would parse every key (a split,
    a regular expression) and fill Dask's cache with them. Its result is built from the first ``-``-separated word,
    extended by the following words while they are alphabetic and not 8-letter
    hex; when the second word does not extend it (a token), the prefix is the
    prefix of the first word, which ``key_split`` has cached (a few per graph).
    Equal to ``key_split`` for every key (a property test checks it).

    >>> _prefix("inc-1f3a9c0e7b2d4c6e8f0a1b2c3d4e5f60"), _prefix("read-csv-0a1b")
    ('inc', 'read-csv')
    """
    if type(key) is str:
        first, dash, rest = key.partition("-")
        if dash:
            second = rest.partition("-")[0]
            if second.isalpha() and not (len(second) == 8 and second[0] in "abcdef"):
                return key_split(key)  # the prefix goes on past the first word
        return key_split(first)
    return key_split(key)


class _AnnotatedGet:
    """A scheduler ``get`` that reads type annotations, then runs the chosen scheduler.

    Equal to another that runs the same scheduler, so that a copy of
    ``dask.config`` (``copy.deepcopy``) compares equal to the original.
    """

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AnnotatedGet) and other.scheduler == self.scheduler

    def __hash__(self) -> int:
        return hash((_AnnotatedGet, self.scheduler))

    def __repr__(self) -> str:
        return f"<asafe annotated get: {self.scheduler!r}>"

    def __call__(self, dsk: Any, keys: Any, **kwargs: Any) -> Any:
        annotations_of = getattr(dsk, "__dask_annotations__", None)
        every = annotations_of() if annotations_of else {}
        get = dask.base.get_scheduler(scheduler=self.scheduler)
        previous = getattr(_run, "annotations", None), getattr(_run, "reuse", None)
        _run.annotations = every.get(ANNOTATION, {})
        _run.reuse = _graph_reuse(every.get(REUSE_ANNOTATION, {}))
        try:
            return get(dsk, keys, **kwargs)
        finally:
            _run.annotations, _run.reuse = previous


def _graph_reuse(declared: Mapping) -> float | None:
    """The mean reuse a graph's tasks declare (``asafe_reuse`` per key), ``None`` if none does.

    A value that is not a number >= 1 (set with ``dask.annotate`` directly;
    :func:`asafe.reuse` refuses it) is left out, with one warning per graph.

    Examples
    --------
    >>> _graph_reuse({"a": 16.0, "b": 8.0}), _graph_reuse({})
    (12.0, None)
    """
    total, count, bad = 0.0, 0, None
    for value in declared.values():
        try:
            total += validate_reuse(value)
            count += 1
        except (TypeError, ValueError) as exc:
            bad = exc
    if bad is not None:
        logger.warning("asafe: ignored asafe_reuse annotations of this graph (%s)", bad)
    return total / count if count else None


@contextlib.contextmanager
def adaptive(runtime: AdaptiveRuntime | None = None, scheduler: Any = None) -> Iterator[AdaptiveRuntime]:
    """Run the Dask computations inside the block adaptively.

    Parameters
    ----------
    runtime : AdaptiveRuntime, optional
        Default: a runtime built from configuration.
    scheduler : str or callable, optional
        ``"threads"``, ``"sync"``, ``"processes"`` or a ``get`` function: run the
        block's computations there, as ``dask.config.set(scheduler=...)`` would,
        and read their :func:`asafe.task_type` and :func:`asafe.reuse`
        annotations. Default: Dask chooses, as without asafe (each collection's
        default scheduler, or the configured one); tasks are then typed by
        :func:`asafe.typed` and the default type.

    Yields
    ------
    AdaptiveRuntime
        The runtime, whose ``mode``, ``state()`` and ``history`` the block can read.

    Notes
    -----
    On exit the states seen by :func:`asafe.is_on` are restored to what they were
    on entry (``False`` everywhere outside any run); the runtime keeps its history.

    Tracking uses Dask's callbacks, so it shares their rule
    (:func:`dask.callbacks.local_callbacks`): a running computation takes the
    callbacks for its duration, so a ``dask.compute`` started from another
    thread while one runs, or from inside a task, is not tracked (its tasks
    still see the states through :func:`asafe.is_on`).

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
    chosen = {} if scheduler is None else {"scheduler": _AnnotatedGet(scheduler)}
    previous_states = board.publish(runtime.states, shared=True)
    unsubscribe = runtime.subscribe(lambda states, _: board.publish(states, shared=True))
    callback = _TrackingCallback(runtime)
    detach_reuse = runtime.add_signal("reuse", callback.declared_reuse)
    try:
        with dask.config.set(chosen), callback:
            yield runtime
    finally:
        detach_reuse()
        unsubscribe()
        board.restore(previous_states)


_LOCAL_SCHEDULERS = {"threads", "threading", "sync", "synchronous", "single-threaded", "processes", "multiprocessing"}
