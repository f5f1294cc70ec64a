"""Hardening of the tile engine: huge tiles, checked kernel entry points, content-based
graph keys, one compression rule for every path, non-finite ``x``."""
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from asafe.compression import TiledMatrix, graph500

# --------------------------------------------------------------------------- huge tiles

HUGE = 2**31  # rows-of-tiles x tile float64 would be 16 GiB


def sparse_noise(m, n, rng, density=0.3):
    return sp.random_array((m, n), density=density, rng=rng, format="csr").toarray()


@pytest.mark.parametrize("threshold", [0, None, 10**9])  # all dense, cost model, all sparse
def test_huge_tile_on_a_small_matrix(threshold, kernel_path, rng):
    D = sparse_noise(10, 7, rng)
    x, z = rng.standard_normal(7), rng.standard_normal(10)

    def build(tile):
        return (TiledMatrix.from_dense(D, tile, threshold=threshold),
                TiledMatrix.from_scipy(sp.csr_array(D), tile, threshold=threshold))

    for A in build(16):  # compile the kernels first: tracemalloc sees the compiler too
        A @ x, A.T @ z, A.to_scipy(), list(A.tiles())
    tracemalloc.start()
    try:
        for A in build(HUGE):
            assert A.grid == (1, 1) and A.tile == HUGE
            np.testing.assert_allclose(A @ x, D @ x, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(A.T @ z, D.T @ z, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(A.to_dense(), D)
            np.testing.assert_array_equal(A.to_scipy().toarray(), D)
            assert A.get_tile(0, 0).shape == (10, 7)
            B = TiledMatrix.from_tiles(A.shape, A.tile, A.tiles())
            np.testing.assert_allclose(B @ x, D @ x, rtol=1e-12, atol=1e-12)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**24, f"a 10 x 7 matrix with tile={HUGE} allocated {peak} bytes"


def test_huge_tile_row_work_is_bounded_by_the_matrix():
    A = TiledMatrix.from_dense(np.ones((10, 10)), HUGE, threshold=0)
    work = A.layout.row_work()
    assert work.shape == (10,)
    np.testing.assert_array_equal(work, TiledMatrix.from_dense(np.ones((10, 10)), 10, threshold=0).layout.row_work())


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_huge_tile_graph500(fraction):
    tracemalloc.start()
    try:
        M = graph500.mixed_matrix(4, tile=HUGE, dense_fraction=fraction, seed=0)
        tiles = list(graph500.iter_mixed_tiles(4, tile=HUGE, dense_fraction=fraction, seed=0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**24
    assert M.shape == (16, 16)
    (pos, t), = tiles
    assert pos == (0, 0)
    np.testing.assert_array_equal(sp.csr_array(t).toarray(), M.toarray())
    small = graph500.mixed_matrix(4, tile=16, dense_fraction=fraction, seed=0)
    if fraction == 1.0:
        assert M.nnz == 256
    else:
        assert (M != small).nnz == 0


def test_tile_beyond_int64_is_refused_with_a_clear_message():
    D = np.ones((3, 3))
    assert (TiledMatrix.from_dense(D, 2**62) @ np.ones(3)).tolist() == [3.0, 3.0, 3.0]
    for build in (lambda t: TiledMatrix.from_dense(D, t),
                  lambda t: TiledMatrix.from_scipy(sp.csr_array(D), t),
                  lambda t: TiledMatrix.from_tiles((3, 3), t, [])):
        with pytest.raises(ValueError, match=r"tile must be at most 2\*\*62, got 9223372036854775808"):
            build(2**63)
