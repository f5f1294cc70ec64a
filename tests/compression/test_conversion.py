"""The scipy -> tiled conversion (run-based, parallel) against the previous one-element-at-a-time path.

``_old_from_scipy`` is the conversion as it was before the run-based kernels
(commit 4757a96), kept verbatim in ``benchmarks/_conversion_v0.py`` (the
conversion suite's "before") as the reference: every layout array must be
bit-identical.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from asafe.compression import TiledMatrix, graph500
from asafe.compression import layout as layout_mod
from asafe.compression.layout import LAYOUT_ARRAYS


# benchmarks is loaded from the checkout by tests/conftest.py: the conversion
# suite's "before" is the reference here too (one copy of the old code)
from benchmarks._conversion_v0 import old_from_scipy as _old_from_scipy  # noqa: E402


def assert_same_layout(A, B):
    assert A.shape == B.shape and A.tile == B.tile and A.dtype == B.dtype
    for name in LAYOUT_ARRAYS:
        a, b = getattr(A.layout, name), getattr(B.layout, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name, strict=True)


@pytest.mark.parametrize("scale,tile,fraction", [(7, 16, 0.25), (8, 32, 0.1), (9, 64, 0.5), (8, 100, 0.3),
                                                  (8, 256, 0.0), (9, 7, 0.2)])
def test_graph500_mixed_matches_old_path(scale, tile, fraction):
    S = graph500.mixed_matrix(scale, tile, fraction, seed=1)
    for threshold in (None, 0, 1 << 30, 5):
        assert_same_layout(TiledMatrix.from_scipy(S, tile, threshold), _old_from_scipy(S, tile, threshold))


@st.composite
def sparse_inputs(draw):
    m = draw(st.integers(0, 40))
    n = draw(st.integers(0, 40))
    tile = draw(st.integers(1, 12))
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 0.8, 1.0]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    D = np.where(rng.random((m, n)) < density, rng.standard_normal((m, n)), 0.0)
    # whole rows of tiles full, the fast path of the run finder
    if m and n and draw(st.booleans()):
        r, c = rng.integers(0, m), rng.integers(0, n)
        D[r:r + tile, c:c + tile] = rng.random(D[r:r + tile, c:c + tile].shape) + 0.5
    fmt = draw(st.sampled_from(["csr", "csr_zeros", "csr_unsorted", "coo_dups", "csc", "float32"]))
    return D, tile, fmt, draw(st.sampled_from([None, 0, 3, 1 << 20]))


def _make(D, fmt, rng):
    if fmt == "csr":
        return sp.csr_array(D)
    if fmt == "float32":
        return sp.csr_array(D.astype(np.float32))
    if fmt == "csr_zeros":  # explicit zeros stored in a canonical-looking CSR
        S = sp.csr_array(D)
        if S.nnz:
            S.data[rng.integers(0, S.nnz, size=max(1, S.nnz // 3))] = 0.0
        return S
    if fmt == "csr_unsorted":
        S = sp.csr_array(D)
        for i in range(S.shape[0]):
            lo, hi = S.indptr[i], S.indptr[i + 1]
            order = rng.permutation(hi - lo)
            S.indices[lo:hi] = S.indices[lo:hi][order]
            S.data[lo:hi] = S.data[lo:hi][order]
        S.has_sorted_indices = False
        return S
    if fmt == "coo_dups":
        C = sp.coo_array(D)
        return sp.coo_array((np.r_[C.data, C.data], (np.r_[C.row, C.row], np.r_[C.col, C.col])), shape=D.shape)
    return sp.csc_array(D)


@settings(max_examples=150, deadline=None)
@given(sparse_inputs(), st.integers(0, 2**16))
def test_from_scipy_matches_old_path(case, seed):
    D, tile, fmt, threshold = case
    S = _make(D, fmt, np.random.default_rng(seed))
    new = TiledMatrix.from_scipy(S, tile, threshold)
    assert_same_layout(new, _old_from_scipy(S, tile, threshold))
    np.testing.assert_array_equal(new.to_dense(), sp.csr_array(S).toarray().astype(new.dtype))


def test_explicit_zeros_are_dropped_and_counted():
    S = sp.csr_array(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]]))
    S.data[1] = 0.0  # a stored zero in a canonical CSR
    A = TiledMatrix.from_scipy(S, 2, threshold=0)
    assert A.count_nonzero() == 3
    assert_same_layout(A, _old_from_scipy(S, 2, 0))
    lay = TiledMatrix.from_scipy(sp.csr_array(np.ones((2, 2))), 2).layout  # a plan to reuse
    tr_ptr, t_col, _ = layout_mod.csr_tile_counts(S.indptr, S.indices, S.shape, 2)
    assert tr_ptr.tolist() == [0, 2] and t_col.tolist() == [0, 1]
    assert lay.n_dense + lay.n_sparse == 1


@pytest.mark.parametrize("scale,tile,fraction", [(6, 16, 0.25), (8, 32, 0.1), (9, 100, 0.3), (7, 256, 1.0),
                                                  (7, 16, 0.0), (8, 5, 0.05)])
@pytest.mark.parametrize("threshold", [None, 0, 7, 1 << 30])
def test_mixed_tiled_equals_from_scipy_of_mixed_matrix(scale, tile, fraction, threshold):
    A = graph500.mixed_tiled(scale, tile, fraction, seed=3, threshold=threshold)
    B = TiledMatrix.from_scipy(graph500.mixed_matrix(scale, tile, fraction, seed=3), tile, threshold)
    assert_same_layout(A, B)


def test_mixed_tiled_validates_like_mixed_matrix():
    with pytest.raises(ValueError):
        graph500.mixed_tiled(5, 0, 0.1)
    with pytest.raises(ValueError):
        graph500.mixed_tiled(5, 4, 1.5)
    with pytest.raises(TypeError):
        graph500.mixed_tiled(5, 4, 0.1, seed=None)
