"""Failures on a LocalCluster: a killed worker, a raising domain, a raising plugin hook."""
from __future__ import annotations

import logging
import os
import time

import pytest

import asafe

pytestmark = pytest.mark.timeout(180)


@asafe.typed(asafe.COMMUNICATION)
def slow_ship(i):
    time.sleep(0.05)
    return 2 * i


class Exploding(asafe.EfficiencyDomain):
    """A domain that always raises."""

    def decide(self, mode, state):
        raise RuntimeError("the domain exploded")


class BadlyTyped:
    """A task function whose type lookup raises inside the scheduler plugin."""

    @property
    def __asafe_type__(self):
        raise RuntimeError("the type lookup exploded")

    def __call__(self, x):
        return x + 1


def wait_until(predicate, timeout=30.0):
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
        time.sleep(0.05)


def test_worker_killed_mid_phase(client, make_runtime, installed, boards):
    # alpha = beta = inf: on at the first communication, and never off again, so
    # the restarted worker has a known state to receive
    rt = make_runtime(alpha=float("inf"), beta=float("inf"))
    with installed(client, rt) as handle:
        futures = client.map(slow_ship, range(40), pure=False)
        wait_until(lambda: sum(f.done() for f in futures) >= 4)
        assert handle.state("compression") is True
        victim = sorted(client.nthreads())[0]
        client.run(os._exit, 1, workers=[victim], on_error="ignore", callback_timeout=10)
        # every result arrives, and is right
        assert client.gather(futures) == [2 * i for i in range(40)]
        # the nanny restarted the worker; the lost worker's tasks left the tracker
        client.wait_for_workers(2, timeout=60)
        tracker = handle.info("tracker")["tracker"]
        assert tracker["tasks"] == 0
        # nothing scheduled is left (floating-point residue of the running sums aside)
        assert all(abs(w) < 1e-9 for w in tracker["scheduled"].values()), tracker["scheduled"]
        # the restarted worker received the current states on arrival
        wait_until(lambda: len(boards(client)) == 2 and all(b == {"compression": True} for b in boards(client).values()))
        assert victim not in handle.info("plugin")["plugin"]["workers"]
        assert handle.state("compression") is True


def test_domain_that_raises(client, make_runtime, installed, caplog):
    rt = make_runtime(domain=Exploding(), initial=True)
    with caplog.at_level(logging.ERROR, logger="asafe"), installed(client, rt) as handle:
        assert client.gather(client.map(slow_ship, range(10), pure=False)) == [2 * i for i in range(10)]
        assert handle.state("compression") is True  # kept its state
        errors = handle.errors
        assert errors and all(e.optimization == "compression" for e in errors)
        assert "RuntimeError: the domain exploded" in errors[0].error
        assert handle.history == []
    assert any("domain of 'compression' raised" in r.getMessage() for r in caplog.records)


def test_plugin_hook_that_raises(client, make_runtime, installed, caplog, boards):
    rt = make_runtime(initial=True)
    with caplog.at_level(logging.ERROR, logger="asafe"), installed(client, rt) as handle:
        assert client.gather(client.map(BadlyTyped(), range(10), pure=False)) == list(range(1, 11))
        failures = handle.plugin_errors
        # the ready tasks are typed when the graph arrives (update_graph), the rest as they become ready
        assert failures and failures[0].hook == "update_graph"
        assert "the type lookup exploded" in failures[0].error
        assert handle.state("compression") is True
        # and asafe goes on working for well-typed tasks
        assert client.gather(client.map(slow_ship, range(10), pure=False)) == [2 * i for i in range(10)]
        assert all(b == {"compression": True} for b in boards(client).values())
    logged = [r for r in caplog.records if "transition hook raised" in r.getMessage()]
    assert len(logged) == 1  # logged once, then counted
