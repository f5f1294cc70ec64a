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

import dask
import pytest

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
