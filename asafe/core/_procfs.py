"""The three readings of :class:`~asafe.core.signals.SystemSignals`, read from Linux's ``/proc`` directly.

:class:`ProcReads` offers the part of psutil's API that ``SystemSignals`` calls
(``cpu_count``, ``cpu_percent``, ``virtual_memory``, ``Process`` with
``cpu_percent`` and ``children``, ``Error``), with psutil's arithmetic:

* the host's cpu: the busy share of all cpu time since the previous read, from
  the first line of ``/proc/stat`` (guest time, already counted in user time,
  left out of the total; idle and iowait are not busy);
* memory in use: ``1 - MemAvailable / MemTotal`` from ``/proc/meminfo``;
* a process's cpu: its user and system time (``/proc/<pid>/stat``) over the
  wall time since its previous read, one busy thread reading 100.

psutil builds named tuples of every field, parses every line of
``/proc/meminfo`` and asks the system for the cpu count at each process read;
after an idle gap its sample of the host and three processes took the scheduler's
thread about 1 ms (965 us), this reader's about half (444 us; in a tight loop 433 and
141 us, ``docs/results/signals-s43``).
A process's children are listed by psutil (a scan of ``/proc``, every ten
seconds). Where ``/proc`` does not read as expected when :func:`reads_for` builds
it (not Linux, or no ``MemAvailable``: kernels before 3.14), psutil is used as
it is.
"""
from __future__ import annotations

import os
import time
from types import SimpleNamespace
from typing import Any

__all__ = ["ProcReads", "reads_for"]


def reads_for(psutil: Any, root: str = "/proc") -> Any:
    """A :class:`ProcReads` over ``root`` where it reads as expected and ``psutil`` is psutil on Linux; else ``psutil``.

    A stand-in for psutil (tests script one) has no ``LINUX`` and is returned as it is.
    """
    if getattr(psutil, "LINUX", False):
        try:
            return ProcReads(psutil, root)
        except (OSError, ValueError, IndexError, KeyError, ZeroDivisionError):
            pass
    return psutil


def _head(path: str, size: int = 1024) -> bytes:
    """The first ``size`` bytes of a file (one system call each to open, read and close)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


class ProcReads:
    """psutil's host and process cpu readings and memory percent, for :class:`~asafe.core.signals.SystemSignals`.

    Parameters
    ----------
    psutil : module
        psutil itself: its ``Error`` and ``NoSuchProcess``, ``cpu_count``, and
        the children of a process.
    root : str
        Where ``/proc`` is (a test gives a folder of its own).

    Raises
    ------
    OSError, ValueError, IndexError, KeyError
        ``root`` does not read as ``/proc`` does (see :func:`reads_for`).
    """

    def __init__(self, psutil: Any, root: str = "/proc") -> None:
        self._psutil = psutil
        self.Error = psutil.Error
        self._root = root
        self._ticks = float(os.sysconf("SC_CLK_TCK"))
        self._host = self._host_times()  # primes: the first cpu_percent reads from here
        self.virtual_memory()  # refuses a meminfo without MemAvailable

    def cpu_count(self) -> int | None:
        return self._psutil.cpu_count()

    def _host_times(self) -> tuple[int, int]:
        # "cpu  user nice system idle iowait irq softirq steal guest guest_nice" (later kernels add fields)
        fields = [int(v) for v in _head(f"{self._root}/stat", 256).split(b"\n", 1)[0].split()[1:]]
        total = sum(fields) - sum(fields[8:10])  # guest and guest_nice are in user and nice already
        return total - fields[3] - (fields[4] if len(fields) > 4 else 0), total

    def cpu_percent(self, interval: None = None) -> float:
        """The host's busy percent since the previous call (0.0 the first time, as psutil's)."""
        busy, total = self._host_times()
        (last_busy, last_total), self._host = self._host, (busy, total)
        if total <= last_total:
            return 0.0
        return min(max((busy - last_busy) / (total - last_total) * 100.0, 0.0), 100.0)

    def virtual_memory(self) -> SimpleNamespace:
        """``.percent``: the memory in use, ``(MemTotal - MemAvailable) / MemTotal`` in percent."""
        values = {}
        for line in _head(f"{self._root}/meminfo", 512).split(b"\n")[:8]:
            name, _, rest = line.partition(b":")
            if name in (b"MemTotal", b"MemAvailable"):
                values[name] = int(rest.split()[0])
        total = values[b"MemTotal"]
        return SimpleNamespace(percent=(total - values[b"MemAvailable"]) / total * 100.0)

    def Process(self, pid: int | None = None) -> "_Process":  # noqa: N802 - psutil's name
        return _Process(self, os.getpid() if pid is None else int(pid))


class _Process:
    """One process's cpu percent since its previous read; raises ``psutil.NoSuchProcess`` once it is gone."""

    __slots__ = ("pid", "_reads", "_last")

    def __init__(self, reads: ProcReads, pid: int) -> None:
        self.pid = pid
        self._reads = reads
        self._last: tuple[float, float] | None = None
        self._seconds()  # a pid that is not there raises here, as psutil.Process(pid) does

    def _seconds(self) -> float:
        reads = self._reads
        try:
            data = _head(f"{reads._root}/{self.pid}/stat")
        except OSError:
            raise reads._psutil.NoSuchProcess(self.pid) from None
        fields = data[data.rfind(b")") + 2:].split()  # the name, in parentheses, may hold spaces and ")"
        return (int(fields[11]) + int(fields[12])) / reads._ticks  # utime + stime

    def cpu_percent(self, interval: None = None) -> float:
        """User and system time over wall time since the previous call, in percent (0.0 the first time)."""
        now, seconds = time.monotonic(), self._seconds()
        last, self._last = self._last, (now, seconds)
        if last is None or now <= last[0]:
            return 0.0
        return max(seconds - last[1], 0.0) / (now - last[0]) * 100.0

    def children(self, recursive: bool = False) -> list:
        return self._reads._psutil.Process(self.pid).children(recursive=recursive)
