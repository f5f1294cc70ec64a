"""P2P traffic in the mode, and the link probe (issue 29).

Dask's default rechunk on a cluster is P2P: its transfer tasks hand shards to
the shuffle extension, which sends them between workers in the background. No
task fetches a dependency, so before asafe read the extension's metrics the
mode saw a P2P rechunk as pure compute.
"""
from __future__ import annotations

import math
import time

import dask
import dask.array as da
import numpy as np
import pytest

from distributed import wait

import asafe

pytestmark = pytest.mark.timeout(240)


def comm_runtime():
    """One optimization that switches on while communication dominates (ratio < 0.5)."""
    return asafe.AdaptiveRuntime([asafe.Optimization("x", asafe.Hysteresis(0.5, 2.0))], signals=False,
                                 dwell=0.0, dwell_tasks=0)


def source(client):
    """32 MiB in column chunks on the workers, computed (persisted and waited for)."""
    x = client.persist(da.random.RandomState(1).random_sample((2048, 2048), chunks=(2048, 128)))
    wait(x)
    return x


def p2p_rechunk(client, x=None):
    x = source(client) if x is None else x
    with dask.config.set({"array.rechunk.method": "p2p"}):
        y = x.rechunk((128, 2048))
        total = float(y.sum().compute())
    assert math.isclose(total, float(x.sum().compute()), rel_tol=1e-9)


def measured_p2p(handle, at_least, timeout=15.0):
    """The plugin's info once its P2P bytes reach ``at_least`` (or the timeout passed).

    The workers report P2P bytes in their heartbeats, which may come after the
    rechunk has finished (a heartbeat or two later on a busy machine); the
    plugin keeps reading the counter for a while after a barrier finished.
    """
    deadline = time.monotonic() + timeout
    while True:
        plugin = handle.info("plugin")["plugin"]
        if plugin["p2p"]["measured_bytes"] >= at_least or time.monotonic() > deadline:
            return plugin
        time.sleep(0.2)


def test_a_p2p_rechunk_shows_as_communication(client, installed):
    x = source(client)  # made before: only the rechunk is in the mode
    with installed(client, comm_runtime()) as handle:
        p2p_rechunk(client, x)
        plugin = measured_p2p(handle, 8e6)
        history = handle.history
        timeline = [round(mode.ratio, 2) for _, mode in handle.timeline]
    traffic = plugin["p2p"]
    # 32 MiB of input; about half of it crosses to the other worker
    assert traffic["planned_bytes"] > 8e6, traffic
    assert traffic["measured_bytes"] > 8e6, traffic
    assert not traffic["pending"]
    # the transfer tasks are compute; only the extension's traffic can make communication dominate
    assert [t.new for t in history][:1] == [True], timeline
    assert plugin["transfers"]["wire_bytes"] < traffic["measured_bytes"]  # not from ordinary transfers


def test_p2p_traffic_is_not_counted_when_the_forecast_is_off(client, installed):
    # the planned part belongs to the forecast's switch; the measured part stays
    with installed(client, comm_runtime(), expected_transfers=False) as handle:
        p2p_rechunk(client)
        traffic = handle.info("plugin")["plugin"]["p2p"]
    assert traffic["planned_bytes"] == 0 and not traffic["pending"]


def link_signal(dask_scheduler):
    return dask_scheduler.plugins["asafe"].link.signal()


def test_the_link_is_probed_once_when_a_graph_moves_data_over_an_unknown_link(make_cluster_factory, installed):
    from distributed import Client

    with make_cluster_factory() as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        x = source(client)
        with installed(client, asafe.AdaptiveRuntime(signals=False)) as handle:
            assert math.isnan(client.run_on_scheduler(link_signal))  # nothing measured yet: unknown, not slow
            p2p_rechunk(client, x)
            probes = handle.info("plugin")["plugin"]["probes"]
            measured = client.run_on_scheduler(link_signal)
        assert len(probes) == 1 and probes[0]["seconds"] > 0, probes
        assert measured > 0
        # a later installation on this scheduler starts from the link measured before: no second probe
        with installed(client, asafe.AdaptiveRuntime(signals=False)) as handle:
            assert client.run_on_scheduler(link_signal) == measured
            p2p_rechunk(client, x)
            assert not handle.info("plugin")["plugin"]["probes"]


def test_a_graph_that_moves_less_than_the_probe_does_not_probe(make_cluster_factory, installed):
    """A probe sends 16 MiB over the link in the graph's time: the sum of a persisted array (partial sums of
    a few bytes cross) would pay more for it than compression could save it (behind 1 Gbit/s a 0.06 s
    sum took 0.19 s, docs/results/workloads/probe-s38). A task rechunk of 64 MiB plans about 30 MiB across."""
    from distributed import Client

    with make_cluster_factory() as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        x = client.persist(da.random.RandomState(1).random_sample((4096, 2048), chunks=(4096, 128)))
        wait(x)
        with installed(client, asafe.AdaptiveRuntime(signals=False)) as handle:
            total = float(x.sum().compute())
            assert float(x.sum().compute()) == total  # now with the partial sums' sizes learned: planned > 0
            time.sleep(0.5)  # a probe on the loopback would have ended
            assert not handle.info("plugin")["plugin"]["probes"]
            assert math.isnan(client.run_on_scheduler(link_signal))
            with dask.config.set({"array.rechunk.method": "tasks"}):
                assert math.isclose(float(x.rechunk((128, 2048)).sum().compute()), total, rel_tol=1e-9)
            deadline = time.monotonic() + 30
            while not (probes := handle.info("plugin")["plugin"]["probes"]) and time.monotonic() < deadline:
                time.sleep(0.05)  # the probe runs beside the graph and may end after it
        assert len(probes) == 1 and probes[0]["seconds"] > 0, probes


def test_a_probe_that_ends_after_its_installation_is_remembered(make_cluster_factory, installed):
    """A short graph's installation may end while its probe runs: the link it measured is still the link,
    and the next installation starts from it instead of probing again."""
    from distributed import Client

    async def probe_detached(dask_scheduler):
        plugin = dask_scheduler.plugins["asafe"]
        plugin._attached = False  # as when the installation ends while its probe runs
        try:
            await plugin._probe_link()
        finally:
            plugin._attached = True
        return plugin.probes

    with make_cluster_factory() as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        x = source(client)
        with installed(client, asafe.AdaptiveRuntime(signals=False)):
            probes = client.run_on_scheduler(probe_detached)
        assert len(probes) == 1 and probes[0]["seconds"] > 0, probes
        with installed(client, asafe.AdaptiveRuntime(signals=False)) as handle:
            assert client.run_on_scheduler(link_signal) > 0
            p2p_rechunk(client, x)
            assert not handle.info("plugin")["plugin"]["probes"]


def test_the_workers_own_bandwidth_is_never_the_links_signal(make_cluster_factory, installed):
    """Dask's workers average the logical bytes per second of what they fetched, which compression raises
    (it crept past the wire gate's 250 MB/s behind a 1 Gbit/s link, docs/results/hosts-s36): a scheduler
    whose workers reported theirs still reads the link unknown until asafe measures it, and probes it."""
    from dask.utils import parse_bytes
    from distributed import Client

    configured = parse_bytes(dask.config.get("distributed.scheduler.bandwidth"))
    with make_cluster_factory() as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        x = source(client)
        with dask.config.set({"array.rechunk.method": "tasks"}):  # plain Dask moves 1 MiB pieces first
            float(x.rechunk((128, 2048)).sum().compute())
        deadline = time.monotonic() + 30
        while client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.bandwidth) == configured:
            assert time.monotonic() < deadline, "the workers never reported a bandwidth"
            time.sleep(0.2)
        with installed(client, asafe.AdaptiveRuntime(signals=False)) as handle:
            assert math.isnan(client.run_on_scheduler(link_signal))
            p2p_rechunk(client, x)
            probes = handle.info("plugin")["plugin"]["probes"]
        assert len(probes) == 1 and probes[0]["seconds"] > 0, probes


def test_p2p_shards_are_compressed_for_a_peer_that_decodes(client, installed):
    from asafe.schedulers import wire

    def smooth(block):
        return np.round(np.sin(np.cumsum(block, axis=1) / 50.0) * 1024.0) / 1024.0

    rt = asafe.AdaptiveRuntime([asafe.Optimization("wire-compression", asafe.Fixed("lz4"), initial="lz4")],
                               signals=False)
    with installed(client, rt):
        client.run(wire.reset_stats)
        wire.reset_stats()
        x = client.persist(da.random.RandomState(2).random_sample((1024, 1024), chunks=(1024, 128)).map_blocks(smooth))
        reference = x.compute()
        with dask.config.set({"array.rechunk.method": "p2p"}):
            result = x.rechunk((128, 1024)).compute()
        counts = client.run(wire.stats)
    assert np.array_equal(result, reference)
    assert sum(c["compressed_frames"] for c in counts.values()) > 0
    assert sum(c["compressed_frames"] for c in counts.values()) == sum(
        c["decompressed_frames"] for c in counts.values()) + wire.stats()["decompressed_frames"]
