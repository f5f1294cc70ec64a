"""Silent fallbacks made visible: a distributed internal the plugins read is missing.

The plugins read private parts of distributed (the transfer log of a worker, the
scheduler's bandwidth estimate). Where one is gone or changed shape they take a
less exact path; each such path is logged once and counted in ``fallbacks``.
"""
from __future__ import annotations

import collections
import logging
import time
import types

import numpy as np
import pytest

import asafe
from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin
from asafe.schedulers.worker_plugin import AdaptiveWorkerPlugin

pytestmark = pytest.mark.timeout(180)


def make_plugin():
    rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))], signals=False)
    return AdaptiveSchedulerPlugin(rt)


def test_a_scheduler_without_a_bandwidth_estimate_is_counted_and_warned_once(caplog):
    plugin = make_plugin()
    plugin.scheduler = types.SimpleNamespace()  # a scheduler lacking the internal
    with caplog.at_level(logging.WARNING, logger="asafe"):
        assert plugin.link() == 0.0
        assert plugin.link() == 0.0
    assert plugin.fallbacks == {"scheduler.bandwidth": 2}
    assert plugin.info(["fallbacks"])["fallbacks"] == {"scheduler.bandwidth": 2}
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "scheduler.bandwidth" in warned[0] and "distributed" in warned[0]


def test_a_worker_without_a_transfer_log_is_counted_and_warned_once(caplog):
    plugin = AdaptiveWorkerPlugin(token="t", record_sizes=True)
    plugin.worker = types.SimpleNamespace(state=types.SimpleNamespace(tasks={}), data={})
    with caplog.at_level(logging.WARNING, logger="asafe"):
        plugin.transition("x", "flight", "memory")
        plugin.transition("y", "flight", "memory")
    assert plugin.fallbacks == {"worker.transfer_incoming_log": 2}
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "transfer log" in warned[0]


def produce(i):
    return np.full(50_000, float(i))  # 400 kB: it crosses between the workers


@asafe.typed(asafe.COMPUTE)
def consume(values, i):
    return float(values.sum()) + i


class RenamedLog(collections.deque):
    """A transfer log whose entries changed shape, as a future distributed might do."""

    def append(self, record):
        record = dict(record)
        record["key_names"] = record.pop("keys")
        super().append(record)


def _rename_transfer_log(dask_worker):
    dask_worker.transfer_incoming_log = RenamedLog(dask_worker.transfer_incoming_log,
                                                   maxlen=dask_worker.transfer_incoming_log.maxlen)


def _restore_transfer_log(dask_worker):
    dask_worker.transfer_incoming_log = collections.deque(maxlen=dask_worker.transfer_incoming_log.maxlen)


def _transfers(client, rounds=6):
    source, sink = sorted(client.nthreads())
    futures = []
    for i in range(rounds):
        made = client.submit(produce, i, workers=[source], pure=False)
        futures.append(client.submit(consume, made, i, workers=[sink], pure=False))
    return client.gather(futures)


def test_a_changed_transfer_log_on_a_real_cluster_is_visible(client, make_runtime, installed, caplog):
    expected = [50_000.0 * i + i for i in range(6)]
    with caplog.at_level(logging.WARNING, logger="asafe"), installed(client, make_runtime()) as handle:
        assert _transfers(client) == expected
        assert handle.fallbacks == {}  # the tested version: every transfer annotated
        client.run(_rename_transfer_log)
        try:
            assert _transfers(client) == expected  # results are unaffected
            deadline = time.time() + 30
            while "unannotated-transfer" not in handle.fallbacks and time.time() < deadline:
                time.sleep(0.05)
            fallbacks = handle.fallbacks
        finally:
            client.run(_restore_transfer_log)
        assert fallbacks["worker.transfer_incoming_log-format"] >= 1
        assert fallbacks["unannotated-transfer"] >= 1
        assert handle.info("plugin")["plugin"]["fallbacks"]["unannotated-transfer"] >= 1
    # the scheduler runs in this process: its warning is logged once
    warned = [r.getMessage() for r in caplog.records if "without the worker plugin's byte annotation" in r.getMessage()]
    assert len(warned) == 1
