"""asafe on a cluster changes nothing Dask does (issue 30).

* no output is read back from a worker's store (a store that counts reads), and
  a store that refuses asafe's reads breaks nothing;
* a reset of Dask's configuration in the middle of a run breaks nothing;
* a client that never imports asafe reads every result from a ``--preload``
  cluster whose workers compress what they send each other (three processes
  behind a shaped link).
"""
from __future__ import annotations

import collections
import copy
import os
import sys
import textwrap

import dask
import dask.array as da
import pytest
from distributed import Client

import asafe

pytestmark = pytest.mark.timeout(300)


class CountingStore(collections.UserDict):
    """A worker store that counts writes, and the reads made from asafe's code (a frame of the package)."""

    reads = 0
    asafe_reads = 0
    writes = 0

    def __setitem__(self, key, value):
        self.writes += 1
        super().__setitem__(key, value)

    def __getitem__(self, key):
        self.reads += 1
        if _read_by_asafe():
            self.asafe_reads += 1
        return super().__getitem__(key)


def _read_by_asafe() -> bool:
    """Whether a frame of asafe's package (not its testing helpers) is on the caller's stack."""
    frame = sys._getframe(2)
    while frame is not None:
        if f"{os.sep}asafe{os.sep}" in frame.f_code.co_filename and "testing" not in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


class RefusingStore(collections.UserDict):
    """A worker store that raises on any read made from asafe's code (as a disk store might on a lost file)."""

    refused = 0

    def __getitem__(self, key):
        if _read_by_asafe():
            self.refused += 1
            raise OSError(f"this store refuses asafe's read of {key!r}")
        return super().__getitem__(key)


def store_reads(client):
    counts = client.run(lambda dask_worker: (dask_worker.data.writes, dask_worker.data.asafe_reads))
    return [sum(c[i] for c in counts.values()) for i in (0, 1)]


def workload(client):
    x = da.random.RandomState(3).random_sample((512, 512), chunks=(128, 512))
    return float(client.compute(x.rechunk((512, 128)).T.sum()).result())


def test_no_output_is_read_back_from_the_store(make_cluster_factory, installed):
    # in-process workers: the store's class is this module's (worker processes could not import it);
    # the worker plugin's hooks are the same in a worker process
    with make_cluster_factory(data=CountingStore, processes=False) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        with installed(client, asafe.AdaptiveRuntime(signals=False)):
            for _ in range(3):
                workload(client)
        writes, by_asafe = store_reads(client)
    assert writes > 0  # every output went into this store
    assert by_asafe == 0  # and asafe never read one back


def test_a_store_that_refuses_reads_breaks_nothing(make_cluster_factory, installed):
    with make_cluster_factory(data=RefusingStore, processes=False) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        expected = workload(client)
        with installed(client, asafe.AdaptiveRuntime(signals=False)) as handle:
            results = [workload(client) for _ in range(3)]
            errors = handle.info("plugin")["plugin"]["errors"]
        refused = sum(client.run(lambda dask_worker: dask_worker.data.refused).values())
    assert results == [expected] * 3
    assert refused == 0 and errors == []  # nothing asafe does needed a read


def test_a_configuration_reset_in_the_middle_of_a_run_breaks_nothing(make_cluster_factory, installed):
    # as distributed.utils_test.reset_config does, to a snapshot taken before asafe was imported; the
    # scheduler and the workers share this process (processes=False), so they see the reset too
    saved = copy.deepcopy(dask.config.config)
    try:
        with make_cluster_factory(processes=False) as cluster, Client(cluster) as client:
            client.wait_for_workers(2)
            expected = workload(client)
            with installed(client, asafe.AdaptiveRuntime(signals=False)) as handle:
                first = workload(client)
                without_asafe = {k: v for k, v in copy.deepcopy(dask.config.config).items() if k != "asafe"}
                dask.config.config.clear()
                dask.config.config.update(without_asafe)
                assert dask.config.get("asafe", None) is None
                second = workload(client)
                again = asafe.AdaptiveRuntime(signals=False)  # the defaults are still there to read
                errors = handle.info("plugin")["plugin"]["errors"]
    finally:
        dask.config.config.clear()
        dask.config.config.update(saved)
    assert first == second == expected
    assert set(again.states) == {"compression", "wire-compression"}
    assert errors == []


CLIENT = '''
import sys, numpy as np, dask, dask.array as da
from distributed import Client
with Client(scheduler_file=sys.argv[1]) as client:
    client.wait_for_workers(2)
    def smooth(block):
        return np.round(np.sin(np.cumsum(block, axis=1) / 50.0) * 1024.0) / 1024.0
    x = client.persist(da.random.RandomState(0).random_sample((1024, 2048), chunks=(256, 2048)).map_blocks(smooth))
    reference = x.compute()
    with dask.config.set({"array.rechunk.method": "tasks"}):
        result = x.rechunk((1024, 256)).compute()
    counts = client.run(lambda: __import__("asafe.schedulers.wire").schedulers.wire.stats())
    print(int(np.array_equal(result, reference)), sum(c["compressed_frames"] for c in counts.values()),
          int("asafe" in sys.modules))
'''


def test_a_client_that_never_imports_asafe_reads_every_result(run_behind_link):
    script = textwrap.dedent(f'''
        import json, os, subprocess, sys, tempfile, time
        from asafe.app import link
        link.enter("1gbit", measure=False)
        folder = tempfile.mkdtemp()
        scheduler_file = os.path.join(folder, "scheduler.json")
        env = dict(os.environ, DASK_ASAFE__SIGNALS__ENABLED="false",
                   DASK_ASAFE__OPTIMIZATIONS='[{{"name": "wire-compression", "domain": "asafe.Fixed", '
                                             '"kwargs": {{"state": "zstd"}}, "initial": "zstd"}}]')
        def start(*args):
            log = open(os.path.join(folder, args[0] + str(len(args)) + ".log"), "w")
            return subprocess.Popen([sys.executable, "-m", "dask", *args], env=env, stdout=log, stderr=log)
        servers = [start("scheduler", "--preload", "asafe.preload", "--scheduler-file", scheduler_file,
                         "--port", "0", "--dashboard-address", ":0", "--host", "127.0.0.1")]
        try:
            while not os.path.exists(scheduler_file):
                time.sleep(0.1)
            servers += [start("worker", "--scheduler-file", scheduler_file, "--preload", "asafe.preload",
                              "--no-nanny", "--nthreads", "1", "--dashboard-address", ":0") for _ in range(2)]
            client = os.path.join(folder, "client.py")
            open(client, "w").write({CLIENT!r})
            plain = dict(os.environ)  # the client's environment: nothing of asafe's
            done = subprocess.run([sys.executable, client, scheduler_file], capture_output=True, text=True,
                                  timeout=180, env=plain)
            assert done.returncode == 0, done.stderr[-3000:]
            equal, compressed, imported = map(int, done.stdout.split())
            print(json.dumps({{"equal": equal, "compressed": compressed, "imported": imported,
                               "critical": "Failed to deserialize" in done.stderr}}))
        finally:
            for server in servers[::-1]:
                server.terminate()
                server.wait(15)
    ''')
    report, _ = run_behind_link(script, timeout=280)
    assert report == {"equal": 1, "compressed": report["compressed"], "imported": 0, "critical": False}
    assert report["compressed"] > 0  # the workers compressed what they sent each other, not what the client read
