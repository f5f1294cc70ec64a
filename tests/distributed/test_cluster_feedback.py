"""Compression changes its own signal: the naive ratio flaps, asafe's does not.

A transfer-bound workload runs in waves: producers on one worker emit an 8 MB
payload, consumers on the other worker fetch it and do a little work. With
compression on, producers emit a compressed payload instead (a few KB on the
wire, reporting its 8 MB ``logical_nbytes``), so the transfers all but vanish.
The link is emulated at 100 MB/s (a payload takes ``nbytes / LINK`` seconds to
arrive, inside the transfer the worker measures) so that the workload is
transfer-bound on any machine: on a loopback interface a dense payload would
cross at whatever speed the shared machine happens to have.

* naive (``transfer_correction=False``, no forecast): the measured transfers shrink, the
  compute/communication ratio rises past beta and compression switches itself
  off although the workload did not change; transfers grow back, the ratio falls
  below alpha, on again, ...
* asafe (the default): transfers count in uncompressed-equivalent seconds, the
  ratio keeps describing the workload, and compression stays on.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
from distributed import get_worker

import asafe

pytestmark = pytest.mark.timeout(180)

PAYLOAD = 1_000_000  # float64 values: 8 MB uncompressed
WORK = 0.005  # seconds of compute per task
LINK = 100e6  # bytes per second of the emulated link


class Dense:
    """An uncompressed payload on the emulated link."""

    def __init__(self, values, sequence):
        self.values = values
        self.sequence = sequence  # production order on the source worker (see produce)

    def __sizeof__(self):  # what dask.sizeof, and so the worker's transfer log, counts
        return self.values.nbytes

    def __reduce__(self):
        return (_arrive, (self.values, self.sequence))


def _arrive(values, sequence):
    time.sleep(values.nbytes / LINK)  # unpickled at the receiving worker, inside its transfer
    return Dense(values, sequence)


@asafe.report_sizes  # the worker notes its logical and wire sizes when it sizes the output
class Packed:
    """A compressed payload: small on the wire, reports its dense size."""

    def __init__(self, logical_nbytes, data, sequence):
        self.logical_nbytes = logical_nbytes
        self.data = data
        self.sequence = sequence

    @property
    def nbytes(self):
        return self.data.nbytes


@asafe.typed(asafe.COMPUTE)
def produce(i):
    worker = get_worker()
    dense = getattr(worker, "_asafe_test_payload", None)
    if dense is None:  # made once per worker: producing costs WORK, not an allocation
        dense = worker._asafe_test_payload = np.ones(PAYLOAD)
    # The source worker has one thread, so this counts payloads in the order they
    # were produced -- which is not the order they were submitted in (see
    # transfer_bound_run).
    sequence = worker._asafe_test_produced = getattr(worker, "_asafe_test_produced", -1) + 1
    time.sleep(WORK)
    if asafe.is_on("compression"):
        return Packed(dense.nbytes, dense[:1000].copy(), sequence)
    return Dense(dense, sequence)


@asafe.typed(asafe.COMPUTE)
def consume(payload, i):
    time.sleep(WORK)
    return payload.sequence, isinstance(payload, Packed)


def transfer_bound_run(client, handle, waves=16, width=4, depth=4):
    """Waves of producers on one worker and consumers on the other, a few waves in flight.

    Returns, for every payload in the order the source worker *produced* them,
    whether it reached its consumer compressed. Submission order is not
    production order: ``client.submit`` calls less than ``fifo_timeout`` (100 ms)
    apart get the same scheduler priority, and a worker runs ready tasks of equal
    priority newest first (``WorkerState.generation`` counts down). So the first
    ``depth`` waves run roughly last-in first-out, and a producer submitted early
    may run after the switch while later ones ran before it.
    """
    source, sink = sorted(client.nthreads())
    received, pending = [], []
    for w in range(waves + 1):
        if w < waves:
            producers = [client.submit(produce, (w, i), workers=[source], pure=False) for i in range(width)]
            pending.append([client.submit(consume, p, i, workers=[sink], pure=False) for i, p in enumerate(producers)])
            del producers
        while len(pending) >= depth or (w == waves and pending):
            received += client.gather(pending.pop(0))
    sequences = [sequence for sequence, _ in received]
    assert len(set(sequences)) == len(sequences) == waves * width, sequences  # one source, every payload once
    return [compressed for _, compressed in sorted(received)]


def test_naive_ratio_flaps_asafe_does_not(client, make_runtime, installed):
    def fresh():
        return make_runtime(window=48, dwell=0.1, dwell_tasks=4)

    # naive: measured wire time only -- no correction, and no forecast (whose planned
    # transfers are logical bytes / bandwidth, a correction of their own)
    with installed(client, fresh(), transfer_correction=False, expected_transfers=False) as naive:
        transfer_bound_run(client, naive)
        naive_history = [(t.old, t.new) for t in naive.history]
    with installed(client, fresh()) as corrected:
        compressed = transfer_bound_run(client, corrected)
        corrected_history = [(t.old, t.new) for t in corrected.history]
        corrected_modes = [t.as_dict() for t in corrected.history]
        transfers = corrected.info("plugin")["plugin"]["transfers"]
    # naive: on, then off again under the same workload (then on again, ...)
    assert naive_history[:2] == [(False, True), (True, False)], naive_history
    # asafe: on once, and it stays on
    assert corrected_history == [(False, True)], (corrected_modes, corrected.info("plugin"))
    # once on, every payload produced later travelled compressed (in production order)
    first = compressed.index(True)
    assert all(compressed[first:]) and first < len(compressed) // 2
    # the correction at work: logical bytes far above wire bytes, seconds charged accordingly
    assert transfers["logical_bytes"] > 2 * transfers["wire_bytes"]
    assert transfers["corrected_seconds"] > transfers["seconds"]


def _task_metadata(dask_scheduler, key):
    return dict(dask_scheduler.tasks[key].metadata)


def test_a_class_pickled_by_value_reports_its_sizes(client, make_runtime, installed):
    # Packed travels by value (this module is not importable on the workers): the workers
    # never ran its report_sizes registration, and Dask's default sizeof reads __sizeof__.
    # Without it the output reported 56 bytes and no logical size, and the forecast
    # planned no transfer for it (the corrected run above then flapped at times).
    with installed(client, make_runtime()):
        future = client.submit(Packed, PAYLOAD * 8, np.zeros(1000), 0, pure=False)
        future.result()
        metadata = client.run_on_scheduler(_task_metadata, key=future.key)
    assert list(metadata.get("asafe-nbytes", ())) == [PAYLOAD * 8, 8000], metadata
