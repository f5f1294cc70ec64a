"""wire-compression on a real cluster (2 worker processes on one host).

The state is forced with a domain that is always on (Hysteresis(inf, inf)) or
never on (Hysteresis(0, 0)); the mechanism's own counters
(:func:`asafe.schedulers.wire.stats`) say what was compressed.
"""
from __future__ import annotations

import math
import os
import time
import uuid

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import Event

import asafe
from asafe.schedulers import wire

ALWAYS = asafe.Hysteresis(math.inf, math.inf)
NEVER = asafe.Hysteresis(0.0, 0.0)


def runtime(domain, initial):
    return asafe.AdaptiveRuntime(
        [asafe.Optimization("wire-compression", domain, initial=initial)], signals=False, dwell=0.05, dwell_tasks=4
    )


@pytest.fixture(scope="module")
def cluster(make_cluster_factory):
    """The module's cluster, without work stealing.

    A worker records a transfer on the one task it fetched the data for (the
    ``transfer`` startstop of its ``cause``), and the scheduler plugin counts it
    when that task reports back. Where stealing moves the task after its data
    arrived, that record now leaves with the next task to finish on the worker
    (``test_a_transfer_whose_task_never_ran_is_counted_with_the_next_task``);
    stealing stays off here so that the accounting tests compare the codecs'
    counters with transfers their own tasks ran with.
    """
    with dask.config.set({"distributed.scheduler.work-stealing": False}), make_cluster_factory() as cluster:
        yield cluster


def smooth_block(block):
    """Low-entropy float64: a smooth field quantized to 1/1024 (compresses well with shuffle)."""
    return np.round(np.sin(np.cumsum(block, axis=1) / 50.0) * 1024.0) / 1024.0


def array(compressible=True, seed=0):
    x = da.random.RandomState(seed).random_sample((1024, 1024), chunks=(256, 1024))
    return x.map_blocks(smooth_block) if compressible else x


def totals(client):
    out = {}
    for counters in client.run(wire.stats).values():
        for key, value in counters.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = out.get(key, 0) + value
    return out


def reset(client):
    """Zero the counters of every worker and of this (the client's) process, and forget their codec choices."""
    for forget in (wire.reset_stats, wire.forget_choices):
        client.run(forget)
        forget()


def codec_saved(counts):
    """Bytes the workers' codecs saved on the frames they decompressed (from :func:`totals` or one worker's stats)."""
    return counts["decompressed_logical_bytes"] - counts["decompressed_wire_bytes"]


def plugin_saved(before, after):
    """Bytes the scheduler plugin counted as saved between two of its ``transfers`` snapshots (logical - wire)."""
    return (after["logical_bytes"] - before["logical_bytes"]) - (after["wire_bytes"] - before["wire_bytes"])


def unreported(client, worker):
    """Annotated transfers waiting on ``worker`` for the next task to finish there."""
    return client.run(lambda dask_worker: len(dask_worker.plugins["asafe"].unreported), workers=[worker])[worker]


def wait_on(client, worker, predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not client.run(predicate, workers=[worker])[worker]:
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def transposed(client, x):
    """Rechunk rows -> columns across the two workers; the result and a reference computed locally."""
    reference = x.compute(scheduler="sync")
    x = client.persist(x)
    y = x.rechunk((1024, 256)).T
    return y.compute(), reference.T


def test_on_compresses_transfers_and_results_are_bit_identical(client, installed):
    with installed(client, runtime(ALWAYS, True)) as handle:
        assert handle.state("wire-compression")
        reset(client)
        result, reference = transposed(client, array())
        assert result.tobytes() == reference.tobytes()
        counts = totals(client)
        assert counts["compressed_frames"] > 0 and counts["decompressed_frames"] > 0
        assert counts["compressed_wire_bytes"] * 4 < counts["compressed_logical_bytes"]
        # every frame the workers compressed for each other, or for this client, was decompressed
        local = wire.stats()
        assert counts["compressed_frames"] == counts["decompressed_frames"] + local["decompressed_frames"]


def test_off_leaves_the_payload_path_untouched(client, installed):
    with installed(client, runtime(NEVER, False)) as handle:
        assert not handle.state("wire-compression")

        def spy():
            calls = []
            original = wire._spy_original = wire._compress_frames
            wire._compress_frames = lambda *args: calls.append(1) or original(*args)
            wire._spy_calls = calls

        client.run(spy)
        try:
            reset(client)
            result, reference = transposed(client, array())
            assert result.tobytes() == reference.tobytes()
            assert client.run(lambda: len(wire._spy_calls)) == {w: 0 for w in client.nthreads()}
            counts = totals(client)
            assert counts["compressed_frames"] == counts["skipped_frames"] == counts["decompressed_frames"] == 0
            assert counts["sample_seconds"] == 0.0  # not even sampled
        finally:
            client.run(lambda: setattr(wire, "_compress_frames", wire._spy_original))


def test_incompressible_data_is_sampled_and_sent_as_is(client, installed):
    with installed(client, runtime(ALWAYS, True)):
        reset(client)
        result, reference = transposed(client, array(compressible=False))
        assert result.tobytes() == reference.tobytes()
        counts = totals(client)
        assert counts["skipped_frames"] > 0 and counts["compressed_frames"] == 0


def half_zero_block(block):
    """Float64 of which about half the elements are exactly zero (random values elsewhere)."""
    return np.where(block < 0.5, 0.0, block)


def transposed_both_ways(client, seeds):
    """The transposition with its placement pinned, once each way: every worker sends the same kinds of frame.

    The rows are held on one worker and the columns computed on the other (which
    sends them to this client), then the other way round, each from its own
    seed (new keys). Left to the scheduler, the placement varies from run to
    run: one run's outputs could all land on one worker, so that only the other
    worker sent pieces, and the next run's on the other, whose first frame of
    that kind was then a new kind there, sampled as it should be.
    """
    first, second = sorted(client.nthreads())
    for seed, (holder, computer) in zip(seeds, ((first, second), (second, first))):
        x = array(seed=seed)
        reference = x.compute(scheduler="sync").T
        held = client.persist(x, workers=[holder])
        result = client.compute(held.rechunk((1024, 256)).T, workers=[computer]).result()
        assert result.tobytes() == reference.tobytes()


def test_a_new_installation_goes_on_with_the_workers_codec_choices(client, installed):
    # The choices are the worker processes': a second installation on the same
    # workers compresses the same kinds of frame without sampling them again
    # (another asafe.wire setting starts them afresh: the test below).
    reset(client)
    for seeds, expect_samples in (((0, 1), True), ((2, 3), False)):
        with installed(client, runtime(ALWAYS, True)):
            client.run(wire.reset_stats)
            transposed_both_ways(client, seeds)
            counts = totals(client)
            assert counts["compressed_frames"] > 0
            assert (counts["samples"] > 0) is expect_samples, counts


def test_another_wire_setting_forgets_the_codec_choices():
    wire.enable()
    wire._choices[("a kind",)] = [None, None, 5]
    wire.enable()  # the same settings (a new installation): the choice stays
    assert ("a kind",) in wire._choices
    with dask.config.set({"asafe.wire.min-ratio": 1.3}):
        wire.enable()
    assert not wire._choices
    wire._choices[("a kind",)] = [None, None, 5]
    wire.forget_choices()
    assert not wire._choices
    wire.enable()  # the default settings again in this process


def test_a_link_speed_state_elides_the_zeros_of_half_zero_floats(client, installed):
    # 30 MB/s: the sample's cost model prefers zero elision (1.94x at ~2 GB/s) to every blosc2 codec
    with installed(client, runtime(asafe.Fixed(30), 30)) as handle:
        assert handle.state("wire-compression") == 30
        reset(client)
        x = da.random.RandomState(0).random_sample((1024, 1024), chunks=(256, 1024)).map_blocks(half_zero_block)
        result, reference = transposed(client, x)
        assert result.tobytes() == reference.tobytes()
        counts = totals(client)
        assert counts["elided_frames"] > 0 and counts["decompressed_frames"] > 0
        assert 1.8 * counts["compressed_wire_bytes"] < counts["compressed_logical_bytes"]


def test_futures_and_delayed_pickled_buffers(client, installed):
    with installed(client, runtime(ALWAYS, True)):
        reset(client)
        workers = sorted(client.nthreads())
        data = np.repeat(np.arange(64, dtype="f8"), 4096)  # 2 MiB, long runs
        a = client.submit(lambda: {"payload": data.copy()}, workers=workers[0], pure=False)  # a dict: pickle family
        b = client.submit(lambda d: float(d["payload"].sum()), a, workers=workers[1])
        assert b.result() == float(data.sum())
        got = client.submit(lambda d: d, a, workers=workers[1]).result()
        assert np.array_equal(got["payload"], data)
        assert totals(client)["compressed_frames"] >= 1


def test_corrupt_payload_is_reported_and_recomputed(client, installed):
    with installed(client, runtime(ALWAYS, True)):
        reset(client)
        workers = sorted(client.nthreads())
        block = smooth_block(np.random.default_rng(1).random((256, 1024)))
        a = client.submit(lambda: block.copy(), workers=workers[0], pure=False)
        a.result()
        client.run(lambda: setattr(wire, "corrupt_next", 1), workers=[workers[0]])
        b = client.submit(lambda x: x.sum(), a, workers=workers[1], allow_other_workers=False)
        assert b.result(timeout=60) == block.sum()
        counts = client.run(wire.stats)
        assert counts[workers[1]]["failed_frames"] == 1
        logs = "\n".join(line for _, line in client.get_worker_logs()[workers[1]])
        assert "failed to decompress" in logs


def test_bad_configuration_is_refused_at_install(client):
    with dask.config.set({"asafe.wire.codec": "snappy"}):  # the codec is the state now, not a setting
        with pytest.raises(ValueError, match=r"unknown keys \['codec'\].*the codec is the state .*: lz4, zstd"):
            asafe.install(client, runtime(NEVER, False))
    with dask.config.set({"asafe.wire.filters": ["none", "shufle"]}):
        with pytest.raises(ValueError, match=r"one of none, shuffle, bitshuffle, zeros \(did you mean 'shuffle'\?\)"):
            asafe.install(client, runtime(NEVER, False))
    with pytest.raises(ValueError, match=r"state 'snappy' is not one; allowed: .* lz4, zstd"):
        asafe.install(client, runtime(asafe.Fixed("snappy"), False))
    with dask.config.set({"asafe.wire.min-ratio": 0.5}):
        with pytest.raises(ValueError, match="min-ratio"):
            asafe.install(client, runtime(NEVER, False))
    with dask.config.set({"asafe.wire.level": 12}):
        with pytest.raises(ValueError, match="1 to 9"):
            asafe.install(client, runtime(NEVER, False))
    with dask.config.set({"asafe.optimizations": [{"name": "wire-compression", "domain": "asafe.AllOf", "kwargs": {
            "domains": [{"domain": "asafe.Hysteresis", "kwargs": {"alpha": 0.9, "beta": 0.5, "metric": "cpu"}}]}}]}):
        with pytest.raises(ValueError, match="alpha <= beta"):
            asafe.install(client)
    wire.enable()  # the default settings again in this process


def test_transfers_are_counted_in_uncompressed_equivalent_bytes(client, installed):
    with installed(client, runtime(ALWAYS, True)) as handle:
        before = handle.info("plugin")["plugin"]["transfers"]
        reset(client)
        transposed(client, array())
        after = handle.info("plugin")["plugin"]["transfers"]
        saved = codec_saved(totals(client))
        assert saved > 0
        # the logical bytes still count every byte moved; the wire bytes are what crossed
        assert plugin_saved(before, after) >= 0.9 * saved
        assert after["corrected_seconds"] - before["corrected_seconds"] > after["seconds"] - before["seconds"]


def test_a_transfer_whose_task_never_ran_is_counted_with_the_next_task(client, installed):
    # A transfer's record rides with the task it was fetched for. Here that task is
    # released after its data arrived and before it ran (as a stolen or cancelled
    # task would be): its record must leave with the next task that finishes on
    # that worker, so the plugin still counts the bytes the codec saved.
    with installed(client, runtime(ALWAYS, True)) as handle:
        source, sink = sorted(client.nthreads())
        gate = Event(f"asafe-gate-{uuid.uuid4().hex}")
        block = smooth_block(np.random.default_rng(2).random((256, 1024)))
        a = client.submit(lambda: block.copy(), workers=source, pure=False)
        a.result()
        busy = client.submit(lambda: gate.wait(60), workers=sink, pure=False)  # holds the sink's one thread
        wait_on(client, sink, lambda dask_worker: len(dask_worker.state.executing) == 1, "the busy task to run")
        before = handle.info("plugin")["plugin"]["transfers"]
        reset(client)
        d = client.submit(lambda x: float(x.sum()), a, workers=sink, pure=False)
        wait_on(client, sink, lambda dask_worker, key=a.key: key in dask_worker.data, "the data to arrive")
        d.cancel()
        wait_on(client, sink, lambda dask_worker, key=d.key: key not in dask_worker.state.tasks
                 or dask_worker.state.tasks[key].state in ("released", "forgotten"), "the task to leave")
        assert unreported(client, sink) == 1
        gate.set()
        assert busy.result(timeout=30) is True
        after = handle.info("plugin")["plugin"]["transfers"]
        saved = codec_saved(totals(client))
        assert saved > 1_000_000  # the 2 MiB smooth block crossed compressed
        counted = plugin_saved(before, after)
        assert counted >= 0.95 * saved, (counted, saved)
        assert unreported(client, sink) == 0


def test_a_replica_fetched_for_no_task_is_counted_with_the_next_task(make_cluster_factory, installed):
    # Retiring a worker moves its data with acquire-replicas: the receiving worker
    # fetches keys that no task there waits for, and records the transfer on the
    # fetched key itself, which never reports. The record must leave with the
    # next task that finishes on that worker.
    from distributed import Client

    with make_cluster_factory() as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        with installed(client, runtime(ALWAYS, True)) as handle:
            source, sink = sorted(client.nthreads())
            block = smooth_block(np.random.default_rng(3).random((256, 1024)))
            a = client.submit(lambda: block.copy(), workers=source, pure=False)
            a.result()
            before = handle.info("plugin")["plugin"]["transfers"]
            reset(client)
            client.retire_workers([source], close_workers=False, remove=True)
            assert client.run(lambda dask_worker, key=a.key: key in dask_worker.data, workers=[sink])[sink]
            saved = codec_saved(client.run(wire.stats, workers=[sink])[sink])
            assert saved > 1_000_000  # the 2 MiB smooth block crossed compressed
            assert unreported(client, sink) == 1
            assert client.submit(lambda x: float(x.sum()), a, workers=sink).result() == float(block.sum())
            after = handle.info("plugin")["plugin"]["transfers"]
            counted = plugin_saved(before, after)
            assert counted >= 0.95 * saved, (counted, saved)


def test_a_state_that_compresses_imports_the_codecs_before_the_first_frame(make_cluster_factory, installed):
    # The first frame's sample imported blosc2 on the path of its transfer (0.1-0.7 s);
    # a state that compresses now starts the import when it reaches the worker, and a
    # state that never compresses imports nothing.
    from distributed import Client

    def imported():  # and each candidate's first call made (wire._warm_up), off the transfers' path
        return bool(wire._blosc2) and wire._warm

    with make_cluster_factory() as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        with installed(client, runtime(NEVER, False)):
            time.sleep(0.5)
            assert not any(client.run(imported).values())
        with installed(client, runtime(ALWAYS, True)):
            deadline = time.monotonic() + 30
            while not all(client.run(imported).values()):
                assert time.monotonic() < deadline, "the workers never imported the codecs"
                time.sleep(0.05)
            assert totals(client)["samples"] == 0  # imported before any frame was sampled


def _link_view(dask_scheduler):
    """What the installed scheduler plugin knows of the link and the host's processes."""
    plugin = dask_scheduler.plugins["asafe"]
    plugin.runtime.evaluate()
    return {"signals": plugin.runtime.mode.signals, "pids": sorted(plugin._local_worker_pids()),
            "measured": plugin.link.measured, "capacity": plugin.link.capacity, "bandwidth": plugin.link()}


def test_the_default_domain_reads_the_link_and_the_load_outside_the_run(client, installed):
    pids = sorted(client.run(os.getpid).values())
    with installed(client, asafe.AdaptiveRuntime()):
        transposed(client, array())
        first = client.run_on_scheduler(_link_view)
    # the workers are the run's own processes: their cpu is not external load
    assert first["pids"] == pids
    assert {"cpu", "external_cpu", "bandwidth"} <= set(first["signals"])
    assert first["signals"]["external_cpu"] <= first["signals"]["cpu"] + 1e-9
    # the signal reads the link's capacity (the envelope of the transfers), the forecast the average
    assert first["measured"] and first["signals"]["bandwidth"] == first["capacity"] >= first["measured"]
    # a new installation on this scheduler starts from the link the previous one measured
    with installed(client, asafe.AdaptiveRuntime()):
        second = client.run_on_scheduler(_link_view)
    assert second["measured"] is None and second["bandwidth"] == first["measured"]
    assert second["capacity"] is None and second["signals"]["bandwidth"] == first["capacity"]


def test_a_received_frame_reports_the_bytes_saved_and_the_codecs_seconds():
    wire.enable()
    wire.reset_stats()
    data = np.round(np.linspace(0.0, 1.0, 1 << 17) * 1024.0) / 1024.0  # 1 MiB of smooth float64
    frame = wire.compress_frame(memoryview(data).cast("B"), 8)
    assert bytes(wire.decompress_frame(frame)) == data.tobytes()
    saved, stored, seconds = wire.take_received()
    assert saved == data.nbytes - len(frame) > 0 and stored == 0
    assert seconds >= wire.stats()["decompress_seconds"] > 0  # decompression, plus the sender's estimate
    assert wire.take_received() == (0, 0, 0.0)


def test_a_transfer_the_codec_ran_on_is_no_measure_of_the_link():
    # its link time would be its time less an estimate of the codec's seconds, which errs both ways: read
    # high, it closed the next run's gate; read low, it would keep compression on by its own effect
    from asafe.schedulers.protocol import STARTSTOP_BYTES, STARTSTOP_CODEC, STARTSTOP_EXTRA
    from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin

    plugin = AdaptiveSchedulerPlugin(runtime(NEVER, False), bandwidth_min_bytes=1)
    batch = {"action": "transfer", "start": 10.0, "stop": 11.0,
             STARTSTOP_BYTES: 100_000_000, STARTSTOP_EXTRA: 400_000_000, STARTSTOP_CODEC: 0.6}
    plugin._transfer_seconds(None, [batch])
    assert plugin.link.measured is None
    assert plugin.transfer_stats["count"] == 1  # still counted as communication, in uncompressed-equivalent bytes
    assert plugin.transfer_stats["logical_bytes"] == 500_000_000
    # objects stored compressed (tiles) move as they are: their wire bytes over the time measure the link
    plugin._transfer_seconds(None, [{k: v for k, v in batch.items() if k != STARTSTOP_CODEC}])
    assert plugin.link.measured == pytest.approx(100e6)
    plugin._transfer_seconds(None, [{**batch, STARTSTOP_BYTES: 300_000_000}])
    assert plugin.link.measured == pytest.approx(100e6)  # the codec's transfers leave the estimate as it was
