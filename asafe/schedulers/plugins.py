"""The scheduler and worker plugins that run asafe on a Dask cluster.

:func:`asafe.install` registers one :class:`AdaptiveSchedulerPlugin` and one
:class:`AdaptiveWorkerPlugin` (both named ``"asafe"``); ``dask scheduler
--preload asafe.preload`` does the same from configuration alone (see
:mod:`asafe.preload`). This module explains what each does.

Scheduler events -> the mode tracker
------------------------------------
A task is *scheduled* while it is ready or running (the scheduler holds it in
one of the states ``queued``, ``no-worker`` or ``processing``) or in the *next
wave*: waiting, with every dependency ready, running or in memory, so that it
runs as soon as the tasks now scheduled finish. The scheduler plugin keeps the
type and key prefix of exactly those tasks (a dict bounded by the scheduled
set, which the scheduler holds anyway) and maps every transition to O(1)
tracker events (plus, when a task becomes ready, one check per dependency edge
of its dependents, to find the next wave):

* ``update_graph`` (a graph or a batch of futures arrives, before its first
  transition): ``add(type, prefix)`` for each new task whose dependencies are all
  in memory -- it is ready now -- and for the next wave behind them; the
  transfers the graph will make are planned (below); then the domains are
  evaluated, so that a state decided here reaches every worker's stream ahead
  of the graph's first tasks;
* ``waiting -> queued``, ``waiting -> no-worker``, ``waiting -> processing``:
  ``add(type, prefix)`` -- the task is ready (unless counted at submission or in
  the next wave), and its dependents may join the next wave;
* ``queued -> processing``, ``no-worker -> processing``: nothing (already
  counted);
* ``processing -> memory``: ``finish(type, prefix, compute seconds)``, and the
  measured transfers (below);
* ``processing``, ``queued`` or ``no-worker`` ``-> released / erred / forgotten``:
  ``discard(type, prefix)`` -- it left without a measurement;
* ``remove_worker``: the scheduler has already moved the lost worker's tasks
  ``processing -> released`` (discarded above); a sweep drops any entry whose task
  is no longer scheduled;
* ``restart``: ``clear_scheduled()``.

*Why the next wave.* The forecast plans the transfers an output will make while
its producer is ready or running. A phase that begins with one task making a
vector that every panel reads would otherwise show that one task's compute
against the transfers planned for its output -- communication -- for as long as
it runs, in a phase that computes; counting the panels waiting on it balances
the two. One wave only, so a large graph shows the work about to run, not all
of it; a task with more than 32 dependencies joins when it is ready (checking
each would cost O(fan-in) per edge). ``asafe.distributed.next-wave: false``
counts ready tasks only.

A group (type, prefix) the tracker has not measured yet counts at the duration
Dask has learned for that prefix (``TaskPrefix.duration_average``,
:meth:`~asafe.ModeTracker.prime`), so that a runtime installed anew on a
scheduler that has run the prefix does not start from the 1 ms default.

The type is resolved by :func:`asafe.core.types.resolve_type`: the ``asafe_type``
annotation (``ts.annotations``), else the :func:`asafe.typed` attribute of the
task's function (``ts.run_spec``, fused subgraphs included), else the runtime's
default type. The measured durations come from the ``startstops`` that reach
``transition(key, "processing", "memory", ..., startstops=..., nbytes=...,
typename=..., metadata=..., worker=...)``: ``compute`` intervals are the task's
own work; ``transfer`` intervals (``{"action": "transfer", "start", "stop",
"source"}``, attached by the worker to a task whose dependencies it fetched) are
communication and are recorded as a ``communication`` task of the group
``transfer-<prefix>``.

*Expected transfers.* When a graph arrives the scheduler already knows which
outputs will move: a pinned consumer of an output held or made elsewhere, a
gather of outputs spread over the workers. :class:`~asafe.schedulers.forecast.TransferForecast`
plans them in the tracker's scheduled view (:meth:`asafe.ModeTracker.plan`) as
*logical bytes / bandwidth*, uncompressed-equivalent seconds, while their
producer is ready, running or holding the output; an output whose consumers
are not submitted yet (futures submitted in two batches) is planned from what
earlier outputs of its key prefix did. A phase bound by inter-worker transfers
therefore shows as communication when its first producers are submitted, before
any of them has run. ``asafe.distributed.expected-transfers: false`` turns the
forecast off (the mode then sees transfers once they are measured).

*Declared reuse.* A task built inside :func:`asafe.reuse` carries the annotation
``asafe_reuse`` (how many times its output is read); the plugin keeps the
declarations of the scheduled tasks, and of the last window of finished ones, in
a :class:`~asafe.core.reuse.DeclaredReuse` that every mode reads as the signal
``reuse`` -- known when the graph arrives, like the forecast. An annotation that
is not a number >= 1 is ignored (warned once, counted in ``ignored_annotations``).

Communication is therefore the explicitly typed ``communication`` tasks plus the
planned and the measured inter-worker transfers. ``tracker.finished`` counts
finished tasks plus measured transfers.

The correction: communication in uncompressed-equivalent bytes
---------------------------------------------------------------
Turning compression on shrinks the bytes that cross the network, so measured
transfers get shorter, the compute/communication ratio rises, and a plain
hysteresis would eventually switch compression off again -- after which the
transfers grow back, the ratio falls, compression turns on, and so on. The mode
must measure the *workload*, not the effect of the optimization on it.

The worker plugin records, for every task output that reports its sizes (an
object with ``logical_nbytes`` -- the dense-equivalent size -- and ``nbytes`` --
the wire size, or a list, tuple or dict of such objects), the pair
``[logical, wire]`` in the task's ``metadata`` (key ``"asafe-nbytes"``), which the
worker already ships to the scheduler with the ``task-finished`` message. On the
receiving side, a worker fetches what it lacks from a peer in *batches* and
attaches each batch's time to one dependent task as one ``transfer`` startstop;
when the batch lands (``flight -> memory``) the worker plugin finds that batch in
the worker's ``transfer_incoming_log`` and annotates its startstop with the
batch's bytes (``asafe-bytes``), the bytes compression saved in it
(``asafe-extra``: the sum of ``logical - wire`` of its values) and the number of
tasks it served (``asafe-tasks``). The scheduler then charges the transfer with
the time the *uncompressed* data would have taken::

    seconds_uncompressed = seconds_measured + (logical - wire) / bandwidth

where ``bandwidth`` is a moving average of ``bytes / seconds`` over transfers of
at least ``asafe.distributed.bandwidth-min-bytes`` (before the first, the
scheduler's own ``bandwidth`` estimate). Each task the batch served gets an equal
share as its learned transfer duration; the rest is measured work too, so the
window counts every byte once. (Without the worker's annotation the scheduler
falls back to the finished task's dependencies held by the source worker.)

A startstop reaches the scheduler only with the task that holds it, when that
task finishes. Some holders never do: a dependent released or stolen after its
data arrived, or the fetched key itself where it had no dependent here. Such a
holder's annotated transfers move to the worker plugin's ``unreported`` list
and leave with the next task that finishes on that worker, so that the bytes
they moved are still counted (charged to that task's transfers).

The correction is additive rather than a scale factor ``logical / wire``: a scale
factor would also multiply the fixed latency of small transfers (hundreds of
microseconds on a LAN) by the compression ratio. Uncompressed data
(``logical == wire``) is charged as measured. The same correction applies to the
duration of a task typed ``communication`` whose own output reports its sizes
(it shipped that output). With
``asafe.distributed.transfer-correction: false`` the measured seconds are used as
they are (the *naive* ratio; the test suite shows it flapping).

States: scheduler -> workers
----------------------------
The scheduler plugin subscribes to the runtime; every transition pushes
``{"op": "asafe-states", "token", "version", "states", "time"}`` through the
scheduler's batched stream to every worker that has said hello. The worker
plugin installs a stream handler for that op, and in ``setup`` asks the scheduler
for the current states with an RPC (``asafe_hello``); the scheduler marks that
worker as a receiver of pushes only then. A worker that joins later gets the
plugin from the scheduler on registration and says hello on arrival, so it starts
with the current states. The hello is needed because a stream message whose op
has no handler closes the worker's stream: the scheduler never pushes to a
worker before its handler exists, and on teardown the handler is replaced by a
no-op instead of being removed. Versions order the RPC reply and the stream (a
push that overtakes the hello reply wins); the ``token`` names one installation,
so a push of a replaced installation is ignored. :func:`asafe.is_on` on the
worker reads the local copy (:func:`asafe.schedulers.board.publish`): no round trip per call.
A push carries every state, so any later push repairs a lost one; and every
``AdaptiveWorkerPlugin.resync_interval`` seconds (2 s) each worker repeats its
hello, so that a lost *last* push is repaired within that bound
(``AdaptiveWorkerPlugin.repaired`` counts the repairs).

Failures
--------
Following ``distributed.diagnostics.plugin``, every hook takes ``**kwargs`` and
catches its own exceptions: the error is logged once per hook (then counted and
kept in :attr:`AdaptiveSchedulerPlugin.plugin_errors`), scheduling goes on, and
no optimization changes state because of it. A domain that raises is handled by
the runtime (logged, recorded in ``errors``, state kept).
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
import weakref
from collections import deque
from collections.abc import Mapping
from typing import Any, NamedTuple

import dask.config
from dask.sizeof import sizeof
from dask.utils import parse_bytes
from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin

from ..core.config import parse_boolean  # environment variables arrive as strings
from ..core.reuse import DeclaredReuse, declared_reuse
from ..core.runtime import AdaptiveRuntime
from ..core.types import ANNOTATION, COMMUNICATION, resolve_type
from . import board, wire
from .forecast import PrefixMemory, TransferForecast

__all__ = [
    "NAME",
    "METADATA_KEY",
    "AdaptiveSchedulerPlugin",
    "AdaptiveWorkerPlugin",
    "PluginError",
    "output_nbytes",
    "prefix_memory",
    "uncompressed_seconds",
]

logger = logging.getLogger("asafe")

#: Name of both plugins (one asafe installation per cluster).
NAME = "asafe"
#: Key of ``[logical, wire]`` output sizes in a task's metadata.
METADATA_KEY = "asafe-nbytes"
#: Stream op of state pushes (scheduler -> worker).
STATES_OP = "asafe-states"
#: Group prefix of transfers in the tracker: ("communication", "transfer-<prefix>").
TRANSFER_PREFIX = "transfer-"
#: Keys the worker plugin adds to a ``transfer`` startstop: the batch's bytes as
#: the worker counted them, and the bytes compression saved in it.
STARTSTOP_BYTES = "asafe-bytes"
STARTSTOP_EXTRA = "asafe-extra"
#: ... and the number of tasks on that worker the batch served.
STARTSTOP_TASKS = "asafe-tasks"
#: ... and, when wire-compression decoded frames of the batch, the codec's seconds
#: in the batch's time (both ends), which the link's measure leaves out.
STARTSTOP_CODEC = "asafe-codec"

# Scheduler states in which a task is ready or running.
_ACTIVE = frozenset({"queued", "no-worker", "processing"})
# Outputs that are containers are looked through up to this many items.
_MAX_ITEMS = 4096
# The bandwidth moving average weighs a new transfer this much.
_BANDWIDTH_WEIGHT = 0.25


class PluginError(NamedTuple):
    """A plugin hook that raised: logged, recorded, and scheduling went on."""

    time: float
    hook: str
    error: str


def output_nbytes(value: object) -> tuple[int, int] | None:
    """``(logical, wire)`` bytes of a task output that reports them, else ``None``.

    An object reports them with the attributes ``logical_nbytes`` (dense-equivalent
    size) and ``nbytes`` (size on the wire). Lists, tuples and dicts (values) are
    looked through one level deep; their items without ``logical_nbytes`` count
    their :func:`dask.sizeof.sizeof` for both.

    Examples
    --------
    >>> class Tile:
    ...     def __init__(self, logical, wire):
    ...         self.logical_nbytes, self.nbytes = logical, wire
    >>> output_nbytes(Tile(8000, 120))
    (8000, 120)
    >>> output_nbytes([Tile(8000, 120), Tile(8000, 8000)])
    (16000, 8120)
    >>> output_nbytes(b"plain bytes") is None
    True
    """
    logical = getattr(value, "logical_nbytes", None)
    if logical is not None:
        wire = getattr(value, "nbytes", None)
        return int(logical), int(logical if wire is None else wire)
    if isinstance(value, Mapping):
        items = value.values() if type(value) is dict else ()
    elif type(value) in (list, tuple):
        items = value
    else:
        return None
    if not items or len(items) > _MAX_ITEMS:
        return None
    total_logical = total_wire = 0
    reported = False
    for item in items:
        item_logical = getattr(item, "logical_nbytes", None)
        if item_logical is None:
            size = sizeof(item)
            total_logical += size
            total_wire += size
        else:
            reported = True
            item_wire = getattr(item, "nbytes", None)
            total_logical += int(item_logical)
            total_wire += int(item_logical if item_wire is None else item_wire)
    return (total_logical, total_wire) if reported else None


def uncompressed_seconds(seconds: float, logical: float, wire: float, bandwidth: float) -> float:
    """The time a transfer would have taken with the data uncompressed.

    ``seconds + (logical - wire) / bandwidth``: the measured time plus the bytes
    that compression saved, at the measured bandwidth. Uncompressed data
    (``logical <= wire``) or an unknown bandwidth leave ``seconds`` unchanged.

    Examples
    --------
    >>> uncompressed_seconds(0.001, logical=8_000_000, wire=80_000, bandwidth=1e9)
    0.00892
    >>> uncompressed_seconds(0.010, logical=5_000, wire=5_000, bandwidth=1e9)
    0.01
    """
    if logical <= wire or not bandwidth > 0:
        return seconds
    return seconds + (logical - wire) / bandwidth


_PREFIX_MEMORY: "weakref.WeakKeyDictionary[Any, PrefixMemory]" = weakref.WeakKeyDictionary()


def prefix_memory(scheduler: Any) -> PrefixMemory:
    """The per-prefix sizes that every asafe installation on ``scheduler`` learns into and starts from.

    It lives as long as the scheduler object, as Dask's own per-prefix durations do.
    """
    memory = _PREFIX_MEMORY.get(scheduler)
    if memory is None:
        memory = _PREFIX_MEMORY[scheduler] = PrefixMemory()
    return memory


def _settings() -> dict[str, Any]:
    get = dask.config.get
    return {
        "transfer_correction": parse_boolean(get("asafe.distributed.transfer-correction", True)),
        "expected_transfers": parse_boolean(get("asafe.distributed.expected-transfers", True)),
        "next_wave": parse_boolean(get("asafe.distributed.next-wave", True)),
        "bandwidth_min_bytes": parse_bytes(get("asafe.distributed.bandwidth-min-bytes", "64 KiB")),
        "record_sizes": parse_boolean(get("asafe.distributed.record-sizes", True)),
    }


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
        running or in memory) as scheduled, see the module docstring. Default
        ``asafe.distributed.next-wave``.
    bandwidth_min_bytes : int, optional
        Smallest transfer that updates the bandwidth estimate. Default
        ``asafe.distributed.bandwidth-min-bytes``.
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
        register_worker_plugin: bool = False,
        token: str | None = None,
    ) -> None:
        if runtime is None:
            runtime = AdaptiveRuntime()
        if not isinstance(runtime, AdaptiveRuntime):
            raise TypeError(f"AdaptiveSchedulerPlugin needs an asafe.AdaptiveRuntime, got {type(runtime).__name__}")
        defaults = _settings()
        self.runtime = runtime
        self.transfer_correction = defaults["transfer_correction"] if transfer_correction is None else bool(transfer_correction)
        self.expected_transfers = defaults["expected_transfers"] if expected_transfers is None else bool(expected_transfers)
        self.next_wave = defaults["next_wave"] if next_wave is None else bool(next_wave)
        self.bandwidth_min_bytes = int(defaults["bandwidth_min_bytes"] if bandwidth_min_bytes is None else bandwidth_min_bytes)
        self.register_worker_plugin = bool(register_worker_plugin)
        self.token = token or uuid.uuid4().hex
        self._reset()

    def _reset(self) -> None:
        self.scheduler: Any = None
        self.tracker = self.runtime.tracker
        self.default_type = self.runtime.default_type
        # key -> [type, prefix, declared reuse or None, ready]; ready False: the next wave
        self._scheduled: dict[Any, list] = {}
        self.reuse = DeclaredReuse(window=self.tracker.window)  # the mode's "reuse" signal
        self.ignored_annotations = 0  # asafe_reuse annotations that were not a number >= 1
        self.forecast = TransferForecast(self.tracker, self._bandwidth, self._worker_count, size=_logical_size)
        self._ready: set[str] = set()  # workers whose stream handler exists (said hello)
        self._version = 0
        self._unsubscribe: Any = None
        self._detach_signals: list = []
        self._memory: PrefixMemory | None = None
        self._local_hosts: frozenset = frozenset()  # this host's names, read in start() on the scheduler
        self._attached = False
        self.bandwidth: float | None = None  # bytes/s, moving average of measured transfers
        self.plugin_errors: deque[PluginError] = deque(maxlen=1000)
        self._failed_hooks: set[str] = set()
        # what crossed the network, as measured (wire) and as uncompressed (logical)
        self.transfer_stats = {"count": 0, "seconds": 0.0, "corrected_seconds": 0.0,
                               "wire_bytes": 0, "logical_bytes": 0, "unannotated": 0}
        self.fallbacks: dict[str, int] = {}  # distributed internals missing: see _fallback
        self.repairs = 0  # times the tracker was set right after a hook failed (see _settle)

    # pickling: the plugin travels to the scheduler as its settings and runtime
    def __getstate__(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "transfer_correction": self.transfer_correction,
            "expected_transfers": self.expected_transfers,
            "next_wave": self.next_wave,
            "bandwidth_min_bytes": self.bandwidth_min_bytes,
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
        self._memory = prefix_memory(scheduler)
        self._local_hosts = _local_hosts()
        self.forecast.share(self._memory)  # what earlier installations learned per prefix
        wire.enable()  # the codec, should a compressed frame be deserialized here (nothing is compressed)
        previous = scheduler.plugins.get(NAME)
        if isinstance(previous, AdaptiveSchedulerPlugin) and previous is not self:
            previous.detach()  # a new installation replaces the old one: events count once
        scheduler.handlers.update(
            {
                "asafe_hello": self.hello,
                "asafe_info": self.info,
                "asafe_set_state": self.set_state,
                "asafe_uninstall": self.uninstall,
            }
        )
        self._unsubscribe = self.runtime.subscribe(self._push)
        self._detach_signals = [self.runtime.add_signal("bandwidth", self._bandwidth),
                                self.runtime.add_signal("reuse", self.reuse)]
        system = self.runtime.system_signals
        if system is not None:
            self._detach_signals.append(system.watch(self._local_worker_pids))
        self._attached = True
        logger.info("asafe: scheduler plugin installed (%s)", self.runtime)
        if self.register_worker_plugin:
            from distributed.protocol.pickle import dumps

            await scheduler.register_worker_plugin(
                comm=None, plugin=dumps(AdaptiveWorkerPlugin(token=self.token)), name=NAME, idempotent=False
            )

    async def close(self) -> None:
        """The scheduler is closing: stop pushing."""
        self.detach()

    def detach(self) -> None:
        """Stop feeding the runtime and pushing states (used on uninstall and replacement)."""
        if not self._attached:
            return
        self._attached = False
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for detach_signal in self._detach_signals:
            detach_signal()
        self._detach_signals = []
        scheduler = self.scheduler
        if scheduler is not None:
            for op, handler in (("asafe_hello", self.hello), ("asafe_info", self.info),
                                ("asafe_set_state", self.set_state), ("asafe_uninstall", self.uninstall)):
                if scheduler.handlers.get(op) == handler:
                    del scheduler.handlers[op]
        self._ready.clear()
        self._scheduled.clear()
        self.reuse.clear_scheduled()
        self.forecast.clear()
        self.tracker.clear_scheduled()

    def restart(self, scheduler: Any, **kwargs: Any) -> None:
        """``client.restart()``: every scheduled task is gone."""
        try:
            self._scheduled.clear()
            self.reuse.clear_scheduled()
            self.forecast.clear()
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
        are all ready, running or in memory (one wave only; the rest count when
        they join it). The forecast plans the transfers their dependencies will
        make (see :mod:`asafe.schedulers.forecast`), then the domains are evaluated.
        """
        if not self._attached or not tasks:
            return
        try:
            known = scheduler.tasks
            new = []
            for key in tasks:
                ts = known.get(key)
                if (ts is not None and ts.run_spec is not None and ts.state in ("released", "waiting")
                        and key not in self._scheduled):
                    new.append(ts)
            if not new:
                return
            if self.expected_transfers:
                self.forecast.submitted(new)
            waiting = []
            for ts in new:
                if all(dts.state == "memory" for dts in ts.dependencies):
                    self._enter(ts.key)
                else:
                    waiting.append(ts)
            if self.next_wave:
                for ts in waiting:  # the dependents of tasks of earlier graphs still running
                    self._join_wave(ts)
            self.runtime.evaluate(arrival=True)
        except Exception:
            self._hook_failed("update_graph")

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
                elif not entry[3]:  # the next wave became ready: counted already
                    entry[3] = True
                    self._became_ready(self.scheduler.tasks[key])
            elif entry is not None:
                if finish == "waiting":
                    return  # counted at submission: it was ready then (see update_graph)
                del self._scheduled[key]
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
            self.runtime.maybe_evaluate()
        except Exception:
            self._hook_failed("transition")
            if not self._scheduled:
                self._settle()

    def _settle(self) -> None:
        # Nothing is scheduled any more: neither may the tracker count anything.
        # It can only disagree after a hook raised between the two (the entry
        # gone, its tracker event not made); set it right once per phase end.
        # Planned transfers are the forecast's and stay: outputs in memory may
        # still wait for consumers that are not submitted yet.
        if self.tracker.scheduled_tasks() or self.reuse.scheduled:
            self.tracker.clear_scheduled(planned=False)
            self.reuse.clear_scheduled()
            self.repairs += 1

    def _type_of(self, ts: Any) -> list:
        annotations = ts.annotations
        annotated = annotations.get(ANNOTATION) if annotations else None
        return [resolve_type(annotated, ts.run_spec, self.default_type), ts.prefix.name,
                self._reuse_of(annotations)]

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

    def _enter(self, key: Any, ready: bool = True) -> list:
        ts = self.scheduler.tasks[key]
        entry = self._type_of(ts)
        entry.append(ready)
        self._scheduled[key] = entry
        learned = getattr(ts.prefix, "duration_average", None)  # what Dask learned, until measured here
        if learned is None:
            _fallback(self, "prefix-duration", "TaskPrefix.duration_average is missing: a new installation "
                      "counts a prefix at the default duration until it measures one")
        self.tracker.add(entry[0], entry[1], prior=learned)
        self.reuse.add(entry[2])
        if ready:
            self._became_ready(ts)
        return entry

    def _became_ready(self, ts: Any) -> None:
        # Its output's planned transfers count from now, and its dependents may
        # now be the next wave. Without the wave, a phase whose first step waits
        # on one task (a vector every panel reads) showed that task's compute
        # against the transfers planned for its output: communication, for as
        # long as the task ran, in a phase that computes.
        if self.expected_transfers:
            self.forecast.activate(ts)
        if self.next_wave:
            for dts in ts.dependents:
                self._join_wave(dts)

    def _join_wave(self, ts: Any) -> None:
        """Count waiting ``ts`` as scheduled if every dependency is ready, running or in memory."""
        if ts.key in self._scheduled or ts.run_spec is None or ts.state not in ("waiting", "released"):
            return
        dependencies = ts.dependencies
        if len(dependencies) > _WAVE_FAN_IN:
            return  # O(fan-in) per dependency edge would be quadratic: counted when ready
        scheduled = self._scheduled
        for dts in dependencies:
            if dts.state != "memory":
                entry = scheduled.get(dts.key)
                if entry is None or not entry[3]:
                    return
        self._enter(ts.key, ready=False)

    def _discard(self, key: Any, entry: list) -> None:
        self.tracker.discard(entry[0], entry[1])
        self.reuse.remove(entry[2], finished=False)
        ts = self.scheduler.tasks.get(key)
        if ts is not None:
            self.forecast.discarded(ts)
        self.forecast.released(key)

    def _finish(self, key: Any, entry: list | None, scheduled: bool, kwargs: dict) -> None:
        ts = self.scheduler.tasks.get(key)
        if entry is None:
            if ts is None:
                return
            entry = self._type_of(ts)
        task_type, prefix, declared = entry[:3]
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
            compute = uncompressed_seconds(compute, sizes[0], sizes[1], self._bandwidth())
        self.tracker.finish(task_type, prefix, compute, scheduled=scheduled)
        if ts is not None:
            nbytes = kwargs.get("nbytes")
            logical = sizes[0] if sizes else (nbytes if nbytes is not None and nbytes >= 0 else None)
            self.forecast.finished(ts, kwargs.get("worker"), logical)
        share = rest = 0.0
        if transfers and ts is not None:
            share, rest = self._transfer_seconds(ts, transfers)
        if share > 0:
            # This task's share of the batches is learned as its transfer duration;
            # the rest of the batches' time (the siblings' shares) is measured work
            # too, so that the window sums every byte moved exactly once. (What
            # was expected of these transfers was planned by the forecast, and
            # left the scheduled view when this task finished.)
            self.tracker.finish(COMMUNICATION, TRANSFER_PREFIX + prefix, share, scheduled=False)
            if rest > 0:
                self.tracker.observe(COMMUNICATION, rest)

    def _transfer_seconds(self, ts: Any, transfers: list) -> tuple[float, float]:
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
                _fallback(self, "unannotated-transfer", "a transfer arrived without the worker plugin's "
                          "byte annotation; it is charged by its dependencies' sizes")
                wire, extra = self._dependency_bytes(ts, startstop.get("source"))
                stats["unannotated"] += 1
            else:
                extra = startstop.get(STARTSTOP_EXTRA, 0)
            # The link is measured without the wire codec's time: a compressed
            # batch's time includes compressing and decompressing, so its wire
            # bytes per second would read low and keep wire-compression on by its
            # own effect. (Floored at a tenth of the batch: an estimate of the
            # codec's seconds above the batch's own means a link faster than the
            # codec, which the floor still reads as fast.)
            link_seconds = max(seconds - float(startstop.get(STARTSTOP_CODEC, 0.0) or 0.0), 0.1 * seconds)
            if wire >= self.bandwidth_min_bytes and link_seconds > 0:
                sample = wire / link_seconds
                self.bandwidth = sample if self.bandwidth is None else (
                    (1 - _BANDWIDTH_WEIGHT) * self.bandwidth + _BANDWIDTH_WEIGHT * sample
                )
                if self._memory is not None:
                    self._memory.bandwidth = self.bandwidth
            corrected = seconds
            if self.transfer_correction and extra > 0:
                corrected = uncompressed_seconds(seconds, wire + extra, wire, self._bandwidth())
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

    def _worker_count(self) -> int:
        return len(self.scheduler.workers) if self.scheduler is not None else 1

    def _local_worker_pids(self) -> list[int]:
        """Processes of the workers on the scheduler's host (the run's own cpu load, see SystemSignals)."""
        scheduler = self.scheduler
        if scheduler is None:
            return []
        return [ws.pid for ws in list(scheduler.workers.values())
                if getattr(ws, "pid", None) and ws.host in self._local_hosts]

    def _bandwidth(self) -> float:
        # The link's wire bytes per second (the ``bandwidth`` signal): measured
        # transfers first; then what an earlier installation on this scheduler
        # measured; before any, the scheduler's own estimate: the configured
        # ``distributed.scheduler.bandwidth`` (100 MB/s by default: a slow link)
        # until the workers' heartbeats report theirs. Theirs count logical bytes
        # and the codec's time, which is why the measured one comes first.
        if self.bandwidth:
            return self.bandwidth
        remembered = self._memory.bandwidth if self._memory is not None else None
        if remembered:
            return remembered
        bandwidth = getattr(self.scheduler, "bandwidth", None)
        if bandwidth is None:
            _fallback(self, "scheduler.bandwidth", "the scheduler has no bandwidth estimate; transfers "
                      "are not corrected until one is measured")
            return 0.0
        return float(bandwidth or 0)

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
                    self._discard(key, entry)
            self.runtime.maybe_evaluate()
        except Exception:
            self._hook_failed("remove_worker")

    def add_worker(self, scheduler: Any, worker: str) -> None:
        """A worker joined. It receives the states when its plugin says hello (see the module docstring)."""

    # states to workers --------------------------------------------------------------
    def _push(self, states: dict[str, bool], transitions: list) -> None:
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
    def hello(self, worker: str | None = None, token: str | None = None) -> dict[str, Any]:
        """A worker plugin's hello: mark it as a receiver and send the current states."""
        if worker is not None and worker in self.scheduler.workers:
            self._ready.add(worker)
        return {"token": self.token, "version": self._version, "states": self.runtime.states, "time": time.time()}

    def set_state(self, name: str, state: bool) -> dict[str, Any]:
        """Force a state (scripts, benchmarks); it is recorded and pushed like any transition."""
        self.runtime.set_state(name, bool(state))
        return {"states": self.runtime.states, "version": self._version}

    def uninstall(self) -> dict[str, Any]:
        """Detach and remove this plugin from the scheduler."""
        self.detach()
        if self.scheduler is not None and self.scheduler.plugins.get(NAME) is self:
            self.scheduler.remove_plugin(NAME)
        logger.info("asafe: scheduler plugin uninstalled")
        return {"uninstalled": True, "token": self.token}

    def info(self, what: list[str] | None = None) -> dict[str, Any]:
        """What a :class:`~asafe.schedulers.distributed.RuntimeHandle` reads, as plain data."""
        what = set(what or ("states", "mode"))
        rt = self.runtime
        out: dict[str, Any] = {"token": self.token}
        if "states" in what:
            out["states"] = rt.states
        if "mode" in what:
            out["mode"] = _mode_data(rt.mode)
        if "history" in what:
            out["history"] = [[t.time, t.optimization, t.old, t.new, *_mode_data(t.mode)] for t in rt.history]
        if "timeline" in what:
            out["timeline"] = [[when, *_mode_data(mode)] for when, mode in rt.timeline]
        if "errors" in what:
            out["errors"] = [list(e) for e in rt.errors]
        if "tracker" in what:
            tracker = rt.tracker
            out["tracker"] = {
                "finished": tracker.finished,
                "scheduled": tracker.scheduled_work(),
                "measured": tracker.measured_work(),
                "tasks": len(self._scheduled),
                "next_wave": sum(1 for entry in self._scheduled.values() if not entry[3]),
                "rejected": dict(tracker.rejected),
            }
        if "fallbacks" in what:
            out["fallbacks"] = dict(self.fallbacks)
        if "plugin" in what:
            out["plugin"] = {
                "workers": sorted(self._ready),
                "version": self._version,
                "bandwidth": self.bandwidth,
                "transfer_correction": self.transfer_correction,
                "expected_transfers": self.expected_transfers,
                "transfers": dict(self.transfer_stats),
                "forecast": {"planned_seconds": self.forecast.planned, "outputs": len(self.forecast),
                             "output_bytes": dict(self.forecast.output_bytes),
                             "shipped": dict(self.forecast.shipped)},
                "errors": [list(e) for e in self.plugin_errors],
                "fallbacks": dict(self.fallbacks),
                "repairs": self.repairs,
                "reuse": {"value": self.reuse.value, "scheduled": self.reuse.scheduled,
                          "ignored_annotations": self.ignored_annotations},
            }
        return out

    # failures -----------------------------------------------------------------------
    def _hook_failed(self, hook: str) -> None:
        # Log the first failure of each hook with its traceback, then only count:
        # a hook failing on every event would otherwise flood the scheduler's log.
        import sys

        exc = sys.exc_info()[1]
        self.plugin_errors.append(PluginError(time.time(), hook, f"{type(exc).__name__}: {exc}"))
        if hook not in self._failed_hooks:
            self._failed_hooks.add(hook)
            logger.exception("asafe: the scheduler plugin's %s hook raised; scheduling goes on", hook)

    def __repr__(self) -> str:
        return f"<AdaptiveSchedulerPlugin {self.token[:8]} {self.runtime!r}>"


#: Largest number of dependencies of a task counted in the next wave (see
#: AdaptiveSchedulerPlugin._join_wave); a wider task counts when it is ready.
_WAVE_FAN_IN = 32


def _local_hosts() -> frozenset:
    """Names and addresses of this host, as a worker's ``host`` may read."""
    import socket

    import psutil

    names = {"127.0.0.1", "::1", "localhost", socket.gethostname()}
    try:
        for addresses in psutil.net_if_addrs().values():
            names.update(a.address for a in addresses if a.family in (socket.AF_INET, socket.AF_INET6))
    except Exception:  # pragma: no cover - psutil without access to the interfaces
        pass
    return frozenset(names)


def _logical_size(ts: Any) -> float:
    """Logical (uncompressed-equivalent) bytes of a task output in memory."""
    metadata = ts.metadata
    sizes = metadata.get(METADATA_KEY) if metadata else None
    return float(sizes[0]) if sizes else float(max(ts.nbytes, 0))


def _mode_data(mode: Any) -> list:
    return [mode.shares, mode.signals]


class AdaptiveWorkerPlugin(WorkerPlugin):
    """Keeps a worker's :func:`asafe.is_on` answers current, and reports output sizes.

    Parameters
    ----------
    token : str, optional
        The installation whose pushes this worker accepts (default: the first it
        hears from).
    record_sizes : bool, optional
        Record ``[logical, wire]`` sizes of task outputs in the task metadata
        (see the module docstring). Default ``asafe.distributed.record-sizes``.

    Attributes
    ----------
    receipts : deque of (version, decision time, arrival time)
        One entry per state update applied on this worker (``time.time()``
        seconds; the difference is the propagation delay on one host).
    """

    name = NAME
    idempotent = False
    #: Seconds between two resyncs: the worker asks the scheduler for the current
    #: states (the hello RPC, a few hundred bytes), so that a lost push is repaired
    #: within this bound (pushes carry every state, so any later push repairs too).
    resync_interval = 2.0

    def __init__(self, token: str | None = None, record_sizes: bool | None = None) -> None:
        self.token = token
        self.record_sizes = _settings()["record_sizes"] if record_sizes is None else bool(record_sizes)
        self._reset()

    def _reset(self) -> None:
        self.worker: Any = None
        self.version = -1
        self.receipts: deque[tuple[int, float, float]] = deque(maxlen=100_000)
        self._hello_task: asyncio.Future | None = None
        self._resync_task: asyncio.Future | None = None
        self.repaired = 0  # resyncs that found this worker behind (a push was lost)
        self._orphaned = False  # the scheduler has no asafe plugin
        self._failed_hooks: set[str] = set()
        self._published = False
        self._batch: tuple[dict, dict | None] | None = None  # the last received batch and its startstop
        #: Annotated transfers whose task left this worker without reporting; they
        #: leave with the next task that finishes here (see the module docstring).
        self.unreported: list[dict] = []
        self.fallbacks: dict[str, int] = {}  # distributed internals missing: see _fallback

    def __getstate__(self) -> dict[str, Any]:
        return {"token": self.token, "record_sizes": self.record_sizes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    async def setup(self, worker: Any) -> None:
        """Install the stream handler, then say hello (now if registered, else once registered)."""
        from distributed.worker import WORKER_ANY_RUNNING

        self.worker = worker
        wire.enable()  # wire-compression's serializers and codec (asafe.schedulers.wire)
        worker.stream_handlers[STATES_OP] = self.receive
        if worker.status in WORKER_ANY_RUNNING:
            await self._hello()  # install() returns with the states in place
        else:  # a --preload runs before the worker has registered with its scheduler
            self._hello_task = asyncio.ensure_future(self._hello_when_registered())
        self._resync_task = asyncio.ensure_future(self._resync())

    def teardown(self, worker: Any) -> None:
        """Stop listening (a no-op handler stays: a late push must not close the stream)."""
        for task in (self._hello_task, self._resync_task):
            if task is not None:
                task.cancel()
        if worker.stream_handlers.get(STATES_OP) == self.receive:
            worker.stream_handlers[STATES_OP] = _ignore
        if self._published:
            board.clear()
            self._published = False

    async def _hello_when_registered(self) -> None:
        from distributed.core import Status
        from distributed.worker import WORKER_ANY_RUNNING

        worker = self.worker
        while worker.status not in WORKER_ANY_RUNNING:
            if worker.status in (Status.closing, Status.closed, Status.failed):
                return
            await asyncio.sleep(0.05)
        await self._hello()

    async def _resync(self) -> None:
        from distributed.core import Status
        from distributed.worker import WORKER_ANY_RUNNING

        while True:
            await asyncio.sleep(self.resync_interval)
            status = self.worker.status
            if status in (Status.closing, Status.closed, Status.failed) or self._orphaned:
                return
            if status in WORKER_ANY_RUNNING and self.version >= 0:
                if await self._hello(quiet=True):  # the reply was newer than what this worker had
                    self.repaired += 1
                    logger.info("asafe: worker %s was behind (a state push was lost); resynced to version %d",
                                self.worker.address, self.version)

    async def _hello(self, quiet: bool = False) -> bool:
        """Ask the scheduler for the current states; whether they were newer than this worker's."""
        try:
            reply = await self.worker.scheduler.asafe_hello(worker=self.worker.address, token=self.token)
        except Exception as exc:
            if not quiet:
                logger.warning("asafe: worker %s could not reach the asafe scheduler plugin: %s",
                               self.worker.address, exc)
            return False
        if not reply:  # the scheduler has no asafe plugin (it logged "No handler asafe_hello")
            self._orphaned = True  # the resync stops: no hello every few seconds to log "No handler"
            if not quiet:
                logger.warning(
                    "asafe: the scheduler of worker %s has no asafe plugin; asafe.is_on() answers False "
                    "(start the scheduler with --preload asafe.preload or call asafe.install)",
                    self.worker.address,
                )
            return False
        return self._apply(reply["token"], reply["version"], reply["states"], reply["time"])

    def receive(self, token: str | None = None, version: int = 0, states: dict | None = None,
                time: float | None = None, **kwargs: Any) -> None:
        """Stream handler of state pushes; never raises (a raise would close the stream)."""
        try:
            self._apply(token, version, states or {}, time)
        except Exception:
            self._hook_failed("receive")

    def _apply(self, token: str | None, version: int, states: dict, sent: float | None) -> bool:
        if self.token is None:
            self.token = token
        elif token != self.token:
            return False  # a push of a replaced installation
        if version <= self.version:
            return False  # older than what this worker has (a hello reply overtaken by a push)
        self.version = version
        board.publish(states)
        self._published = True
        self.receipts.append((version, sent or 0.0, _now()))
        return True

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        """Record output sizes (``executing -> memory``) and received bytes (``flight -> memory``).

        A task released before it reported gives up its annotated transfers; the
        next task to finish takes them (see the module docstring).
        """
        if not self.record_sizes:
            return
        try:
            if finish == "memory" and start == "flight":
                self._received(key)
            elif finish == "memory" and start in ("executing", "long-running"):
                ts = self.worker.state.tasks[key]
                sizes = output_nbytes(self._value(key))
                if sizes is not None:
                    ts.metadata[METADATA_KEY] = list(sizes)
                if self.unreported:  # the task-finished message holds this same list: sent after this hook
                    ts.startstops.extend(self.unreported)
                    self.unreported = []
            elif finish == "released" and start != "memory":  # it never finished here: nothing was reported
                ts = self.worker.state.tasks.get(key)
                if ts is not None:
                    self._give_up_transfers(ts)
        except Exception:
            self._hook_failed("transition")

    def _give_up_transfers(self, ts: Any) -> None:
        """Move ``ts``'s annotated transfers to :attr:`unreported` (it will not report them)."""
        kept = [s for s in ts.startstops if STARTSTOP_BYTES not in s]
        if len(kept) < len(ts.startstops):
            self.unreported.extend(s for s in ts.startstops if STARTSTOP_BYTES in s)
            ts.startstops[:] = kept

    def _value(self, key: Any) -> Any:
        data = self.worker.data
        fast = getattr(data, "fast", None)  # a SpillBuffer: never unspill to look
        try:
            return (data if fast is None else fast)[key]
        except KeyError:
            return None

    def _received(self, key: Any) -> None:
        # The worker measured this batch (``transfer_incoming_log``: keys, total
        # bytes, start, source) and attached one ``transfer`` startstop to one
        # dependent task (``Worker._get_cause``). Annotate that startstop with the
        # batch's bytes and with the bytes compression saved, so that the
        # scheduler charges exactly the transfer that moved them.
        record = None
        log = getattr(self.worker, "transfer_incoming_log", None)
        if log is None:
            _fallback(self, "worker.transfer_incoming_log", "the worker keeps no transfer log; transfers "
                      "reach the scheduler unannotated")
            return
        for candidate in _last(log, 8):
            if not isinstance(candidate, Mapping) or not {"keys", "total", "start", "who"} <= candidate.keys():
                _fallback(self, "worker.transfer_incoming_log-format", "the worker's transfer log entries "
                          "lack keys/total/start/who; transfers reach the scheduler unannotated")
                return
            if key in candidate["keys"]:
                record = candidate
                break
        if record is None:
            return
        if self._batch is not None and self._batch[0] is record:
            startstop = self._batch[1]
        else:
            holder, startstop = self._find_startstop(record)
            self._batch = (record, startstop)
            if startstop is not None:
                # wire-compression: the batch in uncompressed-equivalent bytes, and the codec's share of its time
                saved, codec_seconds = wire.take_received()
                startstop[STARTSTOP_BYTES] = int(record["total"]) - saved
                if saved:
                    startstop[STARTSTOP_EXTRA] = startstop.get(STARTSTOP_EXTRA, 0) + saved
                if codec_seconds:
                    startstop[STARTSTOP_CODEC] = codec_seconds
                startstop[STARTSTOP_TASKS] = self._served(record)
                if holder.state in ("memory", "released"):  # a fetched key that had no dependent here
                    self._give_up_transfers(holder)
        if startstop is None:
            return
        sizes = output_nbytes(self._value(key))
        if sizes is not None and sizes[0] > sizes[1]:
            startstop[STARTSTOP_EXTRA] = startstop.get(STARTSTOP_EXTRA, 0) + sizes[0] - sizes[1]

    def _served(self, record: dict) -> int:
        tasks = self.worker.state.tasks
        served = set()
        for k in record["keys"]:
            ts = tasks.get(k)
            if ts is not None:
                served.update(ts.dependents)
                if len(served) > _MAX_ITEMS:
                    break
        return max(len(served), 1)

    def _find_startstop(self, record: dict) -> tuple[Any, dict | None]:
        """The task that holds this batch's ``transfer`` startstop, and the startstop (``(None, None)``)."""
        tasks = self.worker.state.tasks
        start, source = record["start"], record["who"]
        for k in record["keys"]:
            ts = tasks.get(k)
            if ts is None:
                continue
            for candidate in (*ts.dependents, ts):
                for startstop in _last(candidate.startstops, 4):
                    if (startstop.get("action") == "transfer" and startstop.get("start") == start
                            and startstop.get("source") == source):
                        return candidate, startstop
        return None, None

    def _hook_failed(self, hook: str) -> None:
        if hook not in self._failed_hooks:
            self._failed_hooks.add(hook)
            logger.exception("asafe: the worker plugin's %s hook raised; the worker goes on", hook)

    def __repr__(self) -> str:
        return f"<AdaptiveWorkerPlugin token={str(self.token)[:8]} version={self.version}>"


def _fallback(plugin: Any, name: str, what: str) -> None:
    """A distributed internal the plugin reads is missing: count it, warn once per name.

    The plugins read private parts of distributed (the tested range is pinned in
    setup.py); where one is gone they take a less exact path instead of failing,
    and this makes that visible (``handle.fallbacks``, ``handle.info("fallbacks")``).
    """
    seen = plugin.fallbacks.get(name, 0)
    plugin.fallbacks[name] = seen + 1
    if not seen:
        import distributed

        logger.warning("asafe: %s (distributed %s; %s). Counted in the %s's fallbacks[%r].",
                       what, distributed.__version__, name, type(plugin).__name__, name)


def _last(items: Any, n: int) -> list:
    """The last ``n`` items of a list or deque, newest first."""
    out = []
    for item in reversed(items):
        out.append(item)
        if len(out) == n:
            break
    return out


def _now() -> float:
    return time.time()


def _ignore(**kwargs: Any) -> None:
    """The handler left behind on teardown: a push still in flight is dropped."""
