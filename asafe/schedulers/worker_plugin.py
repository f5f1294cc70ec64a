"""The worker plugin: the states where tasks read them, and the sizes of what a worker made and received.

:class:`AdaptiveWorkerPlugin` runs on every worker of a cluster where asafe is
installed. It receives the scheduler plugin's state pushes (a stream handler,
and a hello RPC on arrival and every few seconds to repair a lost push) and
publishes them to :mod:`asafe.schedulers.board`, where :func:`asafe.is_on` reads
them without a round trip. It records ``[logical, wire]`` sizes of task outputs
that report them in the task's metadata (noted when the worker sized the
output, :mod:`asafe.schedulers.sizes`: it never reads ``worker.data``), and
annotates each batch of received data with its bytes and the bytes compression
saved in it, so that the scheduler charges transfers in uncompressed-equivalent
seconds (the Architecture page, "The cluster plugins", tells the whole
protocol).

Like every hook of distributed's plugins, these never raise into the worker: a
failure is logged once per hook and the worker goes on.
"""
from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from . import board, hosts, rpc, sizes, threads, wire
from .bandwidth import PROBE_FETCHES
from .protocol import (METADATA_KEY, NAME, STARTSTOP_BYTES, STARTSTOP_CODEC, STARTSTOP_EXTRA, STARTSTOP_TASKS,
                       STATES_OP, count_fallback, last_items, logger, plugin_settings)

__all__ = ["AdaptiveWorkerPlugin"]

# Outputs that are containers are looked through up to this many items.
_MAX_ITEMS = 4096
#: The worker's RPC handlers: op -> the plugin's method they call (through asafe.schedulers.rpc).
_HANDLERS = {"asafe_probe": "probe"}


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
        self.record_sizes = plugin_settings()["record_sizes"] if record_sizes is None else bool(record_sizes)
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
        # the host watch (asafe.schedulers.hosts.HostWatch): while wire compression compresses and the
        # scheduler reads this worker's host from its reports (the hello's reply says so)
        self.host_watch: hosts.HostWatch | None = None
        self._watch_wanted = False
        self._compressing = False

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
        wire.advertise(worker)  # peers send this worker compressed frames
        worker.stream_handlers[STATES_OP] = self.receive
        rpc.register(worker, self, _HANDLERS)  # not self.probe: distributed's handler cache would keep this plugin
        worker.handlers["asafe_probe_payload"] = _probe_payload
        # --- per-host signals (asafe.schedulers.hosts): this host's load in every heartbeat
        until_measured = hosts.attach_worker(worker)
        # ---
        if worker.status in WORKER_ANY_RUNNING:
            if until_measured:  # a new process: its hello carries a measured host (at most 0.25 s, once)
                await asyncio.sleep(until_measured)
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
        rpc.unregister(worker, self, _HANDLERS)  # unless a newer installation's plugin replaced it
        hosts.detach_worker(worker)  # per-host signals (asafe.schedulers.hosts)
        if self.host_watch is not None:
            self.host_watch.stop()
        if self._published:
            board.clear()
            self._published = False
            self._apply_threads(None)  # kernel-threads: the original BLAS limits

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
            reply = await self.worker.scheduler.asafe_hello(worker=self.worker.address, token=self.token,
                                                            host=hosts.worker_report(self.worker))
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
        self._watch_wanted = bool(reply.get("watch_host"))  # an older scheduler plugin does not say: no watch
        applied = self._apply(reply["token"], reply["version"], reply["states"], reply["time"])
        if not applied:  # _apply updates the watch itself; its states unchanged, the reply's watch_host may not be
            self._update_watch()
        return applied

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
        self._apply_threads(states.get(threads.NAME))
        self._prepare_wire(states.get(wire.NAME))
        self._compressing = bool(states.get(wire.NAME))
        self._update_watch()
        self.receipts.append((version, sent or 0.0, _now()))
        return True

    def _update_watch(self) -> None:
        # the host watch runs while wire compression compresses, where the scheduler reads the reports
        try:
            if self._compressing and self._watch_wanted:
                if self.host_watch is None:
                    self.host_watch = hosts.watch_worker(self.worker, self._send_host)
                if self.host_watch is not None:
                    self.host_watch.start()
            elif self.host_watch is not None:
                self.host_watch.stop()
        except Exception:  # noqa: BLE001  (a hook never raises into the worker)
            self._hook_failed("host-watch")

    def _send_host(self, report: dict) -> Any:
        """The host watch's delivery: the report to the scheduler plugin (``asafe_host``), an awaitable."""
        return self.worker.scheduler.asafe_host(worker=self.worker.address, token=self.token, report=report)

    def _prepare_wire(self, state: Any) -> None:
        # wire-compression: its codecs imported in the background when a state that compresses arrives
        try:
            wire.prepare(state)
        except Exception:  # noqa: BLE001  (a hook never raises into the worker)
            self._hook_failed("wire-compression")

    def _apply_threads(self, state: Any) -> None:
        # kernel-threads (asafe.schedulers.threads): BLAS limits, process-wide; a
        # comparison when the state did not change, nothing when it is not installed
        try:
            threads.apply(state)
        except Exception:  # noqa: BLE001  (a hook never raises into the worker)
            self._hook_failed("kernel-threads")

    async def probe(self, peer: str, nbytes: int) -> float:
        """The link probe (the scheduler asks): fetch ``nbytes`` random bytes from ``peer``
        :data:`~asafe.schedulers.bandwidth.PROBE_FETCHES` times; the fastest, in seconds."""
        best = float("inf")
        for _ in range(PROBE_FETCHES):
            start = time.perf_counter()
            payload = await self.worker.rpc(peer).asafe_probe_payload(nbytes=nbytes)
            best = min(best, time.perf_counter() - start)
            if len(payload) != nbytes:
                raise ValueError(f"the probe received {len(payload)} of {nbytes} bytes")
        return best

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
                reported = sizes.take(key, ts.nbytes)  # noted when the worker sized the output
                if reported is not None:
                    ts.metadata[METADATA_KEY] = list(reported)
                if self.unreported:  # the task-finished message holds this same list: sent after this hook
                    ts.startstops.extend(self.unreported)
                    self.unreported = []
            elif finish in ("released", "error") and start != "memory":  # it never finished here
                sizes.discard(key)
                ts = self.worker.state.tasks.get(key)
                if ts is not None and finish == "released":
                    self._give_up_transfers(ts)
        except Exception:
            self._hook_failed("transition")

    def _give_up_transfers(self, ts: Any) -> None:
        """Move ``ts``'s annotated transfers to :attr:`unreported` (it will not report them)."""
        kept = [s for s in ts.startstops if STARTSTOP_BYTES not in s]
        if len(kept) < len(ts.startstops):
            self.unreported.extend(s for s in ts.startstops if STARTSTOP_BYTES in s)
            ts.startstops[:] = kept

    def _received(self, key: Any) -> None:
        # The worker measured this batch (``transfer_incoming_log``: keys, total
        # bytes, start, source) and attached one ``transfer`` startstop to one
        # dependent task (``Worker._get_cause``). Annotate that startstop with the
        # batch's bytes and with the bytes compression saved, so that the
        # scheduler charges exactly the transfer that moved them.
        record = None
        log = getattr(self.worker, "transfer_incoming_log", None)
        if log is None:
            count_fallback(self, "worker.transfer_incoming_log", "the worker keeps no transfer log; transfers "
                      "reach the scheduler unannotated")
            return
        for candidate in last_items(log, 8):
            if not isinstance(candidate, Mapping) or not {"keys", "total", "start", "who"} <= candidate.keys():
                count_fallback(self, "worker.transfer_incoming_log-format", "the worker's transfer log entries "
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
                codec_saved, stored_saved, codec_seconds = wire.take_received()
                startstop[STARTSTOP_BYTES] = int(record["total"]) - codec_saved
                if codec_saved or stored_saved:
                    startstop[STARTSTOP_EXTRA] = startstop.get(STARTSTOP_EXTRA, 0) + codec_saved + stored_saved
                if codec_seconds:
                    startstop[STARTSTOP_CODEC] = codec_seconds
                startstop[STARTSTOP_TASKS] = self._served(record)
                if holder.state in ("memory", "released"):  # a fetched key that had no dependent here
                    self._give_up_transfers(holder)

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
                for startstop in last_items(candidate.startstops, 4):
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


def _now() -> float:
    return time.time()


def _probe_payload(nbytes: int) -> bytes:
    """The link probe's payload: random bytes, which no compression shortens (kept on the worker once made)."""
    import os

    global _PAYLOAD
    if len(_PAYLOAD) != nbytes:
        _PAYLOAD = os.urandom(int(nbytes))
    return _PAYLOAD


_PAYLOAD = b""


def _ignore(**kwargs: Any) -> None:
    """The handler left behind on teardown: a push still in flight is dropped."""
