"""Tiled matrices inside dask.array: chunks that are :class:`TiledMatrix` blocks.

A Dask user keeps writing dask.array code (``A @ x``, ``A.T @ x``,
``A.persist()``, ``A[:1024]``, ``A.compute()``) and gets the tile engine's
mixed dense/sparse kernels per chunk. Build such an array with

* :func:`from_scipy` -- from a scipy.sparse matrix on the driver (cut into CSR
  blocks without densifying; full-width row panels are views, no copy);
* :func:`from_array` -- from a dense numpy or dask array (a dask array is tiled
  chunk by chunk where its chunks live);
* :func:`from_graph500` -- a :func:`~asafe.compression.graph500.mixed_matrix`
  generated on the workers: only its parameters are in the graph, the driver
  never holds the matrix.

The chunk type is :class:`~asafe.compression.TiledBlock` (and
:class:`~asafe.compression.TransposedTiledBlock` for ``A.T``): a
:class:`TiledMatrix` with the array protocol Dask calls on chunks, registered
with Dask as pydata/sparse and cupy are (see :mod:`asafe.compression.blocks`).
Products are one task per chunk (:func:`matmul_graph`).

Compression
-----------
Chunks are made inside tasks, through the engine: with ``compress=None`` (the
default) the task asks ``asafe.is_on("compression")`` where it runs. When it is
on, every tile takes the form the cost model picks for the reuse the matrix
really has: ``reuse=k`` says the array will be multiplied ``k`` times (a
persisted matrix in a ``k``-iteration solver reads each tile ``k`` times); see
:class:`~asafe.compression.CostModel`. When it is off, no tile changes form:
tiles of dense input stay dense without a value being read, and tiles of sparse
input stay sparse (no densifying either).

Chunks must be made of whole tiles: every chunk but the last along each axis
is a multiple of ``tile``. The default chunks are full-width row panels (about
8 of them): a task per tile would cost more than the tile's multiply.

Examples
--------
>>> import numpy as np, scipy.sparse as sp
>>> S = sp.random_array((300, 200), density=0.05, random_state=0, format="csr")
>>> A = from_scipy(S, tile=64, chunks=(128, -1))
>>> A.chunks, type(A._meta).__name__
(((128, 128, 44), (200,)), 'TiledBlock')
>>> x = np.arange(200.0)
>>> bool(np.allclose((A @ x).compute(scheduler="sync"), S @ x))
True
>>> bool(np.allclose((A.T @ np.ones(300)).compute(scheduler="sync"), S.T @ np.ones(300)))
True
>>> (A.compute(scheduler="sync") != S).nnz
0
"""
from __future__ import annotations

import dask.array as da
import numpy as np
import scipy.sparse as sp
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

import asafe

from . import engine
from .blocks import CHUNK_TYPES, TiledBlock, TransposedTiledBlock, matmul  # noqa: F401  (the chunk types lived here)
from .matrix import TiledMatrix, TransposedTiledMatrix
from .tiles import is_integer, value_dtype

__all__ = [
    "TiledArray",
    "matmul_graph",
    "from_scipy",
    "from_array",
    "from_graph500",
    "DEFAULT_PANELS",
]

#: Row panels of the default chunks.
DEFAULT_PANELS = 8


# ---------------------------------------------------------------------------
# The dask array
# ---------------------------------------------------------------------------


class TiledArray(da.Array):
    """A dask array whose chunks are :class:`TiledBlock` s (what the builders return).

    Everything of :class:`dask.array.Array` works unchanged; ``A @ x``,
    ``x @ A``, ``A.dot(x)`` and ``A.T`` check the vector first and say what
    they expect: ``x`` a numpy or dask array, 1-D or 2-D (a small block of
    vectors), of real dtype, whose length matches the matrix. A dask ``x``
    chunked otherwise than the matrix is rechunked to the matrix's chunks
    (dask's own ``matmul`` would rechunk the *matrix* to a common refinement,
    cutting its tiles, at every product), so ``y = A @ x; A @ y`` works for a
    square matrix of row panels. Each product is one task per chunk running
    the numba kernels, plus one sum per row of chunks when the columns are
    chunked. ``persist()``, ``T`` and slices keep the type.

    Examples
    --------
    >>> A = from_array(np.eye(4), tile=2, chunks=(2, 4))
    >>> A @ np.ones(3)
    Traceback (most recent call last):
    ...
    ValueError: A @ x: x has length 3 along axis 0, but the matrix of shape (4, 4) needs 4
    """

    def _rebuild(self, dsk, *, rename=None):
        return _tiled(super()._rebuild(dsk, rename=rename))

    def _operand(self, x, axis: int, length: int, chunks, what: str):
        if sp.issparse(x) or isinstance(x, (TiledMatrix, TransposedTiledMatrix)):
            raise TypeError(f"{what}: x must be a dense numpy or dask array, got {type(x).__name__}")
        if not isinstance(x, da.Array):
            x = np.asarray(x)
        if x.ndim not in (1, 2):
            raise ValueError(f"{what}: x must be 1-D or 2-D (a block of vectors), got shape {x.shape}")
        value_dtype(x.dtype, f"{what}: x")
        ax = axis % x.ndim
        if x.shape[ax] != length:
            raise ValueError(
                f"{what}: x has length {x.shape[ax]} along axis {ax}, but the matrix of shape {self.shape} "
                f"needs {length}"
            )
        if isinstance(x, da.Array) and x.chunks[ax] != chunks:
            # the vector follows the matrix (dask would rechunk both to a common
            # refinement, cutting the matrix's tiles at every product)
            x = x.rechunk({ax: chunks})
        return x

    def __matmul__(self, other):
        other = self._operand(other, 0, self.shape[1], self.chunks[1], "A @ x")
        return matmul_graph(self, other)

    def __rmatmul__(self, other):
        other = self._operand(other, -1, self.shape[0], self.chunks[0], "x @ A")
        if other.ndim == 1:
            return matmul_graph(self.T, other)
        return matmul_graph(self.T, other.T).T

    def dot(self, other):
        """``A @ other`` (checked as ``@``)."""
        return self.__matmul__(other)

    @property
    def T(self) -> "TiledArray":
        """The transposed array (chunks :class:`TransposedTiledBlock`, no copy)."""
        return _tiled(super().T)

    def transpose(self, *axes):
        """As :meth:`dask.array.Array.transpose`, keeping the type."""
        return _tiled(super().transpose(*axes))

    def __getitem__(self, index):
        return _tiled(super().__getitem__(index))


@asafe.typed(asafe.COMPUTE)
def _block_matmul(block, x):
    """One chunk's product: ``block @ x`` (the numba kernels)."""
    return matmul(block, x)


@asafe.typed(asafe.COMPUTE)
def _sum_parts(*parts):
    """The partial products of one row of chunks, added."""
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def matmul_graph(A: "TiledArray", x, kernel=None) -> da.Array:
    """``A @ x``: one task per chunk (the kernels), then one sum per row of chunks.

    ``x`` is a numpy or dask array, checked already (``A @ x`` checks it); a
    numpy ``x`` enters the graph once, cut like the matrix's columns. dask's
    generic ``matmul`` (a blockwise product, a reduction and a squeeze: four
    tasks per chunk) gives the same result through the chunks' ``np.matmul``;
    this graph has one. ``kernel(block, x_part)`` replaces the chunk product
    (default: :func:`~asafe.compression.blocks.matmul` in a task typed
    ``COMPUTE``): the ``darray`` benchmark times this graph with a kernel that
    does no work, the floor of any product on a cluster.

    Examples
    --------
    >>> A = from_array(np.eye(4), tile=2, chunks=(2, 2))
    >>> matmul_graph(A, np.arange(4.0)).compute(scheduler="sync")
    array([0., 1., 2., 3.])
    """
    kernel = _block_matmul if kernel is None else kernel
    rest = x.shape[1:]
    tail = (0,) * len(rest)
    nI, nJ = A.numblocks
    if isinstance(x, da.Array):
        if x.ndim == 2 and len(x.chunks[1]) != 1:
            x = x.rechunk({1: -1})
        deps = (A, x)
        name = "tiled-matmul-" + tokenize(A.name, x.name, kernel)
        xs = [(x.name, j) + tail for j in range(nJ)]
    else:
        # a numpy x travels inside the tasks, cut like the columns: no extra
        # task, and no worker-to-worker fetch of x before each product
        deps = (A,)
        name = "tiled-matmul-" + tokenize(A.name, x, kernel)
        xs = [x[c0:c1] for c0, c1 in _bounds(A.chunks[1])]
    dsk = {}
    for i in range(nI):
        if nJ == 1:
            dsk[(name, i) + tail] = (kernel, (A.name, i, 0), xs[0])
            continue
        for j in range(nJ):
            dsk[("part-" + name, i, j)] = (kernel, (A.name, i, j), xs[j])
        dsk[(name, i) + tail] = (_sum_parts,) + tuple(("part-" + name, i, j) for j in range(nJ))
    dtype = np.result_type(A.dtype, value_dtype(x.dtype, "x"))
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=deps)
    chunks = (A.chunks[0],) + tuple((r,) for r in rest)
    return da.Array(graph, name, chunks, meta=np.empty((0,) * len(chunks), dtype))


def _tiled(x):
    """``x`` as a :class:`TiledArray` when its chunks are tiled blocks."""
    if isinstance(x, da.Array) and not isinstance(x, TiledArray) and isinstance(x._meta, CHUNK_TYPES):
        return TiledArray(x.dask, x.name, x.chunks, meta=x._meta)
    return x


# ---------------------------------------------------------------------------
# Building dask arrays of tiled blocks
# ---------------------------------------------------------------------------


def _cost_threshold(threshold, reuse):
    if reuse is None:
        return engine.check_threshold(threshold)
    if threshold is not None:
        raise ValueError("give threshold or reuse, not both (reuse sets the cost model's R)")
    return engine.CostModel(reuse=float(reuse))


@asafe.typed(asafe.COMPUTE)
def _block_from_csr(S, tile, threshold, compress) -> TiledBlock:
    """One chunk from its CSR block; through the engine when compression is on."""
    if not engine.wants_compression(compress):
        threshold = tile * tile + 1  # off: every stored tile keeps its sparse form
    return TiledBlock.from_scipy(S, tile, threshold=threshold)


@asafe.typed(asafe.COMPUTE)
def _block_from_dense(D, tile, threshold, compress) -> TiledBlock:
    """One chunk from a dense block: inspected only when compression is on."""
    return TiledBlock.from_dense(D, tile, threshold=threshold, compress=engine.wants_compression(compress))


def _check_tile(tile) -> int:
    if not is_integer(tile) or tile <= 0:
        raise ValueError(f"tile must be a positive integer, got {tile!r}")
    return int(tile)


def _chunks(chunks, shape, tile) -> tuple:
    """Normalized chunks made of whole tiles (default: about 8 full-width row panels)."""
    m, n = shape
    if chunks is None:
        grid = max(1, -(-m // tile))
        rows = tile * -(-grid // min(grid, DEFAULT_PANELS))
        chunks = (max(rows, 1), -1)
    try:
        chunks = da.core.normalize_chunks(chunks, shape, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"chunks {chunks!r} do not fit a matrix of shape {shape}: {exc}") from None
    for axis, (cs, what) in enumerate(zip(chunks, ("row", "column"))):
        for i, c in enumerate(cs[:-1]):
            if c % tile:
                raise ValueError(
                    f"{what} chunks must be multiples of tile={tile} (all but the last); "
                    f"chunk {i} along axis {axis} has {c} {what}s, chunks are {cs}"
                )
    return chunks


def _bounds(cs):
    edges = np.concatenate([[0], np.cumsum(cs)]).astype(int).tolist()
    return list(zip(edges[:-1], edges[1:]))


def _array(name, dsk, chunks, dtype, tile) -> da.Array:
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
    return TiledArray(graph, name, chunks, meta=TiledBlock.empty((0, 0), tile, dtype))


def _csr_block(S, r0, r1, c0, c1, full_width):
    """``S[r0:r1, c0:c1]`` as CSR; a full-width row panel shares ``S``'s arrays (no copy)."""
    if full_width:
        lo, hi = int(S.indptr[r0]), int(S.indptr[r1])
        return sp.csr_array((S.data[lo:hi], S.indices[lo:hi], S.indptr[r0:r1 + 1] - lo),
                            shape=(r1 - r0, S.shape[1]))
    return sp.csr_array(S[r0:r1, c0:c1])


def from_scipy(S, tile: int = 256, chunks=None, *, threshold=None, reuse=None, compress=None,
               name: str | None = None) -> TiledArray:
    """A dask array of :class:`TiledBlock` chunks cut from a scipy.sparse matrix.

    Parameters
    ----------
    S : scipy.sparse matrix or array, 2-D
        Real values (float64, float32; integers and bool become float64).
    tile : int
        Tile size; every chunk but the last along each axis is a multiple of it.
    chunks : dask chunks, optional
        Anything ``dask.array`` accepts (``(rows, -1)`` for full-width row
        panels); default: about 8 full-width row panels.
    threshold : None, int or CostModel
        The engine's threshold when compression is on.
    reuse : float, optional
        Products the array will serve (sets ``CostModel(reuse=reuse)``).
    compress : bool or None
        ``None``: each task asks ``asafe.is_on("compression")``.
    name : str, optional
        Key prefix (default: a token of the inputs).

    The driver cuts ``S`` into CSR blocks (views of ``S`` for full-width row
    panels); the tiles are made in the tasks.

    Examples
    --------
    >>> A = from_scipy(sp.eye_array(5, format="csr"), tile=2, chunks=(4, -1))
    >>> A
    dask.array<tiled-from-scipy, shape=(5, 5), dtype=float64, chunksize=(4, 5), chunktype=...TiledBlock>
    """
    if not sp.issparse(S):
        raise TypeError(f"from_scipy expects a scipy.sparse matrix, got {type(S).__name__}; "
                        "use from_array for dense arrays")
    if S.ndim != 2:
        raise ValueError(f"from_scipy expects a 2-D matrix, got shape {S.shape}")
    dtype = value_dtype(S.dtype, "matrix values")
    tile = _check_tile(tile)
    threshold = _cost_threshold(threshold, reuse)
    shape = (int(S.shape[0]), int(S.shape[1]))
    chunks = _chunks(chunks, shape, tile)
    if S.format != "csr":
        S = sp.csr_array(S)
    full = len(chunks[1]) == 1
    name = name or "tiled-from-scipy-" + tokenize(S, tile, chunks, threshold, compress)
    dsk = {}
    for i, (r0, r1) in enumerate(_bounds(chunks[0])):
        for j, (c0, c1) in enumerate(_bounds(chunks[1])):
            dsk[(name, i, j)] = (_block_from_csr, _csr_block(S, r0, r1, c0, c1, full), tile, threshold, compress)
    return _array(name, dsk, chunks, dtype, tile)


def from_array(x, tile: int = 256, chunks=None, *, threshold=None, reuse=None, compress=None,
               name: str | None = None) -> TiledArray:
    """A dask array of :class:`TiledBlock` chunks from a dense numpy or dask array.

    A dask array keeps its chunks (they must be made of whole tiles) unless
    ``chunks`` is given; each chunk is tiled where it is computed, inspected
    only when compression is on. Other parameters as for :func:`from_scipy`.

    Examples
    --------
    >>> A = from_array(np.eye(6), tile=2, chunks=(4, 6), compress=True)
    >>> A.blocks[0, 0].compute(scheduler="sync")
    TiledBlock(shape=(4, 6), tile=2, dtype=float64, dense=..., empty=4, nbytes=...)
    """
    if sp.issparse(x):
        raise TypeError("from_array expects a dense numpy or dask array; use from_scipy for scipy.sparse")
    tile = _check_tile(tile)
    threshold = _cost_threshold(threshold, reuse)
    if not isinstance(x, da.Array):
        x = np.asarray(x)
        if x.ndim != 2:
            raise ValueError(f"from_array expects a 2-D array, got shape {x.shape}")
        dtype = value_dtype(x.dtype, "matrix values")
        x = da.from_array(x, chunks=_chunks(chunks, x.shape, tile))
    else:
        if x.ndim != 2:
            raise ValueError(f"from_array expects a 2-D array, got shape {x.shape}")
        dtype = value_dtype(x.dtype, "matrix values")
        if chunks is not None:
            x = x.rechunk(_chunks(chunks, x.shape, tile))
        else:
            _chunks(x.chunks, x.shape, tile)
    name = name or "tiled-from-array-" + tokenize(x, tile, threshold, compress)
    return _tiled(x.map_blocks(_block_from_dense, tile, threshold, compress, dtype=dtype, name=name,
                               meta=TiledBlock.empty((0, 0), tile, dtype)))


@asafe.typed(asafe.COMPUTE)
def _block_from_graph500(key, r0, r1, c0, c1, tile, threshold, compress) -> TiledBlock:
    from . import graph500

    S = graph500.mixed_rows(*key, r0, r1)
    if (c0, c1) != (0, S.shape[1]):
        S = S[:, c0:c1]
    return _block_from_csr(S, tile, threshold, compress)


def from_graph500(scale: int, tile: int = 256, dense_fraction: float = 0.0, edgefactor: int = 16, seed: int = 0,
                  chunks=None, *, threshold=None, reuse=None, compress=None, name: str | None = None) -> TiledArray:
    """A dask array of :func:`graph500.mixed_matrix` generated on the workers.

    Only the parameters are in the graph. Each worker process generates the
    sparse Kronecker graph once (it keeps the last one, a few bytes per edge:
    :func:`graph500.mixed_rows <asafe.compression.graph500.mixed_rows>`); each
    chunk makes its own dense tiles and its band of the graph, so the dense
    values, most of the matrix, are made once, where they are stored.
    ``tile`` is both the tile of the chunks and the dense tiles' size. Other
    parameters as for :func:`from_scipy`.

    Examples
    --------
    >>> A = from_graph500(scale=6, tile=16, dense_fraction=0.25, seed=1, chunks=(32, -1))
    >>> from asafe.compression import graph500
    >>> S = graph500.mixed_matrix(6, 16, 0.25, seed=1)
    >>> bool(np.allclose((A @ np.ones(64)).compute(scheduler="sync"), S @ np.ones(64)))
    True
    """
    from . import graph500

    scale, tile, fraction, edgefactor, seed = graph500.check_mixed(scale, tile, dense_fraction, edgefactor, seed)
    threshold = _cost_threshold(threshold, reuse)
    n = 1 << scale
    chunks = _chunks(chunks, (n, n), tile)
    key = (scale, tile, fraction, edgefactor, seed)
    name = name or "tiled-graph500-" + tokenize(key, chunks, threshold, compress)
    dsk = {}
    for i, (r0, r1) in enumerate(_bounds(chunks[0])):
        for j, (c0, c1) in enumerate(_bounds(chunks[1])):
            dsk[(name, i, j)] = (_block_from_graph500, key, r0, r1, c0, c1, tile, threshold, compress)
    return _array(name, dsk, chunks, np.dtype(np.float64), tile)
