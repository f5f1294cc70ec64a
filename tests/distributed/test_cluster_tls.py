"""The same adaptive run on a cluster secured with TLS (distributed.Security)."""
from __future__ import annotations

import time

import pytest
from distributed import Client, Security

import asafe

pytestmark = pytest.mark.timeout(180)


@asafe.typed(asafe.COMMUNICATION)
def ship(i):
    time.sleep(0.01)
    return asafe.is_on("compression")


@asafe.typed(asafe.COMPUTE)
def crunch(i):
    time.sleep(0.01)
    return asafe.is_on("compression")


@pytest.fixture(scope="module")
def secure_client(request):
    pytest.importorskip("cryptography")
    make_cluster = request.getfixturevalue("make_cluster_factory")
    # a self-signed certificate and key made in memory with `cryptography`
    security = Security.temporary()
    with make_cluster(security=security) as cluster, Client(cluster, security=security) as client:
        client.wait_for_workers(2)
        yield client


def test_tls_run(secure_client, make_runtime, installed, boards):
    client = secure_client
    assert client.scheduler.address.startswith("tls://")
    assert all(address.startswith("tls://") for address in client.nthreads())
    with installed(client, make_runtime(window=32)) as handle:
        assert client.gather(client.map(ship, range(30), pure=False))[-1] is True
        assert handle.state("compression") is True
        assert all(b == {"compression": True} for b in boards(client).values())
        assert client.gather(client.map(crunch, range(60), pure=False))[-1] is False
        assert [t.new for t in handle.history] == [True, False]
        assert len(handle.info("plugin")["plugin"]["workers"]) == 2
