"""The mode tracker: an O(1)-per-event estimate of the current work mix.

Two views of the work are kept and blended into a :class:`~asafe.ModeVector`:

*Expected work of the scheduled tasks.* Every task that is ready or running counts
with its expected duration. Expected durations are learned per ``(type, key
prefix)`` group, as Dask learns per-prefix durations (an exponential moving
average, ``new = (old + measured) / 2``); a group not measured yet starts from its
type's average, or from ``default_duration``. The tracker keeps a count of
scheduled tasks per group and, per type, the sum ``count * expected`` — updated in
O(1) when a task is added, finishes, or when a group's estimate moves.

*Measured work over a sliding window.* The last ``window`` measurements (finished
task durations, and work that is not a task, such as inter-worker transfers) are
kept in a ring with running sums per type, in the order the work finished. A
ring entry may stand for several measurements (``count`` of them, ``seconds`` in
total) of one group, or of one type made one after another: batches arrive
aggregated, see below. When the window overflows, the oldest entry loses
the overflowing measurements at its mean duration.

*Batches.* Scheduler integrations on a hot path (:mod:`asafe.schedulers.local`) do not call
the tracker per task: they count, per ``(type, prefix)`` group, the tasks added
and finished and the seconds measured since the last evaluation, and hand the
tallies over in one :meth:`ModeTracker.ingest`. The tracker's work is then per
group and interval, not per task. A group's ``n`` finished tasks are learned as
``n`` measurements of their mean: ``new = mean + (old - mean) / 2**n``, which is
what ``n`` single updates give when the durations are equal. That is the only
approximation, and it is confined to one interval (10 ms by default).

A cluster's scheduler plugin (:mod:`asafe.schedulers.scheduler_plugin`) tallies
its events in an :class:`EventBatch`, which the tracker drains at each read (a
*feed*, :meth:`ModeTracker.add_feed`): the event path touches one small dict per
task instead of the tracker's groups, sums and ring, and nothing read on the
batch's thread is ever behind the events. The batch hands its finishes over in
the order they were made, with the work measured that no task was scheduled for
(a transfer's, :meth:`EventBatch.measured`) in its place among them, and a
measurement made on the tracker directly drains the batch first, so the window
keeps the order in which work finished across both paths. On the scheduler's
thread each call costs several times its isolated time, as it finds its objects
out of the caches that Dask's own work per transition evicted; a tally touches
the fewest.

The event path allocates no container per event (the ring is parallel deques):
with a graph of 100k objects in memory, every 700 tuples allocated would trigger
a garbage collection that walks them.

*Planned work that is not a task.* A scheduler integration that sees a graph
before it runs can also say what will move: :meth:`ModeTracker.plan` adds (and
later removes) expected seconds of a type with a count, such as the transfer of
a P2P operation's inputs (:mod:`asafe.schedulers.p2p`). An integration whose
plan changes on every task event keeps its own running total instead and
attaches it with :meth:`ModeTracker.add_plan_source`: the tracker reads it at
each read (a mode, the scheduled view), so the event path makes no call into
the tracker and takes no lock. The transfer forecast does this
(:mod:`asafe.schedulers.forecast`): each leaf of a fan-in changes its planned
transfer three times. Planned work, in uncompressed-equivalent seconds for
transfers, belongs to the scheduled view.

The blend is ``(w * scheduled + blend * measured) / (w + blend)`` with
``w = (1 - blend) * min(1, N / W)``, where ``N`` counts the scheduled tasks and
``W`` the measurements in the window: the scheduled view gets its full weight
only while it holds as many tasks as the window holds measurements, so a
straggler or two at the end of a phase (a gather and the small transfers into
it) do not swing the mode, whatever their expected durations; and a phase's
first tasks, of a prefix never measured, count fully although their durations
are still the defaults. Planned items are part of a task's work, not tasks:
they do not count in ``N``. When one view is empty the other is used alone.

Memory is bounded whatever the graph size: the ring holds ``window`` entries and
groups with no scheduled task are evicted, least recently used first, beyond
``max_groups``. No per-key state is kept.

*Bad input.* The tracker sits inside scheduler callbacks (Dask's local callbacks,
a cluster's scheduler plugin), where an exception stops a run. So no event
method raises on a bad value: a duration that is not a finite number of seconds
in ``[0, 1e9]`` (NaN, an infinity, a negative or absurd value, not a number), a
count that is not an integer >= 0, or a task type that is not a non-empty str is
ignored -- a task that finished with a bad duration still leaves the scheduled
set, it is only not learned from -- and counted in :attr:`ModeTracker.rejected`
(``{kind of problem: count}``). The first event of each kind is logged as a
warning on the ``asafe`` logger, naming the argument, the value and what is
allowed; later ones of the same kind are only counted. Without this, one NaN
would make a type's running sums NaN for good (``max(nan, 0.0)`` is NaN, and a
NaN sum is never above zero, so the type drops out of the measured view) and one
infinity would make :meth:`ModeTracker.mode` raise (``inf / inf``).
"""
from __future__ import annotations

import logging
import math
import numbers
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable

from . import validate
from .mode import ModeVector

__all__ = ["EventBatch", "ModeTracker"]

logger = logging.getLogger("asafe")

#: The longest duration accepted, in seconds (about 31 years): beyond it a
#: measurement is a broken clock, and running sums of such values could overflow.
MAX_SECONDS = 1e9
#: The largest count accepted in one event (2**53: exact as a float).
MAX_COUNT = 2**53


class _Group:
    """Tasks of one (type, prefix): how many are scheduled, and their expected duration."""

    __slots__ = ("task_type", "count", "expected", "measured")

    def __init__(self, task_type: str, expected: float) -> None:
        self.task_type = task_type
        self.count = 0
        self.expected = expected
        self.measured = False


class ModeTracker:
    """Incremental mode estimate from scheduler events.

    Events are :meth:`add` (a task became ready), :meth:`finish` (it finished and
    its duration was measured), :meth:`discard` (it left without a measurement: a
    lost worker, an error, a cancelled key) and :meth:`observe` (measured work with
    no scheduled task, such as a transfer). Each is O(1). :meth:`ingest` applies
    the same events aggregated per group, as a hot path hands them over. The
    tracker is thread-safe.

    Parameters
    ----------
    window : int
        Number of measurements in the sliding window (>= 1).
    blend : float
        Weight of the measured window against the scheduled estimate, in [0, 1].
    default_duration : float
        Expected duration in seconds of a task of a group and type never measured.
    max_groups : int
        Idle groups kept for their learned durations, beyond which the least
        recently used are forgotten.

    Examples
    --------
    >>> tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
    >>> tracker.add("compute", "inc")
    >>> tracker.add("communication", "send")
    >>> tracker.add("communication", "send")
    >>> tracker.mode().ratio
    0.5
    """

    def __init__(
        self,
        window: int = 256,
        blend: float = 0.5,
        default_duration: float = 0.001,
        max_groups: int = 4096,
    ) -> None:
        self.window = validate.integer(window, "window", minimum=1)
        self.blend = validate.number(blend, "blend", minimum=0, maximum=1)
        self.default_duration = validate.number(default_duration, "default_duration", minimum=1e-9,
                                                rule="a finite number of seconds > 0")
        self.max_groups = validate.integer(max_groups, "max_groups", minimum=1)
        self._lock = threading.Lock()
        self._groups: OrderedDict[tuple[str, str], _Group] = OrderedDict()
        self._type_average: dict[str, float] = {}
        self._scheduled: dict[str, float] = {}
        self._counts: dict[str, int] = {}  # scheduled tasks per type
        self._planned: dict[str, float] = {}  # planned seconds per type (not tasks: see plan())
        self._planned_count = 0
        self._plan_sources: tuple[tuple[str, Callable[[], float]], ...] = ()  # read at each read (add_plan_source)
        self._feeds: tuple[Callable[[], None], ...] = ()  # called before each read (add_feed)
        # the ring: parallel deques (no tuple per entry) of type, seconds, count
        self._ring_types: deque[str] = deque()
        self._ring_seconds: deque[float] = deque()
        self._ring_counts: deque[int] = deque()
        self._ring_total = 0  # measurements in the ring (sum of counts), <= window
        self._measured: dict[str, float] = {}
        self._finished = 0  # tasks finished since creation (dwell counts these): see finished
        #: Events (or parts of events) ignored because a value was invalid, per
        #: kind of problem, e.g. ``{"finish: duration is nan": 3}``.
        self.rejected: dict[str, int] = {}
        self._reject_lock = threading.Lock()

    # events -----------------------------------------------------------------
    def add(self, task_type: str, prefix: str, prior: float | None = None) -> None:
        """A task of this type and key prefix is now scheduled (ready or running).

        ``prior``: the scheduler's estimate of the group's duration, taken as
        :meth:`prime` takes it (only while the group is unmeasured), in the same
        lookup.
        """
        seconds = None if prior is None else _prior_seconds(prior)
        with self._lock:
            group = self._group_at((task_type, prefix))
            if group is not None:
                if seconds is not None:
                    self._prime(group, seconds)
                self._schedule(group, 1)
                return
        self._reject("add", "task_type", task_type, _TYPE_RULE)

    def finish(self, task_type: str, prefix: str, duration: float, scheduled: bool = True) -> None:
        """A task finished after ``duration`` seconds of work.

        ``scheduled=False`` records a task that was never announced with
        :meth:`add` (it is measured and learned from, but not removed).
        """
        try:
            seconds: float | None = float(duration)
        except (TypeError, ValueError, OverflowError):
            seconds = None
        if seconds is None or not 0.0 <= seconds <= MAX_SECONDS:  # NaN fails both
            self._reject("finish", "duration", duration, _SECONDS_RULE)
            seconds = None  # the task still leaves the scheduled set
        self._feed()  # a feed's events came first: the window keeps the order work finished in
        with self._lock:
            group = self._group_at((task_type, prefix))
            if group is not None:
                self._complete(group, 1, seconds, scheduled)
                if len(self._groups) > self.max_groups:
                    self._evict()
                return
        self._reject("finish", "task_type", task_type, _TYPE_RULE)

    def prime(self, task_type: str, prefix: str, duration: float) -> bool:
        """A prior for a group this tracker has not measured: what the scheduler already knows.

        A runtime installed anew on a scheduler that has run a prefix starts from
        the scheduler's own estimate of that prefix (on a cluster, the mean
        of the prefix's durations Dask has recorded) instead of its type's average or
        ``default_duration``, as the forecast starts from what earlier
        installations learned of output sizes. The prior is not a measurement:
        the group's first measurement replaces it. A measured group, an invalid
        duration (not a finite number of seconds > 0) or an invalid type change
        nothing; returns whether the prior was taken.

        Examples
        --------
        >>> tracker = ModeTracker(window=4, blend=0.0, default_duration=0.001)
        >>> tracker.add("compute", "multiply")
        >>> tracker.prime("compute", "multiply", 0.25), tracker.scheduled_work()
        (True, {'compute': 0.25})
        >>> tracker.finish("compute", "multiply", 0.5)
        >>> tracker.prime("compute", "multiply", 0.25), tracker.expected_duration("compute", "multiply")
        (False, 0.5)
        """
        seconds = _prior_seconds(duration)
        if seconds is None:
            return False
        with self._lock:
            group = self._group(task_type, prefix)
            return group is not None and self._prime(group, seconds)

    def discard(self, task_type: str, prefix: str, count: int = 1) -> None:
        """``count`` scheduled tasks left without a measurement (lost, erred, cancelled)."""
        if not _is_count(count):
            self._reject("discard", "count", count, _COUNT_RULE)
            return
        with self._lock:
            try:
                group = self._groups.get((task_type, prefix))
            except TypeError:  # an unhashable type or prefix: no such group
                group = None
            if group is None or group.count == 0 or count == 0:
                return
            self._unschedule(group, min(int(count), group.count))
            self._evict()

    def ingest(self, batch: Iterable[tuple[str, str, int, int, float]],
               runs: Iterable[tuple[str, float, int]] | None = None,
               unscheduled: Iterable[tuple[str, str, int, float]] | None = None) -> None:
        """Apply a batch of aggregated events under one lock.

        Each entry is ``(type, prefix, added, finished, seconds)``: since the last
        batch, ``added`` tasks of the group became scheduled and ``finished`` of
        its tasks finished after ``seconds`` of work in total. Adds apply before
        finishes (a task that finished within the batch was added before). The
        finished tasks are learned as ``finished`` measurements of their mean
        duration (see the module docstring). Scheduler integrations call this
        once per evaluation interval, so the cost is per group, not per task.

        ``runs``, where given, are the same measurements in the order they were
        made, as ``(type, seconds, count)``: consecutive measurements of one type,
        of any prefix, summed. The window then takes the runs in that order, and
        the entries only teach the groups. Without them each entry enters the
        window whole, one group after another: a window shorter than the batch
        then holds the last groups' types, whenever they finished.

        ``unscheduled``, where given, are measurements of work that was never
        scheduled, as ``(type, prefix, finished, seconds)``: what
        ``finish(type, prefix, duration, scheduled=False)`` records one by one
        (a measured transfer's share), learned by the group as ``finished``
        measurements of their mean and removed from nothing. They enter the
        window through ``runs`` where given, else whole after the entries.

        Examples
        --------
        >>> tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
        >>> tracker.ingest([("compute", "inc", 4, 2, 6.0), ("communication", "send", 1, 0, 0.0)])
        >>> tracker.expected_duration("compute", "inc")  # two measurements of 3 s
        3.0
        >>> tracker.scheduled_work()  # two inc tasks left at 3 s, one send at 1 s
        {'compute': 6.0, 'communication': 1.0}
        """
        with self._lock:
            entries = 0
            for entry in batch:
                entries += 1
                try:  # the fast check: what the scheduler integrations send
                    task_type, prefix, added, finished, seconds = entry
                    valid = (type(added) is int and type(finished) is int and added >= 0 and finished >= 0
                             and (not finished or 0.0 <= seconds <= MAX_SECONDS))
                except (TypeError, ValueError):
                    valid = False
                if not valid:
                    cleaned = self._clean_entry(entry)
                    if cleaned is None:
                        continue
                    task_type, prefix, added, finished, seconds = cleaned
                if not (added or finished):
                    continue
                group = self._group_at((task_type, prefix))
                if group is None:
                    self._reject("ingest", "task_type", task_type, _TYPE_RULE)
                    continue
                if added:
                    self._schedule(group, added)
                if finished:
                    self._complete(group, finished, seconds, True, push=runs is None)
            for entry in unscheduled or ():
                entries += 1
                self._ingest_unscheduled(entry, push=runs is None)
            if runs is not None:
                for run in runs:
                    self._push_run(run)
            if len(self._groups) > self.max_groups:
                self._evict(4 * entries)  # what the entries' events would have evicted one by one

    def _ingest_unscheduled(self, entry: object, push: bool) -> None:
        # one (type, prefix, finished, seconds) of ingest's unscheduled: as finish(scheduled=False), n at once
        try:
            task_type, prefix, finished, seconds = entry  # type: ignore[misc]
            valid = type(finished) is int and finished > 0 and 0.0 <= seconds <= MAX_SECONDS * finished
        except (TypeError, ValueError):
            valid = False
        if not valid:
            self._reject("ingest", "unscheduled", entry, "a (type, prefix, finished, seconds) tuple of a count "
                         "> 0 and its seconds of work", problem="is invalid")
            return
        group = self._group_at((task_type, prefix))
        if group is None:
            self._reject("ingest", "task_type", task_type, _TYPE_RULE)
            return
        self._complete(group, finished, float(seconds), False, push=push)

    def _push_run(self, run: object) -> None:
        try:
            task_type, seconds, count = run  # type: ignore[misc]
            valid = (_is_type(task_type) and type(count) is int and count > 0
                     and 0.0 <= seconds <= MAX_SECONDS * count)
        except (TypeError, ValueError):
            valid = False
        if valid:
            self._push(task_type, float(seconds), count)
        else:
            self._reject("ingest", "run", run, "a (type, seconds, count) tuple of a task type, the seconds "
                         "of count measurements and a count >= 1", problem="is not a valid run")

    def observe(self, task_type: str, seconds: float) -> None:
        """Measured work that is not a scheduled task (e.g. a transfer)."""
        if not _is_type(task_type):
            self._reject("observe", "task_type", task_type, _TYPE_RULE)
            return
        try:
            value = float(seconds)
        except (TypeError, ValueError, OverflowError):
            value = math.nan
        if not 0.0 <= value <= MAX_SECONDS:  # NaN fails both
            self._reject("observe", "seconds", seconds, _SECONDS_RULE)
            return
        self._feed()  # as in finish: after what a feed tallied before it
        with self._lock:
            self._push(task_type, value, 1)

    def plan(self, task_type: str, seconds: float, count: int = 1) -> None:
        """Add ``count`` planned items of ``seconds`` in total to the scheduled view, or remove them.

        Planned work is expected work that is not a scheduled task, such as the
        transfer of an output to the worker of its consumer, forecast from the
        graph before it happens. A negative ``count`` with negative ``seconds``
        removes what an earlier call added (the integration remembers what it
        planned). Non-finite seconds are ignored.

        Examples
        --------
        >>> tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
        >>> tracker.add("compute", "produce")
        >>> tracker.plan("communication", 3.0)   # its output will cross to another worker
        >>> tracker.mode().ratio
        0.3333333333333333
        >>> tracker.plan("communication", -3.0, count=-1)
        >>> tracker.scheduled_work()
        {'compute': 1.0}
        """
        seconds = float(seconds)
        if not math.isfinite(seconds):
            return
        with self._lock:
            self._planned_count = max(self._planned_count + int(count), 0)
            if self._planned_count == 0:  # exact zero: no residue of the running sums
                self._planned.clear()
            else:
                self._planned[task_type] = self._planned.get(task_type, 0.0) + seconds

    def add_plan_source(self, task_type: str, source: Callable[[], float]) -> Callable[[], None]:
        """Count ``source()`` seconds of planned ``task_type`` work in the scheduled view; returns a function that detaches it.

        The source is read at every read of the scheduled view (:meth:`mode`,
        :meth:`scheduled_mode`, :meth:`scheduled_work`), under the tracker's
        lock: it must be O(1) and must not call the tracker. It is the running
        total of planned work its owner keeps with plain float adds, for an
        owner whose plan changes on every task event (the transfer forecast):
        what :meth:`plan` calls would add up to, without a call and a lock per
        event, and never stale, whichever thread reads. A value that is not a
        finite number of seconds (or a source that raises) reads as 0 and is
        counted in :attr:`rejected`. :meth:`clear_scheduled` does not clear a
        source: its owner does.

        Examples
        --------
        >>> tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
        >>> tracker.add("compute", "produce")
        >>> planned = [3.0]  # the owner's running total
        >>> detach = tracker.add_plan_source("communication", lambda: planned[0])
        >>> tracker.mode().ratio
        0.3333333333333333
        >>> planned[0] = 1.0; tracker.scheduled_work()
        {'compute': 1.0, 'communication': 1.0}
        >>> detach(); tracker.scheduled_work()
        {'compute': 1.0}
        """
        if not _is_type(task_type):
            raise ValueError(f"a plan source needs a task type, {_TYPE_RULE}; got {task_type!r}")
        if not callable(source):
            raise TypeError(f"a plan source must be callable, got {type(source).__name__}")
        return self._attach("_plan_sources", (task_type, source))

    def add_feed(self, feed: Callable[[], None]) -> Callable[[], None]:
        """Call ``feed()`` before every read; returns a function that detaches it.

        A feed hands the tracker events its owner tallied since the last read,
        with :meth:`ingest` or the event methods (an :class:`EventBatch` is one):
        every read (:meth:`mode`, :meth:`scheduled_mode`, :meth:`scheduled_work`,
        :meth:`measured_work`, :meth:`scheduled_tasks`, :meth:`seen_types`,
        :meth:`expected_duration`, ``len``) first calls each feed, outside the
        tracker's lock, so what it returns includes them. :attr:`finished` is a
        plain attribute: it is current after any of those reads. A feed that
        raises is counted in :attr:`rejected` and the read goes on.

        Examples
        --------
        >>> tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
        >>> batch = EventBatch(tracker)
        >>> batch.add("compute", "inc"); batch.add("compute", "inc")
        >>> batch.finish("compute", "inc", 0.5)
        >>> tracker.scheduled_work(), tracker.expected_duration("compute", "inc")
        ({'compute': 0.5}, 0.5)
        """
        if not callable(feed):
            raise TypeError(f"a feed must be callable, got {type(feed).__name__}")
        return self._attach("_feeds", feed)

    def _attach(self, name: str, entry: object) -> Callable[[], None]:
        """Append ``entry`` to the tuple attribute ``name``; returns a function that removes it (once)."""
        with self._lock:
            setattr(self, name, (*getattr(self, name), entry))

        def detach() -> None:
            with self._lock:
                setattr(self, name, tuple(e for e in getattr(self, name) if e is not entry))

        return detach

    def _feed(self) -> None:
        # before every read, outside the lock (a feed calls ingest); no feed, no work
        for feed in self._feeds:
            try:
                feed()
            except Exception as exc:  # a read never raises (see the module docstring)
                self._reject("feed", "feed", exc, "a callable that does not raise", problem="raised")

    def clear_scheduled(self, planned: bool = True) -> None:
        """Forget every scheduled task and, unless ``planned=False``, every planned item; keep what was learned."""
        with self._lock:
            for group in self._groups.values():
                group.count = 0
            self._scheduled.clear()
            self._counts.clear()
            if planned:
                self._planned.clear()
                self._planned_count = 0
            self._evict()

    # reading ----------------------------------------------------------------
    def scheduled_work(self) -> dict[str, float]:
        """Expected seconds of work per type among scheduled tasks and planned items."""
        self._feed()
        with self._lock:
            return self._scheduled_work()

    def _scheduled_work(self) -> dict[str, float]:
        work = dict(self._scheduled)
        for t, w in self._planned.items():
            work[t] = work.get(t, 0.0) + w
        for t, source in self._plan_sources:
            w = self._source_seconds(source)
            if w:
                work[t] = work.get(t, 0.0) + w
        return {t: max(w, 0.0) for t, w in work.items() if w > 1e-15}

    def _source_seconds(self, source: Callable[[], float]) -> float:
        try:
            value = source()
            seconds = float(value)
        except Exception as exc:  # a read never raises (see the module docstring)
            value, seconds = exc, math.nan
        if math.isfinite(seconds):
            return seconds
        self._reject("plan source", "seconds", value, "a finite number of seconds")
        return 0.0

    def measured_work(self) -> dict[str, float]:
        """Measured seconds of work per type in the sliding window."""
        self._feed()
        with self._lock:
            return self._measured_work()

    def _measured_work(self) -> dict[str, float]:
        return {t: max(w, 0.0) for t, w in self._measured.items() if w > 1e-15}

    def scheduled_mode(self, **signals: float) -> ModeVector | None:
        """The scheduled view alone as a mode (the blend's prediction), or ``None`` while it is empty.

        Examples
        --------
        >>> tracker = ModeTracker(window=4, blend=0.5, default_duration=1.0)
        >>> tracker.scheduled_mode() is None
        True
        >>> for _ in range(3):
        ...     tracker.add("communication", "send")
        >>> tracker.add("compute", "produce")
        >>> tracker.scheduled_mode().ratio  # compute / communication
        0.3333333333333333
        """
        self._feed()
        with self._lock:
            shares = _shares(self._scheduled_work())
        return ModeVector(shares, **signals) if shares else None

    def seen_types(self) -> set[str]:
        """The task types this tracker has counted or measured (scheduled, planned, learned, in the window)."""
        self._feed()
        with self._lock:
            return {*self._counts, *self._planned, *self._type_average, *self._measured, *self._scheduled,
                    *(t for t, _ in self._plan_sources)}

    @property
    def finished(self) -> int:
        """Tasks finished since the tracker was made (measurements, also those never scheduled); dwell counts these."""
        self._feed()
        return self._finished

    def scheduled_tasks(self) -> int:
        """Number of tasks currently counted as scheduled (all types)."""
        self._feed()
        with self._lock:
            return sum(self._counts.values())

    def expected_duration(self, task_type: str, prefix: str) -> float:
        """The current expected duration of a task of this group."""
        self._feed()
        with self._lock:
            group = self._groups.get((task_type, prefix))
            if group is not None:
                return group.expected
            return self._type_average.get(task_type, self.default_duration)

    def mode(self, **signals: float) -> ModeVector:
        """The blended mode vector, with extra signals attached."""
        self._feed()
        with self._lock:
            scheduled = self._scheduled_work()
            measured = self._measured_work()
            tasks = sum(self._counts.values())
            fullness = min(1.0, tasks / self._ring_total) if self._ring_total else 1.0
        return ModeVector(_blend(scheduled, measured, self.blend, fullness), **signals)

    def __len__(self) -> int:
        """Number of groups (type, prefix) currently remembered."""
        self._feed()
        return len(self._groups)

    # internals (called with the lock held) -----------------------------------
    def _group(self, task_type: str, prefix: str) -> _Group | None:
        return self._group_at((task_type, prefix))

    def _group_at(self, key: tuple[str, str]) -> _Group | None:
        """The group of ``key``, created on first use; ``None`` for an invalid type."""
        try:
            group = self._groups.get(key)
        except TypeError:  # an unhashable prefix or type
            return None
        if group is None:
            if not _is_type(key[0]):  # checked once per group, not per event
                return None
            start = self._type_average.get(key[0], self.default_duration)
            group = self._groups[key] = _Group(key[0], start)
        else:
            self._groups.move_to_end(key)
        return group

    def _prime(self, group: _Group, seconds: float) -> bool:
        # a prior replaces the expected duration of a group not measured yet
        if group.measured or group.expected == seconds:
            return False
        old, group.expected = group.expected, seconds
        if group.count:
            self._scheduled[group.task_type] += group.count * (seconds - old)
        return True

    def _schedule(self, group: _Group, n: int) -> None:
        task_type = group.task_type
        group.count += n
        self._counts[task_type] = self._counts.get(task_type, 0) + n
        self._scheduled[task_type] = self._scheduled.get(task_type, 0.0) + n * group.expected

    def _unschedule(self, group: _Group, n: int) -> None:
        task_type = group.task_type
        group.count -= n
        left = self._counts[task_type] = self._counts[task_type] - n
        if left == 0:  # exact zero: no residue of the running sum's rounding
            self._scheduled[task_type] = 0.0
        else:
            self._scheduled[task_type] -= n * group.expected

    def _complete(self, group: _Group, n: int, seconds: float | None, scheduled: bool, push: bool = True) -> None:
        # n tasks of the group finished after ``seconds`` of work in total
        # (None: a rejected measurement; the tasks still finished); ``push=False``:
        # the window takes them from the caller's runs (ingest)
        if scheduled and group.count:
            self._unschedule(group, min(n, group.count))
        if seconds is not None:
            self._learn(group, seconds / n, n)
            if push:
                self._push(group.task_type, seconds, n)
        self._finished += n

    def _clean_entry(self, entry: object) -> tuple | None:
        """A batch entry that failed the fast check: its valid parts, or ``None``."""
        try:
            task_type, prefix, added, finished, seconds = entry  # type: ignore[misc]
        except (TypeError, ValueError):
            self._reject("ingest", "entry", entry, "a (type, prefix, added, finished, seconds) tuple",
                         problem="is not a 5-tuple")
            return None
        if not _is_count(added):
            self._reject("ingest", "added", added, _COUNT_RULE)
            added = 0
        if not _is_count(finished):
            self._reject("ingest", "finished", finished, _COUNT_RULE)
            finished = 0
        added, finished = int(added), int(finished)
        try:
            value: float | None = float(seconds)
        except (TypeError, ValueError, OverflowError):
            value = math.nan
        if finished and not 0.0 <= value <= MAX_SECONDS:  # NaN fails both
            self._reject("ingest", "seconds", seconds, _SECONDS_RULE)
            value = None  # the tasks finished; their time is not learned
        return task_type, prefix, added, finished, value

    def _reject(self, event: str, argument: str, value: object, allowed: str, problem: str | None = None) -> None:
        """Count an ignored value; log the first of its kind (never raises)."""
        kind = f"{event}: {argument} {problem or _problem(value)}"
        with self._reject_lock:
            seen = self.rejected.get(kind, 0)
            self.rejected[kind] = seen + 1
        if not seen:
            try:
                shown = repr(value)[:80]
            except Exception:
                shown = f"<{type(value).__name__}>"
            logger.warning(
                "asafe: the mode tracker ignored %s=%s in a %r event: %s must be %s. Further "
                "events of this kind are ignored without a log and counted in ModeTracker.rejected[%r]",
                argument, shown, event, argument, allowed, kind,
            )

    def _learn(self, group: _Group, duration: float, n: int) -> None:
        # n measurements of ``duration``: n steps of new = (old + duration) / 2
        old = group.expected
        new = duration if not group.measured else duration + (old - duration) * 0.5**n
        group.measured = True
        if new != old:
            group.expected = new
            if group.count:
                self._scheduled[group.task_type] += group.count * (new - old)
        previous = self._type_average.get(group.task_type)
        self._type_average[group.task_type] = (
            duration if previous is None else duration + (previous - duration) * 0.5**n
        )

    def _push(self, task_type: str, seconds: float, count: int) -> None:
        self._ring_types.append(task_type)
        self._ring_seconds.append(seconds)
        self._ring_counts.append(count)
        self._measured[task_type] = self._measured.get(task_type, 0.0) + seconds
        self._ring_total += count
        excess = self._ring_total - self.window
        while excess > 0:  # the oldest measurements leave, at their entry's mean
            oldest = self._ring_counts[0]
            if oldest <= excess:
                self._ring_counts.popleft()
                self._measured[self._ring_types.popleft()] -= self._ring_seconds.popleft()
                self._ring_total -= oldest
                excess -= oldest
            else:
                leaving = self._ring_seconds[0] * excess / oldest
                self._ring_seconds[0] -= leaving
                self._measured[self._ring_types[0]] -= leaving
                self._ring_counts[0] = oldest - excess
                self._ring_total -= excess
                excess = 0

    def _evict(self, budget: int = 4) -> None:
        # only idle groups are forgotten; at most a few per event (amortised O(1))
        while len(self._groups) > self.max_groups and budget:
            key, group = next(iter(self._groups.items()))
            budget -= 1
            if group.count:
                self._groups.move_to_end(key)
                continue
            del self._groups[key]


class EventBatch:
    """One thread's :meth:`ModeTracker.add` and :meth:`ModeTracker.finish` events, tallied per group until the tracker reads.

    The batch is a feed of its tracker (:meth:`ModeTracker.add_feed`): any read
    of the tracker first drains it with :meth:`ModeTracker.ingest`, so reads are
    never behind the events. An event is an increment in a dict keyed by
    ``(type, prefix)``; the tracker's work is per group and read, not per task.
    The ``n`` tasks of a group finished between two reads are learned as ``n``
    measurements of their mean, the approximation of :meth:`ModeTracker.ingest`.
    The window takes the finishes in the order they were made (the batch keeps
    them as runs of one type), with the work measured that was never
    scheduled (:meth:`measured`, a transfer's) in its place among them, and a
    measurement made on the tracker itself (:meth:`ModeTracker.finish`,
    :meth:`ModeTracker.observe`) drains the batch first: the window holds what
    finished last, whatever path it came by. (Without the order, a transfer observed between
    two reads entered the window before the computes tallied around it, and a
    window shorter than a read's worth of tasks lost it: the demo's mode read
    compute in a phase that shipped every panel and turned compression off.)

    The batch becomes a feed at its first event, and the thread of that event
    is the only one that records and drains it (the scheduler's event loop for
    a cluster): a read on another thread sees the tracker as of the last drain,
    up to one evaluation interval behind. A batch that never records an event
    (a plugin object left on the client after it was sent to the scheduler)
    leaves its tracker as it was. Anything the batch
    does not tally (a measurement it cannot check, a key that is not hashable)
    drains the batch and goes to the tracker directly, so the order of a
    group's events is kept.

    Examples
    --------
    >>> tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    >>> batch = EventBatch(tracker)
    >>> for _ in range(3):
    ...     batch.add("compute", "inc", prior=0.25)
    >>> batch.finish("compute", "inc", 0.5)
    >>> batch.pending()
    1
    >>> tracker.scheduled_work()  # two tasks left, at the measured 0.5 s
    {'compute': 1.0}
    >>> batch.pending(), tracker.finished
    (0, 1)
    >>> batch.close()
    """

    __slots__ = ("_tracker", "_tallies", "_priors", "_unscheduled", "_owner", "_detach", "_run_types",
                 "_run_seconds", "_run_counts")

    def __init__(self, tracker: ModeTracker) -> None:
        self._tracker = tracker
        self._tallies: dict[tuple[str, str], list] = {}  # group -> [added, finished, seconds]
        self._priors: dict[tuple[str, str], float] = {}  # group -> the latest prior given with an add
        self._unscheduled: dict[tuple[str, str], list] = {}  # group -> [finished, seconds] never scheduled
        # the finishes in order, consecutive ones of a type summed (ModeTracker.ingest's runs):
        # parallel lists, no container per event
        self._run_types: list[str] = []
        self._run_seconds: list[float] = []
        self._run_counts: list[int] = []
        self._owner: int | None = None  # the thread of the first event
        self._detach: Callable[[], None] | bool | None = None  # a feed from the first event on; False once closed

    def _new_tally(self, key: tuple[str, str]) -> list:
        if self._detach is None:
            self._start()
        tally = self._tallies[key] = [0, 0, 0.0]
        return tally

    def _start(self) -> None:
        # the first event: this thread's batch, and a feed of the tracker
        self._owner = threading.get_ident()
        self._detach = self._tracker.add_feed(self.flush)

    def add(self, task_type: str, prefix: str, prior: float | None = None) -> None:
        """As :meth:`ModeTracker.add`; the group's latest prior is taken at the drain."""
        key = (task_type, prefix)
        try:
            tally = self._tallies.get(key)
        except TypeError:  # unhashable: the tracker's own checks reject it
            self.flush()
            self._tracker.add(task_type, prefix, prior)
            return
        if tally is None:
            tally = self._new_tally(key)
        tally[0] += 1
        if prior is not None:
            self._priors[key] = prior

    def finish(self, task_type: str, prefix: str, duration: float) -> None:
        """As :meth:`ModeTracker.finish` of a task announced with :meth:`add`."""
        tally = None
        if type(duration) is float and 0.0 <= duration <= MAX_SECONDS:
            try:
                tally = self._tallies.get((task_type, prefix))
            except TypeError:
                tally = False
            if tally is None:
                tally = self._new_tally((task_type, prefix))
        if not tally:  # not a float in range, or an unhashable group: the tracker decides (after this batch)
            self._tracker.finish(task_type, prefix, duration)
            return
        tally[1] += 1
        tally[2] += duration
        self._run(task_type, duration)

    def measured(self, task_type: str, prefix: str, duration: float, rest: float = 0.0) -> None:
        """Work never scheduled (a transfer): ``finish(..., scheduled=False)``, then ``observe(rest)``.

        As :meth:`ModeTracker.finish` with ``scheduled=False``, then, where
        ``rest`` > 0, :meth:`ModeTracker.observe` of ``rest`` (more work of the
        type, of no group). The scheduler plugin records each measured transfer
        so (the task's share, and the rest of the batch's time); the window
        takes both in their place among the finishes, and no read of the
        tracker is needed until the next one is due.

        >>> tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
        >>> batch = EventBatch(tracker)
        >>> batch.add("compute", "inc")
        >>> batch.finish("compute", "inc", 0.5)
        >>> batch.measured("communication", "transfer-inc", 0.25, rest=0.25)
        >>> tracker.measured_work(), tracker.finished, tracker.expected_duration("communication", "transfer-inc")
        ({'compute': 0.5, 'communication': 0.5}, 2, 0.25)
        >>> batch.close()
        """
        if not (type(duration) is float and 0.0 <= duration <= MAX_SECONDS and type(rest) is float
                and 0.0 <= rest <= MAX_SECONDS):
            self._measured_by_tracker(task_type, prefix, duration, rest)
            return
        key = (task_type, prefix)
        try:
            tally = self._unscheduled.get(key)
        except TypeError:  # unhashable: the tracker's own checks reject it
            self._measured_by_tracker(task_type, prefix, duration, rest)
            return
        if tally is None:
            if self._detach is None:
                self._start()
            tally = self._unscheduled[key] = [0, 0.0]
        tally[0] += 1
        tally[1] += duration
        self._run(task_type, duration)
        if rest > 0:
            self._run(task_type, rest)

    def _measured_by_tracker(self, task_type: str, prefix: str, duration: object, rest: object) -> None:
        # what the batch does not check goes to the tracker, whose finish drains the batch first (the order
        # kept, as for finish's own fallback) and rejects what is invalid; a rest <= 0 is nothing to observe
        self._tracker.finish(task_type, prefix, duration, scheduled=False)  # type: ignore[arg-type]
        if not (isinstance(rest, (int, float)) and rest <= 0):
            self._tracker.observe(task_type, rest)  # type: ignore[arg-type]

    def _run(self, task_type: str, seconds: float) -> None:
        # one measurement in order; consecutive ones of a type summed
        types = self._run_types
        if types and types[-1] == task_type:
            self._run_seconds[-1] += seconds
            self._run_counts[-1] += 1
        else:
            types.append(task_type)
            self._run_seconds.append(seconds)
            self._run_counts.append(1)

    def pending(self) -> int:
        """Groups with events not handed to the tracker yet."""
        return len(self._tallies) + len(self._unscheduled)

    def flush(self) -> None:
        """Hand the tallies to the tracker (a no-op on a thread other than the batch's)."""
        if not (self._tallies or self._unscheduled) or threading.get_ident() != self._owner:
            return
        tallies, self._tallies = self._tallies, {}
        tracker = self._tracker
        if self._priors:
            priors, self._priors = self._priors, {}
            for (task_type, prefix), prior in priors.items():
                tracker.prime(task_type, prefix, prior)
        unscheduled = None
        if self._unscheduled:
            unscheduled = [(task_type, prefix, finished, seconds)
                           for (task_type, prefix), (finished, seconds) in self._unscheduled.items()]
            self._unscheduled = {}
        runs = list(zip(self._run_types, self._run_seconds, self._run_counts))
        self._run_types, self._run_seconds, self._run_counts = [], [], []
        tracker.ingest([(task_type, prefix, added, finished, seconds)
                        for (task_type, prefix), (added, finished, seconds) in tallies.items()], runs, unscheduled)

    def close(self) -> None:
        """Hand over what is left and stop being a feed of the tracker (for good: later events are not read)."""
        self.flush()
        if self._detach:
            self._detach()
        self._detach = False


_SECONDS_RULE = f"a finite number of seconds in [0, {MAX_SECONDS:g}]"
_COUNT_RULE = "an integer in [0, 2**53]"
_TYPE_RULE = "a non-empty str such as 'compute' or 'communication'"


def _is_type(name: object) -> bool:
    return isinstance(name, str) and bool(name.strip())


def _is_count(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _problem(value: object) -> str:
    """The kind of a bad value, for :attr:`ModeTracker.rejected`'s keys."""
    if isinstance(value, bool):
        return "is a bool"
    if isinstance(value, numbers.Integral):
        return "is negative" if value < 0 else "is too large"
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            return "is nan"
        if math.isinf(number):
            return "is infinite"
        if number < 0:
            return "is negative"
        return "is too large" if number > MAX_SECONDS else "is not an integer"
    if isinstance(value, str):
        return "is an empty str" if not value.strip() else "is a str"
    return f"is a {type(value).__name__}"


def _shares(work: dict[str, float]) -> dict[str, float]:
    total = sum(work.values())
    return {t: w / total for t, w in work.items()} if total > 0 else {}


def _prior_seconds(duration: object) -> float | None:
    """A prior duration as seconds, or ``None`` if it is not a finite number of seconds > 0."""
    try:
        seconds = float(duration)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if 0.0 < seconds <= MAX_SECONDS else None  # NaN fails too; Dask's "unknown" is -1


def _blend(scheduled: dict[str, float], measured: dict[str, float], blend: float,
           fullness: float = 1.0) -> dict[str, float]:
    expected_shares = _shares(scheduled)
    measured_shares = _shares(measured)
    if not measured_shares or blend == 0.0:
        return expected_shares or measured_shares
    if not expected_shares or blend == 1.0:
        return measured_shares or expected_shares
    # The scheduled view weighs (1 - blend) only while it holds at least as many
    # tasks as the window holds measurements (``fullness``): a straggler or two at
    # the end of a phase (one gather task against a window of a step's tasks) must
    # not swing the ratio on its own. Counting tasks, not expected seconds, lets a
    # phase's first tasks weigh fully although their durations are not learned yet.
    weight = (1 - blend) * fullness
    total = weight + blend
    names = expected_shares.keys() | measured_shares.keys()
    return {
        t: (weight * expected_shares.get(t, 0.0) + blend * measured_shares.get(t, 0.0)) / total
        for t in names
    }
