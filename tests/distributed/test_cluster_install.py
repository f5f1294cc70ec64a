"""asafe.install on a LocalCluster: the handle, idempotence, phases, states on workers."""
from __future__ import annotations

import math
import time

import pytest

import asafe
from asafe import ModeVector, Transition

pytestmark = pytest.mark.timeout(120)


@asafe.typed(asafe.COMMUNICATION)
def ship(i):
    time.sleep(0.01)
    return asafe.is_on("compression")


@asafe.typed(asafe.COMPUTE)
def crunch(i):
    time.sleep(0.01)
    return asafe.is_on("compression")


def inc(x):
    return x + 1


def test_install_read_api_uninstall(client, make_runtime, boards):
    rt = make_runtime()
    handle = asafe.install(client, rt)
    try:
        assert handle.installed
        assert handle.state("compression") is False
        assert handle.states == {"compression": False}
        assert isinstance(handle.mode, ModeVector)
        assert handle.history == [] and handle.errors == [] and handle.plugin_errors == []
        with pytest.raises(KeyError, match="unknown optimization 'tiling'; known: \\['compression'\\]"):
            handle.state("tiling")
        assert all(b == {"compression": False} for b in boards(client).values())
        assert client.gather(client.map(inc, range(10))) == list(range(1, 11))
        timeline = handle.timeline
        assert timeline and all(isinstance(t, float) and isinstance(m, ModeVector) for t, m in timeline)
        assert "RuntimeHandle" in repr(handle)
    finally:
        handle.uninstall()
    assert not handle.installed
    assert all(b == {} for b in boards(client).values())  # is_on answers False again
    with pytest.raises(RuntimeError, match="no longer on the cluster"):
        handle.states
    handle.uninstall()  # twice is harmless


def test_install_twice_counts_once(client, make_runtime, installed):
    rt = make_runtime()
    with installed(client, rt) as first:
        second = asafe.install(client, rt)
        assert second.token == first.token
        n = 20
        assert client.gather(client.map(inc, range(n), pure=False)) == list(range(1, n + 1))
        # independent tasks move no data between workers: one tracker event per task
        deadline = time.time() + 10
        while first.finished < n and time.time() < deadline:
            time.sleep(0.05)
        assert first.finished == n
        tracker = first.info("tracker")["tracker"]
        assert tracker["tasks"] == 0
        # nothing scheduled is left (floating-point residue of the running sums aside)
        assert all(abs(w) < 1e-9 for w in tracker["scheduled"].values()), tracker["scheduled"]


def test_install_another_runtime_replaces(client, make_runtime, installed):
    with installed(client, make_runtime()) as old:
        with installed(client, make_runtime()) as new:
            assert new.token != old.token
            with pytest.raises(RuntimeError, match="no longer on the cluster"):
                old.states
            client.gather(client.map(inc, range(8), pure=False))
            deadline = time.time() + 10
            while new.finished < 8 and time.time() < deadline:
                time.sleep(0.05)
            assert new.finished == 8
            plugin = new.info("plugin")["plugin"]
            assert len(plugin["workers"]) == 2  # both workers say hello to the new installation


def test_attach(client, make_runtime, installed):
    with pytest.raises(RuntimeError, match="not installed"):
        asafe.schedulers.distributed.attach(client)
    with installed(client, make_runtime()) as handle:
        attached = asafe.schedulers.distributed.attach(client)
        assert attached.token == handle.token and attached.states == handle.states


def test_phases_switch_and_workers_observe(client, make_runtime, installed, boards):
    rt = make_runtime(window=32)
    with installed(client, rt) as handle:
        # communication phase: the ratio falls below alpha, compression turns on,
        # and the tasks see it where they run
        seen = client.gather(client.map(ship, range(30), pure=False))
        assert handle.state("compression") is True
        assert seen[-1] is True
        assert all(b == {"compression": True} for b in boards(client).values())
        # compute phase: the ratio rises above beta, compression turns off
        seen = client.gather(client.map(crunch, range(60), pure=False))
        assert handle.state("compression") is False
        assert seen[-1] is False
        assert all(b == {"compression": False} for b in boards(client).values())
        history = handle.history
        assert [(t.old, t.new) for t in history] == [(False, True), (True, False)]
        assert all(isinstance(t, Transition) for t in history)
        assert history[0].mode.ratio < 0.5 and history[1].mode.ratio > 2.0
        assert history[0].as_dict()["to"] is True
        # the timeline covers both phases and can be drawn
        ratios = [m.ratio for _, m in handle.timeline if not math.isnan(m.ratio)]
        assert min(ratios) < 0.5 and max(ratios) > 2.0


def test_states_propagate_in_order(client, make_runtime, installed):
    rt = make_runtime()
    with installed(client, rt) as handle:
        for state in (True, False, True):
            handle.set_state("compression", state)
        deadline = time.time() + 10
        while time.time() < deadline:
            receipts = client.run(_receipts)
            if all(len(r) >= 4 for r in receipts.values()):  # the hello reply and three pushes
                break
            time.sleep(0.05)
        for r in receipts.values():
            versions = [v for v, _, _ in r]
            assert versions == [0, 1, 2, 3]  # the hello reply, then every push, in order
            assert all(arrived >= sent - 1.0 for _, sent, arrived in r)  # one host: same clock
        assert client.run(asafe.schedulers.board.snapshot) == {w: {"compression": True} for w in receipts}
        assert [t.new for t in handle.history] == [True, False, True]


def _receipts(dask_worker):
    return list(dask_worker.plugins["asafe"].receipts)


def test_worker_joining_later_gets_current_states(cluster, client, make_runtime, installed, boards):
    rt = make_runtime()
    with installed(client, rt) as handle:
        handle.set_state("compression", True)
        before = set(client.nthreads())
        cluster.scale(3)
        client.wait_for_workers(3, timeout=60)
        try:
            new = set(client.nthreads()) - before
            assert len(new) == 1
            (address,) = new
            deadline = time.time() + 10
            while boards(client).get(address) != {"compression": True} and time.time() < deadline:
                time.sleep(0.05)
            assert boards(client)[address] == {"compression": True}
            assert client.submit(ship, 0, workers=[address], pure=False).result() is True
        finally:
            cluster.scale(2)
            deadline = time.time() + 60
            while len(client.nthreads()) > 2 and time.time() < deadline:
                time.sleep(0.1)


def test_system_signals_are_sampled_between_events_not_on_them(cluster, client, make_runtime, installed, monkeypatch):
    """psutil's sample is taken by a periodic callback on the scheduler's event loop while the scheduler is active,
    so a graph arriving after an idle gap does not pay for it in its arrival's evaluation; idle, the callback stops
    sampling; uninstalled, reads sample again."""
    from asafe.schedulers import scheduler_plugin

    rt = make_runtime(signals=True)
    with installed(client, rt):
        system = cluster.scheduler.plugins["asafe"].runtime.system_signals
        assert system.driven
        assert client.submit(inc, 1).result() == 2  # activity: the arrival evaluates
        taken = system._next
        time.sleep(3 * system.interval)  # no task, no evaluation: only the callback samples
        assert system._next >= taken + system.interval
        monkeypatch.setattr(scheduler_plugin, "_SIGNALS_IDLE_S", system.interval)  # idle that long: no more samples
        time.sleep(2 * system.interval)
        taken = system._next
        time.sleep(3 * system.interval)
        assert system._next == taken
    assert not system.driven


def test_plot(client, make_runtime, installed):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    with installed(client, make_runtime()) as handle:
        client.gather(client.map(ship, range(10), pure=False))
        ax = handle.plot()
        assert ax.get_xlabel() == "seconds"


def test_install_rejects_bad_arguments(client):
    with pytest.raises(TypeError, match="AdaptiveRuntime"):
        asafe.install(client, object())
    with pytest.raises(TypeError, match="distributed.Client"):
        asafe.install(object(), asafe.AdaptiveRuntime([]))


def _plugins_alive(dask_worker=None):
    """The asafe worker plugins this worker process still holds after a full collection (run there)."""
    import gc

    from asafe.schedulers.worker_plugin import AdaptiveWorkerPlugin

    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, AdaptiveWorkerPlugin) and o.worker is dask_worker)


async def _probe_each(dask_scheduler=None):
    """Ask every worker for a small link probe from the other (the asafe_probe RPC handler, run there)."""
    addresses = sorted(dask_scheduler.workers)
    return [await dask_scheduler.rpc(a).asafe_probe(peer=addresses[i - 1], nbytes=4096)
            for i, a in enumerate(addresses)]


def test_uninstalled_installations_are_freed(cluster, client, make_runtime):
    """distributed caches every RPC handler it calls (functools.cache, keyed by the handler): a bound method of a
    plugin registered as one kept every installation (runtime, tracker, forecast) alive after its uninstall."""
    import gc
    import weakref

    scheduler_plugins = []
    for _ in range(3):
        handle = asafe.install(client, make_runtime())  # each worker's hello calls asafe_hello
        assert client.gather(client.map(inc, range(20))) == list(range(1, 21))
        handle.info("mode")  # asafe_info
        assert all(seconds > 0 for seconds in client.run_on_scheduler(_probe_each))  # asafe_probe on the workers
        scheduler_plugins.append(weakref.ref(cluster.scheduler.plugins["asafe"]))
        handle.uninstall()
        assert "asafe_hello" not in cluster.scheduler.handlers
        assert all("asafe_probe" not in handlers for handlers in client.run(lambda dask_worker: list(dask_worker.handlers)).values())
    del handle
    gc.collect()
    assert [ref() for ref in scheduler_plugins] == [None, None, None]
    assert set(client.run(_plugins_alive).values()) == {0}
