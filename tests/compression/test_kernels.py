"""Kernels: matvec and rmatvec against scipy/numpy, every tile mix, dtypes, NaN/Inf, bad x."""
import doctest

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asafe.compression import TiledMatrix, csr, graph500, kernels, layout, tiling

HYPOTHESIS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_doctests():
    for module in (kernels, layout, csr, tiling):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def check(A, D, rng, rtol=1e-12):
    """A @ x and A.T @ x against numpy's dense products (float64 reference)."""
    m, n = D.shape
    x = rng.standard_normal(n)
    z = rng.standard_normal(m)
    D64 = D.astype(np.float64)
    atol = rtol * (1 + np.abs(D64).sum())
    np.testing.assert_allclose(A @ x, D64 @ x, rtol=rtol, atol=atol)
    np.testing.assert_allclose(A.T @ z, D64.T @ z, rtol=rtol, atol=atol)
    np.testing.assert_allclose(z @ A, D64.T @ z, rtol=rtol, atol=atol)


TILE_MIXES = {
    # threshold 0: every non-empty tile dense; huge threshold: every tile sparse
    "all dense": 0,
    "all sparse": 10**9,
    "mixed": 40,
    "cost model": None,
}


@pytest.mark.parametrize("mix", TILE_MIXES)
def test_matvec_tile_mixes(mix, kernel_path, rng, make_mixed):
    D = make_mixed(203, 150, 32, 0.03, [(0, 0), (3, 2), (6, 4)], rng)  # edge tiles 11 x 22
    A = TiledMatrix.from_dense(D, tile=32, threshold=TILE_MIXES[mix])
    kinds = A.tile_kinds()
    if mix == "all dense":
        assert not (kinds == 1).any()
    if mix == "all sparse":
        assert not (kinds == 2).any()
    if mix == "mixed":
        assert (kinds == 1).any() and (kinds == 2).any()
    check(A, D, rng)
    np.testing.assert_allclose(A @ D[0], sp.csr_array(D) @ D[0], rtol=1e-12, atol=1e-12)


def test_matvec_graph500_mixed_against_scipy(kernel_path, rng):
    M = graph500.mixed_matrix(9, tile=64, dense_fraction=0.25, seed=3)
    S = sp.csr_array(M)
    x = rng.random(S.shape[1])
    for threshold in (None, 128, 0):
        A = TiledMatrix.from_scipy(S, tile=64, threshold=threshold)
        np.testing.assert_allclose(A @ x, S @ x, rtol=1e-12)
        np.testing.assert_allclose(A.T @ x, S.T @ x, rtol=1e-12)


def test_wide_tiles_use_uint16_indices(kernel_path, rng):
    S = sp.random_array((700, 600), density=0.01, rng=rng, format="csr")
    A = TiledMatrix.from_scipy(S, tile=300)
    assert A.layout.col.dtype == np.uint16
    assert A.get_tile(0, 1).indices.dtype == np.uint16
    check(A, S.toarray(), rng)


def test_very_wide_matrix_uses_uint32_columns(kernel_path, rng):
    S = sp.random_array((3, 70000), density=0.001, rng=rng, format="csr")
    S = S + sp.csr_array(([1.0], ([2], [69999])), shape=S.shape)
    A = TiledMatrix.from_scipy(S, tile=256)
    assert A.layout.col.dtype == np.uint32
    check(A, S.toarray(), rng)


def test_tile_of_one_and_tile_larger_than_matrix(kernel_path, rng, make_mixed):
    D = make_mixed(9, 7, 3, 0.3, [(1, 1)], rng)
    for tile in (1, 3, 50):
        check(TiledMatrix.from_dense(D, tile, threshold=2), D, rng)


def test_empty_rows_and_columns(kernel_path, rng):
    D = np.zeros((100, 80))
    D[10:20, :] = rng.random((10, 80))
    D[:, 70] = 1.0
    D[50, 5] = 2.0
    for threshold in (None, 0, 10**9):
        A = TiledMatrix.from_dense(D, tile=16, threshold=threshold)
        check(A, D, rng)


@pytest.mark.parametrize("shape", [(0, 7), (7, 0), (0, 0)])
def test_empty_matrices(shape, kernel_path):
    A = TiledMatrix.from_dense(np.zeros(shape), tile=4)
    m, n = shape
    y = A @ np.ones(n)
    assert y.shape == (m,) and y.dtype == np.float64 and not y.any()
    z = A.T @ np.ones(m)
    assert z.shape == (n,) and not z.any()


def test_all_zero_matrix(kernel_path):
    A = TiledMatrix.from_scipy(sp.csr_array((300, 200)), tile=64)
    np.testing.assert_array_equal(A @ np.ones(200), np.zeros(300))
    np.testing.assert_array_equal(A.T @ np.ones(300), np.zeros(200))


@st.composite
def cases(draw):
    m = draw(st.integers(0, 90))
    n = draw(st.integers(0, 90))
    tile = draw(st.integers(1, 48))
    density = draw(st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]))
    threshold = draw(st.one_of(st.none(), st.integers(0, 200)))
    seed = draw(st.integers(0, 2**16))
    return m, n, tile, density, threshold, seed


@HYPOTHESIS
@given(cases(), st.booleans())
def test_matvec_property(case, parallel):
    m, n, tile, density, threshold, seed = case
    rng = np.random.default_rng(seed)
    D = rng.standard_normal((m, n)) * (rng.random((m, n)) < density)
    A = TiledMatrix.from_dense(D, tile, threshold=threshold)
    x = rng.standard_normal(n)
    z = rng.standard_normal(m)
    atol = 1e-12 * (1 + np.abs(D).sum())
    np.testing.assert_allclose(
        kernels.matvec(A.layout, x, np.empty(m), parallel=parallel), D @ x, rtol=1e-12, atol=atol
    )
    np.testing.assert_allclose(
        kernels.rmatvec(A.layout, z, np.empty(n), parallel=parallel), D.T @ z, rtol=1e-12, atol=atol
    )


@HYPOTHESIS
@given(st.lists(st.floats(0, 100), min_size=0, max_size=60), st.integers(1, 8), st.integers(1, 16))
def test_chunks_cover_every_row_once(work, nchunks, tile):
    m = len(work)
    chunk_ptr, seg_row, seg_lo, seg_hi = layout.balance(np.array(work, float), tile, nchunks)
    assert chunk_ptr.size == nchunks + 1 and chunk_ptr[-1] == seg_row.size
    covered = np.zeros(m, int)
    for r, lo, hi in zip(seg_row, seg_lo, seg_hi):
        assert 0 <= lo < hi <= min(tile, m - r * tile)
        covered[r * tile + lo:r * tile + hi] += 1
    assert (covered == 1).all()


def test_chunks_balance_the_work():
    # a heavy block of rows among light ones: it is split between the chunks
    work = np.concatenate([np.ones(128), np.full(64, 100.0), np.ones(64)])
    chunk_ptr, seg_row, seg_lo, seg_hi = layout.balance(work, 64, 2)
    per_chunk = []
    for c in range(2):
        s = slice(chunk_ptr[c], chunk_ptr[c + 1])
        per_chunk.append(sum(work[r * 64 + lo:r * 64 + hi].sum() for r, lo, hi in zip(seg_row[s], seg_lo[s], seg_hi[s])))
    assert abs(per_chunk[0] - per_chunk[1]) <= work.max()


def test_parallel_chunks_of_a_skewed_matrix(rng):
    D = np.zeros((512, 512))
    D[256:320, :] = rng.random((64, 512))  # all the work in one tile row
    A = TiledMatrix.from_dense(D, 64, threshold=0)
    chunk_ptr, seg_row, _, _ = A.layout.chunks(2)
    assert set(seg_row[chunk_ptr[0]:chunk_ptr[1]]) & set(seg_row[chunk_ptr[1]:chunk_ptr[2]]) == {4}
    np.testing.assert_allclose(kernels.matvec(A.layout, np.ones(512), np.empty(512), parallel=True), D.sum(1))


# --------------------------------------------------------------------------- dtypes


def test_float32_matrix(kernel_path, rng, make_mixed):
    D = make_mixed(150, 130, 32, 0.05, [(1, 1), (4, 0)], rng, dtype=np.float32)
    A = TiledMatrix.from_dense(D, tile=32, threshold=50)
    assert A.dtype == np.float32 and A.layout.dense_values.dtype == np.float32
    x32 = rng.standard_normal(130).astype(np.float32)
    y = A @ x32
    assert y.dtype == np.float32  # numpy: float32 @ float32 -> float32
    # accumulation is float64: as close to the exact product as a float32 can be
    exact = D.astype(np.float64) @ x32.astype(np.float64)
    np.testing.assert_allclose(y, exact, rtol=1e-6, atol=1e-5)
    x64 = x32.astype(np.float64)
    y64 = A @ x64
    assert y64.dtype == np.float64
    np.testing.assert_allclose(y64, exact, rtol=1e-12, atol=1e-10)
    assert (A.T @ np.ones(150, np.float32)).dtype == np.float32


def test_float64_matrix_float32_x(rng):
    D = rng.random((20, 20))
    A = TiledMatrix.from_dense(D, 8)
    x = rng.random(20).astype(np.float32)
    y = A @ x
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, D @ x, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint16, bool])
def test_integer_and_bool_x_count_as_float64(dtype, rng):
    A = TiledMatrix.from_dense(np.arange(12.0).reshape(3, 4), tile=2)
    x = np.array([1, 0, 1, 1], dtype=dtype)
    y = A @ x
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, np.arange(12.0).reshape(3, 4) @ x.astype(np.float64))
    assert (TiledMatrix.from_dense(np.eye(4, dtype=np.float32), 2) @ x).dtype == np.float64


def test_list_and_strided_x(rng):
    D = rng.random((6, 5))
    A = TiledMatrix.from_dense(D, 2)
    np.testing.assert_allclose(A @ [1, 2, 3, 4, 5], D @ np.arange(1.0, 6.0))
    x = rng.random(10)[::2]
    np.testing.assert_allclose(A @ x, D @ x)


# --------------------------------------------------------------------------- out=


def test_out_argument(rng, kernel_path):
    D = rng.random((40, 30))
    A = TiledMatrix.from_dense(D, 16)
    x = rng.random(30)
    out = np.full(40, np.nan)
    assert A.matvec(x, out=out) is out
    np.testing.assert_allclose(out, D @ x)
    strided = np.zeros(80)[::2]
    assert A.matvec(x, out=strided) is strided
    np.testing.assert_allclose(strided, D @ x)
    out30 = np.empty(30)
    assert A.rmatvec(np.ones(40), out=out30) is out30
    np.testing.assert_allclose(out30, D.sum(axis=0))
    A32 = TiledMatrix.from_dense(D.astype(np.float32), 16)
    out32 = np.empty(40, np.float32)
    assert A32.matvec(x.astype(np.float32), out=out32) is out32


def test_out_may_alias_x(rng):
    D = rng.random((30, 30))
    A = TiledMatrix.from_dense(D, 8, threshold=0)
    x = rng.random(30)
    expected = D @ x
    A.matvec(x, out=x)
    np.testing.assert_allclose(x, expected)


@pytest.mark.parametrize(
    "out, error, match",
    [
        (np.empty(5), ValueError, "out must have shape \\(4,\\), got \\(5,\\)"),
        (np.empty((4, 1)), ValueError, "out must have shape \\(4,\\), got \\(4, 1\\)"),
        (np.empty(4, np.float32), TypeError, "out must have dtype float64 \\(the result dtype\\), got float32"),
        ([0.0] * 4, TypeError, "out must be a numpy array, got list"),
    ],
)
def test_bad_out(out, error, match):
    A = TiledMatrix.from_dense(np.ones((4, 3)), 2)
    with pytest.raises(error, match=match):
        A.matvec(np.ones(3), out=out)


def test_read_only_out():
    A = TiledMatrix.from_dense(np.ones((4, 3)), 2)
    out = np.empty(4)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        A.matvec(np.ones(3), out=out)


# --------------------------------------------------------------------------- bad x


@pytest.mark.parametrize(
    "x, error, match",
    [
        (np.ones(4), ValueError, "x has length 4, but a matrix of shape \\(5, 3\\) needs length 3"),
        (np.ones((3, 1)), ValueError, "x must be a 1-D array of length 3 for a matrix of shape \\(5, 3\\), got a 2-D array of shape \\(3, 1\\)"),
        (np.ones((3, 2)), ValueError, "got a 2-D array"),
        (np.float64(1.0), ValueError, "got a 0-D array of shape \\(\\)"),
        (np.ones(3, complex), TypeError, "x must be real \\(float64, float32, integer or bool\\), got complex128; take the real part"),
        (np.array(["a", "b", "c"]), TypeError, "x must be real .* got <U1"),
        (np.array([None, None, None]), TypeError, "x must be real .* got object"),
        (sp.csr_array(np.ones((3, 1))), TypeError, None),
    ],
)
def test_bad_x(x, error, match):
    A = TiledMatrix.from_dense(np.ones((5, 3)), 2)
    with pytest.raises(error, match=match):
        A @ x
    if not sp.issparse(x):
        with pytest.raises(error, match=match):
            A.matvec(x)


def test_bad_x_for_rmatvec():
    A = TiledMatrix.from_dense(np.ones((5, 3)), 2)
    with pytest.raises(ValueError, match="x has length 3, but a matrix of shape \\(5, 3\\) needs length 5"):
        A.T @ np.ones(3)
    with pytest.raises(TypeError, match="x must be real"):
        A.rmatvec(np.ones(5, complex))


def test_matmul_with_matrices_is_not_supported():
    A = TiledMatrix.from_dense(np.ones((3, 3)), 2)
    with pytest.raises(TypeError):
        A @ A


# --------------------------------------------------------------------------- NaN and Inf


def assert_same_specials(y, expected):
    """NaN and +-Inf in the same places; finite values equal up to rounding."""
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
    np.testing.assert_array_equal(np.isposinf(y), np.isposinf(expected))
    np.testing.assert_array_equal(np.isneginf(y), np.isneginf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(y[finite], expected[finite], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
def test_special_values_in_x_follow_stored_elements(special, kernel_path, rng, stored_reference):
    # tile (0, 0) dense with zeros in it, tile (0, 1) sparse, tile (1, *) empty
    D = np.zeros((8, 8))
    D[:4, :4] = rng.random((4, 4))
    D[1, 2] = 0.0  # a zero stored in the dense tile
    D[2, 5] = 3.0  # a non-zero of the sparse tile
    A = TiledMatrix.from_dense(D, 4, threshold=5)
    assert A.tile_kinds().tolist() == [[2, 1], [0, 0]]
    for j in (2, 5, 6):
        x = np.ones(8)
        x[j] = special
        assert_same_specials(A @ x, stored_reference(A, x))
    # dense tiles: exactly numpy's dense product, zeros multiply (0 * inf = nan)
    x = np.ones(8)
    x[2] = special
    with np.errstate(invalid="ignore"):
        dense_ref = D[:4, :4] @ x[:4]
    assert np.isnan(dense_ref[1])  # the stored zero D[1, 2] meets x[2]
    assert_same_specials((A @ x)[:4], dense_ref)
    # sparse tiles: scipy's CSR semantics, unstored zeros never multiply
    x = np.ones(8)
    x[6] = special
    with np.errstate(invalid="ignore"):
        assert_same_specials(A @ x, sp.csr_array(D) @ x)
    assert np.isfinite(A @ x).all()


@pytest.mark.parametrize("special", [np.nan, np.inf])
def test_special_values_in_matrix_propagate(special, kernel_path):
    D = np.zeros((6, 6))
    D[0, 0] = special  # sparse tile
    D[3:6, 3:6] = 1.0
    D[4, 4] = special  # dense tile
    A = TiledMatrix.from_dense(D, 3, threshold=2)
    assert A.tile_kinds().tolist() == [[1, 0], [0, 2]]
    x = np.ones(6)
    with np.errstate(invalid="ignore"):
        assert_same_specials(A @ x, D @ x)
        assert_same_specials(A.T @ x, D.T @ x)


def test_special_values_random(rng, stored_reference):
    D = rng.standard_normal((60, 50)) * (rng.random((60, 50)) < 0.2)
    D[:20, :20] = rng.standard_normal((20, 20))
    D[5, 5] = 0.0
    A = TiledMatrix.from_dense(D, 10, threshold=50)
    x = rng.standard_normal(50)
    x[rng.choice(50, 6, replace=False)] = [np.nan, np.inf, -np.inf, np.nan, np.inf, 0.0]
    assert_same_specials(A @ x, stored_reference(A, x))


# --------------------------------------------------------------------------- settings


def test_configure_validates_and_restores():
    old = kernels.configure(threads=3, serial_work=10)
    try:
        assert kernels.settings() == kernels.Settings(threads=3, serial_work=10.0)
        A = TiledMatrix.from_dense(np.ones((50, 50)), 8)
        np.testing.assert_allclose(A @ np.ones(50), np.full(50, 50.0))
        with pytest.raises(ValueError, match="threads must be an integer >= 1, got 0"):
            kernels.configure(threads=0)
        with pytest.raises(ValueError, match="serial_work must be >= 0, got -1"):
            kernels.configure(serial_work=-1)
    finally:
        kernels.configure(threads=old.threads, serial_work=old.serial_work)
    assert kernels.settings() == old


def test_work_estimate_counts_dense_and_sparse():
    D = np.zeros((8, 8))
    D[:4, :4] = 1.0
    D[5, 6] = 1.0
    A = TiledMatrix.from_dense(D, 4, threshold=2)
    # one dense tile (16 elements), one sparse non-zero, 8 rows
    assert kernels.work_estimate(A.layout) == 16 * kernels.W_DENSE + 1 * kernels.W_NONZERO + 8 * kernels.W_ROW


def test_concurrent_calls_from_threads(kernel_path, rng):
    # Dask's threaded scheduler runs several products at once: the kernels must be
    # reentrant (nogil, no shared scratch) on both paths
    from concurrent.futures import ThreadPoolExecutor

    D = rng.random((300, 300)) * (rng.random((300, 300)) < 0.2)
    D[:64, :64] = 1.0
    A = TiledMatrix.from_dense(D, 64)
    xs = [rng.random(300) for _ in range(16)]
    with ThreadPoolExecutor(4) as pool:
        ys = list(pool.map(lambda x: A @ x, xs))
        zs = list(pool.map(lambda x: A.T @ x, xs))
    for x, y, z in zip(xs, ys, zs):
        np.testing.assert_allclose(y, D @ x, rtol=1e-12)
        np.testing.assert_allclose(z, D.T @ x, rtol=1e-12)


def test_path_chooser_follows_the_faster_path_and_probes():
    chooser = kernels.PathChooser()
    picks = []
    for _ in range(400):
        parallel = chooser.choose()
        picks.append(parallel)
        chooser.record(parallel, 1e-3 if parallel else 3e-3)  # parallel is faster
    assert sum(picks[-100:]) >= 95  # mostly parallel, a probe of serial now and then
    assert not all(picks[6:])  # the other path was probed
    # conditions change: serial becomes the faster one, and the chooser follows
    for _ in range(400):
        parallel = chooser.choose()
        picks.append(parallel)
        chooser.record(parallel, 5e-3 if parallel else 3e-3)
    assert sum(picks[-100:]) <= 5


def test_dispatch_uses_the_chooser_above_the_serial_threshold(rng):
    D = rng.random((256, 256))
    A = TiledMatrix.from_dense(D, 64)
    old = kernels.configure(serial_work=0)
    try:
        for _ in range(20):
            np.testing.assert_allclose(A @ np.ones(256), D.sum(1))
            np.testing.assert_allclose(A.T @ np.ones(256), D.sum(0))
        chooser = A.layout.cache["path"]
        assert len(chooser.times[0]) >= 3 and len(chooser.times[1]) >= 3
        assert "rpath" in A.layout.cache
    finally:
        kernels.configure(threads=old.threads, serial_work=old.serial_work)
