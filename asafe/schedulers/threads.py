"""``kernel-threads``: how many threads one task's BLAS and numba kernels may use, from how busy the cluster is.

A task that calls a multithreaded kernel (numpy's BLAS, a numba ``parallel``
kernel) on a worker whose every other thread also runs a task oversubscribes
the cores: BLAS starts one thread per core in each of them. A task that runs
alone on an idle cluster, on the other hand, leaves cores unused with one
thread. The optimization ``kernel-threads`` (opt-in; the Kernel threads guide
has the YAML) chooses the thread count from the mode:

* the signal ``runnable_per_core`` is the number of runnable tasks (ready,
  queued or processing, of every type but communication) divided by the
  cluster's worker threads. The scheduler plugin keeps the count in O(1) per
  transition (:class:`RunnableCount`), and keeps it and attaches the signal
  only when a domain reads it (elsewhere the count stays 0);
* its domain, an :class:`asafe.Bands` on that signal, asks for many threads
  while few tasks are runnable per worker thread and for 1 while every thread
  has one (the margin keeps the state on a count that wanders around the edge,
  as the tail of a phase of small tasks does);
* on each worker, the plugin applies a change of state to BLAS, process-wide
  (:func:`apply`, :func:`threadpoolctl.threadpool_limits`), and restores the
  original limits when asafe is uninstalled. It does so on the worker's event
  loop, its main thread, before the next task starts: the OpenBLAS measured
  here (0.3.31, pthreads) ignores a limit set from another thread once the
  main thread has set one;
* numba's thread count is thread-local: a task that runs numba ``parallel``
  kernels sets it in its own thread with :func:`kernel_threads`, which restores
  the previous count on exit.

A thread count below 1 or above this machine's cores is refused when the
runtime is installed (:func:`check_states`).
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..core import validate
from ..core.domains import Bands
from ..core.types import COMMUNICATION
from . import board

__all__ = ["NAME", "SIGNAL", "RunnableCount", "apply", "blas_threads", "check_runtime", "check_states", "cores",
           "domain", "kernel_threads", "reads_signal"]

logger = logging.getLogger("asafe")

#: The optimization's name (``asafe.state(NAME)`` in a task).
NAME = "kernel-threads"
#: The mode signal its domain reads.
SIGNAL = "runnable_per_core"


def cores() -> int:
    """This machine's cores as Python counts them (``os.cpu_count()``; 1 where unknown).

    >>> cores() >= 1
    True
    """
    return os.cpu_count() or 1


# the signal, on the scheduler ------------------------------------------------------------------------


class RunnableCount:
    """Runnable tasks per worker thread: the signal ``runnable_per_core``, kept in O(1) per event.

    The scheduler plugin calls :meth:`add` when a task becomes ready (queued,
    no-worker or processing) and :meth:`remove` when it leaves, where a domain
    reads the signal (:func:`reads_signal`; no call otherwise); communication
    tasks are not counted (they wait on the network, not on a core).
    ``threads()`` is the cluster's worker threads (the scheduler's
    ``total_nthreads``); with none the signal is ``nan`` (unknown: no band
    changes on it).

    Examples
    --------
    >>> count = RunnableCount(lambda: 4)
    >>> for task_type in ("compute", "compute", "communication"):
    ...     count.add(task_type)
    >>> count.count, count()
    (2, 0.5)
    >>> count.remove("compute"); count()
    0.25
    >>> RunnableCount(lambda: 0)()
    nan
    """

    __slots__ = ("_threads", "count")

    def __init__(self, threads: Callable[[], int]) -> None:
        self.count = 0
        self._threads = threads

    def add(self, task_type: str) -> None:
        """A task of ``task_type`` became runnable."""
        if task_type != COMMUNICATION:
            self.count += 1

    def remove(self, task_type: str) -> None:
        """A runnable task of ``task_type`` finished or left."""
        if task_type != COMMUNICATION and self.count > 0:
            self.count -= 1

    def clear(self) -> None:
        """Nothing is runnable (the scheduled view was cleared)."""
        self.count = 0

    def __call__(self) -> float:
        threads = self._threads()
        return self.count / threads if threads and threads > 0 else math.nan

    def __repr__(self) -> str:
        return f"RunnableCount(count={self.count})"


# the domain --------------------------------------------------------------------------------------------


def domain(cores: int | None = None, margin: float = 0.25) -> Any:
    """The ladder of thread counts for a host of ``cores`` cores, as an :class:`asafe.Bands` on ``runnable_per_core``.

    States halve from ``cores`` down to 1; the state ``s`` is asked for up to
    ``1.5 / s`` runnable tasks per worker thread (with one worker thread per
    core, ``s`` threads per task fill the cores while ``1 / s`` runnable per
    thread, and the 1.5 keeps a lone task at every core on a 2-core host). The
    margin (25% of an edge by default) keeps a state while the count wanders
    around its edge, as at the tail of a phase of small tasks, where each task
    that finishes would otherwise switch BLAS threads on every worker.

    Examples
    --------
    >>> domain(8)
    Bands('runnable_per_core', edges=[0.1875, 0.375, 0.75], states=[8, 4, 2, 1], margin=0.25)
    >>> domain(2) if os.cpu_count() == 2 else Bands("runnable_per_core", [0.75], [2, 1], 0.25)
    Bands('runnable_per_core', edges=[0.75], states=[2, 1], margin=0.25)
    >>> domain(0)
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: cores must be an integer >= 1, got 0
    """
    top = validate.integer(os.cpu_count() or 1 if cores is None else cores, "cores", minimum=1)
    states = [top]
    while states[-1] > 1:
        states.append(max(1, states[-1] // 2))
    edges = [1.5 / state for state in states[:-1]]
    return Bands(SIGNAL, edges=sorted(edges), states=states, margin=margin)


# the states, checked at install ----------------------------------------------------------------------


def check_states(states: Iterable[Any], where: str = NAME) -> None:
    """Refuse a ``kernel-threads`` state that is not a thread count from 1 to this machine's cores.

    Examples
    --------
    >>> check_states([1, cores()])
    >>> check_states([0, 1], "asafe.optimizations kernel-threads")
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: asafe.optimizations kernel-threads: the state 0 is not a thread count; allowed: an int from 1 to ... (os.cpu_count() here)
    """
    top = cores()
    for state in states:
        if isinstance(state, int) and not isinstance(state, bool) and 1 <= state <= top:
            continue
        raise validate.InvalidSetting(f"{where}: the state {state!r} is not a thread count; allowed: an int from 1 "
                                      f"to {top} (os.cpu_count() here)")


def check_runtime(runtime: Any) -> None:
    """Refuse a runtime whose ``kernel-threads`` can be, or ask for, a state :func:`check_states` refuses.

    The initial state and every state its domain can ask for (where its kind
    says, :func:`asafe.core.domains.possible_states`) are checked.
    """
    from ..core.domains import possible_states

    opt = runtime.optimizations.get(NAME)
    if opt is None:
        return
    check_states([opt.initial], f"the initial state of {NAME!r}")
    check_states(sorted(possible_states(opt.domain) or (), key=repr), f"the states of the domain of {NAME!r}")


def reads_signal(runtime: Any) -> bool:
    """Whether some optimization of ``runtime`` reads ``runnable_per_core`` (the plugin then attaches it)."""
    from ..core.explain import domain_metrics

    return any(SIGNAL in domain_metrics(opt.domain) for opt in runtime.optimizations.values())


# on a worker: BLAS, process-wide ---------------------------------------------------------------------

_lock = threading.Lock()
_original: Any = None  # threadpoolctl's limits object of the first change: it restores the original limits
_applied: int | None = None


def apply(state: Any) -> int | None:
    """Limit BLAS to ``state`` threads in this process; ``None`` (or any non-count) restores the original limits.

    Called by the worker plugin on every state push; a state that did not
    change costs a comparison. A count above this host's cores (a client on a
    larger host installed it) is applied as the cores. Returns the thread count
    now applied (``None``: the original limits).

    Examples
    --------
    >>> before = blas_threads()
    >>> apply(1)
    1
    >>> blas_threads() in (1, None)
    True
    >>> apply(None) is None and blas_threads() == before
    True
    """
    global _original, _applied
    count = min(state, cores()) if isinstance(state, int) and not isinstance(state, bool) and state >= 1 else None
    with _lock:
        if count == _applied:
            return _applied
        import numpy  # noqa: F401  (its BLAS is loaded, so that the limit reaches it)
        from threadpoolctl import threadpool_limits

        if count is None:
            if _original is not None:
                _original.restore_original_limits()
            _original = None
        else:
            limits = threadpool_limits(limits=count, user_api="blas")
            if _original is None:
                _original = limits
        _applied = count
        return _applied


def blas_threads() -> int | None:
    """The largest thread count of the BLAS libraries loaded in this process (``None``: none is loaded).

    >>> blas_threads() is None or blas_threads() >= 1
    True
    """
    import numpy  # noqa: F401  (its BLAS is loaded, so that it is counted)
    from threadpoolctl import threadpool_info

    counts = [lib["num_threads"] for lib in threadpool_info() if lib.get("user_api") == "blas"]
    return max(counts) if counts else None


# in a task: numba, thread-local ----------------------------------------------------------------------


@contextlib.contextmanager
def kernel_threads(default: int | None = None) -> Iterator[int | None]:
    """Run a block with the thread count ``kernel-threads`` chose; yields it (``default`` outside a run).

    numba's thread count is thread-local: inside the block, numba ``parallel``
    kernels called from this thread use ``min(count, NUMBA_NUM_THREADS)``
    threads, and the previous count is restored on exit. numba is only touched
    when it is already imported (a task that runs its kernels has imported it).
    BLAS needs nothing here: on a worker of a cluster the worker plugin has
    already limited it, process-wide. Library code may call this
    unconditionally: without asafe, or without ``kernel-threads`` in the
    runtime, it yields ``default`` and changes nothing when that is ``None``.

    Examples
    --------
    >>> import asafe
    >>> with asafe.kernel_threads() as n:
    ...     n is None
    True
    >>> previous = board.publish({NAME: 1})
    >>> with asafe.kernel_threads() as n:
    ...     n
    1
    >>> board.restore(previous)
    """
    count = board.peek(NAME)
    if not (isinstance(count, int) and not isinstance(count, bool) and count >= 1):
        count = default
    numba = sys.modules.get("numba")
    if count is None or numba is None:
        yield count
        return
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(count), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield count
    finally:
        numba.set_num_threads(old)
