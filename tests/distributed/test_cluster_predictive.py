"""The predictive mode on a LocalCluster: a phase's first tasks run in the right state.

Two kinds of phase alternate on a real cluster of two worker processes:

* *shipped*: producers pinned to one worker make large arrays that consumers
  pinned to the other worker read -- communication dominates;
* *local*: tasks that compute for a while and move nothing -- compute dominates.

Every task records ``asafe.is_on("compression")`` when it starts. With the
forecast (the default), the scheduler plugin sees each phase's graph when it is
submitted, plans the transfers its producers' outputs will make, and decides
before the first task runs. With the measured window alone (``blend=1``, no
expected transfers), the first tasks of a phase run in the previous phase's
state: the lag that the forecast removes, asserted here so that the comparison
cannot pass by accident.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

import asafe

SHIPPED_BYTES = 8 * 2**20  # one producer's output
TASKS = 16  # per phase: as many as the window holds, so the plan weighs fully


@asafe.typed("compute")
def produce(i, nbytes):
    made = np.zeros(nbytes // 8)  # pages mapped lazily: next to no compute, all the bytes to ship
    made[0] = float(i)
    return asafe.is_on("compression"), made


@asafe.typed("compute")
def consume(made):
    return float(made[1][0])


@asafe.typed("compute")
def think(i):
    started = asafe.is_on("compression")
    a = np.random.default_rng(i).random((220, 220))
    for _ in range(12):  # real work, about 20-40 ms on these machines
        a = np.linalg.qr(a)[0]
    return started, float(a[0, 0])


def shipped_phase(client, workers, tag):
    a, b = workers
    made = client.map(produce, range(TASKS), [SHIPPED_BYTES] * TASKS, key=[f"produce-{tag}-{i}" for i in range(TASKS)],
                      workers=[a], allow_other_workers=False, pure=False)
    used = client.map(consume, made, key=[f"consume-{tag}-{i}" for i in range(TASKS)], workers=[b],
                      allow_other_workers=False, pure=False)
    assert client.gather(used) == [float(i) for i in range(TASKS)]
    return [state for state, _ in client.gather(made)]


def local_phase(client, tag):
    done = client.map(think, range(TASKS), key=[f"think-{tag}-{i}" for i in range(TASKS)], pure=False)
    return [state for state, _ in client.gather(done)]


def _runtime(make_runtime, predictive):
    # ratio below 1: on; above 4: off. No dwell: the test is about when the mode knows.
    options = dict(window=TASKS, dwell=0.0, dwell_tasks=0, blend=0.1 if predictive else 1.0)
    return make_runtime(alpha=1.0, beta=4.0, **options)


def _phases(client, handle):
    workers = sorted(client.nthreads())
    seen = {"shipped-1": shipped_phase(client, workers, "s1")}  # learns the producers' output size
    seen["local-1"] = local_phase(client, "l1")
    seen["shipped-2"] = shipped_phase(client, workers, "s2")
    seen["local-2"] = local_phase(client, "l2")
    return seen


def test_forecast_switches_before_each_phase_runs(client, make_runtime, installed):
    with installed(client, _runtime(make_runtime, predictive=True)) as handle:
        seen = _phases(client, handle)
        forecast = handle.info("plugin")["plugin"]["forecast"]
    # from the second phase on, every task of a phase ran in that phase's state
    assert seen["local-1"] == [False] * TASKS
    assert seen["shipped-2"] == [True] * TASKS
    assert seen["local-2"] == [False] * TASKS
    # what the forecast learned: the producers' logical size, and that they all crossed
    assert forecast["output_bytes"]["produce"] == pytest.approx(SHIPPED_BYTES, rel=0.01)
    assert forecast["shipped"]["produce"] == 1.0
    # nothing planned is left once the phases are done and their results released
    assert abs(forecast["planned_seconds"]) < 1e-9


def test_measured_window_alone_runs_each_phase_start_in_the_old_state(client, make_runtime, installed):
    with installed(client, _runtime(make_runtime, predictive=False), expected_transfers=False):
        seen = _phases(client, None)
    # the first task of each phase ran before any of its measurements reached the window
    assert seen["local-1"][0] is True
    assert seen["shipped-2"][0] is False
    assert seen["local-2"][0] is True


@pytest.mark.parametrize("skip", [True, False])
def test_a_graphs_arrival_is_not_held_by_the_dwell(client, make_runtime, installed, skip):
    # A dwell longer than the whole run: after the first toggle, only a graph's
    # arrival can move the state, and only with arrivals_skip_dwell (the default).
    options = dict(window=TASKS, dwell=600.0, dwell_tasks=10_000, blend=0.1, arrivals_skip_dwell=skip)
    with installed(client, make_runtime(alpha=1.0, beta=4.0, **options)) as handle:
        seen = _phases(client, handle)
        history = [(t.old, t.new) for t in handle.history]
    if skip:
        assert seen["local-1"] == [False] * TASKS
        assert seen["shipped-2"] == [True] * TASKS
        assert seen["local-2"] == [False] * TASKS
        assert history == [(False, True), (True, False), (False, True), (True, False)]
    else:  # the toggle on in the first shipped phase holds for the rest of the run
        assert seen["local-1"] == seen["shipped-2"] == seen["local-2"] == [True] * TASKS
        assert history == [(False, True)]


@asafe.typed("compute")
def remembered_produce(i, nbytes):
    return produce(i, nbytes)


def _remembered_phase(client, workers, tag):
    a, b = workers
    made = client.map(remembered_produce, range(TASKS), [SHIPPED_BYTES] * TASKS,
                      key=[f"remembered-produce-{tag}-{i}" for i in range(TASKS)],
                      workers=[a], allow_other_workers=False, pure=False)
    used = client.map(consume, made, key=[f"remembered-consume-{tag}-{i}" for i in range(TASKS)], workers=[b],
                      allow_other_workers=False, pure=False)
    assert client.gather(used) == [float(i) for i in range(TASKS)]
    return [state for state, _ in client.gather(made)]


def test_a_new_installation_forecasts_a_prefix_the_scheduler_has_run(client, make_runtime, installed):
    # The demo installs a fresh runtime per run; what the scheduler learned per
    # prefix (the producers' output size) must survive it, as Dask's per-prefix
    # durations do, or every run ships its first wave uncompressed.
    workers = sorted(client.nthreads())
    with installed(client, _runtime(make_runtime, predictive=True)):
        first = _remembered_phase(client, workers, "r1")
    with installed(client, _runtime(make_runtime, predictive=True)) as handle:
        again = _remembered_phase(client, workers, "r2")
        forecast = handle.info("plugin")["plugin"]["forecast"]
    assert first[0] is False  # a prefix this scheduler never ran: its size is unknown
    assert again == [True] * TASKS  # a fresh runtime, and every task of the phase ran compressed
    assert forecast["output_bytes"]["remembered-produce"] == pytest.approx(SHIPPED_BYTES, rel=0.01)


def _sleepy(i, event_name=None):
    import time

    from distributed import Event

    if event_name is not None:
        Event(event_name).wait(timeout=30)
    else:
        time.sleep(0.05)
    return i


def _scheduled_compute(dask_scheduler):
    return dask_scheduler.plugins["asafe"].tracker.scheduled_work().get("compute", 0.0)


def _expected_while_held(client, held, go):
    """The scheduled compute the tracker expects of ``held`` (tasks waiting on Event ``go``), then release them."""
    try:
        expected = 0.0
        for _ in range(100):  # the tasks reach the scheduler
            expected = client.run_on_scheduler(_scheduled_compute)
            if expected > 0:
                break
            time.sleep(0.02)
    finally:
        go.set()
    assert client.gather(held) == list(range(len(held)))
    return expected


def test_a_new_installation_starts_from_the_schedulers_task_durations(client, make_runtime, installed):
    # Dask learns a duration per key prefix (TaskPrefix.duration_average) and
    # keeps it across installations; a fresh runtime must not count a prefix the
    # scheduler has run at the 1 ms default until its own first measurement.
    from distributed import Event

    with installed(client, make_runtime()):
        client.gather(client.map(_sleepy, range(4), key=[f"sleepy-{i}" for i in range(4)], pure=False))
    go = Event("asafe-test-go")
    with installed(client, make_runtime()):
        held = client.map(_sleepy, range(4), ["asafe-test-go"] * 4, key=[f"sleepy-{i}" for i in range(4, 8)],
                          pure=False)
        expected = _expected_while_held(client, held, go)
    # four tasks at Dask's ~50 ms, not at the 1 ms default
    assert 4 * 0.02 < expected < 4 * 1.0


def _nap(i, seconds, event_name=None):
    import time

    from distributed import Event

    if event_name is not None:
        Event(event_name).wait(timeout=30)
    time.sleep(seconds)
    return i


def test_a_new_installation_starts_from_the_mean_duration_not_the_latest_task(client, make_runtime, installed):
    # Dask's duration_average weighs the latest task by a half: after six naps
    # of 20 ms and one of 400 ms it reads over 200 ms, where a task of the
    # prefix takes 70-100 ms on average. The prior is the mean.
    from distributed import Event

    client.gather(client.map(_nap, range(6), [0.02] * 6, key=[f"nap-{i}" for i in range(6)], pure=False))
    client.gather(client.submit(_nap, 6, 0.4, key="nap-6", pure=False))
    dask_average = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.task_prefixes["nap"]
                                           .duration_average)
    assert dask_average > 0.2
    go = Event("asafe-test-nap")
    with installed(client, make_runtime()):
        held = client.map(_nap, range(4), [0.0] * 4, ["asafe-test-nap"] * 4, key=[f"nap-{i}" for i in range(7, 11)],
                          pure=False)
        expected = _expected_while_held(client, held, go)
    assert 4 * 0.05 < expected < 4 * 0.15


# --------------------------------------------------------------------------- the next wave
@asafe.typed("compute")
def make_vector(nbytes):
    made = np.zeros(nbytes // 8)  # next to no compute, all the bytes to ship
    return asafe.is_on("compression"), made


@asafe.typed("compute")
def read_vector(vector, i):
    started = asafe.is_on("compression")
    when = time.time()
    a = np.random.default_rng(i).random((220, 220))
    for _ in range(12):  # real work, about 20-40 ms on these machines
        a = np.linalg.qr(a)[0]
    return (started, when), float(a[0, 0]) + float(vector[1][0])  # (state, start time)


def vector_phase(client, workers, tag):
    """One graph: a cheap task makes a vector on one worker; every panel, pinned to the other, waits on it."""
    import dask
    from dask import delayed

    a, b = workers
    with dask.annotate(workers=[a], allow_other_workers=False):
        vector = delayed(make_vector, pure=False)(SHIPPED_BYTES, dask_key_name=f"vector-{tag}")
    with dask.annotate(workers=[b], allow_other_workers=False):
        panels = [delayed(read_vector, pure=False)(vector, i, dask_key_name=f"read-{tag}-{i}") for i in range(TASKS)]
    made, *read = client.gather(client.compute([vector, *panels]))  # one update_graph
    return made[0], [state for state, _ in read]  # per panel: (its state, when it started)


@pytest.mark.parametrize("next_wave", [True, False])
def test_a_phase_waiting_on_one_task_counts_the_tasks_behind_it(client, make_runtime, installed, next_wave):
    # The scheduled view alone (blend 0), as on a fresh runtime. The vector's
    # transfer to the panels' worker is planned while the vector is made; the
    # panels wait on it. Counting them (the next wave) shows a phase that
    # computes from its submission; counting ready tasks only showed the cheap
    # vector task against its planned transfer -- communication -- and switched
    # compression on for as long as it ran. Both are asserted, so the test
    # cannot pass by accident.
    workers = sorted(client.nthreads())
    rt = make_runtime(alpha=0.5, beta=1.0, window=TASKS, dwell=0.0, dwell_tasks=0, blend=0.0)
    with installed(client, rt, next_wave=next_wave) as handle:
        vector_phase(client, workers, f"l{int(next_wave)}")  # learns the vector's size and the panels' duration
        before = len(handle.history)
        made_in, panels = vector_phase(client, workers, f"a{int(next_wave)}")
        history = handle.history[before:]
        tracker = handle.info("tracker")["tracker"]
    if next_wave:
        assert made_in is False
        assert [state for state, _ in panels] == [False] * TASKS
        assert history == []
    else:
        assert made_in is True
        assert [t.new for t in history] == [True, False]
        # off once the panels were ready: the first ones to start may start before
        # (Dask starts equal-priority panels in no fixed order: the last one to start, not the last key)
        last_started, _ = max(panels, key=lambda panel: panel[1])
        assert last_started is False
    assert tracker["tasks"] == 0 and tracker["next_wave"] == 0  # nothing left counted once the phase is done


def _add(*values):
    return sum(values)


def _plugin_counts(dask_scheduler):
    info = dask_scheduler.plugins["asafe"].info(["tracker"])["tracker"]
    return info["tasks"], info["next_wave"]


def _settled_counts(client, at_least):
    """The plugin's counts once ``at_least`` tasks are counted (they reached the scheduler) and 0.1 s later."""
    for _ in range(100):
        if client.run_on_scheduler(_plugin_counts)[0] >= at_least:
            break
        time.sleep(0.02)
    time.sleep(0.1)  # anything else would have been counted by now
    return client.run_on_scheduler(_plugin_counts)


def test_the_next_wave_is_one_wave_deep_and_skips_wide_tasks(client, make_runtime, installed):
    # gate (ready, held on an Event) -> 4 tasks (the next wave) -> 1 task (not
    # counted: its dependencies are waiting); a task reading the gate and 40
    # outputs in memory is wider than 32 dependencies and is counted only once
    # it is ready.
    from distributed import Event

    go = Event("asafe-test-wave")
    with installed(client, make_runtime()):
        stored = client.map(_add, range(40), key=[f"stored-{i}" for i in range(40)], pure=False)
        client.gather(stored)
        gate = client.submit(_sleepy, 1, "asafe-test-wave", key="gate-0", pure=False)
        try:
            step = [client.submit(_add, gate, i, key=f"step-{i}", pure=False) for i in range(4)]
            after = client.submit(_add, *step, key="after-0", pure=False)
            wide = client.submit(_add, gate, *stored, key="wide-0", pure=False)
            counts = _settled_counts(client, at_least=5)
        finally:
            go.set()
        assert client.gather(after) == 4 * 1 + 6
        assert client.gather(wide) == 1 + sum(range(40))
        done = client.run_on_scheduler(_plugin_counts)
    assert counts == (5, 4)  # the gate and the four tasks waiting on it only
    assert done == (0, 0)


def test_single_dependency_tasks_join_the_wave_behind_a_task_in_it(client, make_runtime, installed):
    # gate (ready, held on an Event) -> link-1 -> link-2 -> link-3 (each of one
    # dependency, each submitted apart: each joins at its arrival, the one
    # before it being in the wave) -> a task of three dependencies (not counted
    # until they are ready). Without the rule only the gate and link-1 counted:
    # (2, 1).
    from distributed import Event

    go = Event("asafe-test-chain")
    with installed(client, make_runtime()):
        other = client.submit(_add, 5, key="chain-other-0", pure=False)
        client.gather(other)
        gate = client.submit(_sleepy, 1, "asafe-test-chain", key="chain-gate-0", pure=False)
        try:
            link = gate
            for i in range(1, 4):
                link = client.submit(_add, link, i, key=f"chain-link-{i}", pure=False)
            pair = client.submit(_add, link, other, gate, key="chain-pair-0", pure=False)
            counts = _settled_counts(client, at_least=4)
        finally:
            go.set()
        assert client.gather(pair) == (1 + 1 + 2 + 3) + 5 + 1
        done = client.run_on_scheduler(_plugin_counts)
    assert counts == (4, 3)  # the gate and the chain of three behind it
    assert done == (0, 0)


def test_the_chain_stops_before_a_p2p_barrier(client, make_runtime, installed):
    # gate (ready, held on an Event) -> link (the next wave) -> a task keyed as a P2P barrier -> three
    # unpacks of one dependency each. Neither the barrier nor the unpacks are counted: a P2P operation's
    # unpack tasks depend on its barrier alone, and chained behind it they (and the barrier, chained
    # itself) counted as compute the seconds they wait for shards (docs/results/workloads/1gbit-s37).
    # With the chain rule alone: (6, 5); with only the unpacks stopped: (3, 2).
    from distributed import Event

    go = Event("asafe-test-barrier")
    with installed(client, make_runtime()):
        gate = client.submit(_sleepy, 1, "asafe-test-barrier", key="barrier-gate-0", pure=False)
        try:
            link = client.submit(_add, gate, 1, key="barrier-link-0", pure=False)
            barrier = client.submit(_add, link, key="shuffle-barrier-asafe-test", pure=False)
            unpacks = [client.submit(_add, barrier, i, key=f"barrier-unpack-{i}", pure=False) for i in range(3)]
            counts = _settled_counts(client, at_least=2)
        finally:
            go.set()
        assert client.gather(unpacks) == [2 + i for i in range(3)]
        done = client.run_on_scheduler(_plugin_counts)
    assert counts == (2, 1)  # the gate and the link
    assert done == (0, 0)
