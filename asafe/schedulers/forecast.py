"""Forecasts of the transfers a submitted graph will make, before its tasks run.

The measured window sees a transfer only after it happened, so a mode made of
measurements alone runs every phase's first tasks in the previous phase's state.
A Dask scheduler knows a graph when it is submitted: each task's dependencies,
where the ones already computed live (``who_has``), and where a task is pinned
(``workers=`` without ``allow_other_workers``). :class:`TransferForecast` turns
that into *planned* communication in the mode tracker, one item per output
that is expected to cross to another worker, in uncompressed-equivalent seconds::

    seconds = probability of crossing * logical bytes of the output / bandwidth

*Which outputs cross.* An edge from a dependency to a consumer crosses when
both places are known and differ (a pinned consumer, a dependency that is in
memory or pinned). Where a place is unknown, Dask decides at run time: a
consumer that is not pinned runs next to its largest dependency (so that one
does not cross) and each of its other dependencies crosses with probability
``(W - 1) / W`` among ``W`` workers. A consumer of one dependency usually runs
next to it too, but not always: where many such consumers become ready at once
(a task rechunk's second stage) the scheduler spreads them over idle workers.
Its edge crosses with the fraction of that dependency's prefix that crossed so
far (nothing while the prefix has not been seen), a fraction of bytes: each
output moves it by its share of the prefix's typical size, so that small
outputs that cross (a map_overlap's halos) do not plan the large ones of the
same prefix (its blocks) to cross. An output crosses to one worker once,
whatever the number of its consumers there.

*Outputs whose consumers are not submitted yet.* Code that uses futures submits
producers before their consumers (two ``client.map`` calls). For such an output
the forecast uses what earlier tasks of its key prefix did: the fraction of them
whose output crossed, times their logical size. The forecast is replaced by the
real edges as soon as a consumer arrives.

*Sizes.* An output's logical size (its dense-equivalent bytes, reported by the
worker plugin, or Dask's ``nbytes``) is learned per key prefix (a moving mean over about its
last 16 outputs, ``_LEARN_SIZE``), so a forecast
does not depend on whether compression is on: the optimization cannot flip its
own signal. Before a prefix has been seen its size is unknown and its edges
plan nothing; they are refined with the real size when the producer finishes,
which is before the transfer starts. Until then an edge is planned at the mean
size of the prefix's outputs that crossed (``crossed_bytes``, learned as the
sizes are), and at the prefix's mean only where none crossed yet: one prefix
often names outputs of very different sizes whose small ones are the ones that
cross (dask.array's ``getitem``: a map_overlap's 28 KB halos cross to the
concatenation of a block with its neighbours' halos, its 6 MB blocks stay), and
a consumer of several dependencies plans all but the largest to cross. At the
prefix's mean (0.4-1.1 MB) a map_overlap's arrival planned 0.3-0.5 s of
transfers against 0.03 s measured once the next wave took single-dependency
tasks one step further, and switched wire compression on in every run behind
1 Gbit/s (``docs/results/workloads/1gbit-s40``, the twelfth run).

*Small outputs.* An output whose size is known (it is in memory) or learned
for its prefix, and below ``min_bytes`` (``asafe.distributed.forecast-min-bytes``,
1 KiB, the size Dask itself assumes for an output it knows nothing of), plans
no transfer and gets no entry, whether a consumer arrives or its producer is
activated with no consumer known yet. Such a transfer costs the link's latency, not its
bandwidth, which ``bytes / bandwidth`` does not model, and what it would plan is
at most ``min_bytes / bandwidth`` (10 us at 100 MB/s) an edge; but the entries,
refined when each producer finished and served when each consumer did, were
most of asafe's scheduler cpu per task on graphs of scalars (a fan-in of sums, a
reduction tree; ``docs/scale.rst``). A prefix not seen yet plans its edges as
above and is learned from its first outputs.

*What is learned outlives an installation.* The per-prefix sizes and crossing
fractions belong to the scheduler, as Dask's own per-prefix durations
(``TaskPrefix.all_durations``) do: a runtime installed anew on a scheduler
that has run a prefix before (:meth:`TransferForecast.share`) forecasts that
prefix's first outputs. Without it, every new installation would ship a phase's
first wave of a known prefix uncompressed -- the cold start that cost half a
second per run behind a 1 Gbit/s link (``docs/results/demo-1gbit``, 184ca8e).
Only a prefix this scheduler has never run starts unknown.

*When planned work counts.* An output's planned transfers count while its
producer is ready, running, or in memory with a consumer still to be served,
and leave when that consumer finishes (the measured transfer then reaches the
measured window) or when the output is released. A waiting producer counts once
it joins the next wave (every dependency ready, running or in memory, or its
one dependency in the wave: the scheduler plugin activates it then, as it
counts its compute), so the mode
weighs the wave about to run with its transfers; the rest of a large graph
does not count yet.

*What reaches the tracker.* The forecast keeps the running total of its
planned items itself (:attr:`TransferForecast.planned`, plain float adds, set
to exactly 0 whenever no item is left, as :meth:`asafe.ModeTracker.plan` does
with its own total), and the tracker reads that total at each read
(:meth:`TransferForecast.attach`, :meth:`asafe.ModeTracker.add_plan_source`).
The total is the same sum, of the same amounts in the same order, as one
:meth:`~asafe.ModeTracker.plan` call per change would make, so an evaluation
reads the mode those calls would give (where P2P traffic is planned too, its
:meth:`~asafe.ModeTracker.plan` total is added to this one rather than
interleaved with it: a difference of rounding); but a leaf of a fan-in, whose
planned transfer is entered, refined and served, makes no call into the
tracker and takes no lock (``docs/scale.rst`` has the profile).

The cost is O(1) per dependency edge at submission and per finished task, and
no call into the tracker.

Examples
--------
>>> from asafe import ModeTracker
>>> tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
>>> forecast = TransferForecast(tracker, bandwidth=lambda: 1e8, workers=lambda: 2)
>>> detach = forecast.attach()  # the tracker counts what the forecast plans
>>> forecast.learn_output("produce", nbytes=4e8, crossed=True)
>>> forecast.expected_seconds("produce")  # 400 MB at 100 MB/s, all of them crossed so far
4.0
>>> detach()
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..core.types import COMMUNICATION

__all__ = ["TransferForecast", "PrefixMemory"]

#: Weight of a new observation in the per-prefix moving average of the fraction that crossed (as the tracker
#: learns durations).
_LEARN = 0.5
#: Weight of a new output's size in its prefix's moving average. A forecast sums the prefix's size over
#: every edge of a graph, so it needs the prefix's mean, not its latest outputs: the misaligned difference
#: of the workloads suite splits each chunk into one block and three slivers of one row or column under the
#: same prefixes, and at 0.5 the average followed the last few outputs, slivers of 7 kB against a mean of
#: 2 MB, so its graph's arrival planned no transfer and compression came on 0.13-0.57 s into the run
#: (docs/results/workloads/1gbit-s37). 1/16 weighs about the last 16 outputs alike.
_LEARN_SIZE = 1 / 16
#: Scheduler states of a producer whose planned transfers count.
_ACTIVE = frozenset({"queued", "no-worker", "processing", "memory"})


class PrefixMemory:
    """What a scheduler has learned per key prefix (logical output bytes, the fraction that crossed) and of its link.

    Shared by the forecasts of every runtime installed on one scheduler (see
    :meth:`TransferForecast.share`); bounded by the number of key prefixes the
    scheduler has run, as Dask's ``Scheduler.task_prefixes`` is.

    Examples
    --------
    >>> memory = PrefixMemory()
    >>> memory.output_bytes["produce"] = 8e6
    >>> len(memory)
    1
    """

    __slots__ = ("output_bytes", "shipped", "crossed_bytes", "bandwidth", "capacity", "__weakref__")

    def __init__(self) -> None:
        self.output_bytes: dict[str, float] = {}
        self.shipped: dict[str, float] = {}
        self.crossed_bytes: dict[str, float] = {}
        self.bandwidth: float | None = None  # the link's measured wire bytes per second (moving average)
        self.capacity: float | None = None  # and their upper envelope (asafe.schedulers.bandwidth)

    def __len__(self) -> int:
        return len(self.output_bytes.keys() | self.shipped.keys())


class _Output:
    """One task output with planned transfers: where it is, and where it will go."""

    __slots__ = ("prefix", "home", "nbytes", "active", "forecast", "edges")

    def __init__(self, prefix: str, home: frozenset | None) -> None:
        self.prefix = prefix
        self.home = home  # workers holding (or pinned to make) the output; None: not known yet
        self.nbytes: float | None = None  # logical bytes, once it ran
        self.active = False  # producer ready, running or in memory: its planned transfers count
        self.forecast = 0.0  # planned seconds from the prefix's history (no consumer known)
        self.edges: dict[Any, list[float]] = {}  # destination -> [probability, planned seconds]


class TransferForecast:
    """Planned inter-worker transfers of the submitted tasks, kept in a tracker's scheduled view.

    Parameters
    ----------
    tracker : ModeTracker
        Counts the planned seconds once :meth:`attach` is called.
    bandwidth : callable
        The current bandwidth estimate in bytes per second.
    workers : callable
        The current number of workers.
    size : callable, optional
        ``size(ts)``: the logical bytes of an output in memory (default: Dask's
        ``ts.nbytes``).
    min_bytes : float
        Outputs known or learned to be smaller plan no transfer (see "Small
        outputs" in the module docstring); 0 plans every output.
    """

    def __init__(self, tracker: Any, bandwidth: Callable[[], float], workers: Callable[[], int],
                 size: Callable[[Any], float] | None = None, min_bytes: float = 0.0) -> None:
        self.tracker = tracker
        self.min_bytes = float(min_bytes)
        self._bandwidth = bandwidth
        self._workers = workers
        self._memory_size = size or (lambda ts: float(max(ts.nbytes, 0)))
        self.output_bytes: dict[str, float] = {}  # prefix -> moving average of logical output bytes
        self.crossed_bytes: dict[str, float] = {}  # prefix -> the same, of the outputs that crossed
        self.shipped: dict[str, float] = {}  # prefix -> moving average of the fraction that crossed
        self._outputs: dict[Any, _Output] = {}
        #: Seconds planned now: the running total the tracker reads (see the module docstring).
        self.planned = 0.0
        self._items = 0  # planned items now: edges and prefix forecasts of active outputs

    def attach(self) -> Callable[[], None]:
        """Count :attr:`planned` as planned communication in the tracker from now on; returns a function that detaches it."""
        return self.tracker.add_plan_source(COMMUNICATION, self._planned_seconds)

    def _planned_seconds(self) -> float:
        return self.planned

    def planned_bytes(self) -> float:
        """The logical bytes :attr:`planned` stands for, at the bandwidth estimate now.

        >>> forecast = TransferForecast(tracker=None, bandwidth=lambda: 1e8, workers=lambda: 2)
        >>> forecast.planned = 0.25  # seconds
        >>> forecast.planned_bytes()
        25000000.0
        """
        return self.planned * self._bandwidth_now()

    # learning ---------------------------------------------------------------------
    def learn_output(self, prefix: str, nbytes: float | None = None, crossed: bool | None = None) -> None:
        """Learn one output of ``prefix``: its logical size, and whether it crossed to another worker."""
        known = nbytes is not None and nbytes >= 0
        if known:
            _learn(self.output_bytes, prefix, float(nbytes), _LEARN_SIZE)
        if crossed is not None:
            _learn(self.shipped, prefix, float(crossed))
            if crossed and known:
                _learn(self.crossed_bytes, prefix, float(nbytes), _LEARN_SIZE)

    def share(self, memory: "PrefixMemory") -> None:
        """Learn into ``memory`` from now on (what this forecast learned so far is kept in it).

        The scheduler plugin passes the memory of its scheduler, so a new
        installation starts from what the previous ones learned.
        """
        for prefix, nbytes in self.output_bytes.items():
            memory.output_bytes.setdefault(prefix, nbytes)
        for prefix, shipped in self.shipped.items():
            memory.shipped.setdefault(prefix, shipped)
        for prefix, nbytes in self.crossed_bytes.items():
            memory.crossed_bytes.setdefault(prefix, nbytes)
        self.output_bytes, self.shipped, self.crossed_bytes = memory.output_bytes, memory.shipped, memory.crossed_bytes

    def expected_seconds(self, prefix: str) -> float:
        """Expected transfer seconds of one output of ``prefix`` from its history (0 if never seen)."""
        nbytes = self.output_bytes.get(prefix)
        shipped = self.shipped.get(prefix)
        if not nbytes or not shipped:
            return 0.0
        return shipped * nbytes / self._bandwidth_now()

    # scheduler events -----------------------------------------------------------------
    def submitted(self, tasks: Iterable[Any]) -> None:
        """New tasks reached the scheduler: plan the edges from their dependencies."""
        workers = max(int(self._workers()), 1)
        bandwidth = None  # read once per graph, when an edge needs it: no event comes between
        outputs, output_bytes, memory_size = self._outputs, self.output_bytes, self._memory_size
        for ts in tasks:
            dependencies = ts.dependencies
            if not dependencies:
                continue
            dest = _pinned(ts) if ts.worker_restrictions else None
            largest = None
            if dest is None and len(dependencies) > 1:
                # the first largest dependency (as max() picks it), by what is known of its size
                best = 0.0
                for dts in dependencies:
                    out = outputs.get(dts.key)
                    if out is not None and out.nbytes is not None:
                        size = out.nbytes
                    elif dts.state == "memory":
                        size = memory_size(dts)
                    else:
                        size = output_bytes.get(dts.prefix.name, 0.0)
                    if largest is None or size > best:
                        largest, best = dts, size
            for dts in dependencies:
                read = self._edge(dts, ts, dest, largest, workers, bandwidth)
                if read is not None:
                    bandwidth = read

    def activate(self, ts: Any) -> None:
        """``ts`` is ready or running: its output's planned transfers count from now."""
        out = self._outputs.get(ts.key)
        if out is None:
            if ts.dependents:
                return  # its consumers are known and plan nothing from it
            prefix = ts.prefix.name
            forecast = self.expected_seconds(prefix)
            if not forecast or self.output_bytes[prefix] < self.min_bytes:
                return  # nothing to plan, or a small output (see min_bytes): no entry (one per task would cost memory)
            out = self._outputs[ts.key] = _Output(prefix, _place(ts))
            out.active = True
            self._set_forecast(out, forecast)  # no consumer submitted yet: what this prefix usually does
            return
        if out.active:
            return
        out.active = True
        edges = out.edges
        if edges:
            planned = self.planned
            for edge in edges.values():
                planned += edge[1]
            self.planned = planned
            self._items += len(edges)

    def finished(self, ts: Any, worker: str | None, logical: float | None) -> None:
        """``ts`` finished on ``worker`` with an output of ``logical`` bytes.

        Its own planned transfers are refined with the real size; the transfers
        into it are done, and whether each crossed is learned for its prefix.
        """
        out = self._outputs.get(ts.key)
        if out is not None:
            self._produced(out, worker, logical)
        if logical is not None and logical >= 0:
            _learn(self.output_bytes, ts.prefix.name, float(logical), _LEARN_SIZE)
        if ts.dependencies:
            self._served(ts, worker, learn=True)

    def discarded(self, ts: Any) -> None:
        """``ts`` left without finishing: the transfers into it will not happen."""
        self._served(ts, None, learn=False)

    def released(self, key: Any) -> None:
        """An output left the cluster's memory (or was never made): drop what it planned."""
        out = self._outputs.pop(key, None)
        if out is None or not out.active:
            return
        for edge in out.edges.values():
            self._unplan(edge[1])
        if out.forecast:
            self._unplan(out.forecast)

    def clear(self) -> None:
        """Forget every planned transfer (a restart, an uninstall); keep what was learned."""
        self._outputs.clear()
        self.planned = 0.0
        self._items = 0

    def __len__(self) -> int:
        """Outputs with planned (or plannable) transfers."""
        return len(self._outputs)

    # internals ------------------------------------------------------------------------
    def _edge(self, dts: Any, ts: Any, dest: str | None, largest: Any, workers: int,
              bandwidth: float | None) -> float | None:
        # One dependency edge of a submitted task; returns the bandwidth it read
        # (None: it read none), which the rest of the graph reuses.
        out = self._outputs.get(dts.key)
        if out is None:
            state = dts.state
            nbytes = self._memory_size(dts) if state == "memory" else self.output_bytes.get(dts.prefix.name)
            if nbytes is not None and nbytes < self.min_bytes:
                return None  # a small output plans nothing (see min_bytes): no entry, no work when it runs
            out = self._outputs[dts.key] = _Output(dts.prefix.name, _place(dts))
            if state == "memory":
                out.nbytes = nbytes
            out.active = state in _ACTIVE
        if dest is not None:
            if dest in out.edges:
                return None  # this output already goes to that worker once
            home = out.home
            probability = (0.0 if dest in home else 1.0) if home is not None else (workers - 1) / workers
            where: Any = dest
        else:
            where = ("consumer", ts.key)
            if where in out.edges:
                return None  # planned when its consumer arrived: a later graph touched the waiting consumer again
            if largest is None:
                # the consumer's one dependency: Dask places it there, unless the scheduler spreads such
                # consumers over idle workers or stealing moves them (a task rechunk's second stage); it
                # crosses as often as this prefix's outputs did (0 where never seen)
                probability = self.shipped.get(out.prefix, 0.0)
            else:
                probability = 0.0 if dts is largest else (workers - 1) / workers
        if probability == 0.0:
            return None
        if out.forecast:
            self._set_forecast(out, 0.0)  # a real consumer replaces the prefix's history
        if bandwidth is None:
            bandwidth = self._bandwidth_now()
        nbytes = out.nbytes
        if nbytes is None:  # not made yet: what crossed of its prefix (see _served), else its prefix's size
            nbytes = self.crossed_bytes.get(out.prefix)
            if nbytes is None:
                nbytes = self.output_bytes.get(out.prefix, 0.0)
        seconds = probability * nbytes / bandwidth
        out.edges[where] = [probability, seconds]
        if out.active:
            self.planned += seconds
            self._items += 1
        return bandwidth

    def _served(self, ts: Any, worker: str | None, learn: bool) -> None:
        outputs = self._outputs
        shipped = self.shipped
        consumer = None
        for dts in ts.dependencies:
            out = outputs.get(dts.key)
            if out is None:
                continue
            edges = out.edges
            edge = edges.pop(worker, None) if worker is not None else None
            if edge is None and edges:
                if consumer is None:
                    consumer = ("consumer", ts.key)
                edge = edges.pop(consumer, None)
            if edge is not None and out.active:
                self._unplan(edge[1])
            if learn and out.home is not None and worker is not None:
                crossed = worker not in out.home
                _learn(shipped, out.prefix, float(crossed), self._crossing_rate(out))
                if crossed and out.nbytes is not None:
                    _learn(self.crossed_bytes, out.prefix, out.nbytes, _LEARN_SIZE)

    # The fraction of a prefix's outputs that crossed is weighted by their bytes: an
    # output moves it by its share of the prefix's typical size (at most _LEARN).
    # One prefix often names outputs of very different sizes (dask.array's
    # ``getitem``: a map_overlap's 28 KB halos, which cross, and its 6 MB blocks,
    # which stay); counted alike, the halos' crossings planned every block to
    # cross at 0.4-0.5, 0.2-0.4 s of planned communication against 0.01 s
    # measured, and switched wire compression on 25 ms into most such graphs
    # behind 1 Gbit/s with not one frame to compress.
    def _crossing_rate(self, out: _Output) -> float:
        nbytes, typical = out.nbytes, self.output_bytes.get(out.prefix)
        if nbytes is None or not typical:
            return _LEARN
        return _LEARN * min(nbytes / typical, 1.0)

    def _produced(self, out: _Output, worker: str | None, logical: float | None) -> None:
        # the output exists, on ``worker``, of ``logical`` bytes
        if worker is not None:
            out.home = frozenset((worker,))
        if logical is not None:
            out.nbytes = float(logical)
            if out.edges or out.forecast:
                self._refine(out)

    def _refine(self, out: _Output) -> None:
        # the output exists: its size is known, and so is where it is (an edge
        # to a known worker now crosses or does not, no longer "probably")
        bandwidth = self._bandwidth_now()
        home, nbytes, active = out.home, out.nbytes, out.active
        for where, edge in out.edges.items():
            if home is not None and isinstance(where, str):
                edge[0] = 0.0 if where in home else 1.0
            seconds = edge[0] * nbytes / bandwidth
            if active:
                self.planned += seconds - edge[1]
            edge[1] = seconds
        if out.forecast:
            shipped = self.shipped.get(out.prefix, 0.0)
            self._set_forecast(out, shipped * nbytes / bandwidth)

    def _set_forecast(self, out: _Output, seconds: float) -> None:
        if out.forecast and out.active:
            self._unplan(out.forecast)
        out.forecast = seconds
        if seconds and out.active:
            self.planned += seconds
            self._items += 1

    def _unplan(self, seconds: float) -> None:
        # One planned item leaves; none left: exactly zero, no residue of the
        # running sum (the rule of ModeTracker.plan, its count clamped at 0 too).
        items = self._items - 1
        if items > 0:
            self._items = items
            self.planned -= seconds
        else:
            self._items = 0
            self.planned = 0.0

    def _bandwidth_now(self) -> float:
        bandwidth = float(self._bandwidth() or 0.0)
        return bandwidth if bandwidth > 0 else 1e8  # distributed's own default, 100 MB/s


def _pinned(ts: Any) -> str | None:
    """The one worker ``ts`` must run on, if any."""
    restrictions = ts.worker_restrictions
    if restrictions and len(restrictions) == 1 and not ts.loose_restrictions:
        return next(iter(restrictions))
    return None


def _learn(table: dict[str, float], prefix: str, value: float, rate: float = _LEARN) -> None:
    """Move ``prefix``'s moving average in ``table`` towards ``value`` by ``rate`` (the first value sets it)."""
    old = table.get(prefix)
    table[prefix] = value if old is None else old + rate * (value - old)


def _place(ts: Any) -> frozenset | None:
    """Workers holding ``ts``'s output, or the one it is pinned to; None when Dask will choose."""
    if ts.who_has:
        return frozenset(ws.address for ws in ts.who_has)
    if not ts.worker_restrictions:
        return None
    pinned = _pinned(ts)
    return frozenset((pinned,)) if pinned is not None else None
