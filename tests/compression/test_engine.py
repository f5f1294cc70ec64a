"""The compression engine: thresholds, the cost model, producing tiles, no inspection when off."""
import doctest
import math

import dask
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asafe
from asafe.schedulers import board
from asafe.compression import (
    CostModel,
    DenseTile,
    EmptyTile,
    SparseTile,
    TiledMatrix,
    choose_kind,
    csr,
    decompress,
    engine,
    inspection_count,
    maybe_compress,
    produce,
    tile_threshold,
    tiling,
)
import asafe.compression as compression


def test_doctests():
    for module in (engine, compression):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
        assert result.attempted > 0


def test_public_api_is_exported():
    for name in compression.__all__:
        assert getattr(compression, name) is not None
    assert compression.graph500.kronecker is not None
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        compression.nope


# --------------------------------------------------------------------------- thresholds


def test_fixed_threshold():
    assert tile_threshold((128, 128), threshold=128) == 128
    assert [choose_kind(k, (128, 128), threshold=128) for k in (0, 1, 127, 128, 16384)] == [
        "empty", "sparse", "sparse", "dense", "dense"
    ]
    # threshold 0: nothing is ever compressed (all non-empty tiles dense)
    assert choose_kind(1, (4, 4), threshold=0) == "dense"


def test_cost_model_formula():
    model = CostModel(sparse_weight=2.0, reuse=8.0)
    rows, cols, s, i, p = 128, 128, 8, 1, 4
    a = 2.0 + 1 / 8
    bound = (s * rows * cols * (1 - 1 / 8) - p * (rows + 1) * a) / ((s + i) * a)
    T = model.threshold((rows, cols), np.float64)
    assert T == math.ceil(bound)
    # at T - 1 the model's inequality holds, at T it does not
    def compress(k):
        sparse = model.sparse_bytes((rows, cols), np.float64, k)
        dense = model.dense_bytes((rows, cols), np.float64)
        return 2.0 * sparse + (dense + sparse) / 8 < dense
    assert compress(T - 1) and not compress(T)


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 600), st.integers(1, 600),
    st.floats(0.5, 20), st.floats(1, 1000),
    st.sampled_from([np.float32, np.float64]),
)
def test_cost_model_is_monotone_and_bounded(rows, cols, weight, reuse, dtype):
    model = CostModel(sparse_weight=weight, reuse=reuse)
    T = model.threshold((rows, cols), dtype)
    assert 0 <= T <= rows * cols + 1
    # more reuse or a cheaper sparse kernel never compresses less
    assert CostModel(weight, reuse * 2).threshold((rows, cols), dtype) >= T
    assert CostModel(weight / 2, reuse).threshold((rows, cols), dtype) >= T
    assert model.threshold((rows + 1, cols), dtype) >= T - 1


def test_cost_model_compresses_far_more_than_128_on_big_tiles():
    T128 = tile_threshold((128, 128))
    T256 = tile_threshold((256, 256))
    assert 1000 < T128 < 128 * 128 // 2
    assert T256 > 3 * T128
    # float32 values: indices weigh more, the fill bound is lower
    assert tile_threshold((128, 128), np.float32) / (128 * 128 * 4) < T128 / (128 * 128 * 8) + 0.05


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"sparse_weight": 0}, "sparse_weight must be > 0, got 0"),
        ({"reuse": 0.5}, "reuse must be >= 1, got 0.5"),
    ],
)
def test_cost_model_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CostModel(**kwargs)


def test_matrix_uses_the_model_per_tile(rng, make_mixed):
    D = make_mixed(256, 256, 128, 0.0, [], rng)
    D[:128, :128] = rng.random((128, 128)) * (rng.random((128, 128)) < 0.1)  # ~1640 non-zeros
    D[128:, 128:] = rng.random((128, 128)) * (rng.random((128, 128)) < 0.5)
    A = TiledMatrix.from_dense(D, tile=128)
    assert A.tile_kinds().tolist() == [[1, 0], [0, 2]]
    B = TiledMatrix.from_dense(D, tile=128, threshold=128)
    assert B.tile_kinds().tolist() == [[2, 0], [0, 2]]
    C = TiledMatrix.from_dense(D, tile=128, threshold=CostModel(sparse_weight=1.0, reuse=1e9))
    assert C.tile_kinds().tolist() == [[1, 0], [0, 1]]


# --------------------------------------------------------------------------- produce


def block_with(nnz, shape=(128, 128), dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    block = np.zeros(shape, dtype)
    flat = rng.choice(block.size, nnz, replace=False)
    block.flat[flat] = rng.uniform(1, 2, nnz)
    return block


def test_produce_forms():
    assert produce(block_with(5), compress=True).kind == "sparse"
    assert produce(block_with(0), compress=True).kind == "empty"
    assert produce(block_with(200), compress=True, threshold=128).kind == "dense"
    assert produce(block_with(200), compress=True).kind == "sparse"
    b = block_with(50, (10, 300), np.float32)
    t = produce(b, compress=True)
    assert isinstance(t, SparseTile) and t.dtype == np.float32 and t.indices.dtype == np.uint16
    np.testing.assert_array_equal(t.to_dense(), b)
    assert t.nbytes < t.logical_nbytes / 10


def test_produce_off_wraps_without_copy():
    b = block_with(5)
    t = produce(b, compress=False)
    assert isinstance(t, DenseTile) and t.values is b


def test_maybe_compress_and_decompress():
    dense = DenseTile(block_with(5))
    sparse = maybe_compress(dense, compress=True)
    assert sparse.kind == "sparse"
    assert maybe_compress(sparse, compress=True) is sparse
    kept = DenseTile(block_with(9000))
    assert maybe_compress(kept, compress=True) is kept
    back = decompress(sparse)
    np.testing.assert_array_equal(back.values, dense.values)
    assert decompress(kept) is kept
    assert decompress(EmptyTile((2, 3))).shape == (2, 3)
    with pytest.raises(TypeError, match="maybe_compress expects a Tile, got ndarray; use produce\\(\\) for arrays"):
        maybe_compress(np.eye(2))
    with pytest.raises(TypeError, match="decompress expects a Tile, got list"):
        decompress([[1.0]])


def test_produce_bad_block():
    with pytest.raises(ValueError, match="a dense tile is a 2-D array, got 1-D"):
        produce(np.ones(3), compress=True)
    with pytest.raises(TypeError, match="values must be real"):
        produce(np.ones((2, 2), complex))
    with pytest.raises(ValueError, match="threshold must be None"):
        produce(np.ones((2, 2)), compress=True, threshold=-5)


# --------------------------------------------------------------------------- no inspection when off


@pytest.fixture
def forbid_inspection(monkeypatch):
    """Make every counting kernel raise: a test passes only if nothing is inspected."""

    def boom(*args, **kwargs):
        raise AssertionError("a tile was inspected")

    for name in ("count_nonzero_rows", "dense_to_csr"):
        monkeypatch.setattr(csr, name, boom)
    monkeypatch.setattr(tiling, "dense_tile_counts", boom)


def test_no_inspection_when_off(forbid_inspection):
    before = inspection_count()
    assert not asafe.is_on("compression")  # outside an adaptive run
    b = block_with(3)
    assert produce(b).kind == "dense"
    assert produce(b, compress=False).values is b
    t = DenseTile(b)
    assert maybe_compress(t) is t
    A = TiledMatrix.from_dense(b, tile=64, compress=None)
    assert A.tile_summary()["dense"]["tiles"] == 4
    TiledMatrix.from_dense(b, tile=64, compress=False)
    assert inspection_count() == before


def test_inspection_when_on_through_the_board():
    before = inspection_count()
    previous = board.publish({"compression": True})
    try:
        assert produce(block_with(3)).kind == "sparse"
        assert maybe_compress(DenseTile(block_with(3))).kind == "sparse"
        A = TiledMatrix.from_dense(block_with(3), tile=64, compress=None)
        assert A.tile_summary()["dense"]["tiles"] == 0
    finally:
        board.restore(previous)
    assert inspection_count() == before + 2 + 4
    assert produce(block_with(3)).kind == "dense"


class Fixed(asafe.EfficiencyDomain):
    """A domain that keeps the optimization in one state."""

    def __init__(self, state):
        self.state = state

    def decide(self, mode, state):
        return self.state


@pytest.mark.parametrize("on", [True, False])
def test_produce_inside_an_adaptive_run(on):
    runtime = asafe.AdaptiveRuntime([asafe.Optimization("compression", Fixed(on), initial=on)])
    blocks = [block_with(k, seed=k) for k in (3, 7, 0)]
    before = inspection_count()
    with asafe.adaptive(runtime, scheduler="threads"):
        tiles = dask.compute(*[dask.delayed(produce)(b) for b in blocks])
    assert [t.kind for t in tiles] == (["sparse", "sparse", "empty"] if on else ["dense"] * 3)
    assert inspection_count() - before == (3 if on else 0)
    for t, b in zip(tiles, blocks):
        np.testing.assert_array_equal(t.to_dense(), b)


def test_tiles_keep_their_kind_through_dask():
    tiles = [produce(block_with(k, seed=k), compress=True) for k in (3, 0, 9000)]
    back = dask.compute(*[dask.delayed(lambda t: t)(t) for t in tiles], scheduler="threads")
    assert [t.kind for t in back] == ["sparse", "empty", "dense"]
    # what the distributed runtime counts: logical bytes, whatever the form
    assert [t.logical_nbytes for t in back] == [128 * 128 * 8] * 3
    assert back[0].nbytes == 129 * 4 + 3 * 9 and back[1].nbytes == 0 and back[2].nbytes == 128 * 128 * 8
