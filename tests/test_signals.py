"""System signals: the host's load, and the part of it the run's own processes do not explain.

psutil is replaced by a scripted stand-in where a test needs exact loads (the
machines are shared: a real host's load is whatever the other jobs make it).
"""
from __future__ import annotations

import os
import types

import psutil
import pytest
from hypothesis import given, strategies as st

from asafe.core import signals
from asafe.core.signals import SystemSignals, external_load


@given(st.floats(0, 1), st.floats(0, 64), st.integers(1, 64))
def test_external_load_is_a_fraction_never_above_the_host_load(host, own, cpus):
    value = external_load(host, own, cpus)
    assert 0.0 <= value <= min(host, 1.0) + 1e-12


class FakePsutil(types.SimpleNamespace):
    """psutil as SystemSignals uses it, with loads set by the test (percent, as psutil gives them)."""

    Error = psutil.Error
    NoSuchProcess = psutil.NoSuchProcess

    def __init__(self, cpus=2):
        super().__init__(host=0.0, load={}, children_pids=[], created=[])
        self._cpus = cpus

    def cpu_count(self):
        return self._cpus

    def cpu_percent(self, interval=None):
        return self.host

    def virtual_memory(self):
        return types.SimpleNamespace(percent=40.0)

    def Process(self, pid=None):
        fake = self
        pid = os.getpid() if pid is None else pid
        if pid not in fake.load and pid != os.getpid():
            raise psutil.NoSuchProcess(pid)
        fake.created.append(pid)

        class _Process:
            def __init__(self):
                self.pid = pid

            def cpu_percent(self, interval=None):
                if pid not in fake.load:
                    raise psutil.NoSuchProcess(pid)
                return fake.load[pid]

            def children(self, recursive=False):
                return [types.SimpleNamespace(pid=p) for p in fake.children_pids]

        return _Process()


@pytest.fixture
def fake(monkeypatch):
    stand_in = FakePsutil(cpus=2)
    stand_in.load[os.getpid()] = 0.0
    monkeypatch.setattr(signals, "psutil", stand_in)
    return stand_in


def sample(system):
    system._next = 0.0  # the next read samples now
    return system.read()


def test_the_runs_own_processes_are_not_external_load(fake):
    system = SystemSignals(interval=0.5)
    worker = 4242
    fake.load[worker] = 100.0
    system.watch(lambda: [worker])
    fake.host, fake.load[os.getpid()] = 100.0, 100.0  # both cpus busy: this process and a worker
    first = sample(system)
    assert first["cpu"] == 1.0
    assert first["external_cpu"] == 0.5  # the worker is new: it counts from its next sample
    assert sample(system) == {"cpu": 1.0, "memory": 0.4, "external_cpu": 0.0}
    fake.load[os.getpid()] = 0.0  # another job takes this process's cpu
    assert sample(system)["external_cpu"] == 0.5


def test_a_watched_process_primed_counts_from_the_first_sample(fake):
    worker = 4321
    fake.load[worker] = 100.0
    system = SystemSignals(interval=0.5)
    system.watch(lambda: [worker])
    system.prime()  # what the scheduler plugin does once the workers are named
    fake.host, fake.load[os.getpid()] = 100.0, 100.0
    assert sample(system)["external_cpu"] == 0.0  # both busy cpus are the run's own, from the first sample on


def test_children_count_as_the_runs_own(fake, monkeypatch):
    monkeypatch.setattr(signals, "CHILDREN_REFRESH", 0.0)  # scan at every sample
    fake.children_pids = [77]
    fake.load[77] = 150.0  # a child process with 1.5 busy threads
    system = SystemSignals(interval=0.5)
    fake.host = 100.0
    assert sample(system)["external_cpu"] == pytest.approx(0.25)
    del fake.load[77]  # it exits: forgotten, and what it left is someone else's
    fake.children_pids = []
    assert sample(system)["external_cpu"] == 1.0
    assert 77 not in system._processes


def test_a_failing_watcher_is_skipped(fake):
    system = SystemSignals(interval=0.5)

    def broken():
        raise RuntimeError("scheduler gone")

    system.watch(broken)
    fake.host = 50.0
    assert sample(system)["external_cpu"] == 0.5
    unwatch = system.watch(lambda: [999])  # not a process of this host: skipped
    assert sample(system)["external_cpu"] == 0.5
    unwatch()
    assert len(system._watchers) == 1


def test_real_host_sample():
    system = SystemSignals(interval=0.0)
    for _ in range(3):
        values = system.read()
        assert set(values) == {"cpu", "memory", "external_cpu"}
        assert all(0.0 <= v <= 1.0 for v in values.values())
        assert values["external_cpu"] <= values["cpu"] + 1e-12


def test_a_driven_sample_is_taken_by_its_driver_not_by_a_read(fake, monkeypatch):
    """With a driver keeping the sample fresh (the scheduler plugin's periodic callback), a read on the event path
    never pays for psutil; it samples inline only once the driver has missed a whole interval."""
    clock = [100.0]
    monkeypatch.setattr(signals, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    taken = []
    monkeypatch.setattr(fake, "cpu_percent", lambda interval=None: taken.append(clock[0]) or fake.host)
    system = SystemSignals(interval=0.5)
    taken.clear()  # the constructor's priming call
    system.driven = True
    first = system.sample()
    assert taken == [100.0]
    clock[0] = 100.9  # past the interval, the driver late: served as it is
    assert system.read() is first and taken == [100.0]
    clock[0] = 101.0  # a whole interval overdue: the read takes it
    assert system.read() is not first and taken == [100.0, 101.0]
    system.driven = False
    clock[0] = 101.5  # undriven: the first read past the interval samples, as before
    system.read()
    assert taken == [100.0, 101.0, 101.5]
