"""Fixtures for the cluster tests: real LocalClusters with worker processes.

Every cluster has two worker processes with one thread each (the machines are
small and shared). Functions defined in the test modules run on the workers:
they are pickled by value, since the worker processes cannot import test modules
(pytest imports them with ``--import-mode=importlib``).
"""
from __future__ import annotations

import contextlib
import sys

import cloudpickle
import pytest
from distributed import Client, LocalCluster

import asafe


def make_cluster(**kwargs):
    """A LocalCluster of 2 worker processes x 1 thread, no dashboard."""
    options = {
        "n_workers": 2,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": ":0",
    }
    options.update(kwargs)
    return LocalCluster(**options)


@pytest.fixture(autouse=True, scope="module")
def _pickle_test_module_by_value(request):
    # distributed tries plain pickle first, which sends a module-level function by
    # reference ("tests.distributed.test_x.f"); worker processes cannot import the
    # test modules. Hiding the module (and the packages pytest registered above
    # it) from sys.modules makes plain pickle fail, and distributed falls back to
    # cloudpickle, which sends the functions by value.
    name = request.module.__name__
    module = sys.modules.get(name)
    if module is not None:
        cloudpickle.register_pickle_by_value(module)  # needs it still in sys.modules
    hidden = {n: sys.modules.pop(n) for n in _self_and_parents(name) if n in sys.modules}
    try:
        yield
    finally:
        sys.modules.update(hidden)
        if module is not None:
            with contextlib.suppress(ValueError):
                cloudpickle.unregister_pickle_by_value(module)


def _self_and_parents(name):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


@pytest.fixture(scope="module")
def cluster():
    with make_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(cluster):
    with Client(cluster) as client:
        client.wait_for_workers(2)
        yield client


def _runtime(alpha=0.5, beta=2.0, initial=False, domain=None, **options):
    """A runtime with one optimization, 'compression', for scripted cluster runs."""
    options.setdefault("signals", False)
    options.setdefault("dwell", 0.05)
    options.setdefault("dwell_tasks", 4)
    domain = domain if domain is not None else asafe.Hysteresis(alpha, beta)
    return asafe.AdaptiveRuntime([asafe.Optimization("compression", domain, initial=initial)], **options)


@contextlib.contextmanager
def _installed(client, rt, **kwargs):
    """Install ``rt``; uninstall on exit whatever happened."""
    handle = asafe.install(client, rt, **kwargs)
    try:
        yield handle
    finally:
        with contextlib.suppress(Exception):
            handle.uninstall()


def _boards(client):
    """What asafe.is_on answers on each worker: {address: states}."""
    return client.run(asafe.schedulers.board.snapshot)


# Helpers as fixtures: test modules imported in importlib mode cannot import conftest.
@pytest.fixture(scope="session")
def make_cluster_factory():
    """``make_cluster(**LocalCluster options)``: 2 worker processes x 1 thread by default."""
    return make_cluster


@pytest.fixture
def make_runtime():
    """``make_runtime(alpha=0.5, beta=2.0, initial=False, domain=None, **options)``."""
    return _runtime


@pytest.fixture
def installed():
    """``with installed(client, runtime, **kwargs) as handle:`` uninstalls on exit."""
    return _installed


@pytest.fixture
def boards():
    """``boards(client)`` -> ``{worker address: states asafe.is_on answers there}``."""
    return _boards
