"""P2P traffic in the mode: what distributed's shuffle extension moves between workers.

A P2P rechunk, shuffle or merge (Dask's default rechunk on a cluster) moves its
data outside the graph's edges: each transfer task splits its input into
shards, and the worker's shuffle extension sends them, in the background and
until the barrier, to the workers that will hold the outputs. No task fetches
a dependency, so the transfer accounting of the scheduler plugin sees none of
it. :class:`P2PTraffic` counts it, in uncompressed-equivalent seconds like the
rest of the communication:

* *planned*, when a graph with a P2P barrier (distributed's ``P2PBarrierTask``)
  arrives: the bytes that its transfer tasks' inputs hold (their size once
  computed, before that what the scheduler learned of their key prefix, or
  else their size when they finish) times ``(W - 1) / W``, the share that goes
  to the other workers, at the link's speed. The plan shrinks as the bytes are measured, and what remains leaves
  it when the barrier finishes.
* *measured*: every worker meters the P2P messages it sends (distributed's
  fine performance metrics, ``("p2p", <span>, "background-comms", "process",
  "bytes")``) and its heartbeats add them to
  ``Scheduler.cumulative_worker_metrics``. The plugin reads that one counter
  (O(1)) on its events and on a timer while a barrier is pending; the bytes
  that arrived since are communication of ``bytes / link`` seconds. They are
  logical bytes (the shards before serialization and wire compression), so
  compressing them does not change the signal that decides it.

The measured part lags by a heartbeat (0.5-1 s on a small cluster); the planned
part makes the mode see a P2P phase when its graph arrives.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from ..core.types import COMMUNICATION

__all__ = ["P2P_BYTES", "P2PTraffic", "is_barrier"]

#: The scheduler's cumulative metric of the bytes P2P sent (all spans, all workers).
P2P_BYTES = ("p2p", "background-comms", "process", "bytes")
_BARRIER_PREFIX = "shuffle-barrier-"
#: Seconds the counter is still read after a barrier finished (a few heartbeats of a large cluster).
_LINGER = 10.0


def is_barrier(ts: Any) -> bool:
    """Whether ``ts`` is the barrier task of a P2P rechunk, shuffle or merge."""
    spec = ts.run_spec
    if spec is None:
        return False
    if type(spec).__name__ == "P2PBarrierTask":
        return True
    key = ts.key
    return isinstance(key, str) and key.startswith(_BARRIER_PREFIX)


class P2PTraffic:
    """Planned and measured P2P bytes, as communication in a tracker.

    Parameters
    ----------
    tracker : ModeTracker
        Where the communication goes.
    link : callable
        The link's bytes per second (:class:`~asafe.schedulers.bandwidth.LinkEstimate`).
    workers : callable
        The number of workers.
    size : callable
        The logical bytes of a task's output from its ``TaskState`` (0 if unknown).
    learned : callable
        The logical bytes an output of a key prefix had so far (0 if never seen).
    metrics : callable
        The scheduler's ``cumulative_worker_metrics`` (or ``None``).
    """

    def __init__(self, tracker: Any, link: Callable[[], float], workers: Callable[[], int],
                 size: Callable[[Any], float], learned: Callable[[str], float],
                 metrics: Callable[[], Any] = lambda: None) -> None:
        self.tracker = tracker
        self.metrics = metrics
        self.link = link
        self.workers = workers
        self.size = size
        self.learned = learned
        self._planned: dict[Any, list[float]] = {}  # barrier key -> [planned bytes not measured yet, link then]
        self._unsized: dict[Any, Any] = {}  # input key whose size was unknown at submission -> its barrier key
        self._seen: float | None = None  # the cumulative counter at the last read
        self._recent = 0.0  # monotonic time until which the counter is read although no barrier is pending
        #: Bytes measured since the plugin started, and bytes planned in all.
        self.measured_bytes = 0.0
        self.planned_bytes = 0.0

    @property
    def pending(self) -> bool:
        """Whether a barrier is pending (its planned bytes not all measured)."""
        return bool(self._planned)

    @property
    def active(self) -> bool:
        """Whether the counter is worth reading: a barrier is pending, or one finished a few heartbeats ago.

        The workers' heartbeats bring a P2P operation's last bytes after its
        barrier has finished (on a fast link, often all of them).
        """
        return self.active_at(time.monotonic())

    def active_at(self, now: float) -> bool:
        """:attr:`active` at ``now``, a :func:`time.monotonic` reading the caller already made."""
        return bool(self._planned) or now < self._recent

    def submitted(self, tasks: Iterable[Any]) -> None:
        """Plan the bytes of the P2P operations among ``tasks`` (new tasks of a graph)."""
        if int(self.workers()) < 2:
            return
        for ts in tasks:
            if not is_barrier(ts) or ts.key in self._planned:
                continue
            if self._seen is None:
                self.poll()  # the counter before this operation sends anything
            self._recent = time.monotonic() + _LINGER
            link = self.link()
            if not link > 0:
                continue
            self._planned[ts.key] = [0.0, link]
            self.tracker.plan(COMMUNICATION, 0.0)  # one planned item, sized below and as inputs finish
            self._add(ts.key, self._input_bytes(ts))

    def _input_bytes(self, barrier: Any) -> float:
        """The logical bytes of what the barrier's transfer tasks split into shards.

        Below the barrier lie the transfer tasks (fused or behind aliases:
        ``rechunk-transfer``, ``rechunk-merge-rechunk-transfer``...); their
        inputs are the first tasks down that are in memory or are no transfer.
        Each is counted once; O(tasks of the operation), once per graph.
        """
        total, seen, stack = 0.0, set(), list(barrier.dependencies)
        while stack:
            ts = stack.pop()
            if ts.key in seen:
                continue
            seen.add(ts.key)
            if ts.state == "memory":
                total += self.size(ts) or self.learned(ts.prefix.name)
            elif "transfer" in ts.prefix.name:
                stack.extend(ts.dependencies)
            else:
                learned = self.learned(ts.prefix.name)
                if learned:
                    total += learned
                else:  # not computed yet, of a prefix never seen: sized when it finishes
                    self._unsized[ts.key] = barrier.key
        return total

    def input_finished(self, ts: Any) -> None:
        """An input whose size was unknown at submission is in memory: its bytes join its barrier's plan."""
        barrier = self._unsized.pop(ts.key, None)
        if barrier is not None and barrier in self._planned:
            self._add(barrier, self.size(ts))

    def _add(self, barrier: Any, nbytes: float) -> None:
        workers = max(int(self.workers()), 1)
        planned = nbytes * (workers - 1) / workers
        if planned <= 0:
            return
        plan = self._planned[barrier]
        plan[0] += planned
        self.planned_bytes += planned
        self.tracker.plan(COMMUNICATION, planned / plan[1], count=0)

    def finished(self, key: Any) -> None:
        """A barrier finished or left: what it planned and was not measured leaves the plan."""
        plan = self._planned.pop(key, None)
        if plan is not None:
            self.tracker.plan(COMMUNICATION, -plan[0] / plan[1], count=-1)
            self._recent = time.monotonic() + _LINGER
            if not self._planned:
                self._unsized.clear()

    def poll(self) -> float:
        """Read the scheduler's counter; count the bytes that arrived since as communication; return them."""
        cumulative = self.metrics()
        if cumulative is None:
            return 0.0
        total = float(cumulative.get(P2P_BYTES, 0) or 0)
        if self._seen is None or total < self._seen:  # the first read, or the counters were reset
            self._seen = total
            return 0.0
        arrived = total - self._seen
        if arrived <= 0:
            return 0.0
        self._seen = total
        self.measured_bytes += arrived
        link = self.link()
        if link > 0:
            self.tracker.observe(COMMUNICATION, arrived / link)
        self._unplan(arrived)
        return arrived

    def clear(self) -> None:
        """Forget every plan (a restart, an uninstall)."""
        for key in list(self._planned):
            self.finished(key)
        self._unsized.clear()

    def _unplan(self, measured: float) -> None:
        # Measured bytes replace the plan of the oldest pending barriers first,
        # at the rate each was planned at (so that nothing is left over).
        for plan in self._planned.values():
            if measured <= 0:
                break
            taken = min(plan[0], measured)
            measured -= taken
            plan[0] -= taken
            self.tracker.plan(COMMUNICATION, -taken / plan[1], count=0)
