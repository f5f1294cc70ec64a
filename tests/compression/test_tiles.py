"""Tiles and TiledMatrix: construction, round-trips, sizes, pickling, bad input."""
import doctest
import pickle

import dask
import numpy as np
import pytest
import scipy.sparse as sp
from dask.sizeof import sizeof
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asafe.compression import (
    CostModel,
    DenseTile,
    EmptyTile,
    SparseTile,
    TiledMatrix,
    build,
    graph500,
    matrix,
    tiles,
)

HYPOTHESIS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_doctests():
    for module in (tiles, matrix, build):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
        assert result.attempted > 0


# --------------------------------------------------------------------------- tiles


def test_dense_tile_wraps_without_copy():
    values = np.arange(12.0).reshape(3, 4)
    t = DenseTile(values)
    assert t.values is values
    assert (t.kind, t.shape, t.dtype, t.nnz) == ("dense", (3, 4), np.float64, 12)
    assert t.nbytes == t.logical_nbytes == 96


def test_dense_tile_converts_dtype_and_layout():
    assert DenseTile(np.ones((2, 2), np.int32)).dtype == np.float64
    assert DenseTile(np.ones((2, 2), np.float16)).dtype == np.float32
    f = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    t = DenseTile(f)
    assert t.values.flags.c_contiguous
    np.testing.assert_array_equal(t.values, f)


@pytest.mark.parametrize(
    "values, error, match",
    [
        (np.ones(3), ValueError, "a dense tile is a 2-D array, got 1-D"),
        (np.ones((2, 2, 2)), ValueError, "got 3-D"),
        (np.ones((2, 2), complex), TypeError, "must be real .* got complex128; take the real part"),
        (np.array([["a"]]), TypeError, "must be real"),
    ],
)
def test_dense_tile_bad_input(values, error, match):
    with pytest.raises(error, match=match):
        DenseTile(values)


def test_sparse_tile_compact_indices():
    assert SparseTile((4, 256), [0, 1, 1, 1, 1], [255], [1.0]).indices.dtype == np.uint8
    assert SparseTile((4, 257), [0, 1, 1, 1, 1], [256], [1.0]).indices.dtype == np.uint16
    assert SparseTile((4, 70000), [0, 1, 1, 1, 1], [69999], [1.0]).indices.dtype == np.uint32
    t = SparseTile((3, 3), np.array([0, 1, 2, 2]), np.array([2, 0]), np.array([1.0, 2.0], np.float32))
    assert (t.indptr.dtype, t.data.dtype, t.nnz) == (np.int32, np.float32, 2)
    assert t.nbytes == 4 * 4 + 2 * 1 + 2 * 4
    assert t.logical_nbytes == 9 * 4
    np.testing.assert_array_equal(t.to_dense(), [[0, 0, 1], [2, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(t.to_scipy().toarray(), t.to_dense())


@pytest.mark.parametrize(
    "args, match",
    [
        (((2, 2), [0, 1], [0], [1.0]), "indptr must have length rows \\+ 1 = 3"),
        (((2, 2), [0, 1, 1], [0, 1], [1.0]), "indices and data must be 1-D of equal length"),
        (((2, 2), [0, 2, 1], [0], [1.0]), "indptr must rise from 0 to nnz = 1"),
        (((2, 2), [0, 1, 1], [2], [1.0]), "column index 2 out of range for a tile 2 wide"),
        (((2, 2), [0, 1, 1], [-1], [1.0]), "column index -1 out of range"),
        (((2, -1), [0, 0, 0], [], []), "a tile shape is two non-negative integers"),
    ],
)
def test_sparse_tile_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        SparseTile(*args)


def test_sparse_tile_from_scipy_sums_duplicates_and_drops_zeros():
    coo = sp.coo_array(([1.0, 2.0, 0.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    t = SparseTile.from_scipy(coo)
    assert t.nnz == 1
    np.testing.assert_array_equal(t.to_dense(), [[0, 3], [0, 0]])


def test_empty_tile():
    t = EmptyTile((3, 4), np.float32)
    assert (t.kind, t.nnz, t.nbytes, t.logical_nbytes) == ("empty", 0, 0, 48)
    np.testing.assert_array_equal(t.to_dense(), np.zeros((3, 4), np.float32))
    assert t.to_scipy().shape == (3, 4)
    np.testing.assert_array_equal(t @ np.ones(4), np.zeros(3))


def test_tile_matvec(rng):
    block = rng.random((5, 7)) * (rng.random((5, 7)) < 0.3)
    x = rng.random(7)
    for t in (DenseTile(block), SparseTile.from_scipy(block)):
        np.testing.assert_allclose(t @ x, block @ x)
    with pytest.raises(ValueError, match="x must be a 1-D array of length 7 to multiply a 5x7 tile"):
        DenseTile(block) @ np.ones(6)


# --------------------------------------------------------------------------- pickling and sizes


def _tiles(rng):
    block = np.zeros((128, 128))
    block[rng.integers(0, 128, 50), rng.integers(0, 128, 50)] = 1.0
    return [DenseTile(rng.random((128, 128))), SparseTile.from_scipy(block), EmptyTile((128, 128))]


@pytest.mark.parametrize("protocol", [pickle.DEFAULT_PROTOCOL, 5])
def test_tiles_pickle_round_trip(rng, protocol):
    for t in _tiles(rng):
        back = pickle.loads(pickle.dumps(t, protocol=protocol))
        assert type(back) is type(t) and back.shape == t.shape and back.dtype == t.dtype
        np.testing.assert_array_equal(back.to_dense(), t.to_dense())
        if t.kind == "sparse":
            assert back.indices.dtype == np.uint8 and back.indptr.dtype == np.int32


def test_sparse_tile_pickles_to_bytes_of_its_nonzeros(rng):
    dense, sparse, empty = _tiles(rng)
    assert len(pickle.dumps(dense)) > dense.logical_nbytes
    assert len(pickle.dumps(sparse)) < sparse.nbytes + 600
    assert len(pickle.dumps(sparse)) < sparse.logical_nbytes / 50
    assert len(pickle.dumps(empty)) < 200


def test_pickle_protocol_5_ships_buffers_without_copy(rng):
    dense = _tiles(rng)[0]
    buffers = []
    pickle.dumps(dense, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and buffers[0].raw().nbytes == dense.nbytes


def test_dask_sizeof_reports_real_size(rng):
    dense, sparse, empty = _tiles(rng)
    assert dense.nbytes <= sizeof(dense) < dense.nbytes + 1000
    assert sparse.nbytes <= sizeof(sparse) < sparse.nbytes + 1000
    assert sizeof(empty) < 1000
    A = TiledMatrix.from_dense(np.eye(512), tile=128)
    assert A.nbytes <= sizeof(A) < A.nbytes + 2000


def test_tiles_and_matrix_travel_through_dask(rng):
    dense, sparse, empty = _tiles(rng)
    kinds = dask.compute(*[dask.delayed(lambda t: t)(t) for t in (dense, sparse, empty)], scheduler="threads")
    assert [t.kind for t in kinds] == ["dense", "sparse", "empty"]
    S = sp.random_array((300, 300), density=0.05, rng=rng, format="csr")
    A = TiledMatrix.from_scipy(S, tile=64)
    x = rng.random(300)
    y = dask.delayed(lambda A, x: A @ x)(dask.delayed(A), x).compute(scheduler="threads")
    np.testing.assert_allclose(y, S @ x)
    # what a distributed cluster does to ship them: its pickle protocol (5, buffers out of band)
    from distributed.protocol import deserialize, serialize

    for obj in (A, dense, sparse, empty):
        header, frames = serialize(obj)
        back = deserialize(header, frames)
        assert type(back) is type(obj)
        np.testing.assert_array_equal(back.to_dense(), obj.to_dense())
    header, frames = serialize(sparse)
    assert sum(memoryview(f).nbytes for f in frames) < sparse.nbytes + 1000


def test_matrix_pickle_round_trip(rng, make_mixed):
    D = make_mixed(300, 200, 64, 0.02, [(0, 1), (2, 2)], rng)
    A = TiledMatrix.from_dense(D, tile=64)
    B = pickle.loads(pickle.dumps(A, protocol=5))
    assert B.shape == A.shape and B.tile == A.tile and B.dtype == A.dtype
    np.testing.assert_array_equal(B.tile_kinds(), A.tile_kinds())
    np.testing.assert_array_equal(B.to_dense(), D)
    x = rng.random(200)
    np.testing.assert_array_equal(B @ x, A @ x)
    assert len(pickle.dumps(A)) < A.nbytes + 2000


# --------------------------------------------------------------------------- constructors


@st.composite
def matrices(draw):
    m = draw(st.integers(0, 70))
    n = draw(st.integers(0, 70))
    tile = draw(st.integers(1, 40))
    density = draw(st.sampled_from([0.0, 0.02, 0.2, 0.7, 1.0]))
    threshold = draw(st.one_of(st.none(), st.integers(0, 50), st.just(CostModel(sparse_weight=1.0, reuse=1e6))))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    D = rng.standard_normal((m, n)) * (rng.random((m, n)) < density)
    return D.astype(dtype), tile, threshold


@HYPOTHESIS
@given(matrices())
def test_dense_round_trip(case):
    D, tile, threshold = case
    A = TiledMatrix.from_dense(D, tile, threshold=threshold)
    assert A.shape == D.shape and A.dtype == D.dtype
    np.testing.assert_array_equal(A.to_dense(), D)
    assert A.count_nonzero() == np.count_nonzero(D)
    kinds = A.tile_kinds()
    summary = A.tile_summary()
    assert summary["dense"]["tiles"] == int((kinds == 2).sum())
    assert summary["sparse"]["tiles"] == int((kinds == 1).sum())
    assert summary["empty"]["tiles"] == int((kinds == 0).sum())
    if isinstance(threshold, int):
        for (I, J), t in A.tiles():
            count = np.count_nonzero(D[I * tile:(I + 1) * tile, J * tile:(J + 1) * tile])
            assert t.kind == ("sparse" if count < threshold else "dense")


@HYPOTHESIS
@given(matrices(), st.sampled_from(["csr", "csc", "coo", "lil", "dok", "bsr"]))
def test_scipy_round_trip(case, fmt):
    D, tile, threshold = case
    S = sp.csr_array(D).asformat(fmt)
    A = TiledMatrix.from_scipy(S, tile, threshold=threshold)
    back = A.to_scipy()
    assert back.format == "csr" and back.has_canonical_format and back.dtype == D.dtype
    assert (back != sp.csr_array(D)).nnz == 0
    assert back.nnz == np.count_nonzero(D)
    # the same tiles whichever form the matrix came in
    np.testing.assert_array_equal(A.tile_kinds(), TiledMatrix.from_dense(D, tile, threshold).tile_kinds())


@HYPOTHESIS
@given(matrices())
def test_tiles_round_trip(case):
    D, tile, threshold = case
    A = TiledMatrix.from_dense(D, tile, threshold=threshold)
    B = TiledMatrix.from_tiles(A.shape, A.tile, A.tiles())
    np.testing.assert_array_equal(B.tile_kinds(), A.tile_kinds())
    np.testing.assert_array_equal(B.to_dense(), D)
    # the dtype comes from the tiles; with no stored tile it is float64
    assert B.dtype == (A.dtype if A.nnz else np.float64)


def test_from_scipy_keeps_canonical_csr_uncopied_and_fixes_others():
    S = sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    assert build.canonical_csr(S) is S
    dup = sp.csr_array(([1.0, 1.0, 0.0], [0, 0, 1], [0, 3, 3]), shape=(2, 2))
    A = TiledMatrix.from_scipy(dup, tile=1)
    assert A.nnz == 1 and A.to_dense()[0, 0] == 2.0
    assert dup.nnz == 3  # the input is untouched


def test_from_scipy_integer_and_float32_values():
    S = sp.csr_array(np.array([[1, 0], [0, 2]], np.int64))
    assert TiledMatrix.from_scipy(S, tile=1).dtype == np.float64
    assert TiledMatrix.from_scipy(S.astype(np.float32), tile=1).dtype == np.float32


def test_from_dense_integer_matrix_becomes_float64():
    A = TiledMatrix.from_dense(np.eye(3, dtype=np.int8), tile=2)
    assert A.dtype == np.float64
    np.testing.assert_array_equal(A.to_dense(), np.eye(3))


def test_edge_tiles_and_rectangular_shapes(rng, make_mixed):
    D = make_mixed(130, 61, 16, 0.1, [(8, 3), (0, 0)], rng)  # 130 = 8*16 + 2, 61 = 3*16 + 13
    A = TiledMatrix.from_dense(D, tile=16, threshold=20)
    assert A.grid == (9, 4)
    assert A.get_tile(8, 3).shape == (2, 13)
    assert A.get_tile(0, 0).kind == "dense"
    np.testing.assert_array_equal(A.to_dense(), D)


def test_get_tile_and_tiles_are_views(rng, make_mixed):
    D = make_mixed(64, 64, 16, 0.05, [(1, 2)], rng)
    A = TiledMatrix.from_dense(D, tile=16, threshold=30)
    t = A.get_tile(1, 2)
    assert t.kind == "dense" and np.shares_memory(t.values, A.layout.dense_values)
    for (I, J), t in A.tiles():
        np.testing.assert_array_equal(t.to_dense(), D[I * 16:(I + 1) * 16, J * 16:(J + 1) * 16])
        assert A.get_tile(I, J).kind == t.kind
    with pytest.raises(IndexError, match="tile \\(4, 0\\) is outside the 4x4 tile grid"):
        A.get_tile(4, 0)


def test_from_tiles_streams_graph500_mixed_tiles():
    M = graph500.mixed_matrix(7, tile=32, dense_fraction=0.25, seed=1)
    A = TiledMatrix.from_tiles(M.shape, 32, graph500.iter_mixed_tiles(7, tile=32, dense_fraction=0.25, seed=1))
    assert (A.to_scipy() != sp.csr_array(M)).nnz == 0
    assert A.tile_summary()["dense"]["tiles"] == len(graph500.dense_tiles(7, 32, 0.25, seed=1))


def test_from_tiles_accepts_all_tile_forms_and_dtype():
    pieces = [
        ((0, 0), np.ones((2, 2), np.float32)),
        ((0, 1), SparseTile((2, 1), [0, 1, 1], [0], np.array([3.0], np.float32))),
        ((1, 0), EmptyTile((1, 2), np.float32)),
        ((1, 1), sp.csr_array(np.array([[4.0]], np.float32))),
    ]
    A = TiledMatrix.from_tiles((3, 3), 2, iter(pieces))
    assert A.dtype == np.float32
    np.testing.assert_array_equal(A.to_dense(), [[1, 1, 3], [1, 1, 0], [0, 0, 4]])
    assert A.tile_summary()["empty"]["tiles"] == 1
    assert TiledMatrix.from_tiles((3, 3), 2, pieces, dtype=np.float64).dtype == np.float64
    # a sparse tile without entries is an empty tile; an all-zero dense one stays dense
    B = TiledMatrix.from_tiles((2, 4), 2, [((0, 0), SparseTile((2, 2), [0, 0, 0], [], [])),
                                           ((0, 1), np.zeros((2, 2)))])
    assert B.tile_kinds().tolist() == [[0, 2]]
    empty = TiledMatrix.from_tiles((5, 0), 2, [])
    assert empty.shape == (5, 0) and empty.dtype == np.float64


@pytest.mark.parametrize(
    "pieces, error, match",
    [
        ([((0, 0), np.ones((2, 2))), ((0, 0), np.ones((2, 2)))], ValueError, "tile \\(0, 0\\) is given twice"),
        ([((2, 0), np.ones((2, 2)))], ValueError, "tile position \\(2, 0\\) is outside the 2x2 tile grid"),
        ([((0, -1), np.ones((2, 2)))], ValueError, "outside the 2x2 tile grid"),
        ([((1, 1), np.ones((2, 2)))], ValueError, "tile \\(1, 1\\) must have shape \\(1, 1\\), got \\(2, 2\\)"),
        ([np.ones((2, 2))], ValueError, "tiles must be \\(\\(row_block, col_block\\), tile\\) pairs"),
        ([((0, 0), [[1.0, 2.0]])], TypeError, "a tile must be a Tile, a 2-D numpy array or a scipy.sparse"),
    ],
)
def test_from_tiles_bad_input(pieces, error, match):
    with pytest.raises(error, match=match):
        TiledMatrix.from_tiles((3, 3), 2, pieces)


@pytest.mark.parametrize(
    "shape, match",
    [((3,), "shape must be two non-negative integers"), ((3, -1), "shape must be two"), ((3.0, 2), "shape must be two")],
)
def test_from_tiles_bad_shape(shape, match):
    with pytest.raises(ValueError, match=match):
        TiledMatrix.from_tiles(shape, 2, [])


@pytest.mark.parametrize(
    "tile, error, match",
    [
        (0, ValueError, "tile must be a positive integer, got 0"),
        (-3, ValueError, "tile must be a positive integer, got -3"),
        (2.0, TypeError, "tile must be a positive integer, got 2.0 of type float"),
        ("8", TypeError, "of type str"),
        (True, TypeError, "of type bool"),
        (None, TypeError, "of type NoneType"),
    ],
)
def test_bad_tile(tile, error, match):
    for build in (
        lambda: TiledMatrix.from_dense(np.eye(3), tile),
        lambda: TiledMatrix.from_scipy(sp.eye_array(3), tile),
        lambda: TiledMatrix.from_tiles((3, 3), tile, []),
    ):
        with pytest.raises(error, match=match):
            build()


def test_numpy_integer_tile_is_accepted():
    assert TiledMatrix.from_dense(np.eye(3), np.int64(2)).tile == 2


@pytest.mark.parametrize(
    "D, error, match",
    [
        (np.ones(4), ValueError, "expected a 2-D matrix, got a 1-D array of shape \\(4,\\)"),
        (np.ones((2, 2, 2)), ValueError, "expected a 2-D matrix, got a 3-D array of shape \\(2, 2, 2\\)"),
        (np.float64(3.0), ValueError, "got a 0-D array"),
        (np.ones((2, 2), complex), TypeError, "matrix values must be real .* got complex128"),
        (np.array([[None]]), TypeError, "matrix values must be real .* got object"),
        (sp.eye_array(3), TypeError, "from_dense expects a dense array; use TiledMatrix.from_scipy"),
    ],
)
def test_from_dense_bad_matrix(D, error, match):
    with pytest.raises(error, match=match):
        TiledMatrix.from_dense(D, 2)


@pytest.mark.parametrize(
    "S, error, match",
    [
        (np.eye(3), TypeError, "from_scipy expects a scipy.sparse matrix or array, got ndarray; use TiledMatrix.from_dense"),
        (sp.coo_array(np.ones(3)), ValueError, "expected a 2-D matrix, got a 1-D sparse array of shape \\(3,\\)"),
        (sp.csr_array(np.ones((2, 2), complex)), TypeError, "matrix values must be real"),
    ],
)
def test_from_scipy_bad_matrix(S, error, match):
    with pytest.raises(error, match=match):
        TiledMatrix.from_scipy(S, 2)


@pytest.mark.parametrize(
    "threshold, error",
    [(-1, ValueError), (1.5, TypeError), ("128", TypeError), (True, TypeError)],
)
def test_bad_threshold(threshold, error):
    with pytest.raises(error, match="threshold must be None \\(the cost model\\), a CostModel or an integer >= 0"):
        TiledMatrix.from_dense(np.eye(3), 2, threshold=threshold)


def test_layout_argument_checked():
    with pytest.raises(TypeError, match="TiledMatrix\\(layout\\) takes a Layout; build a matrix with"):
        TiledMatrix(np.eye(2))


def test_empty_and_all_zero_matrices():
    for shape in [(0, 5), (5, 0), (0, 0)]:
        A = TiledMatrix.from_dense(np.zeros(shape), tile=2)
        assert A.shape == shape and A.nnz == 0
        assert A.to_dense().shape == shape and A.to_scipy().shape == shape
    Z = TiledMatrix.from_scipy(sp.csr_array((100, 70)), tile=16)
    assert Z.tile_summary()["empty"]["tiles"] == 7 * 5 and Z.nnz == 0
    assert Z.nbytes < 1000  # row pointers and tile metadata only


def test_sizes_and_summary(rng, make_mixed):
    D = make_mixed(256, 256, 128, 0.01, [(0, 0)], rng)
    A = TiledMatrix.from_dense(D, tile=128)
    s = A.tile_summary()
    assert s["dense"] == {"tiles": 1, "nnz": 128 * 128, "nbytes": 128 * 128 * 8}
    assert s["sparse"]["tiles"] == 3
    # merged CSR: 8-byte row pointers, 2-byte column indices, 8-byte values
    assert s["sparse"]["nbytes"] == 257 * 8 + s["sparse"]["nnz"] * 10
    assert s["total"]["logical_nbytes"] == A.logical_nbytes == 256 * 256 * 8
    assert A.nbytes == s["total"]["nbytes"] > s["dense"]["nbytes"] + s["sparse"]["nbytes"]
    assert A.nnz == s["dense"]["nnz"] + s["sparse"]["nnz"]
    assert "dense=1, sparse=3, empty=0" in repr(A)
