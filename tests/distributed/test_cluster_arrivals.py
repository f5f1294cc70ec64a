"""Small graphs' arrivals coalesced on a LocalCluster (``asafe.distributed.coalesce-arrivals``).

Each future submitted alone is a graph's arrival on the scheduler. An arrival
of at most ``coalesce-arrivals`` new tasks within ``evaluate-interval`` after the
latest evaluation, and for which the transfer forecast planned nothing, is not
evaluated at once: a timer evaluates, as an arrival, at the end of that
interval, whether or not any task transitions by then.
These tests read the plugin's counters (``handle.info("plugin")["arrivals"]``)
and the runtime's timeline on the scheduler.
"""
from __future__ import annotations

import time

import dask
import pytest

import asafe

INTERVAL = 0.4  # wide enough that a submit right after a graph falls inside it on a slow machine


def nap(seconds):
    import time

    time.sleep(seconds)
    return seconds


def _arrivals(dask_scheduler=None):
    plugin = dask_scheduler.plugins["asafe"]
    return dict(plugin.arrivals), len(plugin.runtime.timeline), plugin._coalesced is not None


def _evaluation_times(dask_scheduler=None):
    plugin = dask_scheduler.plugins["asafe"]
    return [t for t, _ in plugin.runtime.timeline]


def _graph_then_one_future(client, tag):
    """A graph of 8 tasks, then one long future at once: (its future, the counters right after its arrival)."""
    graph = client.map(nap, [0.0] * 8, key=[f"graph-{tag}-{i}" for i in range(8)])
    single = client.submit(nap, 1.5, key=f"single-{tag}")
    # the submit is sent; wait until the scheduler holds it (its arrival has run)
    deadline = time.monotonic() + 10
    while client.run_on_scheduler(lambda dask_scheduler: f"single-{tag}" not in dask_scheduler.tasks):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return graph, single, client.run_on_scheduler(_arrivals)


def test_a_future_submitted_right_after_a_graph_is_evaluated_at_the_end_of_the_interval(
        client, make_runtime, installed):
    with dask.config.set({"asafe.distributed.evaluate-interval": f"{INTERVAL}s"}), \
            installed(client, make_runtime()) as handle:
        graph, single, (counts, _, pending) = _graph_then_one_future(client, "a")
        assert counts == {"at_once": 1, "coalesced": 1, "covering": 0}  # the graph at once; the future waits
        assert pending
        submitted = time.monotonic()
        client.gather(graph)
        time.sleep(INTERVAL + 0.3)
        # the single future still runs (1.5 s): no transition of its own, and the timer has evaluated
        assert not single.done()
        counts, _, pending = client.run_on_scheduler(_arrivals)
        assert counts == {"at_once": 1, "coalesced": 1, "covering": 1}
        assert not pending
        assert time.monotonic() - submitted < 1.5
        assert single.result() == 1.5
        assert handle.info("plugin")["plugin"]["arrivals"] == {"at_once": 1, "coalesced": 1, "covering": 1}


def after(value, seconds):
    import time

    time.sleep(seconds)
    return value


def test_a_future_of_futures_counts_its_new_task_only(client, make_runtime, installed):
    """Dask passes update_graph the futures a submit depends on beside its new task: one new task waits."""
    with dask.config.set({"asafe.distributed.evaluate-interval": f"{INTERVAL}s"}), \
            installed(client, make_runtime()):
        graph = client.map(nap, [0.2] * 3, key=[f"deps-e-{i}" for i in range(3)])
        consumer = client.submit(after, graph, 0.0, key="consumer-e")  # touches 4 tasks, 1 of them new
        assert client.gather(consumer) == [0.2] * 3
        counts, _, _ = client.run_on_scheduler(_arrivals)
    assert counts["at_once"] == 1 and counts["coalesced"] == 1


def block(i):
    return bytes(512 * 1024)


def test_a_future_whose_transfers_are_planned_is_evaluated_at_once(client, make_runtime, installed):
    """A consumer of outputs held on two workers: one crosses, the forecast plans it, so its arrival evaluates at
    once (compression on before the transfer starts), however small the graph."""
    from distributed import wait

    workers = sorted(client.nthreads())
    with dask.config.set({"asafe.distributed.evaluate-interval": f"{INTERVAL}s"}), \
            installed(client, make_runtime()):
        blocks = [client.submit(block, i, key=f"block-f-{i}", workers=[w]) for i, w in enumerate(workers)]
        wait(blocks)  # in memory: their sizes known, so the consumer's transfer is planned in seconds
        before, _, _ = client.run_on_scheduler(_arrivals)
        consumer = client.submit(after, blocks, 0.0, key="consumer-f")
        assert [len(b) for b in consumer.result()] == [512 * 1024] * 2
        counts, _, _ = client.run_on_scheduler(_arrivals)
    assert counts["at_once"] == before["at_once"] + 1
    assert counts["coalesced"] == before["coalesced"]


def test_every_arrival_is_evaluated_at_once_with_coalescing_off(client, make_runtime, installed):
    with dask.config.set({"asafe.distributed.evaluate-interval": f"{INTERVAL}s",
                          "asafe.distributed.coalesce-arrivals": 0}), \
            installed(client, make_runtime()):
        graph, single, (counts, evaluations, pending) = _graph_then_one_future(client, "b")
        assert counts == {"at_once": 2, "coalesced": 0, "covering": 0}
        assert not pending
        assert evaluations >= 2
        client.gather(graph + [single])


def test_a_graph_larger_than_the_setting_is_evaluated_at_once(client, make_runtime, installed):
    with dask.config.set({"asafe.distributed.evaluate-interval": f"{INTERVAL}s",
                          "asafe.distributed.coalesce-arrivals": 4}), \
            installed(client, make_runtime()):
        first = client.map(nap, [0.0] * 3, key=[f"three-c-{i}" for i in range(3)])  # the first arrival: at once
        small = client.map(nap, [0.0] * 4, key=[f"four-c-{i}" for i in range(4)])  # 4 tasks: waits
        large = client.map(nap, [0.0] * 5, key=[f"five-c-{i}" for i in range(5)])  # 5 tasks: at once
        client.gather(first + small + large)
        counts, _, pending = client.run_on_scheduler(_arrivals)
    assert counts == {"at_once": 2, "coalesced": 1, "covering": 0}  # the larger graph's covered the one that waited
    assert not pending


def test_a_loop_of_futures_costs_about_one_evaluation_an_interval(client, make_runtime, installed):
    futures = []
    with dask.config.set({"asafe.distributed.evaluate-interval": f"{INTERVAL}s"}), \
            installed(client, make_runtime()):
        started = time.monotonic()
        for i in range(40):
            futures.append(client.submit(nap, 0.0, key=f"loop-d-{i}"))
        client.gather(futures)
        time.sleep(INTERVAL + 0.2)  # the last interval's timer
        elapsed = time.monotonic() - started
        counts, _, pending = client.run_on_scheduler(_arrivals)
        times = client.run_on_scheduler(_evaluation_times)
    assert counts["at_once"] + counts["coalesced"] == 40
    assert counts["coalesced"] > 0
    # an arrival evaluates at once only after a quiet interval, and a timer at most once an interval
    assert counts["at_once"] + counts["covering"] <= elapsed / INTERVAL + 2
    assert counts["covering"] >= 1
    assert not pending
    assert len(times) >= counts["at_once"] + counts["covering"]


def test_coalesce_arrivals_is_validated_and_named():
    from asafe.core.validate import InvalidSetting
    from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin

    for bad in ("one", -1, 1.5, True):
        with dask.config.set({"asafe.distributed.coalesce-arrivals": bad}):
            with pytest.raises(InvalidSetting, match="asafe.distributed.coalesce-arrivals must be an integer >= 0"):
                AdaptiveSchedulerPlugin(asafe.AdaptiveRuntime(signals=False))
    with pytest.raises(InvalidSetting, match="coalesce_arrivals must be an integer >= 0"):
        AdaptiveSchedulerPlugin(asafe.AdaptiveRuntime(signals=False), coalesce_arrivals=-2)
    with dask.config.set({"asafe.distributed.coalesce-arrivals": "3"}):
        assert AdaptiveSchedulerPlugin(asafe.AdaptiveRuntime(signals=False)).coalesce_arrivals == 3
    assert AdaptiveSchedulerPlugin(asafe.AdaptiveRuntime(signals=False)).coalesce_arrivals == 1  # the default


def test_a_bad_setting_refuses_install_and_leaves_the_cluster_as_it_was(client, make_runtime):
    from asafe.core.validate import InvalidSetting

    def plugins(dask_scheduler=None):
        return sorted(dask_scheduler.plugins)

    before = client.run_on_scheduler(plugins)
    with dask.config.set({"asafe.distributed.coalesce-arrivals": "many"}):
        with pytest.raises(InvalidSetting, match="coalesce-arrivals"):
            asafe.install(client, make_runtime())
    assert client.run_on_scheduler(plugins) == before
