"""Iso-valued sparse parts: the kernels read no values, and give the same bits as when they do."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asafe.compression import TiledMatrix, graph500, kernels, tiling

HYPOTHESIS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _products(lay, x, z, parallel):
    """(A @ x, A.T @ z) through the product kernels with the values array and with ``product_arrays``."""
    m, n = lay.shape
    out = []
    for arrays in (lay.kernel_arrays(), lay.product_arrays()):
        y, w = np.empty(m), np.empty(n)
        if parallel:
            kernels._matvec_parallel(*lay.chunks(2), n, lay.tile, x, y, *arrays)
            partial = np.empty((lay.chunks(2)[0].size - 1, n))
            kernels._rmatvec_parallel(*lay.chunks(2), n, lay.tile, z, partial, *arrays)
            w = partial.sum(axis=0)
        else:
            kernels._matvec_serial(m, n, lay.tile, x, y, *arrays)
            kernels._rmatvec_serial(m, n, lay.tile, z, w, *arrays)
        out.append((y, w))
    return out


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_graph500_is_iso_and_gives_the_same_bits(parallel, dtype, rng):
    S = graph500.kronecker(10, edgefactor=16, seed=1).astype(dtype)
    A = TiledMatrix.from_scipy(S, tile=64)
    lay = A.layout
    assert lay.iso_value() == 1.0
    assert isinstance(lay.product_arrays()[-1], float)
    x, z = rng.standard_normal(S.shape[1]), rng.standard_normal(S.shape[0])
    (y_values, w_values), (y_iso, w_iso) = _products(lay, x, z, parallel)
    np.testing.assert_array_equal(y_iso, y_values)  # the same bits: the same operations in the same order
    np.testing.assert_array_equal(w_iso, w_values)
    np.testing.assert_allclose(y_iso, S.astype(np.float64) @ x, rtol=1e-12, atol=1e-12)


def test_mixed_matrix_with_iso_sparse_part(kernel_path, rng):
    M = graph500.mixed_matrix(9, tile=64, dense_fraction=0.25, seed=3)
    A = TiledMatrix.from_scipy(M, tile=64)
    assert A.layout.n_dense > 0 and A.layout.iso_value() == 1.0  # dense tiles hold other values: not asked
    x = rng.random(M.shape[1])
    np.testing.assert_allclose(A @ x, M @ x, rtol=1e-12)
    np.testing.assert_allclose(A.T @ x, M.T @ x, rtol=1e-12)


@pytest.mark.parametrize("value", [2.5, -3.0, 1e-300, np.inf])
def test_any_iso_value(value, kernel_path, rng):
    S = sp.random_array((300, 200), density=0.02, rng=rng, format="csr")
    S.data[:] = value
    A = TiledMatrix.from_scipy(S, tile=32)
    assert A.layout.iso_value() == value
    x = rng.random(200)
    with np.errstate(invalid="ignore"):
        expected = S @ x
    np.testing.assert_allclose(A @ x, expected, rtol=1e-12)


def test_not_iso_where_one_value_differs(rng):
    S = graph500.kronecker(9, seed=0)
    S.data[S.nnz // 2] = 2.0
    lay = TiledMatrix.from_scipy(S, tile=64).layout
    assert lay.iso_value() is None
    assert lay.product_arrays()[-1] is lay.data
    assert lay.product_nbytes == lay.nbytes
    x = rng.random(S.shape[1])
    np.testing.assert_allclose(TiledMatrix.from_scipy(S, tile=64) @ x, S @ x, rtol=1e-12)


def test_nan_values_are_never_iso_and_stay_nan():
    S = sp.eye_array(64, format="csr") * np.nan
    A = TiledMatrix.from_scipy(S, tile=32)
    assert A.layout.iso_value() is None
    y = A @ np.ones(64)
    assert np.isnan(y).all()


def test_empty_sparse_part_is_not_iso():
    A = TiledMatrix.from_dense(np.ones((8, 8)), tile=4)
    assert A.layout.data.size == 0 and A.layout.iso_value() is None


def test_signed_zeros_differ():
    assert not kernels.is_iso(np.array([0.0, -0.0]))
    assert kernels.is_iso(np.array([-0.0, -0.0]))


def test_product_nbytes_leaves_out_the_values_only_when_iso():
    lay = TiledMatrix.from_scipy(graph500.kronecker(9, seed=0), tile=64).layout
    assert lay.product_nbytes == lay.nbytes - lay.data.nbytes


@HYPOTHESIS
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=0, max_size=40),
       st.sampled_from([np.float64, np.float32]))
def test_is_iso_is_bitwise_equality(values, dtype):
    with np.errstate(over="ignore"):  # float32 overflows to inf: a value like any other
        a = np.array(values, dtype=np.float64).astype(dtype)
    bits = a.view(np.uint64 if a.dtype.itemsize == 8 else np.uint32)
    expected = a.size > 0 and not np.isnan(a[0]) and bool((bits == bits[0]).all())
    assert kernels.is_iso(a) == expected


@HYPOTHESIS
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 12), st.floats(-10, 10).filter(lambda v: v != 0),
       st.integers(0, 2**31 - 1))
def test_iso_products_equal_the_value_products(m, n, tile, value, seed):
    rng = np.random.default_rng(seed)
    D = np.where(rng.random((m, n)) < 0.15, value, 0.0)
    lay = TiledMatrix.from_dense(D, tile=tile, threshold=tile * tile + 1).layout  # every tile sparse
    x, z = rng.standard_normal(n), rng.standard_normal(m)
    for parallel in (False, True):
        (y_values, w_values), (y_iso, w_iso) = _products(lay, x, z, parallel)
        np.testing.assert_array_equal(y_iso, y_values)
        np.testing.assert_array_equal(w_iso, w_values)
    np.testing.assert_allclose(y_iso, D @ x, rtol=1e-12, atol=1e-12)


@HYPOTHESIS
@given(st.integers(1, 60), st.integers(1, 60), st.integers(1, 16), st.sampled_from([[1.0], [2.0, 2.0], [1.0, 2.0], [-1.0, 1.0]]),
       st.floats(0.01, 0.6), st.sampled_from([np.float64, np.float32]), st.booleans(), st.integers(0, 2**31 - 1))
def test_builders_find_iso_as_the_check_does(m, n, tile, values, density, dtype, parallel_build, seed):
    """from_scipy and from_dense record iso during their copy; it must be what is_iso says of the values."""
    rng = np.random.default_rng(seed)
    D = np.where(rng.random((m, n)) < density, rng.choice(values, size=(m, n)), 0.0).astype(dtype)
    S = sp.csr_array(D)
    old = tiling.PARALLEL_BUILD_NNZ
    tiling.PARALLEL_BUILD_NNZ = 0 if parallel_build else old
    try:
        for A in (TiledMatrix.from_scipy(S, tile), TiledMatrix.from_dense(D, tile)):
            lay = A.layout
            assert "iso" in lay.cache  # found by the copy, not by a later pass
            expected = float(lay.data[0]) if kernels.is_iso(lay.data) else None
            assert lay.iso_value() == expected
            np.testing.assert_allclose(A @ np.ones(n), D.astype(np.float64) @ np.ones(n), rtol=1e-6)
    finally:
        tiling.PARALLEL_BUILD_NNZ = old


def test_explicit_zeros_do_not_make_a_matrix_iso():
    S = sp.csr_array((np.array([1.0, 0.0, 1.0]), np.array([0, 1, 2]), np.array([0, 3])), shape=(1, 3))
    A = TiledMatrix.from_scipy(S, tile=3, threshold=10)  # the explicit zero is dropped on a rebuild
    assert A.layout.data.tolist() == [1.0, 1.0] and A.layout.iso_value() == 1.0
