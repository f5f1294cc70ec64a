"""Dask arrays of tiled blocks (asafe.compression.array) on a LocalCluster of 2 worker processes."""
from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from distributed import futures_of, wait

import asafe
from asafe.compression import TiledArray, from_graph500, from_scipy, graph500

pytestmark = pytest.mark.timeout(180)

SCALE, TILE, DENSE, SEED = 10, 64, 0.1, 1


class Pinned(asafe.EfficiencyDomain):
    """Keeps the optimization in its initial state."""

    def decide(self, mode, state):
        return state


@pytest.fixture(scope="module")
def S():
    return graph500.mixed_matrix(SCALE, TILE, DENSE, seed=SEED)


def close(y, ref):
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-10)


def test_persisted_products_on_the_cluster(client, S):
    x = np.random.default_rng(2).random(S.shape[1])
    A = from_scipy(S, tile=TILE, chunks=(256, -1), reuse=10, compress=True).persist()
    wait(A)
    assert isinstance(A, TiledArray)
    assert len({w for ws in client.who_has(futures_of(A)).values() for w in ws}) == 2  # spread over both
    for _ in range(3):
        close((A @ x).compute(), S @ x)
    close((A.T @ x).compute(), S.T @ x)
    X = np.random.default_rng(3).random((S.shape[1], 2))
    close((A @ X).compute(), S @ X)
    xd = da.from_array(x, chunks=(A.chunks[1],)).persist()
    close((A @ xd).compute(), S @ x)
    C = A.compute()
    assert (C != S).nnz == 0
    # chunks moved between processes through the registered serializer, and the blocks stay compact
    sizes = client.run(lambda dask_worker: sum(
        getattr(v, "nbytes", 0) for v in dask_worker.data.values()))
    assert sum(sizes.values()) < S.shape[0] * S.shape[1] * 8 / 2


def test_graph500_on_the_workers_follows_the_runtime(client, S, installed):
    x = np.ones(S.shape[1])
    for on in (False, True):
        rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", Pinned(), initial=on)], signals=False)
        with installed(client, rt):
            A = from_graph500(SCALE, TILE, DENSE, seed=SEED, chunks=(256, -1)).persist()
            wait(A)
            close((A @ x).compute(), S @ x)
            kinds = client.gather(client.map(lambda b: b.tile_summary()["dense"]["tiles"], futures_of(A)))
            if on:
                assert sum(kinds) > 0  # the cost model densifies the full tiles
            else:
                assert sum(kinds) == 0  # off: tiles keep the sparse form they arrive in
            del A
