"""System signals for the mode vector: cpu and memory load from psutil.

On Linux the readings come from ``/proc`` directly, with psutil's arithmetic
(:mod:`asafe.core._procfs`); elsewhere from psutil. Either costs tens of
microseconds a reading, too much for the per-event path, so
:class:`SystemSignals` samples at most once per ``interval`` and serves the last
sample in between. A read that finds the sample older than ``interval`` takes
the next one inline, on whatever path asked: on a Dask scheduler that is most
often a graph's arrival (the first read after an idle gap), ahead of the graph's
first task. Where an event loop can keep the sample fresh, it calls
:meth:`SystemSignals.sample` every ``interval`` and sets
:attr:`SystemSignals.driven`; a read then samples inline only when that driver
has missed a whole interval (a loop blocked that long), so no read on the event
path pays for psutil (the distributed scheduler plugin does this).

Three signals, fractions in [0, 1]:

* ``cpu``: the host's cpu load;
* ``memory``: the host's memory in use;
* ``external_cpu``: the part of the host's cpu load that the run's own
  processes do not explain -- this process, its children, and the processes a
  scheduler plugin names with :meth:`SystemSignals.watch` (the workers on this
  host). It is the load the mode cannot see otherwise: the run's own work is
  already in the mode's task shares and its compute/communication ratio, and it
  includes the work of the optimizations themselves (compressing, decompressing),
  which must not switch them off -- the cpu counterpart of counting transfers in
  uncompressed-equivalent bytes. A process seen for the first time counts from
  its second sample (psutil's per-process counters start at zero), so the
  signal over-reads for one interval after a worker joins.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from . import _procfs

__all__ = ["SystemSignals", "external_load", "local_host_names"]

#: psutil, imported by the first SystemSignals (a worker process imports asafe but never samples).
psutil: Any = None

#: Seconds between two scans for this process's children (a scan of /proc costs milliseconds).
CHILDREN_REFRESH = 10.0


def external_load(host: float, own_cores: float, cpus: int) -> float:
    """The host's load that the run's own processes do not explain, as a fraction of its cpus.

    Parameters
    ----------
    host : float
        The host's cpu load, a fraction of all its cpus (psutil's ``cpu_percent / 100``).
    own_cores : float
        The cpus busy with the run's processes (the sum of their ``cpu_percent / 100``:
        one busy thread is 1.0).
    cpus : int
        The host's logical cpus.

    Examples
    --------
    >>> external_load(1.0, 2.0, 2)   # two busy workers on two cpus: nothing else
    0.0
    >>> external_load(1.0, 0.5, 2)   # half a cpu is ours, the rest another job's
    0.75
    >>> external_load(0.2, 0.9, 2)   # samples a little apart never read below 0
    0.0
    """
    cpus = max(int(cpus), 1)
    return min(max(host * cpus - own_cores, 0.0) / cpus, 1.0)


class SystemSignals:
    """Throttled cpu and memory load, as fractions in [0, 1].

    Parameters
    ----------
    interval : float
        Minimum seconds between two psutil samples.

    Examples
    --------
    >>> sample = SystemSignals(interval=1.0).read()
    >>> sorted(sample), all(0.0 <= v <= 1.0 for v in sample.values())
    (['cpu', 'external_cpu', 'memory'], True)
    >>> sample["external_cpu"] <= sample["cpu"]
    True
    """

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = float(interval)
        self._next = 0.0
        global psutil
        if psutil is None:
            import psutil as _psutil

            psutil = _psutil
        self._psutil = _procfs.reads_for(psutil)  # psutil's readings, from /proc on Linux (half its cost)
        self._cpus = self._psutil.cpu_count() or 1
        self._self = self._psutil.Process()
        #: Set by a driver that calls :meth:`sample` every ``interval`` off the event path:
        #: a read samples inline only once the sample is a whole interval overdue.
        self.driven = False
        self._watchers: list[Callable[[], Iterable[int]]] = []
        self._processes: dict[int, Any] = {}
        self._children: list[int] = []
        self._children_at = -CHILDREN_REFRESH
        self.prime()
        self._last = {"cpu": 0.0, "memory": self._psutil.virtual_memory().percent / 100.0, "external_cpu": 0.0}

    def watch(self, pids: Callable[[], Iterable[int]]) -> Callable[[], None]:
        """Count the processes ``pids()`` names as the run's own; returns a function that stops it.

        ``pids`` is called once per sample and must be cheap; one that raises is
        skipped for that sample.
        """
        self._watchers.append(pids)

        def unwatch() -> None:
            if pids in self._watchers:
                self._watchers.remove(pids)

        return unwatch

    def prime(self) -> None:
        """Start the host's and every watched process's cpu counters now; the next sample reads from here.

        psutil's first reading of a counter returns 0, so a process seen for
        the first time counts from its second sample: a scheduler plugin primes
        after :meth:`watch` names the workers, so that the first sample counts
        them as the run's own (and the arrival that takes it does not create
        their ``psutil.Process`` objects).
        """
        self._psutil.cpu_percent(interval=None)
        self._own_cores()

    def read(self) -> dict[str, float]:
        """The latest sample: taken now if it is ``interval`` old (a whole interval more when :attr:`driven`)."""
        now = time.monotonic()
        if now >= (self._next + self.interval if self.driven else self._next):
            return self._sample(now)
        return self._last

    def sample(self) -> dict[str, float]:
        """Take a sample now and serve it for the next ``interval`` (what a driver calls).

        Examples
        --------
        >>> system = SystemSignals(interval=60.0)
        >>> system.sample() is system.read()   # served until the interval has passed
        True
        """
        return self._sample(time.monotonic())

    # internals ------------------------------------------------------------------------
    def _sample(self, now: float) -> dict[str, float]:
        self._next = now + self.interval
        host = self._psutil.cpu_percent(interval=None) / 100.0
        self._last = {
            "cpu": host,
            "memory": self._psutil.virtual_memory().percent / 100.0,
            "external_cpu": external_load(host, self._own_cores(), self._cpus),
        }
        return self._last

    def _own_pids(self) -> set[int]:
        now = time.monotonic()
        if now - self._children_at >= CHILDREN_REFRESH:
            self._children_at = now
            try:
                self._children = [p.pid for p in self._self.children(recursive=True)]
            except self._psutil.Error:
                self._children = []
        pids = {os.getpid(), *self._children}
        for watcher in list(self._watchers):
            try:
                pids.update(int(pid) for pid in watcher() if pid)
            except Exception:  # a watcher must never stop the sample
                continue
        return pids

    def _own_cores(self) -> float:
        pids = self._own_pids()
        for gone in self._processes.keys() - pids:
            del self._processes[gone]
        cores = 0.0
        for pid in pids:
            process = self._processes.get(pid)
            try:
                if process is None:
                    process = self._processes[pid] = self._psutil.Process(pid)
                    process.cpu_percent(interval=None)  # primes it: counts from the next sample
                    continue
                cores += process.cpu_percent(interval=None) / 100.0
            except self._psutil.Error:  # gone, or not ours to read
                self._processes.pop(pid, None)
        return cores


def local_host_names() -> frozenset:
    """Names and addresses of this host, as a Dask worker's ``host`` may read (to tell the run's own processes)."""
    import socket

    import psutil

    names = {"127.0.0.1", "::1", "localhost", socket.gethostname()}
    try:
        for addresses in psutil.net_if_addrs().values():
            names.update(a.address for a in addresses if a.family in (socket.AF_INET, socket.AF_INET6))
    except Exception:  # pragma: no cover - psutil without access to the interfaces
        pass
    return frozenset(names)
