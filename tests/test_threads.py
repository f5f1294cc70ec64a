"""kernel-threads without a cluster: the signal's count, the domain, the checks, the task and worker helpers.

The cluster side (the state pushed, BLAS limited in tasks) is in
tests/distributed/test_cluster_threads.py.
"""
from __future__ import annotations

import math
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asafe
from asafe.core import validate
from asafe.core.runtime import load_optimizations
from asafe.schedulers import board, threads

CORES = threads.cores()

#: The entry of the Kernel threads guide, with this machine's cores.
ENTRY = {"name": "kernel-threads", "domain": "asafe.Bands",
         "kwargs": {"metric": "runnable_per_core", "edges": [0.75], "states": [CORES, 1], "margin": 0.25},
         "initial": CORES}


def mode(value):
    return asafe.ModeVector({"compute": 1.0}, runnable_per_core=value)


def test_runnable_count_counts_every_type_but_communication_per_worker_thread():
    threads_ = [4]
    count = threads.RunnableCount(lambda: threads_[0])
    for task_type in ("compute", "compute", "io", "communication"):
        count.add(task_type)
    assert count.count == 3 and count() == 0.75
    count.remove("communication")  # never counted: nothing leaves
    assert count.count == 3
    threads_[0] = 2  # a worker left
    assert count() == 1.5
    for _ in range(5):
        count.remove("compute")
    assert count.count == 0  # never negative, whatever the order of events
    count.add("compute")
    count.clear()
    assert count() == 0.0
    threads_[0] = 0
    assert math.isnan(count())  # no worker threads: unknown, no band changes


def test_the_documented_domain_asks_every_core_alone_and_one_thread_when_every_thread_has_a_task():
    (opt,) = load_optimizations([ENTRY])
    domain = opt.domain
    assert domain.decide(mode(0.5), CORES) == CORES  # one task on two threads
    assert domain.decide(mode(1.0), CORES) == 1
    assert domain.decide(mode(0.7), 1) == 1  # within the margin: kept
    assert domain.decide(mode(0.9), CORES) == CORES
    assert domain.decide(mode(0.5), 1) == CORES
    assert domain.decide(mode(math.nan), 1) == 1  # unknown: kept


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 64), st.just(math.nan)), min_size=1, max_size=50))
def test_the_state_stays_a_thread_count_and_never_flips_within_the_margin(values):
    (opt,) = load_optimizations([ENTRY])
    domain = opt.domain
    state = opt.initial
    for value in values:
        new = domain.decide(mode(value), state)
        assert isinstance(new, int) and 1 <= new <= CORES
        threads.check_states([new])
        if math.isnan(value) or (state == CORES and value <= 0.75 * 1.25) or (state == 1 and value >= 0.75 * 0.75):
            assert new == state  # inside the current band widened by the margin: kept
        state = new


@pytest.mark.parametrize("state", [0, -1, CORES + 1, True, False, 1.5, "2", None])
def test_a_state_outside_one_to_the_cores_is_refused_naming_the_setting(state):
    with pytest.raises(validate.InvalidSetting) as error:
        threads.check_states([1, state], "asafe.optimizations kernel-threads")
    message = str(error.value)
    assert message.startswith("asafe.optimizations kernel-threads: the state ")
    assert f"allowed: an int from 1 to {CORES} (os.cpu_count() here)" in message


def test_check_runtime_reads_the_initial_state_and_every_state_of_the_domain():
    threads.check_runtime(asafe.AdaptiveRuntime(load_optimizations([ENTRY]), signals=False))
    bad = dict(ENTRY, kwargs=dict(ENTRY["kwargs"], states=[CORES + 1, 1]))
    with pytest.raises(validate.InvalidSetting, match="the states of the domain of 'kernel-threads'"):
        threads.check_runtime(asafe.AdaptiveRuntime(load_optimizations([bad]), signals=False))
    with pytest.raises(validate.InvalidSetting, match="the initial state of 'kernel-threads'"):
        threads.check_runtime(asafe.AdaptiveRuntime(load_optimizations([dict(ENTRY, initial=0)]), signals=False))
    other = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))], signals=False)
    threads.check_runtime(other)  # no kernel-threads: nothing to check
    assert threads.reads_signal(asafe.AdaptiveRuntime(load_optimizations([ENTRY]), signals=False))
    assert not threads.reads_signal(other)


def test_kernel_threads_sets_numba_threads_in_its_own_thread_and_restores_them():
    numba = pytest.importorskip("numba")
    seen = {}

    def task():
        before = numba.get_num_threads()
        with asafe.kernel_threads() as count:
            seen["inside"] = (count, numba.get_num_threads())
        seen["after"] = numba.get_num_threads() == before

    previous = board.publish({"kernel-threads": 1})
    try:
        worker = threading.Thread(target=task)
        worker.start()
        worker.join()
    finally:
        board.restore(previous)
    assert seen == {"inside": (1, 1), "after": True}


def test_kernel_threads_outside_a_run_changes_nothing_and_yields_the_default():
    with asafe.kernel_threads() as count:
        assert count is None
    with asafe.kernel_threads(default=1) as count:
        assert count == 1
    previous = board.publish({"compression": True})  # a runtime without kernel-threads
    try:
        with asafe.kernel_threads() as count:
            assert count is None
    finally:
        board.restore(previous)


def test_apply_limits_blas_in_this_process_and_restores_the_original_limits():
    before = threads.blas_threads()
    if before is None:
        pytest.skip("no BLAS library that threadpoolctl sees")
    try:
        assert threads.apply(1) == 1 and threads.blas_threads() == 1
        assert threads.apply(1) == 1  # unchanged: a comparison
        assert threads.apply(CORES + 1) == CORES  # a larger host's count: this host's cores
        assert threads.apply("zstd") is None  # not a thread count: the original limits
        assert threads.blas_threads() == before
    finally:
        threads.apply(None)
    assert threads.blas_threads() == before


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 256), st.lists(st.floats(0, 300), min_size=1, max_size=30))
def test_the_ladder_asks_a_count_from_one_to_the_cores_and_one_when_every_thread_is_busy(cores, values):
    ladder = threads.domain(cores)
    assert ladder.states[0] == cores and ladder.states[-1] == 1
    assert all(b < a for a, b in zip(ladder.states, ladder.states[1:]))  # halving, no repeats
    state = cores
    for value in values:
        state = ladder.decide(mode(value), state)
        assert isinstance(state, int) and 1 <= state <= cores
    assert ladder.decide(mode(1.0 / (1 - ladder.margin) + 1e-9), cores) == 1  # every thread busy: one each
    assert ladder.decide(mode(0.0), 1) == cores  # idle: every core


def test_the_ladder_refuses_a_core_count_below_one():
    with pytest.raises(validate.InvalidSetting, match="cores must be an integer >= 1"):
        threads.domain(0)
