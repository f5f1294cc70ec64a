"""The /proc reader behind SystemSignals on Linux: psutil's arithmetic on files a test writes, and psutil's readings."""
from __future__ import annotations

import os
import subprocess
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


# --------------------------------------------------------------------------- children, from the kernel's lists
@pytest.fixture
def tree(proc):
    """Process 42 with two threads: thread 42 started 43, thread 50 started 44; 43 started 45."""
    proc.write("42/task/42/children", b"43 ")
    proc.write("42/task/50/children", b"44 ")
    proc.write("43/task/43/children", b"45 ")
    proc.write("44/task/44/children", b"")
    proc.write("45/task/45/children", b"")
    return proc


def test_descendants_walk_every_threads_list(tree):
    assert _procfs.descendants(42, root=tree.root) == [43, 44, 45]
    assert _procfs.descendants(42, recursive=False, root=tree.root) == [43, 44]
    assert _procfs.descendants(45, root=tree.root) == []


def test_a_process_or_thread_gone_during_the_walk_is_skipped(tree):
    tree.write("42/task/51/stat", b"")  # a thread whose children file is gone: it exited after the listing
    os.makedirs(os.path.join(tree.root, "44", "task", "44"), exist_ok=True)
    os.remove(os.path.join(tree.root, "44", "task", "44", "children"))
    tree.write("43/task/43/children", b"45 46 ")  # 46 exited before its folder was read
    assert _procfs.descendants(42, root=tree.root) == [43, 44, 45, 46]


def test_a_kernel_without_the_lists_says_so_and_a_missing_process_raises(proc):
    assert _procfs.descendants(42, root=proc.root) is None  # 42/stat but no task/42/children
    with pytest.raises(ProcessLookupError):
        _procfs.descendants(7, root=proc.root)


def test_without_the_lists_psutil_lists_the_children(proc):
    """A /proc without the lists: the reader's children are psutil's (a real child of this process)."""
    pid = os.getpid()
    proc.write(f"{pid}/stat", _pid_stat(pid, 1, 1))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        listed = ProcReads(psutil, proc.root).Process(pid).children()
        assert child.pid in [p.pid for p in listed]
        assert all(isinstance(p, psutil.Process) for p in listed)  # psutil's own answer
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_the_lists_find_children_and_grandchildren_as_psutil_does():
    """A child that started a grandchild, both real: the same pids as psutil's scan of every process."""
    if _procfs.descendants(os.getpid()) is None:
        pytest.skip("this kernel keeps no lists of children (CONFIG_PROC_CHILDREN)")
    code = ("import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)")
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 10
        while len(psutil.Process(child.pid).children()) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        grandchild = psutil.Process(child.pid).children()[0].pid
        ours = {child.pid, grandchild}
        theirs_before = {p.pid for p in psutil.Process().children(recursive=True)}
        mine = _procfs.descendants(os.getpid())
        theirs_after = {p.pid for p in psutil.Process().children(recursive=True)}
        assert mine == sorted(mine) and ours <= set(mine)
        # the same pids as the scan, but for a process of another test that started or ended meanwhile
        assert theirs_before & theirs_after <= set(mine) <= theirs_before | theirs_after
        assert child.pid in _procfs.descendants(os.getpid(), recursive=False)
        assert grandchild not in _procfs.descendants(os.getpid(), recursive=False)
        assert ours <= set(_procfs.children_pids(psutil))
        assert ours <= {p.pid for p in reads_for(psutil).Process().children(recursive=True)}
    finally:
        for p in psutil.Process(child.pid).children(recursive=True):
            p.kill()
        child.kill()
        child.wait()
    with pytest.raises(psutil.NoSuchProcess):
        _procfs.children_pids(psutil, child.pid)
