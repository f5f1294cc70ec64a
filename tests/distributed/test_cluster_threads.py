"""kernel-threads on a real cluster (2 worker processes x 1 thread on one host).

The domain is the documented one: many threads (this machine's cores) below
0.75 runnable tasks per worker thread, 1 above, with a 25% margin. Eight small
tasks on the two worker threads read 4 per thread (1 thread each); one task
alone reads 0.5 (every core). Tasks report what they saw: the state, the BLAS
threads (threadpoolctl) and numba's threads inside :func:`asafe.kernel_threads`.
"""
from __future__ import annotations

import os
import time

import pytest

import asafe
from asafe.core import validate

CORES = os.cpu_count() or 1
pytestmark = pytest.mark.skipif(CORES < 2, reason="one core: every thread count is 1")


def runtime(states=(CORES, 1), initial=CORES):
    domain = asafe.Bands("runnable_per_core", edges=[0.75], states=list(states), margin=0.25)
    return asafe.AdaptiveRuntime([asafe.Optimization("kernel-threads", domain, initial=initial)],
                                 signals=False, dwell=0.0, dwell_tasks=0, interval=0.0)


def probe(seconds):
    """What a task sees: (state, BLAS threads, kernel_threads' count, numba threads inside it)."""
    from threadpoolctl import threadpool_info

    import asafe

    state = asafe.state("kernel-threads")  # first: what the task started with
    blas = max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")
    import numba

    with asafe.kernel_threads() as count:
        inside = numba.get_num_threads()
    time.sleep(seconds)
    return state, blas, count, inside


def blas_threads():
    from asafe.schedulers import threads

    return threads.blas_threads()


def runnable(dask_scheduler=None):
    plugin = dask_scheduler.plugins.get("asafe")
    return plugin.runnable.count


def blocked(event_name, *deps):
    from distributed import Event

    Event(event_name).wait(30)
    return len(deps)


@asafe.typed("communication")
def blocked_transfer(event_name):
    return blocked(event_name)


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def test_the_state_follows_runnable_tasks_per_core_and_limits_blas_in_tasks(client, installed):
    import numba

    before = client.run(blas_threads)
    with installed(client, runtime()) as handle:
        small = client.gather(client.map(probe, [0.2] * 8, pure=False))
        assert set(small) == {(1, 1, 1, 1)}  # 4 runnable tasks per thread: 1 thread each
        wait_for(lambda: handle.state("kernel-threads") == CORES)  # nothing runnable: every core again
        assert client.run_on_scheduler(runnable) == 0
        state, blas, count, inside = client.submit(probe, 0.1, pure=False).result()  # 0.5 per thread
        assert (state, count) == (CORES, CORES)
        assert blas == CORES  # above distributed's default of 1 (OPENBLAS_NUM_THREADS=1 in its workers)
        assert inside == min(CORES, numba.config.NUMBA_NUM_THREADS)
        history = [(t.old, t.new) for t in handle.history if t.optimization == "kernel-threads"]
        assert history[:2] == [(CORES, 1), (1, CORES)]
        assert all(1 <= new <= CORES for _, new in history)
        assert "runnable_per_core" in handle.mode.signals
    wait_for(lambda: client.run(blas_threads) == before)  # uninstalled: the original BLAS limits


def test_the_scheduler_counts_runnable_tasks_but_not_communication_ones_nor_those_still_waiting(client, installed):
    import uuid

    from distributed import Event

    name = f"threads-{uuid.uuid4().hex}"
    event = Event(name, client=client)
    with installed(client, runtime()) as handle:
        computes = [client.submit(blocked, name, pure=False) for _ in range(6)]
        transfers = [client.submit(blocked_transfer, name, pure=False) for _ in range(3)]
        waiting = client.submit(blocked, name, computes[0], pure=False)  # runnable once computes[0] is done
        wait_for(lambda: client.run_on_scheduler(runnable) == 6)
        time.sleep(0.2)
        assert client.run_on_scheduler(runnable) == 6  # 2 running, 4 queued; not the transfers nor the dependent
        assert handle.mode.signals["runnable_per_core"] == pytest.approx(6 / 2)
        assert handle.state("kernel-threads") == 1
        event.set()
        assert client.gather([*computes, *transfers, waiting])[-1] == 1
        wait_for(lambda: client.run_on_scheduler(runnable) == 0)


def test_the_signal_is_attached_only_where_a_domain_reads_it(client, installed, make_runtime):
    import uuid

    from distributed import Event

    name = f"threads-{uuid.uuid4().hex}"
    event = Event(name, client=client)
    with installed(client, make_runtime()) as handle:
        client.submit(probe, 0.0, pure=False).result()
        assert "runnable_per_core" not in handle.mode.signals
        assert handle.states == {"compression": False}
        computes = [client.submit(blocked, name, pure=False) for _ in range(4)]
        wait_for(lambda: handle.info("tracker")["tracker"]["tasks"] == 4)  # 2 running, 2 queued
        assert client.run_on_scheduler(runnable) == 0  # not counted either, where nothing reads it
        event.set()
        assert client.gather(computes) == [0] * 4


@pytest.mark.parametrize("states, initial, refused", [
    ((CORES + 1, 1), CORES, CORES + 1),
    ((CORES, 0), CORES, 0),
    ((CORES, 1), 0, 0),
    ((CORES, True), CORES, True),
    ((CORES, "one"), CORES, "'one'"),
])
def test_thread_counts_outside_one_to_the_cores_are_refused_at_install(client, states, initial, refused):
    with pytest.raises(validate.InvalidSetting) as error:
        asafe.install(client, runtime(states, initial))
    message = str(error.value)
    assert "kernel-threads" in message and f"the state {refused}" in message
    assert f"allowed: an int from 1 to {CORES}" in message
    assert client.run_on_scheduler(lambda dask_scheduler=None: "asafe" in dask_scheduler.plugins) is False
