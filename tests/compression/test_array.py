"""asafe.compression.array: dask arrays whose chunks are tiled blocks.

Real Dask schedulers (sync, threads; a LocalCluster in
tests/distributed/test_cluster_darray.py), real Graph500 matrices, results
checked against scipy.
"""
from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from dask.array.dispatch import concatenate_lookup, tensordot_lookup
from dask.sizeof import sizeof

import asafe
from asafe.compression import (
    CostModel,
    TiledArray,
    TiledBlock,
    TiledMatrix,
    TransposedTiledBlock,
    from_array,
    from_graph500,
    from_scipy,
    graph500,
)
from asafe.compression import array as tda
from asafe.compression import blocks

SCALE, TILE, DENSE, SEED = 9, 32, 0.1, 3
RTOL, ATOL = 1e-12, 1e-10


class Pinned(asafe.EfficiencyDomain):
    """Keeps the optimization in its initial state."""

    def decide(self, mode, state):
        return state


def runtime(on: bool):
    return asafe.AdaptiveRuntime([asafe.Optimization("compression", Pinned(), initial=on)], signals=False)


@pytest.fixture(scope="module")
def S():
    return graph500.mixed_matrix(SCALE, TILE, DENSE, seed=SEED)


@pytest.fixture(scope="module")
def x(S):
    return np.random.default_rng(0).random(S.shape[1])


def close(y, ref):
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
@pytest.mark.parametrize("chunks", [None, (128, -1), (128, 96), (64, 512)])
def test_products_match_scipy(S, x, scheduler, chunks):
    A = from_scipy(S, tile=TILE, chunks=chunks, compress=True)
    assert isinstance(A, TiledArray) and isinstance(A._meta, TiledBlock)
    assert A.shape == S.shape and A.dtype == np.float64
    with dask.config.set(scheduler=scheduler):
        close((A @ x).compute(), S @ x)
        close((A.T @ x).compute(), S.T @ x)
        close((x @ A).compute(), x @ S)
        X = np.random.default_rng(1).random((S.shape[1], 3))
        close((A @ X).compute(), S @ X)
        close((A.T @ X).compute(), S.T @ X)
        close(A.dot(x).compute(), S @ x)
        xd = da.from_array(x, chunks=(A.chunks[1],))
        y = A @ xd
        assert y.chunks == (A.chunks[0],)
        close(y.compute(), S @ x)
        C = A.compute()
        assert sp.issparse(C) and C.shape == S.shape and (C != S).nnz == 0


def test_default_chunks_are_row_panels_of_whole_tiles(S):
    A = from_scipy(S, tile=TILE)
    assert len(A.chunks[1]) == 1 and len(A.chunks[0]) == tda.DEFAULT_PANELS
    assert all(c % TILE == 0 for c in A.chunks[0][:-1])


def test_generic_dask_routes_work_on_the_chunks(S, x):
    """dask's own matmul/tensordot/transpose go through the chunks' numpy protocols."""
    A = from_scipy(S, tile=TILE, chunks=(128, 256), compress=True)
    plain = da.Array(A.dask, A.name, A.chunks, meta=A._meta)  # not a TiledArray
    xd = da.from_array(x, chunks=(A.chunks[1],))
    close(da.matmul(plain, xd).compute(scheduler="sync"), S @ x)
    close(da.tensordot(plain, xd, axes=1).compute(scheduler="sync"), S @ x)
    close(da.matmul(da.transpose(plain), da.from_array(x, chunks=(A.chunks[0],))).compute(scheduler="sync"), S.T @ x)


def test_matrix_power_iteration_sync(S):
    """An iterative workload the dask.array way: a persisted matrix, many products."""
    A = from_scipy(S, tile=TILE, reuse=20, compress=True).persist(scheduler="sync")
    v = np.ones(S.shape[1]) / np.sqrt(S.shape[1])
    ref = v.copy()
    for _ in range(20):
        v = (A @ v).compute(scheduler="sync")
        v /= np.linalg.norm(v)
        ref = S @ ref
        ref /= np.linalg.norm(ref)
    close(v, ref)


def test_graph500_generated_in_tasks(S, x):
    A = from_graph500(SCALE, TILE, DENSE, seed=SEED, chunks=(128, -1))
    # only parameters are in the graph: no array of the matrix's size
    assert sum(sizeof(v) for v in dict(A.dask).values()) < 100_000
    close((A @ x).compute(scheduler="threads"), S @ x)
    assert (A.compute(scheduler="sync") != S).nnz == 0


def test_from_array_dense_and_dask(S, x):
    D = S.toarray()
    A = from_array(D, tile=TILE, chunks=(128, 256), compress=True)
    close((A @ x).compute(scheduler="sync"), S @ x)
    Dd = da.from_array(D, chunks=(256, 512))
    B = from_array(Dd, tile=TILE)
    assert B.chunks == Dd.chunks
    close((B.T @ x).compute(scheduler="threads"), S.T @ x)
    with pytest.raises(ValueError, match="multiples of tile=32"):
        from_array(da.from_array(D, chunks=(100, 512)), tile=TILE)


def test_compression_follows_the_runtime(S):
    D = S.toarray()
    for on in (False, True):
        with asafe.adaptive(runtime(on)):
            A = from_array(D, tile=TILE, chunks=(256, -1)).persist(scheduler="threads")
            B = from_scipy(S, tile=TILE, chunks=(256, -1)).persist(scheduler="threads")
        a = [b.tile_summary() for b in dask.compute(*A.to_delayed().ravel(), scheduler="sync")]
        b = [b.tile_summary() for b in dask.compute(*B.to_delayed().ravel(), scheduler="sync")]
        if on:
            assert sum(s["sparse"]["tiles"] for s in a) > 0  # dense input: inspected, compressed
            assert sum(s["dense"]["tiles"] for s in b) > 0  # the cost model keeps full tiles dense
            assert [s["dense"]["tiles"] for s in a] == [s["dense"]["tiles"] for s in b]
        else:
            assert sum(s["sparse"]["tiles"] + s["empty"]["tiles"] for s in a) == 0  # all dense, unread
            assert sum(s["dense"]["tiles"] for s in b) == 0  # sparse input stays sparse


def test_reuse_sets_the_cost_model(S):
    few = from_scipy(S, tile=TILE, chunks=(512, -1), reuse=1, compress=True).blocks[0, 0].compute(scheduler="sync")
    many = from_scipy(S, tile=TILE, chunks=(512, -1), reuse=1000, compress=True).blocks[0, 0].compute(
        scheduler="sync")
    # used once, converting never pays (T = 0: tiles stay dense); read 1000 times, sparse tiles pay
    assert many.tile_summary()["dense"]["tiles"] < few.tile_summary()["dense"]["tiles"]
    with pytest.raises(ValueError, match="threshold or reuse"):
        from_scipy(S, tile=TILE, threshold=CostModel(), reuse=4)


def test_slicing_by_whole_chunks_and_tiles(S, x):
    A = from_scipy(S, tile=TILE, chunks=(128, 256), compress=True)
    B = A[128:384]
    assert isinstance(B, TiledArray) and B.chunks == ((128, 128), (256, 256))
    close((B @ x).compute(scheduler="sync"), S[128:384] @ x)
    C = A[:, 256:]
    close((C @ x[256:]).compute(scheduler="sync"), S[:, 256:] @ x[256:])
    close((A[32:96] @ x).compute(scheduler="sync"), S[32:96] @ x)  # inside a chunk, on tile boundaries
    with pytest.raises(Exception) as info:
        A[10:20].compute(scheduler="sync")
    cause = info.value if isinstance(info.value, IndexError) else info.value.__cause__
    assert "tile boundaries" in str(cause)


def test_persist_keeps_the_type_and_blocks(S, x):
    A = from_scipy(S, tile=TILE, chunks=(256, -1)).persist(scheduler="threads")
    assert isinstance(A, TiledArray) and isinstance(A.T, TiledArray)
    close((A @ x).compute(scheduler="sync"), S @ x)
    blocks = dask.compute(*A.to_delayed().ravel(), scheduler="sync")
    assert all(isinstance(b, TiledBlock) for b in blocks)


@pytest.mark.parametrize("bad, error, match", [
    (np.ones(511), ValueError, "x has length 511 along axis 0, but the matrix of shape .* needs 512"),
    (np.ones((3, 512)), ValueError, "x has length 3 along axis 0"),
    (np.ones((2, 2, 512)), ValueError, "1-D or 2-D"),
    (np.ones(512, complex), TypeError, "must be real"),
    (np.array(["a"] * 512), TypeError, "must be real"),
    (sp.eye_array(512, format="csr"), TypeError, "dense numpy or dask array"),
])
def test_bad_vectors(S, bad, error, match):
    A = from_scipy(S, tile=TILE, chunks=(128, -1))
    with pytest.raises(error, match=match):
        A @ bad


def test_vector_chunks_follow_the_matrix(S, x):
    A = from_scipy(S, tile=TILE, chunks=(128, 256))
    y = A @ da.from_array(x, chunks=100)  # x is rechunked, the matrix's tiles are not cut
    assert y.chunks == (A.chunks[0],)
    close(y.compute(scheduler="sync"), S @ x)
    close((A @ (A @ x)).compute(scheduler="sync"), S @ (S @ x))  # y's row chunks feed the next product
    close((da.from_array(x, chunks=64) @ A).compute(scheduler="sync"), x @ S)
    with pytest.raises(ValueError, match=r"x @ A: x has length 100 along axis 0"):
        A.__rmatmul__(np.ones(100))


def test_bad_inputs_to_builders(S):
    with pytest.raises(ValueError, match=r"row chunks must be multiples of tile=32 .* chunk 0 along axis 0 has 100"):
        from_scipy(S, tile=TILE, chunks=(100, -1))
    with pytest.raises(ValueError, match=r"column chunks must be multiples of tile=32"):
        from_scipy(S, tile=TILE, chunks=(128, 200))
    with pytest.raises(ValueError, match="do not fit a matrix of shape"):
        from_scipy(S, tile=TILE, chunks=((100, 100), (512,)))
    with pytest.raises(TypeError, match="must be real"):
        from_scipy(S.astype(np.complex128), tile=TILE)
    with pytest.raises(TypeError, match="use from_array"):
        from_scipy(S.toarray(), tile=TILE)
    with pytest.raises(TypeError, match="use from_scipy"):
        from_array(S, tile=TILE)
    with pytest.raises(ValueError, match="tile must be a positive integer"):
        from_scipy(S, tile=0)
    with pytest.raises(ValueError, match="2-D"):
        from_array(np.ones(5), tile=2)


def test_float32_and_integer_input(S, x):
    A = from_scipy(S.astype(np.float32), tile=TILE)
    assert A.dtype == np.float32
    y = (A @ x.astype(np.float32)).compute(scheduler="sync")
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, S @ x, rtol=1e-5)
    Si = (S * 10).astype(np.int64)
    B = from_scipy(Si, tile=TILE)
    assert B.dtype == np.float64
    close((B @ x).compute(scheduler="sync"), Si @ x)


def test_chunk_protocol(S, x):
    A = TiledMatrix.from_scipy(S[:64, :96], tile=TILE)
    B = TiledBlock.wrap(A)
    assert TiledBlock.wrap(B) is B and B.ndim == 2 and B.size == 64 * 96
    close(np.matmul(B, x[:96]), S[:64, :96] @ x[:96])
    close(np.dot(B, x[:96]), S[:64, :96] @ x[:96])
    close(np.tensordot(B, x[:96], axes=1), S[:64, :96] @ x[:96])
    close(np.tensordot(B, x[:64], axes=((0,), (0,))), S[:64, :96].T @ x[:64])
    close(x[:64] @ B, x[:64] @ S[:64, :96])
    T = np.transpose(B)
    assert isinstance(T, TransposedTiledBlock) and T.shape == (96, 64) and T.T is B
    close(T @ x[:64], S[:64, :96].T @ x[:64])
    assert np.transpose(B, (0, 1)) is B
    assert (np.concatenate([B, B], axis=0) != sp.vstack([S[:64, :96]] * 2)).nnz == 0
    assert (concatenate_lookup.dispatch(TiledBlock)([B, B], axis=1) != sp.hstack([S[:64, :96]] * 2)).nnz == 0
    assert tensordot_lookup.dispatch(TransposedTiledBlock) is blocks._tensordot
    assert sizeof(B) >= B.nbytes and sizeof(T) == sizeof(B)
    with pytest.raises(TypeError, match="not converted to a dense numpy array implicitly"):
        np.asarray(B)
    with pytest.raises(IndexError, match="two slices"):
        B[0]
    with pytest.raises(IndexError, match="step 1"):
        B[::2]
    assert B[:, 32:].shape == (64, 64) and B[0:0, :].shape == (0, 96)
    assert B.astype(np.float32).dtype == np.float32 and B.astype(np.float64) is B
    close(B.astype(np.float32).to_dense(), S[:64, :96].toarray().astype(np.float32))
    with pytest.raises(TypeError):
        B.astype(np.complex128)
    with pytest.raises(TypeError, match="dense numpy vector"):
        blocks.matmul(B, B)


def test_pickle_and_distributed_serialization(S):
    import pickle

    from distributed.protocol import deserialize, serialize

    B = TiledBlock.from_scipy(S[:128], tile=TILE)
    for C in (pickle.loads(pickle.dumps(B, protocol=5)), deserialize(*serialize(B))):
        assert isinstance(C, TiledBlock) and (C.to_scipy() != B.to_scipy()).nnz == 0
    header, frames = serialize(B)
    assert header["serializer"] == "dask"
    assert sum(memoryview(f).nbytes for f in frames) <= B.nbytes + 1024  # compact tiles, no densifying
    T = pickle.loads(pickle.dumps(B.T))
    assert isinstance(T, TransposedTiledBlock) and T.shape == (S.shape[1], 128)


@pytest.mark.parametrize("scale, tile, fraction, seed, chunks", [
    (9, 50, 0.3, 0, (100, 250)),   # tile does not divide n; 2-D chunks
    (8, 16, 0.0, 2, (48, -1)),     # no dense tile
    (10, 64, 0.25, 1, (64, -1)),   # one tile row per chunk
])
def test_graph500_chunks_equal_mixed_matrix(scale, tile, fraction, seed, chunks):
    """Each chunk makes only its band: the whole equals graph500.mixed_matrix exactly."""
    S = graph500.mixed_matrix(scale, tile, fraction, seed=seed)
    A = from_graph500(scale, tile, fraction, seed=seed, chunks=chunks)
    assert (A.compute(scheduler="threads") != S).nnz == 0
