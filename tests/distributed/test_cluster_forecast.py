"""The transfer forecast on a LocalCluster: what the tracker reads is what the forecast planned, at every evaluation.

The forecast keeps the running total of its planned transfers itself and the
tracker reads it (``ModeTracker.add_plan_source``) instead of receiving one
locked ``ModeTracker.plan`` call per leaf event. These tests pin that nothing
else changed: on fan-in graphs (leaves summed by one task each, the graph whose
profile showed three ``plan`` calls per leaf), every evaluation's read of the
tracker's planned communication equals the sum, over the outputs whose planned
transfers count, of the per-edge amounts the forecast holds -- the sum the
per-event calls added up to -- and nothing is left planned once the graphs are
done.
"""
from __future__ import annotations

import math
import types

import dask
import pytest

import asafe

LEAVES = 300
GROUPS = 3
LEAF_BYTES = 64 * 1024  # an output big enough that its planned transfer is far above rounding


def leaf(i, nbytes):
    return bytes(nbytes)


def total(*parts):
    return sum(len(part) for part in parts)


def _audit(dask_scheduler=None):
    """On the scheduler: at every evaluation, record what the tracker reads and what the forecast's edges add up to."""
    plugin = dask_scheduler.plugins["asafe"]
    records = plugin.audit_records = []

    def source():
        forecast, tracker = plugin.forecast, plugin.tracker
        seconds = items = 0
        for out in forecast._outputs.values():  # the per-edge amounts, recomputed
            if out.active:
                for _, edge_seconds in out.edges.values():
                    seconds += edge_seconds
                    items += 1
                if out.forecast:
                    seconds += out.forecast
                    items += 1
        read = tracker.scheduled_work().get("communication", 0.0)
        records.append((read, seconds, items, forecast.planned))
        return math.nan  # no mode reads this signal

    plugin.runtime.add_signal("forecast-audit", source)
    return True


def _records(dask_scheduler=None):
    plugin = dask_scheduler.plugins["asafe"]
    forecast = plugin.forecast
    return plugin.audit_records, forecast.planned, forecast._items, len(forecast)


def _fan_in(client, tag):
    outs = []
    for g in range(GROUPS):
        leaves = client.map(leaf, range(LEAVES), nbytes=LEAF_BYTES, key=[f"leaf{tag}-{g}-{i}" for i in range(LEAVES)])
        outs.append(client.submit(total, *leaves, key=f"sum{tag}-{g}"))
    assert client.gather(outs) == [LEAVES * LEAF_BYTES] * GROUPS


def test_every_evaluation_reads_the_sum_of_the_forecasts_edges_on_fan_in_graphs(client, make_runtime, installed):
    # Two rounds: in the first the leaves' size is unknown until one finishes
    # (edges planned at 0, then refined), the second plans from what it learned.
    with dask.config.set({"asafe.distributed.evaluate-interval": "5ms"}), \
            installed(client, make_runtime(dwell=0.0, dwell_tasks=0)):
        assert client.run_on_scheduler(_audit)
        _fan_in(client, "a")
        _fan_in(client, "b")
        records, planned, items, outputs = client.run_on_scheduler(_records)
    assert len(records) > 20
    planning = [r for r in records if r[2]]
    assert len(planning) > 5  # evaluations while transfers were planned: the comparison can fail
    for read, seconds, count, running in records:
        assert read == running  # the tracker reads the forecast's total, as it is
        assert read == pytest.approx(seconds, rel=1e-9, abs=1e-15)  # = what per-event plan calls added up to
        if count == 0:
            assert running == 0.0  # exactly zero when nothing is planned, no residue
    assert max(r[0] for r in planning) > 1e3 * 2**-52  # planned seconds far above rounding
    assert (planned, items) == (0.0, 0)  # the graphs are done: nothing left planned


def _fake_task(key, state, dependencies=()):
    return types.SimpleNamespace(key=key, state=state, prefix=types.SimpleNamespace(name=key.rstrip("0123456789")),
                                 dependencies=list(dependencies), dependents=[], who_has=set(),
                                 worker_restrictions=None, loose_restrictions=False, nbytes=-1, run_spec=object(),
                                 annotations={})


@pytest.mark.parametrize("compiled", [False, True])
def test_a_waiting_consumer_touched_again_by_a_later_graph_is_planned_once(compiled, request):
    """Dask passes update_graph every task a graph touches: a consumer that still waits (in no next wave)
    is among a later graph's new tasks again, and its edges were counted twice."""
    from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin

    rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))], signals=False)
    plugin = AdaptiveSchedulerPlugin(rt)
    running = [_fake_task(f"pair{i}", "processing") for i in range(2)]
    consumer = _fake_task("consumer", "waiting", running)
    plugin.scheduler = types.SimpleNamespace(tasks={t.key: t for t in (*running, consumer)}, workers={"a": 1, "b": 2},
                                             bandwidth=1e8, total_nthreads=2)
    forecast = plugin.forecast
    forecast.output_bytes["pair"] = 1e6  # what the prefix's outputs weighed: the second pair's edge crosses at 1/2
    if compiled:
        request.getfixturevalue("taskpath")
        plugin._compile_path()
        submitted = plugin._path.submitted
    else:
        submitted = forecast.submitted
    submitted([consumer])
    first = (forecast.planned, forecast._items)
    assert first == (0.5 * 1e6 / 1e8, 1)
    submitted([consumer])  # the later graph
    assert (forecast.planned, forecast._items) == first


# --- what a graph's arrival plans: single dependencies and the next wave ---------------------

BLOCK = 256 * 1024


def make(i, nbytes):
    return bytes(nbytes)


def split(block):
    return block[: len(block) // 2]


def size(block):
    return len(block)


def _watch_arrivals(dask_scheduler=None):
    """On the scheduler: after asafe's ``update_graph``, record each graph's keys, the forecast's planned total and
    its number of entries."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    asafe_plugin = dask_scheduler.plugins["asafe"]

    class ArrivalWatch(SchedulerPlugin):
        name = "arrival-watch"

        def __init__(self):
            self.records = []

        def update_graph(self, scheduler, *, keys=(), **kwargs):
            self.records.append((set(keys), asafe_plugin.forecast.planned, len(asafe_plugin.forecast)))

    dask_scheduler.add_plugin(ArrivalWatch())  # after asafe's: it reads what asafe's update_graph planned
    return True


def _arrivals(dask_scheduler=None):
    watch = dask_scheduler.plugins.pop("arrival-watch")
    return watch.records


def _arrival_at(client, graph):
    """Run ``graph(tag)`` to teach its prefixes, then again: (planned seconds, forecast entries) after the arrival of
    the keys ``graph`` returns (one update_graph)."""
    graph(1)
    assert client.run_on_scheduler(_watch_arrivals)
    try:
        keys = graph(2)
    finally:
        records = client.run_on_scheduler(_arrivals)
    found = [(seconds, entries) for graph_keys, seconds, entries in records if graph_keys & keys]
    assert len(found) == 1  # the graph arrived in one update_graph
    return found[0]


def _planned_at_arrival(client, graph):
    """What the arrival of ``graph``'s second run planned (see :func:`_arrival_at`)."""
    return _arrival_at(client, graph)[0]


def _workers(client):
    return sorted(client.nthreads())


def test_a_single_dependency_is_planned_at_the_crossing_its_prefix_learned(client, make_runtime, installed):
    """A consumer of one dependency crosses as often as that prefix's outputs did (a task rechunk's second stage).

    The first run pins the consumers to the other worker, so every output of the
    prefix crossed; the second leaves them free. Its arrival plans their transfer
    (before: a single dependency was taken to stay where it is, and nothing was
    planned until the transfers were measured).
    """
    a, b = _workers(client)

    def graph(tag):
        with dask.annotate(workers=[a]):
            blocks = [dask.delayed(make)(i, BLOCK, dask_key_name=f"block-{tag}{i}") for i in range(4)]
        with dask.annotate(**({"workers": [b]} if tag == 1 else {})):
            sizes = [dask.delayed(size)(blk, dask_key_name=f"size-{tag}{i}") for i, blk in enumerate(blocks)]
        assert client.gather(client.compute(sizes, optimize_graph=False)) == [BLOCK] * 4
        return {s.key for s in sizes}

    with installed(client, make_runtime(dwell=0.0, dwell_tasks=0)):
        assert _planned_at_arrival(client, graph) > 0  # the consumers' transfers, at the learned crossing


def test_the_next_wave_counts_its_transfers_with_its_compute(client, make_runtime, installed):
    """A task that joins the next wave counts its output's planned transfers at once, as its compute counts.

    ``make`` (ready at arrival) feeds ``split`` (the next wave, one dependency,
    next to it), whose output goes to a consumer pinned to the other worker. The
    arrival plans that transfer (before: only once ``split`` was ready, after the
    arrival's evaluation had read the wave's compute alone).
    """
    a, b = _workers(client)

    def graph(tag):
        with dask.annotate(workers=[a]):
            blocks = [dask.delayed(make)(i, BLOCK, dask_key_name=f"wblock-{tag}{i}") for i in range(4)]
            halves = [dask.delayed(split)(blk, dask_key_name=f"whalf-{tag}{i}") for i, blk in enumerate(blocks)]
        with dask.annotate(workers=[b]):
            sizes = [dask.delayed(size)(h, dask_key_name=f"wsize-{tag}{i}") for i, h in enumerate(halves)]
        assert client.gather(client.compute(sizes, optimize_graph=False)) == [BLOCK // 2] * 4
        return {s.key for s in sizes}

    with installed(client, make_runtime(dwell=0.0, dwell_tasks=0)):
        assert _planned_at_arrival(client, graph) > 0  # the halves' transfers to the pinned consumers


# --- small outputs plan nothing (asafe.distributed.forecast-min-bytes) -------------------------


def _small_outputs_plugin(min_bytes=None):
    from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin

    rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))], signals=False)
    return AdaptiveSchedulerPlugin(rt, forecast_min_bytes=min_bytes)


def _submit_pairs(plugin, compiled, request, learned, in_memory_nbytes=None):
    """A consumer of two running tasks of prefix ``part`` (learned at ``learned`` bytes, None: never seen), and a
    consumer of two outputs in memory of ``in_memory_nbytes`` bytes; returns the forecast after their arrival."""
    running = [_fake_task(f"part{i}", "processing") for i in range(2)]
    held = [_fake_task(f"held{i}", "memory") for i in range(2)]
    for i, ts in enumerate(held):
        ts.who_has, ts.metadata, ts.nbytes = [types.SimpleNamespace(address=f"w{i}")], {}, in_memory_nbytes
    tasks = [_fake_task("consumer", "waiting", running)]
    if in_memory_nbytes is not None:
        tasks.append(_fake_task("reader", "waiting", held))
    plugin.scheduler = types.SimpleNamespace(tasks={t.key: t for t in (*running, *held, *tasks)},
                                             workers={"a": 1, "b": 2}, bandwidth=1e8, total_nthreads=2)
    forecast = plugin.forecast
    if learned is not None:
        forecast.output_bytes["part"] = float(learned)
    if compiled:
        request.getfixturevalue("taskpath")
        plugin._compile_path()
        plugin._path.submitted(tasks)
    else:
        forecast.submitted(tasks)
    return forecast


@pytest.mark.parametrize("compiled", [False, True])
def test_outputs_learned_or_known_smaller_than_forecast_min_bytes_plan_nothing(compiled, request):
    forecast = _submit_pairs(_small_outputs_plugin(), compiled, request, learned=100, in_memory_nbytes=200)
    assert forecast.min_bytes == 1024.0  # the default, asafe.distributed.forecast-min-bytes
    assert (len(forecast), forecast.planned, forecast._items) == (0, 0.0, 0)  # no entry, nothing planned


@pytest.mark.parametrize("compiled", [False, True])
def test_outputs_at_or_above_forecast_min_bytes_and_unseen_prefixes_are_planned(compiled, request):
    forecast = _submit_pairs(_small_outputs_plugin(), compiled, request, learned=1024, in_memory_nbytes=4096)
    # the running pair: one stays next to its consumer, the other crosses at 1/2; the held pair likewise
    assert forecast.planned == pytest.approx(0.5 * 1024 / 1e8 + 0.5 * 4096 / 1e8)
    assert (len(forecast), forecast._items) == (4, 2)
    unseen = _submit_pairs(_small_outputs_plugin(), compiled, request, learned=None)
    assert len(unseen) == 2  # entries at 0 s, refined with the real size when the producers finish
    assert (unseen.planned, unseen._items) == (0.0, 1)


@pytest.mark.parametrize("compiled", [False, True])
def test_forecast_min_bytes_zero_plans_every_output(compiled, request):
    forecast = _submit_pairs(_small_outputs_plugin(0), compiled, request, learned=100, in_memory_nbytes=200)
    assert forecast.planned == pytest.approx(0.5 * 100 / 1e8 + 0.5 * 200 / 1e8)
    assert len(forecast) == 4


def test_forecast_min_bytes_is_validated_and_named():
    from asafe.core.validate import InvalidSetting

    with dask.config.set({"asafe.distributed.forecast-min-bytes": "lots"}):
        with pytest.raises(InvalidSetting, match="asafe.distributed.forecast-min-bytes must be a size >= 0"):
            _small_outputs_plugin()
    with pytest.raises(InvalidSetting, match="forecast_min_bytes must be a size >= 0"):
        _small_outputs_plugin(-1)
    with dask.config.set({"asafe.distributed.forecast-min-bytes": "64 KiB"}):
        assert _small_outputs_plugin().forecast.min_bytes == 65536.0


def test_a_fan_in_of_scalars_plans_no_transfer_once_its_leaves_are_learned(client, make_runtime, installed):
    """The scheduler suite's fan-in: leaves of a few bytes summed by one task. Its first graph plans the leaves'
    edges (their size unknown), the next plans nothing and keeps no entry per leaf."""
    def graph(tag):
        leaves = client.map(int, range(200), key=[f"scalar-{tag}-{i}" for i in range(200)])
        out = client.submit(sum, leaves, key=f"scalar_sum-{tag}")
        assert out.result() == sum(range(200))
        return {out.key}

    with installed(client, make_runtime(dwell=0.0, dwell_tasks=0)):
        assert _arrival_at(client, graph) == (0.0, 0)  # nothing planned, no entry


def test_a_producer_without_consumers_plans_its_prefixs_history_only_at_or_above_forecast_min_bytes():
    """Futures: producers submitted before their consumers plan what their prefix usually ships, unless small."""
    forecast = _small_outputs_plugin().forecast
    forecast.shipped.update(small=1.0, large=1.0)
    forecast.output_bytes.update(small=100.0, large=1e6)
    forecast.activate(_fake_task("small0", "processing"))
    assert (len(forecast), forecast.planned) == (0, 0.0)
    forecast.activate(_fake_task("large0", "processing"))
    assert (len(forecast), forecast.planned) == (1, pytest.approx(1e6 / 1e8))


def test_the_crossing_fraction_of_a_prefix_is_weighted_by_bytes():
    """A prefix of small outputs that cross and large ones that stay (a map_overlap's ``getitem``: halos and
    blocks) learns that little of its bytes cross; outputs of one size learn as before (rate 1/2 each). The
    compiled path learns the same (tests/distributed/test_taskpath.py compares ``shipped`` after every transition)."""
    from asafe.schedulers.forecast import _Output

    forecast = _small_outputs_plugin(0).forecast

    def serve(prefix, nbytes, home, worker, i):
        producer = _fake_task(f"{prefix}{i}", "memory")
        out = forecast._outputs[producer.key] = _Output(prefix, frozenset({home}))
        out.nbytes = float(nbytes)
        forecast.output_bytes[prefix] = 1e6  # the prefix's typical size
        forecast.finished(_fake_task(f"use{prefix}{i}", "processing", [producer]), worker, None)

    for i in range(4):  # 28 KB halos cross, 1 MB blocks stay
        serve("getitem", 28_000, "a", "b", 2 * i)
        serve("getitem", 1e6, "a", "a", 2 * i + 1)
    assert forecast.shipped["getitem"] < 0.1  # counted alike: about 1/2
    for i in range(3):  # equal sizes: 1, then 1/2 of the way to 0, twice
        serve("block", 1e6, "a", "b" if i == 0 else "a", i)
    assert forecast.shipped["block"] == 0.25
    # what crossed, by size: the halos only, and the one block that crossed
    assert forecast.crossed_bytes == {"getitem": 28_000.0, "block": 1e6}


@pytest.mark.parametrize("compiled", [False, True])
def test_an_output_not_made_yet_is_planned_at_the_size_of_what_crossed_of_its_prefix(compiled, request):
    """A prefix whose outputs that cross are small (halos) plans an output not made yet at their size, not at the
    prefix's mean (which its large outputs that stay make); a prefix with no crossing learned yet, at its mean."""
    plugin = _small_outputs_plugin(0)
    plugin.forecast.crossed_bytes["part"] = 28_000.0
    forecast = _submit_pairs(plugin, compiled, request, learned=1e6)
    assert forecast.planned == pytest.approx(0.5 * 28_000 / 1e8)  # one of the pair crosses at 1/2
    forecast = _submit_pairs(_small_outputs_plugin(0), compiled, request, learned=1e6)
    assert forecast.planned == pytest.approx(0.5 * 1e6 / 1e8)
