"""The scheduler plugin: scheduler events into the mode tracker, states out to the workers.

:class:`AdaptiveSchedulerPlugin` is what :func:`asafe.install` and
``--preload asafe.preload`` put on a Dask scheduler. It keeps the type, key
prefix and declared reuse of every *scheduled* task (ready, running, or in the
next wave) in a :class:`Scheduled` entry, maps each transition to O(1) tracker
events (tallied per group in an :class:`~asafe.core.tracker.EventBatch` that
the tracker drains when it is read: per task, a dict increment), charges
measured transfers in uncompressed-equivalent seconds, plans the transfers
of submitted graphs (:mod:`asafe.schedulers.forecast`), measures the link
(:mod:`asafe.schedulers.bandwidth`), and pushes every state change to the
workers that said hello. The flow of events, and why each rule exists, is on
the Architecture page ("The cluster plugins").

Every hook takes ``**kwargs`` and catches its own exceptions, following
``distributed.diagnostics.plugin``: the error is logged once per hook, then
counted in :attr:`AdaptiveSchedulerPlugin.plugin_errors`; scheduling goes on
and no optimization changes state because of it.
"""
from __future__ import annotations

import asyncio
import time
import uuid
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

from distributed.diagnostics.plugin import SchedulerPlugin

from ..core import types, validate
from ..core.reuse import DeclaredReuse, declared_reuse
from ..core.runtime import AdaptiveRuntime
from ..core.tracker import EventBatch
from ..core.types import ANNOTATION, COMMUNICATION, resolve_type
from . import hosts, rpc, stealing, threads
from .bandwidth import PROBE_FETCHES, LinkEstimate, probe
from .forecast import PrefixMemory, TransferForecast
from .p2p import P2PTraffic, is_barrier
from ..core.signals import local_host_names
from .protocol import (METADATA_KEY, NAME, STARTSTOP_BYTES, STARTSTOP_CODEC, STARTSTOP_EXTRA, STARTSTOP_TASKS,
                       STATES_OP, TRANSFER_PREFIX, PluginError, count_fallback, logger, logical_size, plugin_settings,
                       uncompressed_seconds)

try:  # the compiled per-task path (asafe/schedulers/_taskpath.c), optional: this module is its reference
    from . import _taskpath
except ImportError:  # pragma: no cover - where no C compiler was found at install
    _taskpath = None

if TYPE_CHECKING:
    from distributed.scheduler import TaskState

__all__ = ["AdaptiveSchedulerPlugin", "Scheduled", "learned_duration", "prefix_memory"]

# Scheduler states in which a task is ready or running.
_ACTIVE = frozenset({"queued", "no-worker", "processing"})
#: Seconds between two reads of the P2P counter while a barrier is pending.
_TICK_MS = 200
#: The scheduler's RPC handlers: op -> the plugin's method they call (through asafe.schedulers.rpc).
_HANDLERS = {"asafe_hello": "hello", "asafe_host": "host_report", "asafe_info": "info",
             "asafe_set_state": "set_state", "asafe_uninstall": "uninstall"}
#: The link probe: bytes fetched (bandwidth.PROBE_FETCHES times), its timeout, and how many tries per installation.
_PROBE_BYTES = 8 * 2**20
_PROBE_TIMEOUT = 30.0
_MAX_PROBES = 3
#: Seconds after the latest evaluation for which the system signals are kept fresh (see _drive_signals).
_SIGNALS_IDLE_S = 30.0
#: Largest number of dependencies of a task counted in the next wave (see
#: AdaptiveSchedulerPlugin._join_wave); a wider task counts when it is ready.
_WAVE_FAN_IN = 32


class Scheduled:
    """What the plugin keeps of one scheduled task: its tracker group, declared reuse, and readiness.

    ``ready`` is False while the task waits in the next wave (every dependency
    ready, running or in memory) and True once the scheduler made it ready.
    """

    __slots__ = ("task_type", "prefix", "reuse", "ready")

    def __init__(self, task_type: str, prefix: str, reuse: float | None, ready: bool) -> None:
        self.task_type = task_type
        self.prefix = prefix
        self.reuse = reuse
        self.ready = ready

    def __repr__(self) -> str:
        return f"Scheduled({self.task_type!r}, {self.prefix!r}, reuse={self.reuse}, ready={self.ready})"


_PREFIX_MEMORY: "weakref.WeakKeyDictionary[Any, PrefixMemory]" = weakref.WeakKeyDictionary()


def prefix_memory(scheduler: Any) -> PrefixMemory:
    """The per-prefix sizes that every asafe installation on ``scheduler`` learns into and starts from.

    It lives as long as the scheduler object, as Dask's own per-prefix durations do.
    """
    memory = _PREFIX_MEMORY.get(scheduler)
    if memory is None:
        memory = _PREFIX_MEMORY[scheduler] = PrefixMemory()
    return memory


def learned_duration(prefix: Any) -> float | None:
    """The seconds the scheduler has learned a task of ``prefix`` takes, or ``None`` if it knows of none.

    The mean compute time of every task of the prefix the scheduler has run
    (``TaskPrefix.all_durations["compute"]`` over the tasks that reached
    memory, both kept by Dask for the scheduler's life); before any ran, Dask's
    ``TaskPrefix.duration_average`` (its configured default for the prefix, or
    -1: unknown). Not Dask's moving average: it weighs the latest task by a
    half, and the latest tasks of a phase are its slowest (they run beside the
    phase's transfers). Measured behind a 1 Gbit/s link, the split tasks of a
    rechunk averaged 6-15 ms per run while that average read 4.6-22 ms after
    one, and the two runs of six that started from 19-22 ms planned too much
    compute against their transfers and switched wire compression on 2.3-2.6 s
    into a 3 s rechunk instead of at its start (the Scale page).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> ran = SimpleNamespace(state_counts={"memory": 4}, all_durations={"compute": 0.2}, duration_average=0.11)
    >>> learned_duration(ran)  # four tasks took 0.2 s: 50 ms each, whatever the last one took
    0.05
    >>> learned_duration(SimpleNamespace(state_counts={}, all_durations={}, duration_average=1e-06))
    1e-06
    >>> learned_duration(SimpleNamespace(name="old-distributed")) is None
    True
    """
    counts = getattr(prefix, "state_counts", None)
    durations = getattr(prefix, "all_durations", None)
    if counts is not None and durations is not None:
        finished = counts.get("memory", 0)
        seconds = durations.get("compute", 0.0)
        if finished > 0 and seconds > 0:
            return seconds / finished
    return getattr(prefix, "duration_average", None)


class AdaptiveSchedulerPlugin(SchedulerPlugin):
    """Feeds scheduler events to an :class:`~asafe.AdaptiveRuntime` and pushes its states.

    Parameters
    ----------
    runtime : AdaptiveRuntime, optional
        The controller (it travels to the scheduler pickled: settings,
        optimizations, states and history). Default: built from configuration.
    transfer_correction : bool, optional
        Count transfers in uncompressed-equivalent seconds (see the module
        docstring). Default ``asafe.distributed.transfer-correction``.
    expected_transfers : bool, optional
        Plan the transfers of each submitted graph in the scheduled view (the
        forecast, see the module docstring). Default
        ``asafe.distributed.expected-transfers``.
    next_wave : bool, optional
        Count the next wave (waiting tasks whose every dependency is ready,
        running or in memory, and the single-dependency tasks one step behind
        them) as scheduled, see the module docstring. Default
        ``asafe.distributed.next-wave``.
    bandwidth_min_bytes : int, optional
        Smallest transfer that updates the bandwidth estimate. Default
        ``asafe.distributed.bandwidth-min-bytes``.
    forecast_min_bytes : int or str, optional
        Outputs smaller than this (in memory, or learned for their prefix) plan
        no transfer in the forecast. Default
        ``asafe.distributed.forecast-min-bytes`` (1 KiB).
    evaluate_interval : float or str, optional
        Least time between two evaluations on the event path (task
        transitions); a graph's arrival evaluates at once. Default
        ``asafe.distributed.evaluate-interval`` (50 ms).
    coalesce_arrivals : int, optional
        A graph of at most this many new tasks that arrives within
        ``evaluate_interval`` after the latest evaluation, and for which the
        transfer forecast planned nothing, is evaluated at the end of that
        interval, with every such arrival since, instead of at once (0: every
        arrival at once). Default ``asafe.distributed.coalesce-arrivals`` (1:
        futures submitted alone).
    register_worker_plugin : bool
        On ``start``, register the :class:`AdaptiveWorkerPlugin` from the
        scheduler (used by :mod:`asafe.preload`; :func:`asafe.install` registers it
        through the client instead).
    token : str, optional
        Name of this installation (default: a fresh uuid).

    Examples
    --------
    >>> import asafe
    >>> rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))])
    >>> plugin = AdaptiveSchedulerPlugin(rt, transfer_correction=True)
    >>> plugin.name, plugin.transfer_correction
    ('asafe', True)
    """

    name = NAME
    idempotent = False

    def __init__(
        self,
        runtime: AdaptiveRuntime | None = None,
        *,
        transfer_correction: bool | None = None,
        expected_transfers: bool | None = None,
        next_wave: bool | None = None,
        bandwidth_min_bytes: int | None = None,
        forecast_min_bytes: int | None = None,
        evaluate_interval: float | None = None,
        coalesce_arrivals: int | None = None,
        register_worker_plugin: bool = False,
        token: str | None = None,
    ) -> None:
        if runtime is None:
            runtime = AdaptiveRuntime()
        if not isinstance(runtime, AdaptiveRuntime):
            raise TypeError(f"AdaptiveSchedulerPlugin needs an asafe.AdaptiveRuntime, got {type(runtime).__name__}")
        defaults = plugin_settings()
        self.runtime = runtime
        self.transfer_correction = defaults["transfer_correction"] if transfer_correction is None else bool(transfer_correction)
        self.expected_transfers = defaults["expected_transfers"] if expected_transfers is None else bool(expected_transfers)
        self.next_wave = defaults["next_wave"] if next_wave is None else bool(next_wave)
        self.bandwidth_min_bytes = int(defaults["bandwidth_min_bytes"] if bandwidth_min_bytes is None else bandwidth_min_bytes)
        self.forecast_min_bytes = int(defaults["forecast_min_bytes"] if forecast_min_bytes is None else
                                      validate.size(forecast_min_bytes, "forecast_min_bytes", minimum=0))
        self.evaluate_interval = (defaults["evaluate_interval"] if evaluate_interval is None else
                                  validate.duration(evaluate_interval, "evaluate_interval"))
        self.coalesce_arrivals = (defaults["coalesce_arrivals"] if coalesce_arrivals is None else
                                  validate.integer(coalesce_arrivals, "coalesce_arrivals", minimum=0))
        self.register_worker_plugin = bool(register_worker_plugin)
        self.token = token or uuid.uuid4().hex
        self._reset()

    def _reset(self) -> None:
        self.scheduler: Any = None
        self.tracker = self.runtime.tracker
        self._events = EventBatch(self.tracker)  # the tracker's events, tallied; a feed from its first event on
        self.default_type = self.runtime.default_type
        self._scheduled: dict[Any, Scheduled] = {}  # key -> the task's group, from ready (or the next wave) on
        self._path: Any = None  # the compiled per-task path while attached (_compile_path), else None
        self._priors: dict[str, float | None] = {}  # prefix -> learned_duration, read since the latest graph
        self.reuse = DeclaredReuse(window=self.tracker.window)  # the mode's "reuse" signal
        self.runnable = threads.RunnableCount(self._total_threads)  # the mode's "runnable_per_core" signal
        self._count_runnable = False  # only while that signal is attached (start): no domain reads it otherwise
        self.ignored_annotations = 0  # asafe_reuse annotations that were not a number >= 1
        self.link = LinkEstimate(self.bandwidth_min_bytes, fallback=self._scheduler_bandwidth)
        self.forecast = TransferForecast(self.tracker, self.link, self._worker_count, size=logical_size,
                                         min_bytes=self.forecast_min_bytes)
        self.p2p = P2PTraffic(self.tracker, self.link, self._worker_count, size=logical_size,
                              learned=lambda prefix: self.forecast.output_bytes.get(prefix, 0.0),
                              metrics=lambda: getattr(self.scheduler, "cumulative_worker_metrics", None))
        self._next_evaluation = 0.0  # monotonic time before which the event path does not evaluate
        self._coalesced: Any = None  # the timer of the evaluation that covers coalesced arrivals, if pending
        # graphs' arrivals evaluated at once, and coalesced; the evaluations at an interval's end that covered those
        self.arrivals = {"at_once": 0, "coalesced": 0, "covering": 0}
        self._ticker: Any = None  # reads the P2P counter while a barrier is pending (no events then)
        self._probing: Any = None  # the link probe in flight, if any
        self.probes: list[dict] = []  # what the link probes measured (or why they failed)
        self.host_reports = 0  # workers' host reports taken between heartbeats (asafe_host)
        self._ready: set[str] = set()  # workers whose stream handler exists (said hello)
        self._version = 0
        self._unsubscribe: Any = None
        self._detach_signals: list = []
        self._local_hosts: frozenset = frozenset()  # this host's names, read in start() on the scheduler
        self._attached = False
        self.plugin_errors: deque[PluginError] = deque(maxlen=1000)
        self.error_counts: dict[str, int] = {}  # per hook, every failure (plugin_errors keeps the last 1000)
        self._failed_hooks: set[str] = set()
        # what crossed the network, as measured (wire) and as uncompressed (logical)
        self.transfer_stats = {"count": 0, "seconds": 0.0, "corrected_seconds": 0.0,
                               "wire_bytes": 0, "logical_bytes": 0, "unannotated": 0}
        self.fallbacks: dict[str, int] = {}  # distributed internals missing: see _fallback
        self.repairs = 0  # times the tracker was set right after a hook failed (see _settle)
        self._settled_at: tuple[int, int] | None = None  # failures and rejections counted at _settle's last check

    # pickling: the plugin travels to the scheduler as its settings and runtime
    def __getstate__(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "transfer_correction": self.transfer_correction,
            "expected_transfers": self.expected_transfers,
            "next_wave": self.next_wave,
            "bandwidth_min_bytes": self.bandwidth_min_bytes,
            "forecast_min_bytes": self.forecast_min_bytes,
            "evaluate_interval": self.evaluate_interval,
            "coalesce_arrivals": self.coalesce_arrivals,
            "register_worker_plugin": self.register_worker_plugin,
            "token": self.token,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    # lifecycle ------------------------------------------------------------------
    async def start(self, scheduler: Any) -> None:
        """Attach to the scheduler: handlers, subscription, the worker plugin if asked."""
        self.scheduler = scheduler
        self._events.close()
        self._events = EventBatch(self.tracker)  # fresh: its first event, on the event loop, makes it the feed
        memory = prefix_memory(scheduler)
        self.link.memory = memory  # the link an earlier installation measured
        self._local_hosts = local_host_names()
        self.forecast.share(memory)  # what earlier installations learned per prefix
        previous = scheduler.plugins.get(NAME)
        if isinstance(previous, AdaptiveSchedulerPlugin) and previous is not self:
            previous.detach()  # a new installation replaces the old one: events count once
        # the handlers forward to this installation; bound methods would stay in distributed's
        # handler cache, and this installation with them, after it is removed (asafe.schedulers.rpc)
        rpc.register(scheduler, self, _HANDLERS)
        self._unsubscribe = self.runtime.subscribe(self._push)
        self._detach_signals = [self.runtime.add_signal("bandwidth", self.link.signal),
                                self.runtime.add_signal("reuse", self.reuse),
                                self.forecast.attach()]  # the tracker reads the forecast's planned total
        self._count_runnable = threads.reads_signal(self.runtime)  # kernel-threads (asafe.schedulers.threads)
        if self._count_runnable:
            self._detach_signals.append(self.runtime.add_signal(threads.SIGNAL, self.runnable))
        system = self.runtime.system_signals
        if system is not None:
            self._detach_signals.append(system.watch(self._local_worker_pids))
            system.prime()  # the workers count as the run's own from the first sample on
            self._detach_signals.append(self._drive_signals(system))
        # --- per-host signals (asafe.schedulers.hosts): cpu, memory, external_cpu of the busiest worker host
        self._detach_signals.append(hosts.attach(self))
        # ---
        self._detach_signals.append(stealing.attach(self))  # work-stealing: restores stealing on detach
        self._attached = True
        self._compile_path()
        from tornado.ioloop import PeriodicCallback

        self._ticker = PeriodicCallback(self._tick, _TICK_MS)
        self._ticker.start()
        logger.info("asafe: scheduler plugin installed (%s)", self.runtime)
        from .views import register  # the dashboard page, /metrics, the workers' codec counters; never raises

        await register(scheduler)
        if self.register_worker_plugin:
            from distributed.protocol.pickle import dumps

            from .worker_plugin import AdaptiveWorkerPlugin

            await scheduler.register_worker_plugin(
                comm=None, plugin=dumps(AdaptiveWorkerPlugin(token=self.token)), name=NAME, idempotent=False
            )

    def _compile_path(self) -> None:
        # The transition hook in C where built (asafe/schedulers/_taskpath.c: the
        # same statements as transition and the methods it calls, a method
        # patched on the instance honoured). A subclass keeps the Python path,
        # which it may override; so does a scheduler whose tasks are not a dict.
        if _taskpath is None or type(self) is not AdaptiveSchedulerPlugin:
            return
        try:
            path = _taskpath.TaskPath(self, Scheduled, types._walk)
        except (TypeError, AttributeError) as exc:
            count_fallback(self, "compiled-path", f"the compiled per-task path is not used ({exc}); the "
                           "transition hook runs in Python")
            return
        self._path = path
        self.transition = path.transition  # type: ignore[method-assign]

    @property
    def compiled(self) -> bool:
        """Whether the transition hook runs the compiled per-task path (see :meth:`_compile_path`)."""
        return self._path is not None

    async def close(self) -> None:
        """The scheduler is closing: stop pushing."""
        self.detach()

    def detach(self) -> None:
        """Stop feeding the runtime and pushing states (used on uninstall and replacement)."""
        if not self._attached:
            return
        self._attached = False
        self.__dict__.pop("transition", None)  # the compiled path holds the plugin: let both go
        self._path = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for detach_signal in self._detach_signals:
            detach_signal()
        self._detach_signals = []
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        self._cancel_coalesced()
        scheduler = self.scheduler
        if scheduler is not None:
            rpc.unregister(scheduler, self, _HANDLERS)  # unless a newer installation's handlers replaced them
        self._ready.clear()
        self._scheduled.clear()
        self.runnable.clear()
        self.reuse.clear_scheduled()
        self.forecast.clear()
        self.p2p.clear()
        self._events.close()  # what finished is learned; the scheduled counts are cleared next
        self.tracker.clear_scheduled()

    def restart(self, scheduler: Any, **kwargs: Any) -> None:
        """``client.restart()``: every scheduled task is gone."""
        try:
            self._scheduled.clear()
            self.runnable.clear()
            self.reuse.clear_scheduled()
            self.forecast.clear()
            self.p2p.clear()
            self._events.flush()  # what finished before the restart is learned
            self.tracker.clear_scheduled()
        except Exception:
            self._hook_failed("restart")

    # the graph, before it runs ----------------------------------------------------------
    def update_graph(self, scheduler: Any, *, tasks: Any = None, **kwargs: Any) -> None:
        """A graph (or a batch of futures) arrived: count its ready tasks and next wave, plan its transfers now.

        Called by the scheduler before the graph's first transitions, so a state
        decided here reaches every worker's stream ahead of the graph's first
        tasks. Tasks whose dependencies are all in memory are counted as scheduled
        at once (they are ready), then the next wave: tasks whose dependencies
        are all ready, running or in memory, and the single-dependency tasks
        one step behind them (one wave only; the rest count when
        they join it). The forecast plans the transfers their dependencies will
        make (see :mod:`asafe.schedulers.forecast`), then the domains are
        evaluated: at once, or for a small graph that plans no transfer soon
        after another evaluation, at the end of the interval
        (:meth:`_coalesce_arrival`).
        """
        if not self._attached or not tasks:
            return
        try:
            path = self._path  # the compiled twin of _arrive, where compiled
            planned = self.forecast.planned
            new = (path.arrive if path is not None else self._arrive)(tasks)
            if not new:
                return
            if new > self.coalesce_arrivals or self.forecast.planned != planned or not self._coalesce_arrival():
                self._evaluate_arrivals("at_once")
            if not self.link.known and self._worth_probing():
                self._probe_soon()  # this graph moves data over a link nothing has measured yet
        except Exception:
            self._hook_failed("update_graph")

    def _arrive(self, tasks: Any) -> int:
        """Count and plan a graph's new tasks (update_graph's part per task); how many it had (0: none).

        New tasks are those the scheduler holds released or waiting with a
        ``run_spec``, not counted yet. The compiled path has its twin
        (``TaskPath.arrive``), which calls this method where it is set on the
        instance.
        """
        known = self.scheduler.tasks
        new = []
        for key in tasks:
            ts = known.get(key)
            if (ts is not None and ts.run_spec is not None and ts.state in ("released", "waiting")
                    and key not in self._scheduled):
                new.append(ts)
        if not new:
            return 0
        self._priors.clear()  # what the scheduler learned since the last graph
        if self.expected_transfers:
            self.forecast.submitted(new)
            self.p2p.submitted(new)
        waiting = []
        for ts in new:
            if all(dts.state == "memory" for dts in ts.dependencies):
                self._enter(ts.key)
            else:
                waiting.append(ts)
        if self.next_wave:
            for ts in waiting:  # the dependents of tasks of earlier graphs still running
                self._join_wave(ts)
        return len(new)

    # the event path ---------------------------------------------------------------
    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        """Map one scheduler transition to at most two O(1) tracker events."""
        if start == finish or not self._attached:
            return  # e.g. processing -> processing when the finishing worker is already gone
        try:
            entry = self._scheduled.get(key)
            if finish in _ACTIVE:
                if entry is None:
                    self._enter(key)
                elif not entry.ready:  # the next wave became ready: counted already
                    entry.ready = True
                    if self._count_runnable:
                        self.runnable.add(entry.task_type)
                    self._became_ready(self.scheduler.tasks[key])
            elif entry is not None:
                if finish == "waiting":
                    return  # counted at submission: it was ready then (see update_graph)
                del self._scheduled[key]
                if entry.ready and self._count_runnable:
                    self.runnable.remove(entry.task_type)
                if start == "processing" and finish == "memory":
                    self._finish(key, entry, True, kwargs)
                else:  # released, erred, forgotten: it left without a measurement
                    self._discard(key, entry)
                if not self._scheduled:
                    self._settle()
            elif start == "processing" and finish == "memory":
                self._finish(key, None, False, kwargs)  # running before asafe was installed
            elif start == "memory":
                self.forecast.released(key)  # its planned transfers will not happen
            else:
                return
            now = time.monotonic()  # one clock read for both checks (every transition pays them)
            if self.p2p.active_at(now):
                self._p2p_event(key, finish)
            self._maybe_evaluate(now)
        except Exception:
            self._hook_failed("transition")
            if not self._scheduled:
                self._settle()

    # The scheduler's one thread pays for every evaluation. The event path
    # evaluates at most every ``evaluate_interval`` (50 ms: at most 20 a second,
    # against 100 at the controller's 10 ms, which cost a busy scheduler 1-4% of
    # its cpu per task here): a toggle is held by the dwell (250 ms) anyway, so
    # evaluating more often only re-reads the same decision. A graph's arrival
    # evaluates at once (update_graph), whatever the interval, and counts as the
    # event path's latest evaluation: graphs shorter than the interval, submitted
    # one after another, evaluated twice each before (about a third of their
    # hooks' cost, docs/results/scheduler-s34).
    def _evaluate_now(self, **event: bool) -> None:
        # an event's evaluation (a graph's arrival, a host's report), out of the interval; it counts as
        # the event path's latest, which then waits its interval from here
        self.runtime.evaluate(**event)
        self._next_evaluation = time.monotonic() + self.evaluate_interval

    # Futures submitted one by one in a loop are each a graph's arrival: evaluated
    # at once, each cost the scheduler's thread an evaluation (update_graph 178 us
    # a future against 49 us coalesced; that thread's cpu 1.07-1.13x plain Dask's
    # in such a loop against 1.03-1.04x coalesced, docs/results/scheduler-s47).
    # A graph of at most ``coalesce_arrivals`` new tasks (Dask passes update_graph
    # the futures a submit depends on too: those are not counted) that arrives
    # within the interval after the latest evaluation, and for which the forecast
    # planned no transfer, waits for the end of that interval, where one
    # evaluation, as an arrival, covers it and every arrival that waited with it:
    # a loop pays one evaluation an interval. The first arrival after a quiet
    # interval, every larger graph and every graph whose transfers were planned
    # (what an arrival's evaluation is there for: compression on before they
    # start) are still evaluated at once; a small one runs at most an interval
    # in the state the latest evaluation decided (the event path's own
    # evaluations in between see its tasks too).
    def _coalesce_arrival(self) -> bool:
        """Whether this small graph's arrival waits for the evaluation at the end of the interval."""
        now = time.monotonic()
        if now >= self._next_evaluation:
            return False  # no evaluation within the interval: at once
        if self._coalesced is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # called off an event loop (a test's direct call): nothing to wait on
                return False
            self._coalesced = loop.call_later(self._next_evaluation - now, self._evaluate_coalesced)
        self.arrivals["coalesced"] += 1
        return True

    def _evaluate_coalesced(self) -> None:
        self._coalesced = None
        if not self._attached:
            return
        try:
            self._evaluate_arrivals("covering")
        except Exception:
            self._hook_failed("update_graph")

    def _evaluate_arrivals(self, counter: str) -> None:
        # an arrival's evaluation, at once or at an interval's end: it covers every arrival that waited
        self._cancel_coalesced()
        self.arrivals[counter] += 1
        self._evaluate_now(arrival=True)

    def _cancel_coalesced(self) -> None:
        if self._coalesced is not None:
            self._coalesced.cancel()
            self._coalesced = None

    def _maybe_evaluate(self, now: float | None = None) -> None:
        if now is None:
            now = time.monotonic()
        if now >= self._next_evaluation:
            self._next_evaluation = now + self.evaluate_interval
            self.runtime.evaluate()

    def _p2p_event(self, key: Any, finish: str) -> None:
        self.p2p.poll()
        if finish in ("memory", "released", "erred", "forgotten"):
            self.p2p.finished(key)  # a barrier: what it planned and was not measured leaves

    def _tick(self) -> None:
        """Between events, while P2P is active: the bytes its workers reported since."""
        if not self._attached or not self.p2p.active:
            return
        try:
            if self.p2p.poll():
                self._maybe_evaluate()
        except Exception:
            self._hook_failed("tick")

    # The sample of the host and the workers' processes cost the scheduler's thread about 1 ms after an
    # idle gap with psutil (0.45 ms with asafe.core._procfs). Taken by the first read after its interval,
    # it fell on the evaluation of a graph's arrival whenever the scheduler had been idle that long (every
    # graph of an interactive session), and that evaluation runs before the graph's first task is sent
    # (docs/results/signals-s43). A periodic callback
    # on the event loop takes it every interval instead, between events; a read samples inline only
    # where the callback missed a whole interval (SystemSignals.driven). Idle for _SIGNALS_IDLE_S
    # (no evaluation: no graph, no task), the callback stops sampling, so that an idle cluster pays
    # nothing for it; the next arrival then samples inline, as before.
    def _drive_signals(self, system: Any) -> Any:
        """Sample ``system`` every interval on the event loop while the scheduler is active; returns the stop."""
        from tornado.ioloop import PeriodicCallback

        def sample() -> None:
            if not self._attached:
                return
            latest_evaluation = self._next_evaluation - self.evaluate_interval
            if time.monotonic() - latest_evaluation > _SIGNALS_IDLE_S:
                return
            try:
                system.sample()
            except Exception:
                self._hook_failed("signals")

        sampler = PeriodicCallback(sample, system.interval * 1000)
        sampler.start()
        system.driven = True

        def stop() -> None:
            sampler.stop()
            system.driven = False  # a runtime used again elsewhere samples on its reads, as before

        return stop

    def _worth_probing(self) -> bool:
        # A probe sends PROBE_FETCHES x _PROBE_BYTES over the link, in the graph's time. A graph that
        # plans fewer bytes than that (a reduction's partial sums, a map_overlap's halos) would pay more
        # for the probe than compression could save it: 16 MiB on the lo of a 0.06 s sum of random
        # floats took it to 0.19 s behind 1 Gbit/s (docs/results/workloads/probe-s38). Such a graph's
        # transfers of bandwidth-min-bytes or more measure the link themselves. A P2P operation's
        # inputs are often unsized at its arrival, and it moves a whole array: it is worth one.
        return self.p2p.pending or self.forecast.planned_bytes() >= PROBE_FETCHES * _PROBE_BYTES

    def _probe_soon(self) -> None:
        # Once per installation at most _MAX_PROBES times; the link is measured as
        # a transfer would be (asafe.schedulers.bandwidth.probe)
        if self._probing is not None or len(self.probes) >= _MAX_PROBES or len(self.scheduler.workers) < 2:
            return
        self._probing = asyncio.ensure_future(self._probe_link())

    async def _probe_link(self) -> None:
        try:
            record = await probe(self.scheduler, _PROBE_BYTES, _PROBE_TIMEOUT)
            self.probes.append(record)
            # remembered on the scheduler even where this installation ended while the probe ran
            # (a short graph's): the next one starts from it instead of probing again
            self.link.observe(record["bytes"], record["seconds"])
            if self._attached:
                self.runtime.evaluate()
        except Exception as exc:  # a worker without the handler, a timeout: the link stays unknown
            self.probes.append({"error": f"{type(exc).__name__}: {exc}"})
            count_fallback(self, "link-probe", f"the link probe failed ({type(exc).__name__}: {exc}); the "
                           "link stays unknown until a transfer is measured")
        finally:
            self._probing = None

    def _settle(self) -> None:
        # Nothing is scheduled any more: neither may the tracker count anything.
        # It can only disagree after a hook raised between the two (the entry
        # gone, its tracker event not made); set it right once per phase end.
        # Planned transfers are the forecast's and stay: outputs in memory may
        # still wait for consumers that are not submitted yet. Only a failure
        # (a hook's, or a tracker's feed rejected) can make them disagree: the
        # check, which drains the event batch, waits for one (a drain per small
        # graph was a tenth of its hooks' cost; the next read drains anyway).
        self.runnable.clear()
        failures = (sum(self.error_counts.values()), sum(self.tracker.rejected.values()))
        if failures == self._settled_at:
            return
        self._settled_at = failures
        if self.tracker.scheduled_tasks() or self.reuse.scheduled:
            self.tracker.clear_scheduled(planned=False)
            self.reuse.clear_scheduled()
            self.repairs += 1

    def _type_of(self, ts: "TaskState", ready: bool = True) -> Scheduled:
        annotations = ts.annotations
        if annotations:
            annotated, reuse = annotations.get(ANNOTATION), self._reuse_of(annotations)
        else:  # most tasks: no annotation, no declared reuse
            annotated = reuse = None
        return Scheduled(resolve_type(annotated, ts.run_spec, self.default_type), ts.prefix.name, reuse, ready)

    def _reuse_of(self, annotations: Any) -> float | None:
        # A bad annotation is the user's, made with dask.annotate directly
        # (asafe.reuse validates): warn once, count, and schedule as undeclared.
        try:
            return declared_reuse(annotations)
        except (TypeError, ValueError) as exc:
            self.ignored_annotations += 1
            if self.ignored_annotations == 1:
                logger.warning("asafe: ignored an asafe_reuse annotation (%s); the task counts as declaring no "
                               "reuse. Counted in the plugin's ignored_annotations.", exc)
            return None

    def _enter(self, key: Any, ready: bool = True) -> Scheduled:
        ts = self.scheduler.tasks[key]
        entry = self._scheduled[key] = self._type_of(ts, ready)
        self._events.add(entry.task_type, entry.prefix, prior=self._prior(ts.prefix))
        self.reuse.add(entry.reuse)
        if self.expected_transfers:
            # its output's planned transfers count with its compute, ready or in the wave about to run
            self.forecast.activate(ts)
        if ready:
            if self._count_runnable:
                self.runnable.add(entry.task_type)
            self._became_ready(ts)
        return entry

    def _prior(self, prefix: Any) -> float | None:
        # What the scheduler learned of a prefix, until measured here: read once
        # per prefix and graph (the mean is a division and a property per read,
        # and the tracker takes a prior only for a group it has not measured).
        name = prefix.name
        try:
            return self._priors[name]
        except KeyError:
            learned = self._priors[name] = learned_duration(prefix)
        if learned is None:
            count_fallback(self, "prefix-duration", "TaskPrefix's durations are missing: a new installation "
                           "counts a prefix at the default duration until it measures one")
        return learned

    def _became_ready(self, ts: "TaskState") -> None:
        # Its dependents may now be the next wave (its own planned transfers
        # count since _enter). Without the wave, a phase whose first step waits
        # on one task (a vector every panel reads) showed that task's compute
        # against the transfers planned for its output: communication, for as
        # long as the task ran, in a phase that computes.
        if self.next_wave:
            for dts in ts.dependents:
                self._join_wave(dts)

    # The single-dependency tasks one step behind a task that joins the wave
    # join with it: each waits on nothing but that task, so it runs as soon as
    # that one ends, in the same phase. Without it, the wave stopped one step short of
    # where a graph's transfers start: the misaligned difference of the
    # workloads suite slices its inputs (ready), splits the slices and merges
    # the pieces (each of one dependency), and only then subtracts pieces that
    # live on different workers; its arrival counted the slices and the splits,
    # no transfer, and compression came on 0.13-0.57 s into the run
    # (docs/results/workloads/1gbit-s37). Only single-dependency consumers
    # join this way, so a graph's reductions and fan-ins still count when
    # their inputs are ready; one step only (a longer chain's next tasks join
    # as the wave advances). The edges this plans are of outputs not made yet,
    # sized by what crossed of their key prefix (forecast.py, _served).
    # A P2P barrier neither joins a chain nor continues one: a P2P operation's
    # unpack tasks each depend on its barrier alone, and chained behind it
    # they counted as compute the seconds they wait for shards, so every P2P
    # rechunk and transpose of the suite read compute at its arrival and ran
    # uncompressed (docs/results/workloads/1gbit-s37, chain-compressible);
    # chained itself, the barrier read compute the same way. Both join the
    # wave by the rule before the chain: once their dependencies are ready.
    def _join_wave(self, ts: "TaskState") -> None:
        """Count waiting ``ts`` as scheduled if every dependency is ready, running or in memory, or its one
        dependency is in the wave and neither is a P2P barrier; then its single-dependency dependents, one
        step."""
        if not self._joins_wave(ts):
            return
        self._enter(ts.key, ready=False)
        # one step (the next ones join as the wave advances), the last first, as the compiled twin walks them
        for dts in reversed([dts for dts in ts.dependents if len(dts.dependencies) == 1]):
            if self._joins_wave(dts):
                self._enter(dts.key, ready=False)

    def _joins_wave(self, ts: "TaskState") -> bool:
        if ts.key in self._scheduled or ts.run_spec is None or ts.state not in ("waiting", "released"):
            return False
        dependencies = ts.dependencies
        if len(dependencies) > _WAVE_FAN_IN:
            return False  # O(fan-in) per dependency edge would be quadratic: counted when ready
        scheduled = self._scheduled
        for dts in dependencies:
            if dts.state != "memory":
                entry = scheduled.get(dts.key)
                if entry is None or not (entry.ready or (len(dependencies) == 1 and not is_barrier(dts)
                                                         and not is_barrier(ts))):
                    return False
        return True

    def _discard(self, key: Any, entry: Scheduled) -> None:
        self._events.flush()  # its add may still be in the batch
        self.tracker.discard(entry.task_type, entry.prefix)
        self.reuse.remove(entry.reuse, finished=False)
        ts = self.scheduler.tasks.get(key)
        if ts is not None:
            self.forecast.discarded(ts)
        self.forecast.released(key)

    def _finish(self, key: Any, entry: Scheduled | None, scheduled: bool, kwargs: dict) -> None:
        ts = self.scheduler.tasks.get(key)
        if entry is None:
            if ts is None:
                return
            entry = self._type_of(ts)
        task_type, prefix, declared = entry.task_type, entry.prefix, entry.reuse
        if scheduled:
            self.reuse.remove(declared, finished=True)
        else:
            self.reuse.finished(declared)
        compute = 0.0
        transfers = None
        for startstop in kwargs.get("startstops") or ():
            action = startstop.get("action")
            if action == "compute":
                compute += startstop["stop"] - startstop["start"]
            elif action == "transfer":
                if transfers is None:
                    transfers = []
                transfers.append(startstop)
        sizes = (kwargs.get("metadata") or {}).get(METADATA_KEY)  # [logical, wire] if the output reports them
        if task_type == COMMUNICATION and self.transfer_correction and sizes:
            compute = uncompressed_seconds(compute, sizes[0], sizes[1], self.link())
        if scheduled:
            self._events.finish(task_type, prefix, compute)
        else:
            self.tracker.finish(task_type, prefix, compute, scheduled=False)  # drains the batch first
        if ts is not None and self.p2p.pending:
            self.p2p.input_finished(ts)
        if ts is not None:
            nbytes = kwargs.get("nbytes")
            logical = sizes[0] if sizes else (nbytes if nbytes is not None and nbytes >= 0 else None)
            self.forecast.finished(ts, kwargs.get("worker"), logical)
        if transfers and ts is not None:
            self._charge_transfers(ts, prefix, transfers)

    def _charge_transfers(self, ts: "TaskState", prefix: str, transfers: list) -> None:
        """Learn a finished task's measured transfers (its ``startstops`` of action "transfer")."""
        share, rest = self._transfer_seconds(ts, transfers)
        if share > 0:
            # This task's share of the batches is learned as its transfer duration;
            # the rest of the batches' time (the siblings' shares) is measured work
            # too, so that the window sums every byte moved exactly once. (What
            # was expected of these transfers was planned by the forecast, and
            # left the scheduled view when this task finished.)
            # Both go through the event batch, in their place among the finishes: a
            # drain of the batch for each measured transfer cost about a fifth of
            # the hooks on small graphs (docs/results/scheduler-s34).
            self._events.measured(COMMUNICATION, TRANSFER_PREFIX + prefix, share, rest if rest > 0 else 0.0)

    def _transfer_seconds(self, ts: "TaskState", transfers: list) -> tuple[float, float]:
        """This task's share of its measured transfers, and the rest, in corrected seconds.

        A worker fetches the dependencies it lacks from one peer in batches and
        attaches each batch's time to one dependent task; the worker plugin notes
        how many tasks the batch served (``asafe-tasks``), and each gets an equal share.
        """
        share = rest = 0.0
        stats = self.transfer_stats
        for startstop in transfers:
            seconds = max(startstop["stop"] - startstop["start"], 0.0)
            wire = startstop.get(STARTSTOP_BYTES)
            if wire is None:  # no worker plugin saw this transfer: attribute by dependencies
                count_fallback(self, "unannotated-transfer", "a transfer arrived without the worker plugin's "
                          "byte annotation; it is charged by its dependencies' sizes")
                wire, extra = self._dependency_bytes(ts, startstop.get("source"))
                stats["unannotated"] += 1
            else:
                extra = startstop.get(STARTSTOP_EXTRA, 0)
            if not startstop.get(STARTSTOP_CODEC):  # a codec's time in it: no measure of the link (LinkEstimate.observe)
                self.link.observe(wire, seconds)
            corrected = seconds
            if self.transfer_correction and extra > 0:
                corrected = uncompressed_seconds(seconds, wire + extra, wire, self.link())
            stats["count"] += 1
            stats["seconds"] += seconds
            stats["corrected_seconds"] += corrected
            stats["wire_bytes"] += wire
            stats["logical_bytes"] += wire + extra
            served = max(int(startstop.get(STARTSTOP_TASKS, 1) or 1), 1)
            share += corrected / served
            rest += corrected - corrected / served
        return share, rest

    def _dependency_bytes(self, ts: Any, source_address: str | None) -> tuple[int, int]:
        """Wire bytes and bytes saved of ``ts``'s dependencies held by the source worker."""
        source = self.scheduler.workers.get(source_address)
        wire = extra = 0
        if source is None:
            return wire, extra
        for dts in ts.dependencies:
            if source in (dts.who_has or ()):
                metadata = dts.metadata
                sizes = metadata.get(METADATA_KEY) if metadata else None
                if sizes:
                    wire += sizes[1]
                    extra += max(sizes[0] - sizes[1], 0)
                else:
                    wire += max(dts.nbytes, 0)
        return wire, extra

    def _total_threads(self) -> int:
        return getattr(self.scheduler, "total_nthreads", 0) if self.scheduler is not None else 0

    def _worker_count(self) -> int:
        return len(self.scheduler.workers) if self.scheduler is not None else 1

    def _local_worker_pids(self) -> list[int]:
        """Processes of the workers on the scheduler's host (the run's own cpu load, see SystemSignals)."""
        scheduler = self.scheduler
        if scheduler is None:
            return []
        return [ws.pid for ws in list(scheduler.workers.values())
                if getattr(ws, "pid", None) and ws.host in self._local_hosts]

    def _scheduler_bandwidth(self) -> float | None:
        # The link estimate's last resort (see asafe.schedulers.bandwidth).
        bandwidth = getattr(self.scheduler, "bandwidth", None)
        if bandwidth is None:
            count_fallback(self, "scheduler.bandwidth", "the scheduler has no bandwidth estimate; transfers "
                           "are not corrected until one is measured")
        return bandwidth

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        """A worker left: stop pushing to it; drop entries of tasks no longer scheduled.

        The scheduler has already released the tasks that were processing there
        (``processing -> released`` reached :meth:`transition`), so the sweep
        normally finds nothing; it is O(scheduled tasks), once per lost worker.
        """
        try:
            self._ready.discard(worker)
            tasks = scheduler.tasks
            for key, entry in list(self._scheduled.items()):
                ts = tasks.get(key)
                if ts is None or (ts.state not in _ACTIVE and ts.state != "waiting"):
                    del self._scheduled[key]
                    if entry.ready and self._count_runnable:
                        self.runnable.remove(entry.task_type)
                    self._discard(key, entry)
            self._maybe_evaluate()
        except Exception:
            self._hook_failed("remove_worker")

    def add_worker(self, scheduler: Any, worker: str) -> None:
        """A worker joined. It receives the states when its plugin says hello (see the module docstring)."""

    # states to workers --------------------------------------------------------------
    def _push(self, states: dict[str, Any], transitions: list) -> None:
        self._version += 1
        message = {
            "op": STATES_OP,
            "token": self.token,
            "version": self._version,
            "states": states,
            "time": transitions[-1].time if transitions else time.time(),
        }
        stream_comms = self.scheduler.stream_comms if self.scheduler is not None else {}
        for address in list(self._ready):
            comm = stream_comms.get(address)
            if comm is None:
                self._ready.discard(address)
                continue
            try:
                comm.send(message)
            except Exception:  # a closed stream: the scheduler removes that worker itself
                self._ready.discard(address)

    # handlers (RPC from workers and clients) ----------------------------------------------
    def hello(self, worker: str | None = None, token: str | None = None, host: Any = None,
              **kwargs: Any) -> dict[str, Any]:
        """A worker plugin's hello: mark it as a receiver, take its host's report, send the current states.

        Keyword arguments a later worker plugin may add are accepted and ignored.
        """
        if worker is not None and worker in self.scheduler.workers:
            self._ready.add(worker)
            if host is not None and hosts.receive_report(self, worker, host) and self._scheduled:
                self._maybe_evaluate()  # an installation while a graph runs: its hosts are known now
        return {"token": self.token, "version": self._version, "states": self.runtime.states, "time": time.time(),
                "watch_host": self._reads_reports(worker)}

    def _reads_reports(self, worker: str | None) -> bool:
        # whether the mode reads this worker's host from its reports (not where the scheduler runs):
        # then its worker plugin watches the host while wire compression is on (asafe.schedulers.hosts)
        ws = self.scheduler.workers.get(worker) if worker is not None else None
        return ws is not None and ws.host not in self._local_hosts

    def host_report(self, worker: str | None = None, token: str | None = None, report: Any = None,
                    **kwargs: Any) -> bool:
        """A worker's host report between heartbeats (its load moved while wire compression is on): taken,
        then the domains evaluated at once. Whether it was taken.

        Sent by the worker plugin's host watch (:class:`asafe.schedulers.hosts.HostWatch`), only when the
        load moved, so evaluating each costs no more than the change is worth.
        """
        if not self._attached or (token is not None and token != self.token):
            return False
        try:
            if not hosts.receive_report(self, worker, report):
                return False
            self.host_reports += 1
            self._evaluate_now(signals_changed=True)  # a toggle the host's load makes: the dwell's seconds
            return True
        except Exception:
            self._hook_failed("host_report")
            return False

    def set_state(self, name: str, state: Any) -> dict[str, Any]:
        """Force a state (scripts, benchmarks); it is recorded and pushed like any transition."""
        self.runtime.set_state(name, state)
        return {"states": self.runtime.states, "version": self._version}

    def uninstall(self) -> dict[str, Any]:
        """Detach and remove this plugin from the scheduler."""
        self.detach()
        if self.scheduler is not None and self.scheduler.plugins.get(NAME) is self:
            self.scheduler.remove_plugin(NAME)
        logger.info("asafe: scheduler plugin uninstalled")
        return {"uninstalled": True, "token": self.token}

    def info(self, what: list[str] | None = None) -> dict[str, Any]:
        """What a :class:`~asafe.schedulers.distributed.RuntimeHandle` reads, as plain data (see
        :func:`asafe.schedulers.observe.plugin_info`)."""
        from .observe import plugin_info

        return plugin_info(self, what)

    @property
    def receivers(self) -> frozenset:
        """The workers that said hello: the state pushes go to them."""
        return frozenset(self._ready)

    @property
    def version(self) -> int:
        """The version of the last state push (0 before the first)."""
        return self._version

    def scheduled_count(self) -> tuple[int, int]:
        """Tasks counted as scheduled, and how many of them are in the next wave (O(scheduled tasks))."""
        return len(self._scheduled), sum(1 for entry in self._scheduled.values() if not entry.ready)

    # failures -----------------------------------------------------------------------
    def _hook_failed(self, hook: str) -> None:
        # Log the first failure of each hook with its traceback, then only count:
        # a hook failing on every event would otherwise flood the scheduler's log.
        import sys

        exc = sys.exc_info()[1]
        self.plugin_errors.append(PluginError(time.time(), hook, f"{type(exc).__name__}: {exc}"))
        self.error_counts[hook] = self.error_counts.get(hook, 0) + 1
        if hook not in self._failed_hooks:
            self._failed_hooks.add(hook)
            logger.exception("asafe: the scheduler plugin's %s hook raised; scheduling goes on", hook)

    def __repr__(self) -> str:
        return f"<AdaptiveSchedulerPlugin {self.token[:8]} {self.runtime!r}>"
