"""Multi-host clusters on one machine (asafe.app.hosts) and the per-host signals (asafe.schedulers.hosts).

The unit tests need no privileges. The topology tests build network namespaces
joined by a bridge (root, ``ip`` and ``tc``); where none can be built they skip
and say why, except under ``ASAFE_TEST_REQUIRE_NETNS=1`` (set by ``.ci/run``,
which runs as root on Linux), where that is a failure.

On the topology: the scheduler and the client run in host 0, one worker in each
of hosts 1 and 2, every host's link shaped to 1 Gbit/s. The client side of each
test is a script run in host 0 that prints one JSON line.
"""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from asafe.app import hosts
from asafe.schedulers import hosts as host_signals

import benchmarks.__main__ as bench_main


# --------------------------------------------------------------------------- no privileges needed
@pytest.mark.parametrize("value", [0, 1, 65, "three", 2.5, None, True])
def test_a_bad_host_count_says_what_is_accepted(value):
    with pytest.raises(ValueError, match="--hosts must be an integer from 2 to 64"):
        hosts.parse_hosts(value)


def test_names_carry_the_pid_and_addresses_are_private():
    topo = hosts.Topology(4, "100mbit")
    pid = str(os.getpid())
    assert all(name.startswith(f"asafe-h{pid}") for name in topo.names)
    assert len(set(topo.names)) == 5 and topo.switch.endswith("-sw")
    assert [h.address for h in topo.hosts] == ["10.201.0.1", "10.201.0.2", "10.201.0.3", "10.201.0.4"]
    assert hosts.Topology(2, "1gbit").switch != topo.switch  # a second topology of one process: other names
    with pytest.raises(RuntimeError, match="not built"):
        topo.command(0, ["true"])


def test_stale_namespaces_are_those_of_dead_makers(monkeypatch):
    dead = 2**22 + 12345  # above the default pid_max: no such process
    names = [f"asafe-h{dead}-sw", f"asafe-h{dead}b-0", f"asafe-h{os.getpid()}-0", "someone-else", f"asafe-h{dead}-x"]
    monkeypatch.setattr(hosts, "_ip_tc", lambda: ("/sbin/ip", "/sbin/tc"))
    monkeypatch.setattr(hosts, "_netns_names", lambda ip: names)
    assert hosts.stale_namespaces() == [f"asafe-h{dead}-sw", f"asafe-h{dead}b-0"]


def test_a_leaked_variable_is_not_a_topology(monkeypatch):
    monkeypatch.setenv(hosts.ENV_HOSTS, json.dumps({"netns": "net:[1]", "n_hosts": 3, "scheduler": "tcp://x:1"}))
    assert hosts.current() is None and hosts.describe() is None
    monkeypatch.setenv(hosts.ENV_HOSTS, "not json")
    assert hosts.current() is None


def test_missing_tools_are_named(monkeypatch):
    from asafe.app import link

    monkeypatch.setattr(link, "_tool", lambda name: None if name == "tc" else f"/usr/bin/{name}")
    with pytest.raises(hosts.HostsUnavailable, match=r"missing on PATH .*: tc\. .*root"):
        hosts._ip_tc()


def test_hosts_fails_at_once_where_no_topology_can_be_built(monkeypatch, capsys):
    def unavailable():
        raise hosts.HostsUnavailable("this process runs as uid 1000, not root. A multi-host topology needs ...")

    monkeypatch.setattr(hosts, "check_available", unavailable)
    started = time.perf_counter()
    assert bench_main.main(["wire", "--hosts", "3", "--link", "1gbit", "--quick"]) == 2
    assert time.perf_counter() - started < 5
    err = capsys.readouterr().err
    assert "--hosts 3: this process runs as uid 1000, not root" in err


def test_hosts_is_refused_by_a_suite_that_cannot_use_it(capsys):
    assert bench_main.main(["overhead", "--hosts", "3"]) == 2
    err = capsys.readouterr().err
    assert "suite overhead does not run its cluster on a multi-host topology" in err and "wire" in err
    assert bench_main.main(["wire", "--hosts", "1"]) == 2
    assert "from 2 to 64" in capsys.readouterr().err


def test_the_suite_option_is_refused_outside_a_topology():
    import argparse

    from benchmarks import harness

    parser = harness.add_common_arguments(argparse.ArgumentParser(prog="suite"), hosts=True)
    with pytest.raises(SystemExit):
        parser.parse_args(["--hosts", "3"])
    assert parser.parse_args([]).hosts is None


def test_host_load_counts_each_process_once_and_unknown_as_unknown():
    a = {"pid": 7, "cpus": 8, "busy_cores": 6.0, "own_cores": 2.0, "memory": 0.25}
    # 32 in-process workers of one process report the same process: its cores count once
    load = host_signals.host_load([a] * 32)
    assert load == {"cpu": 0.75, "memory": 0.25, "external_cpu": 0.5}
    assert math.isnan(host_signals.host_load([a], workers=2)["external_cpu"])  # a worker did not report
    assert math.isnan(host_signals.host_load([dict(a, busy_cores=float("nan"))])["cpu"])  # not measured yet
    assert math.isnan(host_signals.host_load([dict(a, cpus=None)])["memory"])
    combined = host_signals.combine({"x": load, "y": {"cpu": 0.1, "memory": 0.9, "external_cpu": 0.0}})
    assert combined == {"cpu": 0.75, "memory": 0.9, "external_cpu": 0.5}


def test_a_sampler_that_fails_reports_unknown(monkeypatch):
    sampler = host_signals.HostSampler("machine", interval=0.0)
    sampler()  # primes

    def broken():
        raise PermissionError("no access to /proc/stat")

    monkeypatch.setattr(sampler._psutil, "cpu_times", broken)
    report = sampler()
    assert math.isnan(report["busy_cores"]) and "PermissionError" in report["error"]
    assert all(math.isnan(v) for v in host_signals.host_load([report]).values())


def test_the_machine_busy_share_counts_guest_time_once(monkeypatch):
    """Guest time is in user time already: psutil's arithmetic, as the scheduler's /proc reader's."""
    import collections

    times = collections.namedtuple("scputimes", "user nice system idle iowait irq softirq steal guest guest_nice")
    sampler = host_signals.HostSampler("machine", interval=0.0)
    sampler()  # primes with the real counters
    readings = iter([times(100, 0, 100, 800, 0, 0, 0, 0, 0, 0), times(150, 0, 150, 880, 20, 0, 0, 0, 30, 0)])
    monkeypatch.setattr(sampler._psutil, "cpu_times", lambda: next(readings))
    sampler._machine_busy()  # the reference
    # +100 busy (30 of it guest time, inside user time), +100 idle or iowait: half busy (0.565 counting guest twice)
    assert sampler._machine_busy() == pytest.approx(0.5)


def test_a_process_that_starts_between_two_samples_counts_at_the_next():
    """Its cpu since it started: a loaded host is seen one sample after the load starts, not two."""
    sampler = host_signals.HostSampler("machine", interval=0.0)
    sampler()  # primes the counters
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        cores = sampler._cores({burner.pid, os.getppid()})
    finally:
        burner.kill()
        burner.wait(10)
    assert cores[burner.pid] > 0.2, cores  # about one core while it ran (less on a loaded machine)
    assert os.getppid() not in cores  # older than the previous reading, seen first: counted from its next one


def test_a_workers_own_cores_count_its_children():
    """A child this process started (a task's subprocess) is the run's own: its busy core is not another job's."""
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        sampler = host_signals.HostSampler("machine", interval=0.0)
        sampler()  # primes; lists this process's children
        assert burner.pid in sampler._own_pids()
        time.sleep(0.5)
        report = sampler()
    finally:
        burner.kill()
        burner.wait(10)
    assert report["error"] is None
    assert report["own_cores"] > 0.2, report  # the child's core (less on a loaded machine)


def test_the_namespace_scope_counts_this_namespace(tmp_path):
    sampler = host_signals.HostSampler("netns", interval=0.0)
    sampler()
    time.sleep(0.2)
    report = sampler()
    assert report["error"] is None and report["scope"] == "netns"
    assert report["busy_cores"] >= report["own_cores"] >= 0.0
    assert 0.0 < report["memory"] < 1.0  # at least this process's resident bytes


def test_bad_settings_name_the_key():
    import dask

    from asafe.core.validate import InvalidSetting

    with dask.config.set({"asafe.distributed.host-signals.scope": "rack"}):
        with pytest.raises(InvalidSetting, match="asafe.distributed.host-signals.scope must be one of machine, netns"):
            host_signals.settings()
    for fast in ("10ms", "soon", -1):
        with dask.config.set({"asafe.distributed.host-signals.fast-interval": fast}):
            with pytest.raises(InvalidSetting, match="asafe.distributed.host-signals.fast-interval must be"):
                host_signals.settings()
    with dask.config.set({"asafe.distributed.host-signals.fast-interval": 0}):
        assert host_signals.settings()["fast_interval"] == 0.0
        assert host_signals.watch_worker(object(), lambda report: None) is None  # 0: no watch


def _report(busy: float, own: float, cpus: int = 2) -> dict:
    return {"scope": "machine", "pid": os.getpid(), "cpus": cpus, "cpu": busy / cpus, "busy_cores": busy,
            "own_cores": own, "memory": 0.5, "sampled": time.time(), "error": None}


def test_a_host_watch_sends_what_moved_and_nothing_else():
    """The watch's rule, tick by tick on a scripted sampler: the first sample is sent, then only a move of
    FAST_CHANGE of the cpus or a change between known and unknown; one report in flight at a time; a
    report that fails to go is counted and not retried until the load moves again."""
    import asyncio

    readings = [_report(0.5, 0.5), _report(0.6, 0.5), _report(2.0, 0.5), _report(float("nan"), 0.5),
                _report(float("nan"), 0.5), _report(0.5, 0.5), _report(1.5, 0.5), _report(1.5, 0.5)]
    sampler = host_signals.HostSampler("machine", interval=10.0)
    sampler._psutil = object()  # primed: the watch's max_age decides
    sampler._sample = lambda: readings.pop(0)
    worker = type("W", (), {"metrics": {host_signals.HOST_SIGNALS: sampler}})()
    sent, outcomes = [], [None] * 4 + [OSError("scheduler gone")]

    async def send(report):
        sent.append(outside(report))
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    outside = host_signals.outside_load

    async def run():
        watch = host_signals.HostWatch(worker, 0.0, send)
        for _ in range(8):
            watch.tick()
            await asyncio.sleep(0)  # the send runs
            await asyncio.sleep(0)
        return watch

    watch = asyncio.run(run())
    # 0.0 sent; 0.05 is no news; 0.75 is; nan is (known -> unknown), nan again is not; 0.0 is; 0.5 is (fails);
    # 0.5 again is not sent (no retry of the same reading)
    assert [round(x, 2) if x == x else "nan" for x in sent] == [0.0, 0.75, "nan", 0.0, 0.5]
    assert watch.sent == 4 and watch.failed == 1 and not readings

    async def in_flight():  # a report not delivered yet: the next tick samples nothing
        readings.extend([_report(0.5, 0.5), _report(2.0, 0.5)])
        blocked = asyncio.get_running_loop().create_future()
        slow = host_signals.HostWatch(worker, 0.0, lambda report: blocked)
        slow.tick()
        await asyncio.sleep(0)
        slow.tick()
        left = len(readings)
        blocked.set_result(None)
        await asyncio.sleep(0)
        return left, slow.sent

    assert asyncio.run(in_flight()) == (1, 1)


def test_a_host_watch_samples_at_its_start_and_anew_at_half_an_interval():
    """A start samples at once (the next sample's window is then one interval, not back to the heartbeat's
    last), and a tick samples anew where the last sample is half an interval old: the periodic callback fires
    a few milliseconds early at times, and such a tick had taken the old sample (docs/results/hosts-s36)."""
    import asyncio

    sampler = host_signals.HostSampler("machine", interval=10.0)  # the heartbeats' sampler: once in 10 s
    sampler._psutil = object()  # primed
    readings = [_report(0.5, 0.5), _report(2.0, 0.5)]
    sampler._sample = lambda: readings.pop(0)
    worker = type("W", (), {"metrics": {host_signals.HOST_SIGNALS: sampler}})()
    sent = []

    async def send(report):
        sent.append(host_signals.outside_load(report))

    async def run():
        watch = host_signals.HostWatch(worker, 1.0, send)
        watch.start()  # samples now, before the periodic callback's first tick (a second away)
        await asyncio.sleep(0)
        first = list(sent)
        sampler._sampled_at -= 0.6  # 0.6 of an interval later, a tick a little early for a whole one
        watch.tick()
        await asyncio.sleep(0)
        watch.stop()
        return first

    assert asyncio.run(run()) == [0.0]
    assert [round(x, 2) for x in sent] == [0.0, 0.75] and not readings


def test_a_watched_host_reports_its_change_between_heartbeats(monkeypatch):
    """While wire compression is on, a worker whose host the scheduler reads from the reports watches its
    host and sends a change at once (``asafe_host``): the scheduler takes it and the domains act on it.

    In process, without root: the scheduler is told the workers' host is not its own (so the hello's reply
    asks for the watch), and the host's readings are scripted (quiet, then another job's two cores).
    """
    import asafe
    from distributed import Client, LocalCluster

    reading = {"report": _report(0.5, 0.5)}
    monkeypatch.setattr(host_signals.HostSampler, "_sample", lambda self: dict(reading["report"], sampled=time.time()))
    runtime = asafe.AdaptiveRuntime([
        asafe.Optimization("wire-compression", asafe.Fixed(False)),
        asafe.Optimization("hosts-quiet", asafe.Hysteresis(0.02, 0.1, metric="external_cpu"), initial=True),
    ], dwell=0, dwell_tasks=0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        handle = asafe.install(client, runtime)
        plugin = cluster.scheduler.plugins["asafe"]
        plugin._local_hosts = frozenset()  # the workers' host is another host than the scheduler's

        async def hello(dask_worker):
            await dask_worker.plugins["asafe"]._hello()
            return dask_worker.plugins["asafe"]._watch_wanted

        def watching():
            return client.run(lambda dask_worker: bool(dask_worker.plugins["asafe"].host_watch
                                                      and dask_worker.plugins["asafe"].host_watch.running))

        assert all(client.run(hello).values())  # the reply asks for the watch ...
        assert not any(watching().values()) and plugin.host_reports == 0  # ... but nothing compresses yet
        plugin.runtime.optimizations["wire-compression"].domain = asafe.Fixed(120)
        plugin.runtime.evaluate()  # compresses: the push starts the watches, whose first samples are sent
        deadline = time.time() + 20
        while plugin.host_reports < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert all(watching().values()) and plugin.host_reports >= 2
        assert handle.state("hosts-quiet") is True
        taken = plugin.host_reports
        reading["report"] = _report(2.0, 0.0)  # another job's two cores on the host
        deadline = time.time() + 20
        while handle.state("hosts-quiet") is not False and time.time() < deadline:
            time.sleep(0.05)
        assert handle.state("hosts-quiet") is False and plugin.host_reports > taken  # a report brought it
        seen = handle.info("hosts")["hosts"]
        assert seen["signals"]["external_cpu"] == 1.0 and seen["watched_reports"] == plugin.host_reports
        plugin.runtime.optimizations["wire-compression"].domain = asafe.Fixed(False)
        plugin.runtime.evaluate()
        deadline = time.time() + 20
        while any(watching().values()) and time.time() < deadline:
            time.sleep(0.05)
        assert not any(watching().values())  # off: the heartbeats carry the reports, as before
        handle.uninstall()
        assert "asafe_host" not in cluster.scheduler.handlers


def test_the_scheduler_combines_the_workers_reports_in_process():
    """Without root: a LocalCluster whose scheduler is told its host is none of the workers' (so every worker
    host is "remote" and read from the heartbeats), then one worker's report taken away."""
    import asafe
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        handle = asafe.install(client)
        plugin = cluster.scheduler.plugins["asafe"]
        (host,) = {w["host"] for w in client.sync(client.scheduler.identity, n_workers=-1)["workers"].values()}
        assert handle.info("hosts")["hosts"]["hosts"][host]["source"] == "the scheduler's host (psutil here)"
        plugin._local_hosts = frozenset()  # the workers' host is now another host than the scheduler's

        def table():
            plugin.host_signals._next = 0.0  # recombine now
            return handle.info("hosts")["hosts"]

        deadline = time.time() + 20
        while math.isnan(table()["signals"]["external_cpu"]) and time.time() < deadline:
            time.sleep(0.2)
        info = table()
        row = info["hosts"][host]
        assert row["source"] == "workers' reports (machine)" and row["workers"] == 2, info
        assert 0.0 <= info["signals"]["external_cpu"] <= 1.0 and info["signals"] == {
            k: row[k] for k in ("cpu", "memory", "external_cpu")}
        client.run(lambda dask_worker: dask_worker.metrics.pop("asafe-host", None) is not None,
                   workers=[sorted(client.nthreads())[0]])
        deadline = time.time() + 20
        while not table()["hosts"][host].get("unknown") and time.time() < deadline:
            time.sleep(0.2)
        info = table()
        assert math.isnan(info["signals"]["external_cpu"]) and math.isnan(info["hosts"][host]["cpu"])
        assert "no report in its heartbeat" in info["hosts"][host]["unknown"][0]
        handle.uninstall()
        assert not any(client.run(lambda dask_worker: "asafe-host" in dask_worker.metrics).values())


def test_a_new_installation_knows_the_hosts_from_the_hellos():
    """The hello carries the worker's host report: a reinstall reads its hosts at once, not after a heartbeat.

    After an uninstall the workers' heartbeats carry no report; without the
    report in the hello the hosts read unknown (nan) until the next heartbeat,
    which kept wire compression off through the first second of every graph
    after an install on three hosts.
    """
    import asafe
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        asafe.install(client).uninstall()  # primes the workers' samplers, as any earlier installation does
        time.sleep(0.3)  # a sample apart
        deadline = time.time() + 20
        while any(host_signals.HOST_SIGNALS in ws.metrics for ws in cluster.scheduler.workers.values()):
            assert time.time() < deadline, "the heartbeats still carry a report after the uninstall"
            time.sleep(0.05)
        handle = asafe.install(client)
        plugin = cluster.scheduler.plugins["asafe"]
        plugin._local_hosts = frozenset()  # the workers' host is another host than the scheduler's
        plugin.host_signals.refresh()
        info = handle.info("hosts")["hosts"]
        (row,) = info["hosts"].values()
        assert row["source"] == "workers' reports (machine)" and not row["unknown"], row
        assert 0.0 <= info["signals"]["external_cpu"] <= 1.0
        # a report that is not a mapping, or from a worker the scheduler does not know, is not taken
        assert not host_signals.receive_report(plugin, "tcp://10.9.9.9:1", {"cpu": 0.5})
        assert not host_signals.receive_report(plugin, next(iter(cluster.scheduler.workers)), "busy")
        handle.uninstall()


def test_a_new_process_waits_for_its_first_measurement_once():
    sampler = host_signals.HostSampler("machine", interval=1.0)
    assert sampler.until_measured() == 0.0  # not primed: nothing to wait for
    assert math.isnan(sampler()["cpu"])  # primed
    wait = sampler.until_measured()
    assert 0.0 < wait <= 0.25
    time.sleep(wait)
    assert 0.0 <= sampler()["cpu"] <= 1.0 and sampler.until_measured() == 0.0


def test_the_first_installation_on_new_worker_processes_knows_their_hosts():
    """The worker plugin's first hello in a new process waits for a measured report (at most 0.25 s)."""
    import asafe
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        handle = asafe.install(client)
        reports = [ws.metrics.get(host_signals.HOST_SIGNALS) for ws in cluster.scheduler.workers.values()]
        handle.uninstall()
    assert all(report is not None and 0.0 <= report["cpu"] <= 1.0 for report in reports), reports


# --------------------------------------------------------------------------- on a real topology
@pytest.fixture(scope="module")
def topology_available():
    try:
        hosts.check_available()
    except hosts.HostsUnavailable as exc:
        if os.environ.get("ASAFE_TEST_REQUIRE_NETNS") == "1":
            pytest.fail(f"{exc} (ASAFE_TEST_REQUIRE_NETNS=1 requires a multi-host topology)")
        pytest.skip(f"no multi-host topology can be built here: {exc}")


@pytest.fixture(scope="module")
def three_hosts(topology_available):
    """A 3-host topology at 1 Gbit/s per host: the scheduler in host 0, a worker in hosts 1 and 2."""
    with hosts.Topology(3, "1gbit") as topology, hosts.HostCluster(topology) as cluster:
        cluster.wait()
        yield topology, cluster


def _in_host0(three_hosts, tmp_path, script: str, timeout: float = 120) -> dict:
    topology, cluster = three_hosts
    path = tmp_path / "client.py"
    path.write_text(textwrap.dedent(script), encoding="utf-8")
    done = topology.run(0, [sys.executable, str(path)], env=cluster.client_env(), capture_output=True,
                        text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_PRELUDE = """
    import json, math, time
    import numpy as np
    import asafe
    from asafe.app import hosts

    def drive(client, handle, seconds, until=None):
        # evaluations happen on scheduler events: keep small graphs coming while the signals are read
        deadline = time.time() + seconds
        while time.time() < deadline:
            client.gather(client.map(lambda x: x + 1, range(20), pure=False))
            if until is not None and until(handle):
                break
            time.sleep(0.2)
        return handle.info("hosts", "mode")

    def nan_safe(x):
        return None if isinstance(x, float) and math.isnan(x) else x
"""


def test_a_rechunk_across_three_hosts_with_asafe(three_hosts, tmp_path):
    topology, cluster = three_hosts
    report = _in_host0(three_hosts, tmp_path, _PRELUDE + """
    import dask.array as da
    with hosts.connect() as client:
        handle = asafe.install(client)
        x = da.random.RandomState(0).random_sample((1024, 2048), chunks=(128, 2048))
        reference = x.compute(scheduler="sync")
        y = client.persist(x.rechunk((1024, 128)))
        result = y.compute()
        workers = client.sync(client.scheduler.identity, n_workers=-1)["workers"]
        holders = {addr for addrs in client.who_has(y).values() for addr in addrs}
        info = drive(client, handle, 10, until=lambda h: all(
            not math.isnan(row["external_cpu"]) for row in h.info("hosts")["hosts"]["hosts"].values()))
        transfers = handle.info("plugin")["plugin"]["transfers"]
        handle.uninstall()
        print(json.dumps({"equal": result.tobytes() == reference.tobytes(), "workers": sorted(workers),
                          "hosts": sorted(w["host"] for w in workers.values()), "holders": sorted(holders),
                          "scheduler": client.scheduler.address, "transfers": transfers["count"],
                          "table": {h: {k: nan_safe(v) for k, v in row.items() if k != "unknown"}
                                    for h, row in info["hosts"]["hosts"].items()}}))
    """)
    assert report["equal"]
    assert report["hosts"] == ["10.201.0.2", "10.201.0.3"]  # one worker per host, each on its own address
    assert report["scheduler"].startswith("tcp://10.201.0.1:")
    assert len(report["holders"]) == 2 and report["transfers"] > 0  # the data crossed between the hosts
    table = report["table"]
    assert sorted(table) == ["10.201.0.2", "10.201.0.3"]  # the scheduler's host runs no worker: not counted
    for row in table.values():
        assert row["source"] == "workers' reports (netns)" and row["workers"] == 1
        assert row["external_cpu"] is not None and 0.0 <= row["external_cpu"] <= 1.0


def test_a_busy_worker_host_is_seen_and_an_unreadable_one_is_unknown(three_hosts, tmp_path):
    """A cpu burner in host 1's namespace: host 1's external_cpu rises, host 2's does not, and the mode sees it.

    The hosts share the machine's cpus, so a machine-wide reading could not tell
    them apart; the workers read their host as the processes of their network
    namespace (``scope: netns``, set by HostCluster), where the burner is host 1's alone.
    """
    topology, cluster = three_hosts
    quiet = """
    rt = asafe.AdaptiveRuntime([asafe.Optimization(
        "hosts-quiet", asafe.Hysteresis(0.02, 0.1, metric="external_cpu"), initial=True)], dwell=0, dwell_tasks=0)
    with hosts.connect() as client:
        handle = asafe.install(client, rt)
        info = drive(client, handle, 25, until=lambda h: UNTIL)
        table = info["hosts"]["hosts"]
        out = {"state": handle.state("hosts-quiet"), "mode": nan_safe(info["mode"][1].get("external_cpu")),
               "combined": nan_safe(info["hosts"]["signals"]["external_cpu"]),
               "h1": nan_safe(table["10.201.0.2"]["external_cpu"]), "h2": nan_safe(table["10.201.0.3"]["external_cpu"]),
               "why": table["10.201.0.3"].get("unknown")}
        EXTRA
        handle.uninstall()
        print(json.dumps(out))
    """
    known = 'all(not math.isnan(r["external_cpu"]) for r in h.info("hosts")["hosts"]["hosts"].values()) and time.sleep(2) is None'
    before = _in_host0(three_hosts, tmp_path, _PRELUDE + quiet.replace("UNTIL", known).replace("EXTRA", ""))
    assert before["h1"] is not None and before["h2"] is not None
    assert before["h1"] < 0.1 and before["h2"] < 0.1
    assert before["state"] is True

    burners = [topology.popen(1, [sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        time.sleep(1.0)
        seen = 'h.state("hosts-quiet") is False'
        unreadable = """
        h2 = [w for w, info in client.sync(client.scheduler.identity, n_workers=-1)["workers"].items() if info["host"] == "10.201.0.3"]
        client.run(lambda dask_worker: dask_worker.metrics.pop("asafe-host", None) is not None, workers=h2)
        later = drive(client, handle, 15, until=lambda h: h.info("hosts")["hosts"]["hosts"]["10.201.0.3"]["unknown"])
        out["unknown"] = {"mode": nan_safe(later["mode"][1].get("external_cpu")),
                          "combined": nan_safe(later["hosts"]["signals"]["external_cpu"]),
                          "h2": nan_safe(later["hosts"]["hosts"]["10.201.0.3"]["external_cpu"]),
                          "why": later["hosts"]["hosts"]["10.201.0.3"]["unknown"]}
        """
        during = _in_host0(three_hosts, tmp_path, _PRELUDE + quiet.replace("UNTIL", seen).replace(
            "EXTRA", textwrap.dedent(unreadable).replace("\n", "\n        ")))
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(10)
    assert during["h1"] is not None and during["h1"] > 0.1, during  # the burners' cores, over the machine's
    assert during["h2"] is not None and during["h2"] < 0.1, during  # host 2 runs only its worker
    assert during["combined"] == pytest.approx(during["h1"])  # the busiest host
    assert during["state"] is False  # the domain read it: switched off
    unknown = during["unknown"]
    assert unknown["h2"] is None and unknown["combined"] is None  # unknown, never idle
    assert any("no report in its heartbeat" in why for why in unknown["why"])


# --------------------------------------------------------------------------- cleaning up
def _names_of(pid: int) -> list[str]:
    ip, _ = hosts._ip_tc()
    return [n for n in hosts._netns_names(ip) if n.startswith(f"asafe-h{pid}")]


def test_close_removes_every_namespace(topology_available):
    with hosts.Topology(2, "100mbit") as topology:
        names = topology.names
        assert set(names) <= set(_names_of(os.getpid()))
        sleeper = topology.popen(1, ["sleep", "600"])
    assert not set(names) & set(_names_of(os.getpid()))
    assert sleeper.poll() is not None  # stopped on close


def test_a_killed_run_leaves_nothing_after_cleanup(topology_available, tmp_path):
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from asafe.app import hosts
        topology = hosts.Topology(3, "1gbit").build()
        cluster = hosts.HostCluster(topology).start()
        cluster.wait()
        print("ready", flush=True)
        time.sleep(600)
    """), encoding="utf-8")
    run = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = run.stdout.readline()
        assert line.strip() == "ready", run.stderr.read()[-3000:]
        names = _names_of(run.pid)
        assert len(names) == 4
        ip, _ = hosts._ip_tc()
        pids = [int(p) for n in names for p in subprocess.run([ip, "netns", "pids", n], capture_output=True,
                                                               text=True).stdout.split()]
        assert pids  # the scheduler and the workers run in them
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(30)
    assert set(names) <= set(hosts.stale_namespaces())  # its maker is gone
    removed = hosts.cleanup_stale()
    assert set(names) <= set(removed)
    assert not _names_of(run.pid)
    deadline = time.time() + 10
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)  # no process of the killed run is left


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_the_demo_suite_takes_hosts_and_refuses_them_outside_a_topology(capsys):
    from benchmarks import demo

    assert bench_main._supports_hosts("demo")
    assert demo.main(["--hosts", "3", "--size", "test"]) == 2
    assert "does not run in host 0 of that topology" in capsys.readouterr().err


def test_the_demo_runs_on_three_hosts(three_hosts, tmp_path):
    # python -m benchmarks demo --hosts 3, as the topology's host 0 runs it: the
    # demo's client takes the topology's cluster, every phase checked against scipy
    topology, cluster = three_hosts
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "demo.json"
    done = topology.run(0, [sys.executable, "-m", "benchmarks", "demo", "--hosts", "3", "--link", "1gbit",
                            "--size", "test", "--repetitions", "1", "--variants", "adaptive,static-on,static-off",
                            "--json", str(out), "--plot", str(tmp_path / "demo.png")],
                        env=cluster.client_env(), cwd=str(root), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert "3 hosts (network namespaces on a bridge), each link 1gbit" in done.stdout
    report = json.loads(out.read_text())
    environment = report["environment"]
    assert environment["workers"] == 2 and "a topology of 3 hosts" in environment["cluster"]
    assert environment["link"]["kind"].startswith("multi-host topology")
    assert set(report["variants"]) >= {"adaptive", "static-on", "static-off"}
