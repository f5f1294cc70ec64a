"""work-stealing on a real cluster (2 worker processes x 1 thread): the stealing loop stops and starts.

Whether stealing runs is read where Dask keeps it: the ``"stealing"`` periodic
callback of the scheduler (``WorkStealing.start()`` adds it, ``stop()`` pops it).
"""
from __future__ import annotations

import time

import dask
import pytest

import asafe
from asafe.core import validate
from asafe.schedulers import stealing


def runtime(initial=True, domain=None):
    domain = domain if domain is not None else stealing.domain()
    return asafe.AdaptiveRuntime([asafe.Optimization("work-stealing", domain, initial=initial)],
                                 signals=False, dwell=0.0, dwell_tasks=0, interval=0.0)


def stealing_runs(dask_scheduler=None):
    return "stealing" in dask_scheduler.periodic_callbacks


async def stop_stealing(dask_scheduler=None):
    await dask_scheduler.extensions["stealing"].stop()


async def start_stealing(dask_scheduler=None):
    await dask_scheduler.extensions["stealing"].start()


def wait_for(client, expected, timeout=5.0):
    deadline = time.monotonic() + timeout
    while client.run_on_scheduler(stealing_runs) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return client.run_on_scheduler(stealing_runs)


def nap(seconds, *deps):
    time.sleep(seconds)
    return seconds


def test_forced_states_stop_and_start_stealing_and_uninstall_restores(client, installed):
    assert client.run_on_scheduler(stealing_runs)
    with installed(client, runtime()) as handle:
        assert wait_for(client, True)
        handle.set_state("work-stealing", False)
        assert not wait_for(client, False)
        handle.set_state("work-stealing", True)
        assert wait_for(client, True)
        handle.set_state("work-stealing", False)
        assert not wait_for(client, False)
        assert handle.fallbacks.get("work-stealing", 0) == 0
    assert wait_for(client, True)  # the uninstall restored what the scheduler had


def test_stealing_stopped_before_install_is_never_started(client, installed):
    client.run_on_scheduler(stop_stealing)
    try:
        with installed(client, runtime()) as handle:
            handle.set_state("work-stealing", False)
            handle.set_state("work-stealing", True)
            time.sleep(0.3)
            assert not client.run_on_scheduler(stealing_runs)
        time.sleep(0.3)
        assert not client.run_on_scheduler(stealing_runs)
    finally:
        client.run_on_scheduler(start_stealing)


def test_cluster_without_stealing_stays_without_it(make_cluster_factory, installed):
    from distributed import Client

    with dask.config.set({"distributed.scheduler.work-stealing": False}):
        with make_cluster_factory() as cluster, Client(cluster) as client:
            client.wait_for_workers(2)
            assert not client.run_on_scheduler(stealing_runs)
            with installed(client, runtime()) as handle:
                handle.set_state("work-stealing", False)
                handle.set_state("work-stealing", True)
                time.sleep(0.3)
                assert not client.run_on_scheduler(stealing_runs)
                assert handle.fallbacks.get("work-stealing", 0) >= 1
            assert not client.run_on_scheduler(stealing_runs)


def test_the_mode_switches_stealing(client, installed):
    with installed(client, runtime()) as handle:
        assert wait_for(client, True)
        with dask.annotate(asafe_type="communication"):
            futures = [client.submit(nap, 0.1, i, pure=False) for i in range(12)]
        client.gather(futures)
        assert handle.state("work-stealing") is False
        assert not wait_for(client, False)
        futures = [client.submit(nap, 0.1, i, pure=False) for i in range(24)]
        client.gather(futures)
        assert handle.state("work-stealing") is True
        assert wait_for(client, True)


@pytest.mark.parametrize("name, state, message", [
    ("work-stealing", 1, "the state 1 is not allowed; allowed: True"),
    ("work-stealing", "off", "the state 'off' is not allowed"),
    ("work_stealing", True, "unknown optimization 'work_stealing': the scheduling policy is named 'work-stealing'"),
])
def test_install_refuses_bad_input(client, name, state, message):
    rt = asafe.AdaptiveRuntime([asafe.Optimization(name, asafe.Fixed(state), initial=state)], signals=False)
    with pytest.raises(validate.InvalidSetting, match=message):
        asafe.install(client, rt)
    assert client.run_on_scheduler(stealing_runs)


def test_check_states_and_runtime():
    stealing.check_states([True, False])
    with pytest.raises(validate.InvalidSetting, match="allowed: True"):
        stealing.check_states([None])
    stealing.check_runtime(runtime())
    with pytest.raises(validate.InvalidSetting, match="the states of the domain"):
        stealing.check_runtime(asafe.AdaptiveRuntime(
            [asafe.Optimization("work-stealing", asafe.Bands("ratio", [1.0], [0, 1]), initial=True)], signals=False))
    stealing.check_runtime(asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))],
                                                 signals=False))


def test_a_replacing_installation_restores_what_the_first_found(client, installed):
    assert wait_for(client, True)
    first = asafe.install(client, runtime(initial=False))
    try:
        assert not wait_for(client, False)
        with installed(client, runtime(initial=False)):  # replaces the first while its restore is in flight
            assert not wait_for(client, False)
    finally:
        if first.installed:
            first.uninstall()
    assert wait_for(client, True)  # the original, not the state the first installation left
