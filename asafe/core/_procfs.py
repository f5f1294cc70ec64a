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
A process's children (:func:`children_pids`, every ten seconds) are read from
the kernel's list of each thread's children (``/proc/<pid>/task/<tid>/children``):
a file per thread of the processes in the tree, where psutil reads the ``stat``
of every process on the host to find those whose parent is the one asked about.
That scan took 3.3 ms with 68 processes on the host and 42 ms with 1,068, on
the thread that samples (a worker's event loop, in its heartbeat), every ten
seconds; the lists took 0.07 ms in both (``docs/results/signals-s52``). Where the kernel keeps
no such list (built without ``CONFIG_PROC_CHILDREN``; kernels before 3.5),
psutil's scan is used. Where ``/proc`` does not read as expected when
:func:`reads_for` builds it (not Linux, or no ``MemAvailable``: kernels before
3.14), psutil is used as it is.
"""
from __future__ import annotations

import os
import time
from types import SimpleNamespace
from typing import Any

__all__ = ["ProcReads", "children_pids", "descendants", "reads_for"]


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


def descendants(pid: int, recursive: bool = True, root: str = "/proc") -> list[int] | None:
    """The pids of ``pid``'s children (and of theirs, with ``recursive``), ascending; None where the kernel lists none.

    Read from ``<root>/<pid>/task/<tid>/children``, the processes each thread
    of ``pid`` started (a child whose thread exited is listed under another
    thread of its process). A process or thread that exits during the walk is
    skipped: a sample reads the tree as it was, give or take a process that
    started or ended meanwhile, as psutil's scan does.

    Returns None where ``pid``'s first thread has no ``children`` file (a kernel
    without ``CONFIG_PROC_CHILDREN``, or not Linux): the caller falls back to
    psutil. Raises ``ProcessLookupError`` where ``pid`` is not there.

    Examples
    --------
    >>> import subprocess, sys
    >>> child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    >>> child.pid in (descendants(os.getpid()) or [child.pid])   # None only where the kernel keeps no lists
    True
    >>> child.kill(); child.wait() != 0
    True
    """
    if not os.path.exists(f"{root}/{pid}/task/{pid}/children"):
        if not os.path.isdir(f"{root}/{pid}"):
            raise ProcessLookupError(f"no process {pid} in {root}")
        return None
    found: set[int] = set()
    todo = [int(pid)]
    while todo:
        parent = todo.pop()
        try:
            threads = os.listdir(f"{root}/{parent}/task")
        except OSError:  # exited during the walk
            continue
        for tid in threads:
            try:
                listed = _read(f"{root}/{parent}/task/{tid}/children").split()
            except OSError:  # the thread exited during the walk
                continue
            for child in map(int, listed):
                if child not in found:
                    found.add(child)
                    if recursive:
                        todo.append(child)
    return sorted(found)


def children_pids(psutil: Any, pid: int | None = None) -> list[int]:
    """The pids of ``pid``'s descendants (this process's by default): :func:`descendants`, else psutil's scan.

    Raises ``psutil.Error`` where the process is not there (as psutil does).
    """
    pid = os.getpid() if pid is None else int(pid)
    try:
        pids = descendants(pid)
    except ProcessLookupError:
        raise psutil.NoSuchProcess(pid) from None
    if pids is None:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    return pids


def _read(path: str) -> bytes:
    """The whole of a small file that may be longer than one read (a list of children)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


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
        """The process's children (``.pid`` each), from the kernel's lists where it keeps them (:func:`descendants`)."""
        reads = self._reads
        try:
            pids = descendants(self.pid, recursive, reads._root)
        except ProcessLookupError:
            raise reads._psutil.NoSuchProcess(self.pid) from None
        if pids is None:
            return reads._psutil.Process(self.pid).children(recursive=recursive)
        return [SimpleNamespace(pid=pid) for pid in pids]
