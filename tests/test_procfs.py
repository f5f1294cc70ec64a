"""The /proc reader behind SystemSignals on Linux: psutil's arithmetic on files a test writes, and psutil's readings."""
from __future__ import annotations

import os
import sys
import time
import types

import psutil
import pytest

from asafe.core import _procfs
from asafe.core._procfs import ProcReads, reads_for
from asafe.core.signals import SystemSignals

MEMINFO = b"MemTotal:       1000000 kB\nMemFree:         100000 kB\nMemAvailable:    250000 kB\nBuffers: 1 kB\n"


def _stat(user, nice, system, idle, iowait, guest=0):
    return f"cpu  {user} {nice} {system} {idle} {iowait} 0 0 0 {guest} 0\ncpu0 1 2 3 4 5 0 0 0 0 0\nintr 1 2 3\n".encode()


def _pid_stat(pid, utime, stime, name="a b) (c"):
    fields = ["S", "1"] + ["0"] * 9 + [str(utime), str(stime)] + ["0"] * 30
    return f"{pid} ({name}) {' '.join(fields)}\n".encode()


@pytest.fixture
def proc(tmp_path):
    """A folder laid out as /proc, and a writer for its files."""
    def write(name, data):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    write("stat", _stat(100, 0, 100, 800, 0))
    write("meminfo", MEMINFO)
    write("42/stat", _pid_stat(42, 10, 5))
    return types.SimpleNamespace(root=str(tmp_path), write=write)


def test_host_cpu_is_the_busy_share_since_the_previous_read(proc):
    reads = ProcReads(psutil, proc.root)  # primed on the file as written
    proc.write("stat", _stat(150, 0, 150, 880, 20, guest=30))  # +100 busy (30 of it guest, inside user), +100 idle
    assert reads.cpu_percent() == pytest.approx(50.0)
    proc.write("stat", _stat(150, 0, 150, 980, 20, guest=30))  # only idle since
    assert reads.cpu_percent() == 0.0
    assert reads.cpu_percent() == 0.0  # no time passed


def test_memory_in_use_is_total_less_available(proc):
    assert ProcReads(psutil, proc.root).virtual_memory().percent == pytest.approx(75.0)


def test_a_process_reads_its_user_and_system_time_over_the_wall_time(proc, monkeypatch):
    clock = [10.0]
    monkeypatch.setattr(_procfs, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    reads = ProcReads(psutil, proc.root)
    process = reads.Process(42)
    assert process.cpu_percent() == 0.0  # the first read primes it, as psutil's
    ticks = os.sysconf("SC_CLK_TCK")
    proc.write("42/stat", _pid_stat(42, 10 + ticks // 2, 5 + ticks))  # 1.5 s of cpu ...
    clock[0] = 11.0  # ... in 1 s: one and a half busy threads
    assert process.cpu_percent() == pytest.approx(150.0)


def test_a_process_that_is_not_there_raises_psutils_error(proc):
    reads = ProcReads(psutil, proc.root)
    with pytest.raises(psutil.NoSuchProcess):
        reads.Process(7)
    process = reads.Process(42)
    os.remove(os.path.join(proc.root, "42", "stat"))  # it exited
    with pytest.raises(reads.Error):
        process.cpu_percent()


def test_psutil_is_used_where_proc_does_not_read_as_expected(proc):
    proc.write("meminfo", b"MemTotal: 1000 kB\nMemFree: 10 kB\n")  # no MemAvailable: a kernel before 3.14
    assert reads_for(psutil, proc.root) is psutil
    assert reads_for(psutil, os.path.join(proc.root, "missing")) is psutil
    stand_in = types.SimpleNamespace(Error=Exception)  # a scripted psutil (no LINUX): as it is
    assert reads_for(stand_in, proc.root) is stand_in


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_the_readings_agree_with_psutils_on_this_host():
    reads = reads_for(psutil)
    assert isinstance(reads, ProcReads)
    mine, theirs = reads.Process(), psutil.Process()
    reads.cpu_percent(), psutil.cpu_percent(interval=None), mine.cpu_percent(), theirs.cpu_percent(interval=None)
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:  # this thread busy: about 100 for this process
        pass
    assert mine.cpu_percent() == pytest.approx(theirs.cpu_percent(interval=None), abs=10.0)
    assert reads.cpu_percent() == pytest.approx(psutil.cpu_percent(interval=None), abs=10.0)
    assert reads.virtual_memory().percent == pytest.approx(psutil.virtual_memory().percent, abs=2.0)
    assert [p.pid for p in reads.Process().children()] == [p.pid for p in psutil.Process().children()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_system_signals_read_proc_on_linux():
    assert isinstance(SystemSignals(interval=0.0)._psutil, ProcReads)
