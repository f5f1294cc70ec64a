"""Per-host signals: each worker host reports its own cpu and memory load, the scheduler combines them.

The mode's ``cpu``, ``memory`` and ``external_cpu`` signals
(:mod:`asafe.core.signals`) are sampled with psutil where the scheduler runs.
On a one-host cluster that is where the work runs too; on a multi-host cluster
it is not, and the load of the hosts that compute and send the data would go
unseen. Here every host that runs workers speaks for itself:

Worker side (:func:`attach_worker`, called by the worker plugin's ``setup``)
    A :class:`HostSampler` sits in the worker's heartbeat metrics
    (``worker.metrics["asafe-host"]``), so its report travels in every
    heartbeat the worker already sends (0.5 s apart on a small cluster, up to
    2 s at 200 workers): no message of its own. It samples at most once per
    ``asafe.distributed.host-signals.interval`` (1 s) and reports the host's
    busy cores, memory in use, its own process's cores (with its children, and
    its nanny), the host's cpus and its pid. One sampler serves every worker of
    a process (64 in-process workers sample once).
Worker side, while wire compression is on (:class:`HostWatch`)
    The heartbeats alone let a loaded host go unseen for 1-2 s (the sample
    interval, then the next heartbeat, then the scheduler's next combination):
    longer than a dwell, while compressing is exactly when another job's load
    on a host slows every transfer the host takes part in. So while the
    ``wire-compression`` state compresses, a worker whose host the scheduler
    reads from the reports (the hello's reply says so: not where the scheduler
    runs) samples every ``asafe.distributed.host-signals.fast-interval``
    (100 ms) and sends its report at once (``asafe_host``, an RPC) when its
    host's load moved by :data:`FAST_CHANGE` of its cpus since the report it
    last sent; the scheduler takes it as the worker's latest and evaluates.
    Nothing runs while the state is off, or on a worker the scheduler reads
    with its own psutil (a ``LocalCluster``).
Scheduler side (:class:`HostSignals`, attached by the scheduler plugin's ``start``)
    Groups the workers by host (``WorkerState.host``) and, per host:

    * a host the scheduler runs on (a ``LocalCluster``) reads the scheduler's
      own :class:`~asafe.core.signals.SystemSignals`, as before: it already
      counts every local worker process as the run's own;
    * any other host reads its workers' latest reports: ``cpu`` the busy
      cores over the cpus, ``memory`` the fraction in use, and ``external_cpu``
      the busy cores that the run's own processes there (each reporting pid
      counted once) do not explain (:func:`~asafe.core.signals.external_load`).

    The mode's signal is then **the busiest host**: the maximum over the hosts
    that run workers (see :func:`combine` for why not a mean). Hosts without
    workers (a scheduler on a host of its own) do not count; with no worker at
    all the scheduler's own reading stands.

Unknown is not idle
    A worker whose report is missing (no heartbeat carried one, the sampler
    failed, its psutil could not read the host), stale (older than
    ``asafe.distributed.host-signals.stale``) or not measured yet (the first
    sample only primes psutil's counters) makes its host's signals ``nan``,
    and a ``nan`` host makes the combined signal ``nan``: no threshold crosses
    ``nan``, so every domain keeps its state instead of reading the host as
    idle. :meth:`HostSignals.table` (``handle.info("hosts")``) says which host
    is unknown and why.

What a "host" is (``asafe.distributed.host-signals.scope``)
    ``machine`` (the default): the machine the worker runs on, read
    system-wide (psutil's cpu and memory). ``netns``: the processes in the
    worker's network namespace, for the multi-host topology of
    :mod:`asafe.app.hosts`, where several "hosts" are namespaces of one machine
    and share its cpus, so a machine-wide reading would charge one host's load
    to all of them. There a host's busy cores are the cpu time of the
    processes in its namespace (a scan of ``/proc``, at most once per interval),
    its memory their resident bytes over the machine's memory, and its cpus
    the machine's. On a real host (all processes in one namespace) the two
    scopes agree but for the kernel's own time.

Examples
--------
Two remote hosts report; one of them runs another job on a core and a half:

>>> quiet = [{"pid": 11, "cpus": 4, "busy_cores": 1.0, "own_cores": 1.0, "memory": 0.30}]
>>> busy = [{"pid": 21, "cpus": 4, "busy_cores": 2.5, "own_cores": 1.0, "memory": 0.40}]
>>> loads = {"10.0.0.2": host_load(quiet, workers=1), "10.0.0.3": host_load(busy, workers=1)}
>>> loads["10.0.0.3"]["external_cpu"], combine(loads)["external_cpu"]
(0.375, 0.375)
>>> combine({**loads, "10.0.0.4": host_load([None], workers=1)})["external_cpu"]   # one host unknown
nan
"""
from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dask.config

from ..core import _procfs, validate
from ..core.signals import external_load
from .protocol import logger

__all__ = ["HOST_SIGNALS", "SIGNALS", "SCOPES", "FAST_CHANGE", "HostSampler", "HostSignals", "HostWatch", "attach",
           "attach_worker", "combine", "detach_worker", "host_load", "info", "receive_report", "settings",
           "watch_worker", "worker_report"]

#: Key of a worker's report in its heartbeat metrics (``WorkerState.metrics`` on the scheduler).
HOST_SIGNALS = "asafe-host"
#: The mode signals this module provides per host.
SIGNALS = ("cpu", "memory", "external_cpu")
#: What a worker's "host" is: the machine, or the processes of its network namespace.
SCOPES = ("machine", "netns")
#: Seconds between two combinations on the scheduler (the sources are read at every evaluation).
COMBINE_INTERVAL = 0.5
#: psutil's process start times are exact to this many seconds (the boot time it adds is whole seconds).
_START_SLACK = 1.0
#: Seconds between two scans for a worker's children.
CHILDREN_REFRESH = 10.0
#: A watched worker sends its report when its host's load (busy cores less its own, over the cpus) moved
#: this much since the report it last sent: a real change, not the jitter of 100 ms samples.
FAST_CHANGE = 0.1
#: The least ``fast-interval`` above 0 (off): shorter samples would cost more than they tell.
FAST_MINIMUM = 0.05

_NAN = float("nan")


def settings() -> dict[str, Any]:
    """``asafe.distributed.host-signals.*``, validated (errors name the key).

    >>> with dask.config.set({"asafe.distributed.host-signals.scope": "netns"}):
    ...     settings()["scope"]
    'netns'
    """
    get = dask.config.get
    fast_key = "asafe.distributed.host-signals.fast-interval"
    fast_value = get(fast_key, "100ms")
    fast = validate.duration(fast_value, fast_key)
    if 0 < fast < FAST_MINIMUM:
        raise validate.InvalidSetting(f"{fast_key} must be 0 (off) or a duration >= {FAST_MINIMUM:g} s such as "
                                      f"'100ms', got {fast_value!r} (environment variable "
                                      f"{validate.env_var(fast_key)})")
    return {
        "scope": validate.choice(get("asafe.distributed.host-signals.scope", "machine"),
                                 "asafe.distributed.host-signals.scope", SCOPES),
        "interval": validate.duration(get("asafe.distributed.host-signals.interval", "1s"),
                                      "asafe.distributed.host-signals.interval", minimum=0.05),
        "stale": validate.duration(get("asafe.distributed.host-signals.stale", "10s"),
                                   "asafe.distributed.host-signals.stale", minimum=0.1),
        "fast_interval": fast,
    }


# --------------------------------------------------------------------------- the worker's side
_PRIMED = "not measured yet (the first sample primes the counters)"


class HostSampler:
    """A host's load as a worker sees it, sampled at most once per ``interval`` (a heartbeat metric).

    Parameters
    ----------
    scope : {"machine", "netns"}
        What the host is (see the module docstring).
    interval : float
        Least seconds between two samples; a call in between returns the last.

    Calling it returns the report: ``cpus``, ``cpu`` (busy fraction of the
    cpus), ``busy_cores``, ``own_cores`` (this process, its children and its
    nanny), ``memory`` (fraction in use), ``pid``, ``scope``, ``sampled``
    (``time.time()``) and ``error`` (why a value is ``nan``, or None). The
    first call primes psutil's counters and reports ``nan``.

    Examples
    --------
    >>> sampler = HostSampler("machine", interval=0.0)
    >>> math.isnan(sampler()["cpu"])         # primed, not measured yet
    True
    >>> time.sleep(0.1); report = sampler()
    >>> 0.0 <= report["cpu"] <= 1.0 and report["own_cores"] >= 0.0 and report["error"] is None
    True
    """

    def __init__(self, scope: str = "machine", interval: float = 1.0) -> None:
        self.scope = validate.choice(scope, "scope", SCOPES)
        self.interval = float(interval)
        self.nanny_pid: int | None = None
        self._lock = threading.Lock()
        self._psutil: Any = None
        self._next = 0.0
        self._sampled_at = -math.inf  # time.monotonic() of the last sample
        self._processes: dict[int, Any] = {}
        self._read_at: float | None = None  # time.time() of the last _cores reading
        self._children: list[int] = []
        self._children_at = -CHILDREN_REFRESH
        self._report: dict[str, Any] = self._empty("not sampled yet")

    def _empty(self, error: str | None) -> dict[str, Any]:
        return {"scope": self.scope, "pid": os.getpid(), "cpus": _NAN, "cpu": _NAN, "busy_cores": _NAN,
                "own_cores": _NAN, "memory": _NAN, "sampled": time.time(), "error": error}

    def __call__(self, worker: Any = None, max_age: float | None = None) -> dict[str, Any]:
        """The report: sampled anew where the last is ``interval`` old (or ``max_age``, a :class:`HostWatch`'s)."""
        now = time.monotonic()
        due = now >= self._next or (max_age is not None and self._psutil is not None
                                    and now - self._sampled_at >= max_age)
        if not due or not self._lock.acquire(blocking=False):
            return self._report
        try:
            primed = self._psutil is not None
            self._next = now + (self.interval if primed else min(self.interval, 0.25))
            self._sampled_at = now
            try:
                self._report = self._sample() if primed else self._prime()
            except Exception as exc:  # never into the heartbeat; unknown, not idle
                self._report = self._empty(f"{type(exc).__name__}: {exc}")
        finally:
            self._lock.release()
        return self._report

    def until_measured(self) -> float:
        """Seconds until a call measures, where nothing is measured yet (0.0 once something is, or on error)."""
        if self._psutil is None or self._report.get("error") != _PRIMED:
            return 0.0
        return max(self._next - time.monotonic(), 0.0)

    def _prime(self) -> dict[str, Any]:
        import psutil  # here: a worker that never reports never imports it

        self._psutil = psutil
        self._machine_busy()
        self._cores(self._own_pids() | (self._namespace_pids() if self.scope == "netns" else set()))
        return self._empty(_PRIMED)

    def _machine_busy(self) -> float:
        """Busy fraction of the machine's cpus since the last call (its own reference: psutil.cpu_percent's is
        shared with every other caller in the process). psutil's arithmetic, as the scheduler's /proc reader's
        (:class:`asafe.core._procfs.ProcReads`): guest time is in user time already and leaves the total; idle
        and iowait are not busy."""
        times = self._psutil.cpu_times()
        total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
        idle = times.idle + getattr(times, "iowait", 0.0)
        last, self._last_times = getattr(self, "_last_times", None), (total, idle)
        if last is None or total <= last[0]:
            return _NAN
        return min(max(1.0 - (idle - last[1]) / (total - last[0]), 0.0), 1.0)

    def _sample(self) -> dict[str, Any]:
        psutil = self._psutil
        cpus = psutil.cpu_count() or 1
        own_pids = self._own_pids()
        if self.scope == "machine":
            cores = self._cores(own_pids)
            busy = self._machine_busy() * cpus
            memory = psutil.virtual_memory().percent / 100.0
        else:
            pids = self._namespace_pids()
            cores = self._cores(pids | own_pids)  # one reading per process: a second would read ~0
            busy = sum(cores[pid] for pid in pids if pid in cores)
            rss = 0
            for pid in pids:
                process = self._processes.get(pid)
                if process is not None:
                    try:
                        rss += process.memory_info().rss
                    except psutil.Error:
                        continue
            memory = rss / psutil.virtual_memory().total
        own = sum(cores[pid] for pid in own_pids if pid in cores)
        error = "the machine's cpu times did not advance since the last sample" if math.isnan(busy) else None
        return {"scope": self.scope, "pid": os.getpid(), "cpus": cpus, "cpu": min(busy / cpus, 1.0),
                "busy_cores": busy, "own_cores": own, "memory": memory, "sampled": time.time(), "error": error}

    def _own_pids(self) -> set[int]:
        now = time.monotonic()
        if now - self._children_at >= CHILDREN_REFRESH:
            self._children_at = now
            try:
                self._children = _procfs.children_pids(self._psutil)  # the kernel's lists, not a scan of /proc
            except self._psutil.Error:
                self._children = []
        pids = {os.getpid(), *self._children}
        if self.nanny_pid:
            pids.add(self.nanny_pid)
        return pids

    @staticmethod
    def _namespace_pids() -> set[int]:
        """The processes in this process's network namespace (those whose namespace can be read)."""
        own = os.readlink("/proc/self/ns/net")
        pids = set()
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    if os.readlink(f"/proc/{name}/ns/net") == own:
                        pids.add(int(name))
                except OSError:  # gone, or not ours to read: not in the count
                    continue
        return pids

    def _cores(self, pids: set[int]) -> dict[int, float]:
        """Cores busy with each of ``pids`` since its last reading.

        A process seen first counts its cpu time since it started when it
        started after the previous reading (all of its life lies in this
        interval: a load that starts between two samples is seen at the next,
        not one sample later; psutil's start times are exact to the second, so
        one that started up to a second before counts its whole life too, on
        the side of a busier host); an older one counts from its next reading.
        Counters of processes not in ``pids`` are dropped.
        """
        psutil = self._psutil
        previous, self._read_at = self._read_at, time.time()
        for gone in self._processes.keys() - pids:
            del self._processes[gone]
        cores = {}
        for pid in pids:
            process = self._processes.get(pid)
            try:
                if process is None:
                    process = self._processes[pid] = psutil.Process(pid)
                    process.cpu_percent(interval=None)  # primes its next reading
                    if previous is not None and process.create_time() >= previous - _START_SLACK:
                        times = process.cpu_times()  # all of it in this interval, like cpu_percent's delta
                        cores[pid] = (times.user + times.system) / max(self._read_at - previous, 0.01)
                    continue
                cores[pid] = process.cpu_percent(interval=None) / 100.0
            except psutil.Error:
                self._processes.pop(pid, None)
        return cores


_SAMPLERS: dict[tuple[str, float], HostSampler] = {}
_SAMPLERS_LOCK = threading.Lock()


def _sampler(scope: str, interval: float) -> HostSampler:
    """One sampler per process and setting: every worker of a process shares it."""
    with _SAMPLERS_LOCK:
        sampler = _SAMPLERS.get((scope, interval))
        if sampler is None:
            sampler = _SAMPLERS[(scope, interval)] = HostSampler(scope, interval)
        return sampler


def attach_worker(worker: Any) -> float:
    """Put the host's report in ``worker``'s heartbeat metrics (the worker plugin's ``setup``; never raises).

    Returns the seconds until the sampler can measure: 0.0 where it has
    measured already (an earlier installation in this process), else the wait
    after priming a new process's counters (at most 0.25 s). The worker plugin
    waits that long before its hello, so that the hello carries a measured
    report: the first installation on a fresh cluster otherwise read every
    worker host unknown until its next heartbeat, and kept wire compression off
    for the first 1.5 s of the first graph (the wire suite on three hosts).
    """
    try:
        config = settings()
        sampler = _sampler(config["scope"], config["interval"])
        if getattr(worker, "nanny", None) and os.getppid() > 1:
            sampler.nanny_pid = os.getppid()  # the nanny is the worker process's parent
        worker.metrics[HOST_SIGNALS] = sampler
        sampler(worker)  # primes psutil's counters in a new process: the first heartbeat then carries a value
        return sampler.until_measured()
    except Exception:
        logger.exception("asafe: the host signals of worker %s cannot be sampled; its host reads as unknown",
                         getattr(worker, "address", "?"))
        return 0.0


def worker_report(worker: Any) -> dict[str, Any] | None:
    """The report ``worker``'s next heartbeat would carry, for its hello (None where it reports none; never raises).

    The worker plugin sends it with every hello, so that a new installation
    knows the worker's host at once instead of after the worker's next
    heartbeat: a heartbeat sent while no plugin was installed carried no report,
    and until the next one (up to a second or more) the host read as unknown,
    which kept wire compression off through the first second of every graph
    after an install (the wire suite on three hosts, 2026-11).
    """
    try:
        sampler = (getattr(worker, "metrics", None) or {}).get(HOST_SIGNALS)
        return dict(sampler(worker)) if isinstance(sampler, HostSampler) else None
    except Exception:
        return None


def detach_worker(worker: Any) -> None:
    """Take the report out of ``worker``'s heartbeat metrics (the worker plugin's ``teardown``)."""
    try:
        metrics = worker.metrics
        if isinstance(metrics.get(HOST_SIGNALS), HostSampler):
            del metrics[HOST_SIGNALS]
    except Exception:  # pragma: no cover - a worker without metrics
        pass


class HostWatch:
    """A worker's host sampled every ``interval`` while wire compression is on; a change sent at once.

    The worker plugin starts it while the ``wire-compression`` state
    compresses and the scheduler reads this worker's host from its reports,
    and stops it otherwise (see the module docstring). Each :meth:`tick`
    samples the host through the worker's heartbeat sampler (so the heartbeat
    carries the latest sample too) and sends the report when the host's load
    that this worker does not explain moved by :data:`FAST_CHANGE` of its cpus
    since the report it last sent (the first sample after a start is sent).
    One report is in flight at a time; one that fails is counted, not
    retried until the load moves again.

    A start samples at once: that sample's window reaches back to the
    heartbeat's last (up to ``interval`` of the heartbeat sampler, a second),
    so a load that began a moment ago reads diluted in it; the next, one
    ``interval`` later, reads that load whole. A tick samples anew where the
    last sample is half an ``interval`` old: the periodic callback fires a few
    milliseconds early at times, and a tick that took the sample it found
    (``max_age`` of a whole interval) left the load to the next tick, an
    interval later (the watch's log in docs/results/hosts-s36). The ticks run
    on the worker's event loop: they come late where something holds it (a
    codec that kept the GIL through a 40 MiB frame did, until
    :mod:`asafe.schedulers.wire` released it).

    Parameters
    ----------
    worker : distributed.Worker
        Whose sampler (:func:`attach_worker`) is read.
    interval : float
        Seconds between two samples while watching.
    send : callable
        ``send(report)``, an awaitable that hands the report to the scheduler.

    Examples
    --------
    >>> HostWatch.changed(0.3, None), HostWatch.changed(0.35, 0.3), HostWatch.changed(0.45, 0.3)
    (True, False, True)
    >>> nan = float("nan")
    >>> HostWatch.changed(nan, 0.3), HostWatch.changed(nan, nan)
    (True, False)
    """

    def __init__(self, worker: Any, interval: float, send: Callable[[dict], Any]) -> None:
        self.worker = worker
        self.interval = float(interval)
        self._send = send
        self._callback: Any = None
        self._sent_level: float | None = None  # the load of the report last sent (None: send the next)
        self._sending: asyncio.Future | None = None
        self.sent = 0
        self.failed = 0

    @property
    def running(self) -> bool:
        """Whether it samples now."""
        return self._callback is not None

    def start(self) -> None:
        """Sample every ``interval`` from now on (a no-op while it does); the first sample is sent."""
        if self._callback is not None:
            return
        from tornado.ioloop import PeriodicCallback

        self._sent_level = None
        self._callback = PeriodicCallback(self.tick, self.interval * 1000)
        self._callback.start()
        self.tick()  # the window starts now (see the class docstring)

    def stop(self) -> None:
        """Stop sampling (the heartbeats carry the reports, as before the start)."""
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def tick(self) -> None:
        """One sample; its report sent where the host's load moved (never raises)."""
        try:
            sampler = (getattr(self.worker, "metrics", None) or {}).get(HOST_SIGNALS)
            if not isinstance(sampler, HostSampler) or (self._sending is not None and not self._sending.done()):
                return
            report = sampler(self.worker, max_age=self.interval / 2)
            level = outside_load(report)
            if not self.changed(level, self._sent_level):
                return
            self._sent_level = level
            self._sending = asyncio.ensure_future(self._deliver(dict(report)))
        except Exception:  # a sample that fails is the heartbeat's to report (unknown); never into the loop
            self.failed += 1
            logger.debug("asafe: a host watch sample failed", exc_info=True)

    async def _deliver(self, report: dict) -> None:
        try:
            await self._send(report)
            self.sent += 1
        except Exception as exc:  # the scheduler gone or without the handler: the heartbeats still carry it
            self.failed += 1
            logger.debug("asafe: a host report was not delivered (%s: %s)", type(exc).__name__, exc)

    @staticmethod
    def changed(level: float, sent: float | None) -> bool:
        """Whether a load of ``level`` is news against the report last sent at ``sent`` (None: none yet)."""
        if sent is None:
            return True
        if math.isnan(level) or math.isnan(sent):
            return math.isnan(level) != math.isnan(sent)
        return abs(level - sent) >= FAST_CHANGE


def outside_load(report: Mapping[str, Any]) -> float:
    """The busy cores of a worker's host that the worker's own processes do not explain, over its cpus.

    A worker's own view (the scheduler's :func:`host_load` also takes out the
    other workers of the host); ``nan`` where the report says unknown.

    >>> outside_load({"busy_cores": 3.0, "own_cores": 1.0, "cpus": 4})
    0.5
    >>> outside_load({"busy_cores": float("nan"), "own_cores": 1.0, "cpus": 4})
    nan
    """
    busy, own, cpus = (_number(report.get(k)) for k in ("busy_cores", "own_cores", "cpus"))
    if math.isnan(busy) or math.isnan(own) or math.isnan(cpus) or cpus < 1:
        return _NAN
    return external_load(busy / cpus, own, int(cpus))


def watch_worker(worker: Any, send: Callable[[dict], Any]) -> HostWatch | None:
    """A :class:`HostWatch` of ``worker`` at ``fast-interval``; None where that is 0 (off) or unreadable (logged)."""
    try:
        interval = settings()["fast_interval"]
    except Exception:
        logger.exception("asafe: the host watch of worker %s is off", getattr(worker, "address", "?"))
        return None
    return HostWatch(worker, interval, send) if interval > 0 else None


# --------------------------------------------------------------------------- combining
def _number(value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return _NAN
    return value if math.isfinite(value) and value >= 0 else _NAN


def host_load(reports: Sequence[Mapping[str, Any] | None], workers: int | None = None) -> dict[str, float]:
    """One remote host's ``cpu``, ``memory`` and ``external_cpu`` from its workers' reports.

    Parameters
    ----------
    reports : sequence of mapping or None
        The latest report of each worker on the host; ``None`` for a worker
        whose report is missing or stale.
    workers : int, optional
        Workers on the host (default ``len(reports)``): fewer reports than
        workers is unknown too.

    Returns
    -------
    dict
        ``cpu`` (mean busy cores over the cpus), ``memory`` (mean), and
        ``external_cpu``: busy cores minus the cores of the run's processes
        there (each reporting pid counted once: in-process workers share one),
        over the cpus. Every value ``nan`` when a report is missing or one of
        its values is ``nan``: unknown, never idle.

    Examples
    --------
    Two worker processes of one host, each busy on a core, nothing else:

    >>> a = {"pid": 1, "cpus": 2, "busy_cores": 2.0, "own_cores": 1.0, "memory": 0.5}
    >>> host_load([a, dict(a, pid=2)])
    {'cpu': 1.0, 'memory': 0.5, 'external_cpu': 0.0}
    >>> host_load([a, None])
    {'cpu': nan, 'memory': nan, 'external_cpu': nan}
    """
    unknown = {name: _NAN for name in SIGNALS}
    expected = len(reports) if workers is None else int(workers)
    if expected < 1 or len(reports) < expected or any(r is None for r in reports):
        return unknown
    busy, memory, cpus, own = [], [], [], {}
    for report in reports:
        values = [_number(report.get(k)) for k in ("busy_cores", "memory", "cpus", "own_cores")]
        if any(math.isnan(v) for v in values) or values[2] < 1:
            return unknown
        busy.append(values[0])
        memory.append(values[1])
        cpus.append(values[2])
        own[report.get("pid")] = values[3]
    n_cpus = max(cpus)
    host_cores = sum(busy) / len(busy)
    return {"cpu": min(host_cores / n_cpus, 1.0), "memory": min(sum(memory) / len(memory), 1.0),
            "external_cpu": external_load(min(host_cores / n_cpus, 1.0), sum(own.values()), int(n_cpus))}


def combine(hosts: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The mode's signals from the hosts' values: the busiest host, ``nan`` if any host is unknown.

    The maximum, not a mean: the optimizations these signals gate (wire
    compression: compress on the sender, decompress on the receiver) spend
    cpu on the hosts at both ends of every transfer, and a shuffle or a
    rechunk moves data between every pair of hosts, so one loaded host slows
    every transfer it takes part in; a mean weighted by the work scheduled
    there would hide one loaded host among many idle ones. Per link would be
    finer still, but an optimization's state is one for the whole cluster.

    >>> combine({"a": {"cpu": 0.2, "memory": 0.5, "external_cpu": 0.1},
    ...          "b": {"cpu": 0.9, "memory": 0.3, "external_cpu": 0.0}})
    {'cpu': 0.9, 'memory': 0.5, 'external_cpu': 0.1}
    >>> combine({})["cpu"]
    nan
    """
    out = {}
    for name in SIGNALS:
        values = [_number(load.get(name)) for load in hosts.values()]
        out[name] = _NAN if not values or any(math.isnan(v) for v in values) else max(values)
    return out


class HostSignals:
    """The scheduler's side: per-host loads from the workers' heartbeats, combined into the mode's signals.

    Parameters
    ----------
    plugin : AdaptiveSchedulerPlugin
        Its ``scheduler`` (the workers and their heartbeat metrics), its
        runtime's :class:`~asafe.core.signals.SystemSignals` (the scheduler's
        host) and ``_local_hosts`` (the names of the scheduler's host).
    stale : float, optional
        Seconds after a worker's last heartbeat at which its report is stale
        (default ``asafe.distributed.host-signals.stale``).
    """

    def __init__(self, plugin: Any, stale: float | None = None) -> None:
        self.plugin = plugin
        self.stale = settings()["stale"] if stale is None else float(stale)
        self._next = 0.0
        self._values: dict[str, float] = {}
        self._table: dict[str, dict[str, Any]] = {}
        self._local_only = True  # every worker on the scheduler's host (or none): its own reading, live
        self._lock = threading.Lock()

    def attach(self, runtime: Any) -> Callable[[], None]:
        """Attach ``cpu``, ``memory``, ``external_cpu`` to ``runtime``'s mode; returns the detach function.

        Nothing is attached where the runtime samples no system signals
        (``signals=False``): such a runtime reads none, here or per host.
        """
        if runtime.system_signals is None:
            return lambda: None
        detachers = [runtime.add_signal(name, self._source(name)) for name in SIGNALS]

        def detach() -> None:
            for detach_one in detachers:
                detach_one()

        return detach

    def _source(self, name: str) -> Callable[[], float]:
        def source() -> float:
            return self.read()[name]

        source.__name__ = f"host_{name}"
        return source

    def read(self) -> dict[str, float]:
        """The combined signals, recomputed at most every :data:`COMBINE_INTERVAL` seconds.

        Where every worker runs on the scheduler's host (or there is none), the
        scheduler's own reading is served as it is, exactly as without this module.
        """
        now = time.monotonic()
        if now >= self._next or not self._values:
            with self._lock:
                self._next = now + COMBINE_INTERVAL
                self._values, self._table = self._combine()
        if self._local_only:
            system = self.plugin.runtime.system_signals
            if system is not None:
                return system.read()
        return self._values

    def _combine(self) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
        plugin = self.plugin
        scheduler = plugin.scheduler
        system = plugin.runtime.system_signals
        local_reading = dict(system.read()) if system is not None else {name: _NAN for name in SIGNALS}
        by_host: dict[str, list] = {}
        for ws in list(getattr(scheduler, "workers", {}).values()):
            by_host.setdefault(ws.host, []).append(ws)
        local = plugin._local_hosts
        self._local_only = all(host in local for host in by_host)
        if not by_host:  # no worker: the scheduler's host, as before
            return {name: local_reading.get(name, _NAN) for name in SIGNALS}, {}
        from distributed.metrics import time as now_time

        now = now_time()
        loads, table = {}, {}
        for host, workers in by_host.items():
            if host in local:
                load = {name: local_reading.get(name, _NAN) for name in SIGNALS}
                table[host] = {**load, "workers": len(workers), "source": "the scheduler's host (psutil here)"}
            else:
                reports, why = [], []
                for ws in workers:
                    report = (getattr(ws, "metrics", None) or {}).get(HOST_SIGNALS)
                    age = now - getattr(ws, "last_seen", now)
                    if not isinstance(report, Mapping):
                        reports.append(None)
                        why.append(f"{ws.address}: no report in its heartbeat")
                    elif age > self.stale:
                        reports.append(None)
                        why.append(f"{ws.address}: last heartbeat {age:.1f} s ago (stale after {self.stale:g} s)")
                    else:
                        reports.append(report)
                        if report.get("error"):
                            why.append(f"{ws.address}: {report['error']}")
                load = host_load(reports, len(workers))
                scopes = sorted({str(r.get("scope")) for r in reports if r is not None})
                table[host] = {**load, "workers": len(workers), "source": f"workers' reports ({', '.join(scopes)})",
                               "unknown": why if any(math.isnan(v) for v in load.values()) else []}
            loads[host] = load
        return combine(loads), table

    def refresh(self) -> None:
        """Recompute the combined signals at their next read (a report arrived between two heartbeats)."""
        self._next = 0.0

    def table(self) -> dict[str, dict[str, Any]]:
        """Per host: ``cpu``, ``memory``, ``external_cpu``, ``workers``, ``source`` and why a value is unknown."""
        self.read()
        return {host: dict(row) for host, row in self._table.items()}


def attach(plugin: Any) -> Callable[[], None]:
    """Give ``plugin`` its :class:`HostSignals` (``plugin.host_signals``); returns the function that detaches it."""
    try:
        plugin.host_signals = HostSignals(plugin)
        return plugin.host_signals.attach(plugin.runtime)
    except Exception:
        logger.exception("asafe: per-host signals are off; the mode reads the scheduler's host only")
        return lambda: None


def receive_report(plugin: Any, worker: str, report: Any) -> bool:
    """Take a worker's report that came with its hello, as its heartbeat's until the next heartbeat replaces it.

    Returns whether it was taken (a worker the scheduler knows, a report that
    is a mapping); the combined signals are recomputed at their next read.
    """
    ws = plugin.scheduler.workers.get(worker) if plugin.scheduler is not None else None
    if ws is None or not isinstance(report, Mapping):
        return False
    ws.metrics[HOST_SIGNALS] = dict(report)  # the scheduler replaces ws.metrics at the next heartbeat
    host_signals = getattr(plugin, "host_signals", None)
    if host_signals is not None:
        host_signals.refresh()
    return True


def info(plugin: Any) -> dict[str, Any]:
    """``handle.info("hosts")``: the combined signals and the per-host table (empty before :func:`attach`)."""
    host_signals = getattr(plugin, "host_signals", None)
    if host_signals is None:
        return {"signals": {}, "hosts": {}}
    return {"signals": dict(host_signals.read()), "hosts": host_signals.table(),
            "rule": "the busiest host (the maximum over hosts with workers); nan if any is unknown",
            "watched_reports": getattr(plugin, "host_reports", 0)}  # HostWatch reports taken between heartbeats
