"""``dask scheduler --preload asafe.preload`` and ``dask worker --preload asafe.preload``:
asafe from configuration alone, as in the two-terminal example of asafe.preload."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from distributed import Client

import asafe

pytestmark = pytest.mark.timeout(180)


@asafe.typed(asafe.COMMUNICATION)
def ship(i):
    time.sleep(0.01)
    return asafe.is_on("compression")


def _start(*args, env, log):
    with open(log, "w") as out:  # a file, not a pipe nobody reads (a full pipe blocks the server)
        return subprocess.Popen([sys.executable, "-m", "dask", *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=out)


@pytest.fixture(scope="module")
def preloaded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("preload")
    scheduler_file = str(folder / "scheduler.json")
    env = dict(os.environ)
    # what a deployment would export: optimizations and thresholds, dwell
    env["DASK_ASAFE__OPTIMIZATIONS"] = (
        '[{"name": "compression", "domain": "asafe.Hysteresis", '
        '"kwargs": {"alpha": 0.25, "beta": 4.0}}]'
    )
    env["DASK_ASAFE__CONTROLLER__DWELL"] = "50ms"
    env["DASK_ASAFE__CONTROLLER__DWELL_TASKS"] = "4"
    env["DASK_ASAFE__SIGNALS__ENABLED"] = "false"
    scheduler = _start("scheduler", "--preload", "asafe.preload", "--scheduler-file", scheduler_file,
                       "--port", "0", "--dashboard-address", ":0", env=env, log=folder / "scheduler.log")
    workers = []
    try:
        deadline = time.time() + 60
        while not os.path.exists(scheduler_file):
            if scheduler.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the scheduler did not start: {(folder / 'scheduler.log').read_text()}")
            time.sleep(0.1)
        workers = [
            _start("worker", "--scheduler-file", scheduler_file, "--preload", "asafe.preload", "--no-nanny",
                   "--nthreads", "1", "--dashboard-address", ":0", env=env, log=folder / f"worker-{i}.log")
            for i in range(2)
        ]
        with Client(scheduler_file=scheduler_file) as client:
            client.wait_for_workers(2, timeout=60)
            yield client, folder / "scheduler.log"
    finally:
        # workers first, while their scheduler can still acknowledge them
        for group in (workers, [scheduler]):
            for process in group:
                process.terminate()
            for process in group:
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def test_preload_enables_asafe_from_configuration(preloaded, boards):
    client, scheduler_log = preloaded
    handle = asafe.schedulers.distributed.attach(client)
    assert handle.states == {"compression": False}
    domain = client.run_on_scheduler(_domain)
    assert domain == "Hysteresis(alpha=0.25, beta=4.0, metric='ratio')"  # from the environment
    # every worker said hello and holds the states
    deadline = time.time() + 30
    while len(handle.info("plugin")["plugin"]["workers"]) < 2 and time.time() < deadline:
        time.sleep(0.1)
    assert len(handle.info("plugin")["plugin"]["workers"]) == 2
    assert all(b == {"compression": False} for b in boards(client).values())
    # a communication phase turns compression on, on every worker
    assert client.gather(client.map(ship, range(20), pure=False))[-1] is True
    assert handle.state("compression") is True
    assert all(b == {"compression": True} for b in boards(client).values())
    assert [t.new for t in handle.history] == [True]
    # the transition is in the scheduler's own log, through the asafe logger
    deadline = time.time() + 10
    while "asafe: compression off -> on" not in scheduler_log.read_text() and time.time() < deadline:
        time.sleep(0.1)
    assert "asafe: compression off -> on" in scheduler_log.read_text()


def _domain(dask_scheduler):
    return repr(dask_scheduler.plugins["asafe"].runtime.optimizations["compression"].domain)


def test_preload_adds_the_dashboard_page_and_metrics(preloaded):
    pytest.importorskip("bokeh")
    pytest.importorskip("prometheus_client")
    import json
    import urllib.request

    client, scheduler_log = preloaded
    port = client.scheduler_info()["services"]["dashboard"]
    base = f"http://127.0.0.1:{port}"
    with urllib.request.urlopen(base + "/individual-plots.json", timeout=30) as reply:
        assert json.loads(reply.read())["Individual Asafe"] == "/individual-asafe"
    with urllib.request.urlopen(base + "/individual-asafe", timeout=30) as reply:
        assert reply.status == 200 and "Dask: asafe" in reply.read().decode()
    with urllib.request.urlopen(base + "/metrics", timeout=30) as reply:
        body = reply.read().decode()
    assert "dask_asafe_installed 1.0" in body
    assert 'dask_asafe_state{optimization="compression",value=""}' in body
    assert "asafe: dashboard page at /individual-asafe" in scheduler_log.read_text()
