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
    workers = sorted(client.scheduler_info()["workers"])
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
    workers = sorted(client.scheduler_info()["workers"])
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
        try:
            expected = 0.0
            for _ in range(100):  # the tasks reach the scheduler
                expected = client.run_on_scheduler(_scheduled_compute)
                if expected > 0:
                    break
                time.sleep(0.02)
        finally:
            go.set()
        assert client.gather(held) == [0, 1, 2, 3]
    # four tasks at Dask's ~50 ms, not at the 1 ms default
    assert 4 * 0.02 < expected < 4 * 1.0
