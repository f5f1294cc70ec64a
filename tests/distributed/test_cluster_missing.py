"""A cluster whose workers lack asafe: install() fails fast with a clear error."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest
from distributed import Client

import asafe

pytestmark = pytest.mark.timeout(120)

# A real worker process in an environment where asafe cannot be imported: a meta
# path finder in front of every other refuses the name, as if asafe were not
# installed there (the rest of the environment, distributed included, is intact).
WORKER_WITHOUT_ASAFE = r"""
import asyncio, sys

class HideAsafe:
    def find_spec(self, name, path=None, target=None):
        if name == "asafe" or name.startswith("asafe."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, HideAsafe())

from distributed import Worker

async def main():
    async with Worker(sys.argv[1], nthreads=1, name="without-asafe", dashboard=False) as worker:
        await worker.finished()

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def mixed_client(make_cluster_factory):
    with make_cluster_factory(n_workers=1) as cluster, Client(cluster) as client:
        process = subprocess.Popen([sys.executable, "-c", WORKER_WITHOUT_ASAFE, cluster.scheduler_address])
        try:
            client.wait_for_workers(2, timeout=60)
            yield client
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_workers_without_asafe_give_a_clear_error(mixed_client, make_runtime):
    client = mixed_client
    workers = client.sync(client.scheduler.identity, n_workers=-1)["workers"]  # not the cached scheduler_info()
    (bad,) = [address for address, info in workers.items() if info["name"] == "without-asafe"]
    (good,) = [address for address in workers if address != bad]
    # the hiding works: the worker process really cannot import asafe
    with pytest.raises(ModuleNotFoundError):
        client.run(__import__, "asafe", workers=[bad])
    started = time.time()
    with pytest.raises(RuntimeError, match="workers cannot import asafe") as info:
        asafe.install(client, make_runtime(), timeout=20)
    assert time.time() - started < 20  # an answer, not a hang
    message = str(info.value)
    assert bad in message and good not in message and "1 of 2" in message
    # nothing was installed anywhere
    with pytest.raises(RuntimeError, match="not installed"):
        asafe.schedulers.distributed.attach(client)
    assert client.run(lambda dask_worker: "asafe" in dask_worker.plugins) == {good: False, bad: False}
