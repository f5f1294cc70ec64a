"""Hardening of the tile engine: huge tiles, checked kernel entry points, content-based
graph keys, one compression rule for every path, non-finite ``x``."""
import tracemalloc

import asafe
import dask
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from asafe.compression import SparseTile, TiledMatrix, engine, graph500, kernels
from asafe.compression import distributed as dmv

# --------------------------------------------------------------------------- huge tiles

HYPOTHESIS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


@pytest.mark.parametrize("tile", [HUGE, 300, 1000])
def test_sparse_tiles_are_sized_by_their_own_shape(tile, rng):
    """get_tile gives a sparse tile the arrays produce() gives the same block, whatever the tile size."""
    D = sparse_noise(10, 7, rng, density=0.2)
    A = TiledMatrix.from_dense(D, tile, threshold=10**9)
    got = A.get_tile(0, 0)
    made = engine.produce(D, compress=True, threshold=10**9)
    assert got.kind == made.kind == "sparse"
    assert got.indices.dtype == made.indices.dtype == np.uint8
    assert got.indptr.dtype == made.indptr.dtype == np.int32
    np.testing.assert_array_equal(got.indices, made.indices)
    np.testing.assert_array_equal(got.to_dense(), D)


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


# --------------------------------------------------------------------------- checked kernel entry points


@pytest.fixture
def mixed_layout(rng):
    """A 7 x 5 matrix of dense, sparse and empty tiles, its layout and its dense form."""
    D = np.zeros((7, 5))
    D[:4, :4] = rng.random((4, 4))
    D[5, 4] = 2.0
    A = TiledMatrix.from_dense(D, 4, threshold=2)
    assert sorted(set(A.tile_kinds().ravel().tolist())) == [0, 1, 2]
    return A.layout, D


def padded(n, fill=0.0):
    """A vector of length n inside a larger buffer: reads and writes past it stay in the buffer."""
    buf = np.full(n + 16, fill)
    return buf, buf[:n]


@pytest.mark.parametrize("parallel", [None, False, True])
def test_kernel_matvec_rmatvec_accept_the_contract(mixed_layout, parallel, rng):
    lay, D = mixed_layout
    x, z = rng.standard_normal(5), rng.standard_normal(7)
    np.testing.assert_allclose(kernels.matvec(lay, x, np.empty(7), parallel=parallel), D @ x, rtol=1e-12)
    np.testing.assert_allclose(kernels.rmatvec(lay, z, np.empty(5), parallel=parallel), D.T @ z, rtol=1e-12)


@pytest.mark.parametrize("fn,lengths", [("matvec", (5, 7)), ("rmatvec", (7, 5))])
@pytest.mark.parametrize("which,delta", [("x", -1), ("x", 1), ("y", -1), ("y", 1)])
def test_kernel_products_refuse_wrong_lengths(mixed_layout, fn, lengths, which, delta):
    lay, _ = mixed_layout
    n_in, n_out = lengths
    n_in += delta if which == "x" else 0
    n_out += delta if which == "y" else 0
    xbuf, x = padded(n_in, 1.0)
    ybuf, y = padded(n_out, 7.0)
    with pytest.raises(ValueError, match=rf"{which} must have shape \(\d+,\) \(the number of (rows|columns) of the matrix\), got \({lengths[which == 'y'] + delta},\)"):
        getattr(kernels, fn)(lay, x, y, parallel=False)
    assert (ybuf == 7.0).all(), "the kernel wrote before the check"


@pytest.mark.parametrize("fn", ["matvec", "rmatvec"])
def test_kernel_products_refuse_bad_types(mixed_layout, fn):
    lay, _ = mixed_layout
    n_in, n_out = (5, 7) if fn == "matvec" else (7, 5)
    call = getattr(kernels, fn)
    x, y = np.ones(n_in), np.empty(n_out)
    with pytest.raises(TypeError, match="x must have dtype float64, got float32"):
        call(lay, x.astype(np.float32), y)
    with pytest.raises(TypeError, match="y must have dtype float64, got int64"):
        call(lay, x, np.zeros(n_out, np.int64))
    with pytest.raises(TypeError, match="x must be a numpy.ndarray of float64, got list"):
        call(lay, [1.0] * n_in, y)
    with pytest.raises(ValueError, match="x must be C-contiguous"):
        call(lay, np.ones(2 * n_in)[::2], y)
    with pytest.raises(ValueError, match=r"x must have shape \(\d+,\).*got \(1, \d+\)"):
        call(lay, x[None, :], y)
    ro = np.empty(n_out)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="y is read-only"):
        call(lay, x, ro)
    buf = np.ones(10)
    with pytest.raises(ValueError, match="y must not overlap x"):
        call(lay, buf[:n_in], buf[10 - n_out:])
    with pytest.raises(TypeError, match="layout must be a Layout"):
        call(TiledMatrix.from_dense(np.eye(2), 1), x, y)
    with pytest.raises(TypeError, match="parallel must be None, True or False"):
        call(lay, x, y, parallel="yes")


def csr_parts(rng):
    S = sp.random_array((6, 9), density=0.4, rng=rng, format="csr")
    return S, S.indptr.astype(np.int32), S.indices.astype(np.uint8), S.data


def test_csr_matvec_accepts_the_contract(rng):
    S, indptr, indices, data = csr_parts(rng)
    x = rng.standard_normal(9)
    np.testing.assert_allclose(kernels.csr_matvec(indptr, indices, data, x, np.empty(6), shape=(6, 9)),
                               S @ x, rtol=1e-12)
    t = SparseTile.from_scipy(S)
    np.testing.assert_allclose(t @ x, S @ x, rtol=1e-12)


def test_csr_matvec_refuses_wrong_arguments(rng):
    S, indptr, indices, data = csr_parts(rng)
    x, y = np.ones(9), np.empty(6)
    call = kernels.csr_matvec
    with pytest.raises(TypeError, match="shape"):
        call(indptr, indices, data, x, y)  # the block's shape is required
    xbuf, short_x = padded(8, 1.0)
    with pytest.raises(ValueError, match=r"x must have shape \(9,\) \(the number of columns of the block\), got \(8,\)"):
        call(indptr, indices, data, short_x, y, shape=(6, 9))
    ybuf, short_y = padded(5, 7.0)
    with pytest.raises(ValueError, match=r"indptr must have length 6, got 7"):
        call(indptr, indices, data, x, short_y, shape=(5, 9))
    with pytest.raises(ValueError, match=r"y must have shape \(6,\)"):
        call(indptr, indices, data, x, short_y, shape=(6, 9))
    assert (ybuf == 7.0).all()
    with pytest.raises(ValueError, match="data and indices must have the same length"):
        call(indptr, indices, data[:-1], x, y, shape=(6, 9))
    with pytest.raises(ValueError, match="indptr must run from 0 to len"):
        call(indptr, indices[:-1], data[:-1], x, y, shape=(6, 9))
    with pytest.raises(TypeError, match="indices must be a 1-D numpy array of integers"):
        call(indptr, indices.astype(np.float64), data, x, y, shape=(6, 9))
    with pytest.raises(TypeError, match="data must be a 1-D numpy array of float64 or float32"):
        call(indptr, indices, data.astype(np.complex128), x, y, shape=(6, 9))
    with pytest.raises(TypeError, match="x must have dtype float64"):
        call(indptr, indices, data, x.astype(np.float32), y, shape=(6, 9))
    with pytest.raises(ValueError, match="shape must be two non-negative integers"):
        call(indptr, indices, data, x, y, shape=(6, -9))


# --------------------------------------------------------------------------- content-based graph keys


def graph_keys(y):
    return set(dict(y.__dask_graph__()))


def test_different_scipy_sources_never_share_keys(rng):
    """Sources made and dropped one after the other (their address is often reused)."""
    mats = [sp.random_array((40, 40), density=0.1, rng=rng, format="csr") for _ in range(6)]
    x = rng.standard_normal(40)
    keys = []
    for S in mats:
        source = dmv.ScipySource(S, tile=16)
        keys.append(dmv.matvec_graph(source, x, panels=2).key)
        del source
    assert len(set(keys)) == len(mats)


def test_different_scipy_sources_in_one_compute(rng):
    S1 = sp.random_array((40, 30), density=0.1, rng=rng, format="csr")
    S2 = S1.copy()
    S2.data[0] += 1.0  # same shape and structure, one value differs
    x = rng.standard_normal(30)
    y1 = dmv.matvec_graph(dmv.ScipySource(S1, tile=16), x, panels=2)
    y2 = dmv.matvec_graph(dmv.ScipySource(S2, tile=16), x, panels=2)
    assert not graph_keys(y1) & graph_keys(y2)
    r1, r2 = dask.compute(y1, y2, scheduler="sync")
    np.testing.assert_allclose(r1, S1 @ x, rtol=1e-12)
    np.testing.assert_allclose(r2, S2 @ x, rtol=1e-12)
    assert not np.allclose(r1, r2)


def test_equal_scipy_content_gives_equal_keys(rng):
    S = sp.random_array((40, 30), density=0.1, rng=rng, format="csr")
    x = rng.standard_normal(30)
    a = dmv.matvec_graph(dmv.ScipySource(S, tile=16), x, panels=2)
    b = dmv.matvec_graph(dmv.ScipySource(S.copy(), tile=16), x.copy(), panels=2)
    assert a.key == b.key and graph_keys(a) == graph_keys(b)
    # None is the default cost model: the same rule, the same keys
    c = dmv.matvec_graph(dmv.ScipySource(S, tile=16, threshold=engine.CostModel()), x, panels=2)
    assert c.key == a.key
    # a different tile or threshold is different content
    for other in (dmv.ScipySource(S, tile=8), dmv.ScipySource(S, tile=16, threshold=5)):
        assert dmv.matvec_graph(other, x, panels=2).key != a.key


def test_graph500_sources_differing_only_in_threshold(rng):
    x = rng.standard_normal(64)
    base = dict(scale=6, tile=16, dense_fraction=0.25, seed=1)
    keys = {t: dmv.matvec_graph(dmv.Graph500Source(**base, threshold=t), x, panels=2).key
            for t in (0, 10**9, None)}
    assert len(set(keys.values())) == 3
    assert dmv.matvec_graph(dmv.Graph500Source(**base, threshold=0), x, panels=2).key == keys[0]
    for change in (dict(seed=2), dict(dense_fraction=0.5), dict(edgefactor=8), dict(tile=8)):
        source = dmv.Graph500Source(**{**base, **change})
        assert dmv.matvec_graph(source, x, panels=2).key != keys[None], change
    assert "threshold=0" in repr(dmv.Graph500Source(**base, threshold=0))
    # one graph holding both: each gets its own panels (dense tiles with threshold 0, none with 10**9)
    y0 = dmv.matvec_graph(dmv.Graph500Source(**base, threshold=0), x, panels=2)
    y1 = dmv.matvec_graph(dmv.Graph500Source(**base, threshold=10**9), x, panels=2)
    graph = {**dict(y0.__dask_graph__()), **dict(y1.__dask_graph__())}
    panel0, panel1 = ([k for k in dict(y.__dask_graph__()) if "asafe-panel" in str(k)][0] for y in (y0, y1))
    runtime = asafe.AdaptiveRuntime([asafe.Optimization("compression", Fixed(True), initial=True)])
    with asafe.adaptive(runtime, scheduler="sync"):
        p0, p1, r0, r1 = dask.get(graph, [panel0, panel1, y0.key, y1.key])
    assert (p0.tile_kinds() != 1).all() and (p1.tile_kinds() != 2).all()
    M = graph500.mixed_matrix(6, 16, 0.25, seed=1)
    np.testing.assert_allclose(r0, M @ x, rtol=1e-12)
    np.testing.assert_allclose(r1, M @ x, rtol=1e-12)


class Fixed(asafe.EfficiencyDomain):
    """A domain that keeps the optimization in one state."""

    def __init__(self, state):
        self.state = state

    def decide(self, mode, state):
        return self.state


# --------------------------------------------------------------------------- one compression rule


def block_of(rows, cols, nnz, dtype, seed):
    rng = np.random.default_rng(seed)
    block = np.zeros((rows, cols), dtype)
    block.flat[rng.choice(rows * cols, nnz, replace=False)] = rng.uniform(0.5, 1.5, nnz)
    return block


@st.composite
def tiles_near_the_threshold(draw):
    # widths on both sides of the uint8/uint16 in-tile index boundary (256 columns)
    rows = draw(st.integers(1, 300))
    cols = draw(st.one_of(st.integers(200, 320), st.integers(1, 320)))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    threshold = draw(st.sampled_from([None, None, engine.CostModel(sparse_weight=1.0, reuse=4.0), 50]))
    size = rows * cols
    T = engine.tile_threshold((rows, cols), dtype, threshold)
    # most fills near T, where the two index sizes used to disagree; some anywhere
    near = st.integers(max(0, min(size, T) - size // 20 - 2), min(size, T + 2))
    nnz = draw(st.one_of(near, near, st.integers(0, size)))
    return rows, cols, nnz, dtype, threshold, draw(st.integers(0, 2**32 - 1))


@HYPOTHESIS
@given(tiles_near_the_threshold())
@example((128, 128, 6000, np.float64, None, 0))  # 37% full: sparse by produce, was dense by from_dense
@example((40, 300, 4000, np.float64, None, 1))
def test_every_path_gives_a_tile_the_same_form(case):
    rows, cols, nnz, dtype, threshold, seed = case
    block = block_of(rows, cols, nnz, dtype, seed)
    expected = engine.choose_kind(nnz, (rows, cols), dtype, threshold)
    produced = engine.produce(block, compress=True, threshold=threshold)
    assert produced.kind == expected
    np.testing.assert_array_equal(produced.to_dense(), block)
    x = np.random.default_rng(seed).standard_normal(cols)
    for tile in (max(rows, cols), max(rows, cols) + 7):  # the tile alone, and inside a larger grid cell
        for A in (TiledMatrix.from_dense(block, tile, threshold=threshold),
                  TiledMatrix.from_scipy(sp.csr_array(block), tile, threshold=threshold)):
            assert A.get_tile(0, 0).kind == expected, (type(A), tile)
            np.testing.assert_array_equal(A.to_dense(), block)
            np.testing.assert_allclose(A @ x, block.astype(np.float64) @ x, rtol=1e-6 if dtype == np.float32 else 1e-12,
                                       atol=1e-6 if dtype == np.float32 else 1e-12)
    # the tile produced on the wire keeps its form as the edge tile of a wider matrix
    t = max(rows, cols)
    wide = TiledMatrix.from_tiles((rows, t + cols), t, [((0, 1), produced)])
    assert wide.get_tile(0, 1).kind == expected
    np.testing.assert_array_equal(wide.to_dense()[:, t:], block)
    W = np.zeros((rows, t + cols), dtype)
    W[:, t:] = block
    assert TiledMatrix.from_dense(W, t, threshold=threshold).get_tile(0, 1).kind == expected


def test_one_rule_is_keeps_dense():
    rows, cols = np.array([128, 128, 10]), np.array([128, 300, 10])
    T = engine.tile_thresholds(rows, cols, np.float64)
    np.testing.assert_array_equal(engine.keeps_dense(T - 1, rows, cols), False)
    np.testing.assert_array_equal(engine.keeps_dense(T, rows, cols), True)


# --------------------------------------------------------------------------- NaN and Inf in x


def stored_rule(A, x, transpose=False):
    """The documented rule, computed with numpy from tile_kinds: sum over stored elements."""
    D = A.to_dense().astype(np.float64)
    dense = np.kron(A.tile_kinds() == 2, np.ones((A.tile, A.tile), bool))[: A.shape[0], : A.shape[1]]
    stored = dense | (D != 0)
    with np.errstate(invalid="ignore", over="ignore"):
        if transpose:
            return np.where(stored, D * x[:, None], 0.0).sum(axis=0)
        return np.where(stored, D * x[None, :], 0.0).sum(axis=1)


def same_specials(y, expected):
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
    np.testing.assert_array_equal(np.isposinf(y), np.isposinf(expected))
    np.testing.assert_array_equal(np.isneginf(y), np.isneginf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(y[finite], expected[finite], rtol=1e-12, atol=1e-12)


@pytest.fixture
def tiled_three_ways(rng):
    """A 12 x 12 matrix, tile 4: dense tile (0, 0) with zeros in it, sparse tiles, empty tiles."""
    D = np.zeros((12, 12))
    D[:4, :4] = rng.random((4, 4))
    D[1, :4] = 0.0                # a whole stored-zero row inside the dense tile
    D[5, 9] = 2.0                 # sparse tile (1, 2)
    D[10, 1] = -3.0               # sparse tile (2, 0)
    A = TiledMatrix.from_dense(D, 4, threshold=5)
    assert A.tile_kinds().tolist() == [[2, 0, 0], [0, 0, 1], [1, 0, 0]]
    return D, A


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("j", range(12))
def test_nonfinite_x_reaches_the_rows_of_dense_tiles_and_non_zeros(special, j, tiled_three_ways, kernel_path):
    D, A = tiled_three_ways
    x = np.ones(12)
    x[j] = special
    y = A @ x
    same_specials(y, stored_rule(A, x))
    # the rule, spelled out: rows 0-3 see x[j] for j in the dense tile's columns (row 1 is all
    # zeros there: 0 * inf = nan); other rows only through their own non-zeros
    hit = {i for i in range(12) if D[i, j] != 0} | (set(range(4)) if j < 4 else set())
    assert set(np.flatnonzero(~np.isfinite(y))) == hit
    if j < 4:
        assert np.isnan(y[1])


@pytest.mark.parametrize("special", [np.nan, np.inf])
@pytest.mark.parametrize("i", range(12))
def test_nonfinite_x_in_the_transposed_product(special, i, tiled_three_ways, kernel_path):
    D, A = tiled_three_ways
    z = np.ones(12)
    z[i] = special
    for y in (A.T @ z, z @ A):
        same_specials(y, stored_rule(A, z, transpose=True))
        hit = {j for j in range(12) if D[i, j] != 0} | (set(range(4)) if i < 4 else set())
        assert set(np.flatnonzero(~np.isfinite(y))) == hit


def test_nonfinite_x_depends_on_representation_like_numpy_and_scipy(rng):
    """Compression off (every tile dense) is numpy's rule, every tile sparse is scipy's."""
    D = rng.standard_normal((50, 40)) * (rng.random((50, 40)) < 0.1)
    x = rng.standard_normal(40)
    x[[3, 17, 30]] = [np.nan, np.inf, -np.inf]
    with np.errstate(invalid="ignore"):
        numpy_y = D @ x
        scipy_y = sp.csr_array(D) @ x
    off = TiledMatrix.from_dense(D, 8, compress=False)
    all_sparse = TiledMatrix.from_dense(D, 8, threshold=10**9)
    same_specials(off @ x, numpy_y)
    same_specials(all_sparse @ x, scipy_y)
    same_specials(TiledMatrix.from_scipy(sp.csr_array(D), 8, threshold=10**9) @ x, scipy_y)
    assert np.isnan(off @ x).all() and not np.isnan(all_sparse @ x).all()
    # finite x: the representation does not matter
    x = rng.standard_normal(40)
    for A in (off, all_sparse, TiledMatrix.from_dense(D, 8)):
        np.testing.assert_allclose(A @ x, D @ x, rtol=1e-12, atol=1e-12)


def test_the_nonfinite_rule_is_documented():
    for doc in (TiledMatrix.matvec.__doc__, TiledMatrix.__matmul__.__doc__, TiledMatrix.rmatvec.__doc__):
        assert doc and "NaN" in doc and "Inf" in doc
    assert "structural zeros do not propagate" in TiledMatrix.__matmul__.__doc__


def test_serial_builder_twins_have_numba_cache_files_of_their_own(tmp_path):
    """numba caches by module, name and line, not by ``parallel``: twins sharing a file loaded each other's code."""
    import os
    import subprocess
    import sys

    code = ("from asafe.compression import tiling, TiledMatrix, graph500\n"
            "S = graph500.mixed_matrix(7, 16, 0.2, seed=0)\n"
            "tiling.PARALLEL_BUILD_NNZ = 10**12; TiledMatrix.from_scipy(S, 16)  # the serial twins\n"
            "tiling.PARALLEL_BUILD_NNZ = 0; TiledMatrix.from_scipy(S, 16)  # the parallel kernels\n")
    cache = tmp_path / "numba-cache"
    # cwd outside the checkout: `python -c` puts the cwd first on sys.path, and the
    # checkout's asafe/ folder is not the installed package (no asafe.compression)
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "NUMBA_CACHE_DIR": str(cache)},
                   cwd=tmp_path, check=True, timeout=240)
    names = [p.name for p in cache.rglob("*.nbi")]
    for kernel in ("_fill_from_csr", "_csr_tile_counts"):
        assert any(n.startswith(f"tiling.{kernel}-") for n in names), names
        assert any(n.startswith(f"tiling.{kernel}_serial-") for n in names), names
