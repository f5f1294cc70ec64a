"""Declared reuse: how many times the data a task makes will be read.

Compressing a tile costs about one pass over it; it pays back when the tile
crosses the network or when it is read many times (DESIGN.md). The
compute/communication ratio sees the first: planned and measured transfers are
in the mode. It cannot see the second. A row panel made and multiplied on one
worker by sixteen vectors is pure compute -- the ratio says *off* -- yet
compression pays back sixteen times over (the held-out phase
``ho-local-sparse-reused``: 2.1x slower with compression off, behind any link).

How often an output will be read is not measurable before the reads happen,
but the program that builds the graph knows it, as it knows a task's type. So a
task declares it, by the same route as a type:

* :func:`reuse` is a context manager around :func:`dask.annotate`: every task
  built inside it carries the annotation ``asafe_reuse`` (a number >= 1).

The scheduler turns the declarations into the mode's ``reuse`` signal with a
:class:`DeclaredReuse`:

* the mean declared reuse of the *scheduled* tasks that declare one -- known
  when their graph arrives, so a phase's first tasks already run in the state
  its reuse calls for;
* with none of them scheduled, the mean over the declaring tasks among the last
  ``window`` finished tasks: a step's undeclared reduction, which runs alone
  between two waves of declaring producers, keeps the value (otherwise the
  signal would read ``nan`` once per step and an optimization that follows it
  would flip off and on again at every step); a later workload that declares
  nothing forgets it within a window;
* ``nan`` when neither holds, which no threshold crosses.

A declared value is a property of the work, not of the optimization: turning
compression on does not change it, so a domain on ``reuse`` needs no band
against its own effect (:class:`asafe.AtLeast`).
"""
from __future__ import annotations

import contextlib
import math
import numbers
from collections import deque
from collections.abc import Iterator
from typing import Any

import dask

from . import validate

__all__ = ["REUSE_ANNOTATION", "reuse", "validate_reuse", "DeclaredReuse"]

#: The dask annotation name that :func:`reuse` sets.
REUSE_ANNOTATION = "asafe_reuse"


def validate_reuse(value: object) -> float:
    """Return ``value`` as a float if it is a valid declared reuse, else raise.

    Parameters
    ----------
    value : object
        How many times the task's output will be read: a finite number >= 1.

    Raises
    ------
    TypeError
        ``value`` is not a number.
    ValueError
        ``value`` is below 1, infinite or ``nan``.

    Examples
    --------
    >>> validate_reuse(16)
    16.0
    >>> validate_reuse(0.5)
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: reuse must be a finite number >= 1 (how many times a task's output is read), got 0.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy scalars are Real
        raise validate.InvalidSetting(f"reuse must be a number such as 1 or 16, got {type(value).__name__} {value!r}")
    return validate.number(value, "reuse", minimum=1,
                           rule="a finite number >= 1 (how many times a task's output is read)")


@contextlib.contextmanager
def reuse(times: float) -> Iterator[float]:
    """Declare how many times the outputs of the tasks built inside the block are read.

    A thin wrapper over :func:`dask.annotate` (annotation ``asafe_reuse``); the
    scheduler plugin turns it into the mode's ``reuse`` signal. As with
    :func:`asafe.task_type`, graph optimization may drop annotations.

    Parameters
    ----------
    times : float
        Reads of each output (>= 1): a panel multiplied by 16 vectors is read 16 times.

    Examples
    --------
    >>> import dask
    >>> with reuse(16):
    ...     panel = dask.delayed(sum)([1, 2])
    >>> panel.__dask_graph__().layers[panel.key].annotations["asafe_reuse"]
    16.0
    >>> with reuse(0):
    ...     pass
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: reuse must be a finite number >= 1 (how many times a task's output is read), got 0
    """
    times = validate_reuse(times)
    with dask.annotate(**{REUSE_ANNOTATION: times}):
        yield times


class DeclaredReuse:
    """The ``reuse`` signal: what the scheduled (else the recently finished) tasks declare.

    O(1) per event: running sums over the scheduled declarations and over a
    ring of the last ``window`` finished tasks (``None`` for a task that
    declared nothing).

    Parameters
    ----------
    window : int
        Finished tasks remembered (the tracker's window is a good choice).

    Examples
    --------
    >>> r = DeclaredReuse(window=4)
    >>> r.value
    nan
    >>> r.add(16); r.add(16); r.value
    16.0
    >>> r.remove(16, finished=True); r.remove(16, finished=True)
    >>> r.finished(None); r.value       # an undeclared reduction ran alone: remembered
    16.0
    >>> r.add(1); r.value               # the next phase's tasks declare 1
    1.0
    >>> r.remove(1, finished=False)
    >>> for _ in range(4): r.finished(None)
    >>> r.value                         # a window without declarations forgets
    nan
    """

    __slots__ = ("window", "_sum", "_count", "_recent", "_recent_sum", "_recent_count")

    def __init__(self, window: int = 256) -> None:
        self.window = validate.integer(window, "window", minimum=1)
        self._sum = 0.0
        self._count = 0
        self._recent: deque = deque()
        self._recent_sum = 0.0
        self._recent_count = 0

    def add(self, declared: float | None) -> None:
        """A task became scheduled; ``declared`` is its reuse or ``None``."""
        if declared is not None:
            self._sum += declared
            self._count += 1

    def remove(self, declared: float | None, finished: bool) -> None:
        """A scheduled task left: finished (remembered) or released without running."""
        if declared is not None and self._count:
            self._count -= 1
            self._sum = self._sum - declared if self._count else 0.0
        if finished:
            self.finished(declared)

    def finished(self, declared: float | None) -> None:
        """A task finished (also one that was never counted as scheduled)."""
        if declared is None and not self._recent_count:
            # A window of nothing but undeclared tasks: one more changes nothing. A
            # declaration made later still leaves after ``window`` more finished tasks,
            # whatever number of undeclared ones is left in front of it. (Most
            # graphs declare nothing: this is the scheduler's common path.)
            return
        recent = self._recent
        recent.append(declared)
        if declared is not None:
            self._recent_sum += declared
            self._recent_count += 1
        if len(recent) > self.window:
            old = recent.popleft()
            if old is not None:
                self._recent_count -= 1
                self._recent_sum = self._recent_sum - old if self._recent_count else 0.0

    def clear_scheduled(self) -> None:
        """Nothing is scheduled any more (a restart); what finished is kept."""
        self._sum = 0.0
        self._count = 0

    @property
    def scheduled(self) -> int:
        """Scheduled tasks that declare a reuse."""
        return self._count

    @property
    def value(self) -> float:
        """Mean declared reuse of the scheduled tasks, else of the recent finished ones, else ``nan``."""
        if self._count:
            return self._sum / self._count
        if self._recent_count:
            return self._recent_sum / self._recent_count
        return math.nan

    def __call__(self) -> float:
        return self.value

    def __repr__(self) -> str:
        return f"DeclaredReuse(value={self.value:.3g}, scheduled={self._count}, window={self.window})"


def declared_reuse(annotations: Any) -> float | None:
    """The valid ``asafe_reuse`` of a task's annotations, ``None`` if absent; raises if invalid."""
    if not annotations:
        return None
    value = annotations.get(REUSE_ANNOTATION)
    return None if value is None else validate_reuse(value)
