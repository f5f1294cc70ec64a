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

The chunk type is :class:`TiledBlock`, a :class:`TiledMatrix` with the part of
the array protocol Dask calls on chunks: ``ndim``, ``__getitem__`` for whole
tiles, ``T`` (:class:`TransposedTiledBlock`), ``np.matmul`` (dask's ``A @ x``
runs ``np.matmul(block, x_block)`` per block, then sums over the contraction
axis), ``np.dot``/``np.tensordot``, ``np.transpose`` and ``np.concatenate``
(to a scipy ``csr_array``: ``A.compute()`` returns one). It is registered with
Dask as pydata/sparse and cupy are: ``register_chunk_type``,
``concatenate_lookup``, ``tensordot_lookup``, ``sizeof`` and distributed's
``dask_serialize`` (the compact tile arrays travel as frames, no pickle of the
values). ``np.asarray(block)`` raises: densifying is explicit
(``block.to_dense()``, ``A.map_blocks(...)``).

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

import threading
from typing import Any

import dask.array as da
import numpy as np
import scipy.sparse as sp
from dask.array.chunk_types import register_chunk_type
from dask.array.dispatch import concatenate_lookup, tensordot_lookup
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph
from dask.sizeof import sizeof

import asafe

from . import engine
from .layout import LAYOUT_ARRAYS, Layout
from .matrix import TiledMatrix, TransposedTiledMatrix
from .tiles import is_integer, value_dtype

__all__ = [
    "TiledBlock",
    "TransposedTiledBlock",
    "TiledArray",
    "from_scipy",
    "from_array",
    "from_graph500",
    "DEFAULT_PANELS",
]

#: Row panels of the default chunks.
DEFAULT_PANELS = 8


# ---------------------------------------------------------------------------
# The chunk types
# ---------------------------------------------------------------------------


class _ChunkProtocol:
    """What the two chunk types share: the numpy protocols Dask calls."""

    ndim = 2
    # dask picks the concatenate/tensordot implementation of the operand with the
    # highest priority; above numpy (0) and scipy.sparse (10.1).
    __array_priority__ = 20.0

    @property
    def size(self) -> int:
        """Number of elements, ``m * n`` (as numpy's)."""
        m, n = self.shape
        return m * n

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul and method == "__call__" and len(inputs) == 2 and not kwargs:
            return _matmul(*inputs)
        return NotImplemented

    def __array_function__(self, func, types, args, kwargs):
        handler = _HANDLED.get(func)
        if handler is None:
            return NotImplemented
        return handler(*args, **kwargs)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            f"a {type(self).__name__} is not converted to a dense numpy array implicitly; "
            "call .to_dense() (or A.map_blocks(lambda b: b.to_dense()) on a dask array) to densify"
        )

    def __matmul__(self, x):
        if sp.issparse(x) or isinstance(x, (TiledMatrix, TransposedTiledMatrix)):
            return NotImplemented
        return _matmul(self, x)

    def __rmatmul__(self, x):
        if sp.issparse(x):
            return NotImplemented
        return _matmul(x, self)

    def transpose(self, axes=None):
        """The transposed block (no copy); ``axes`` must be ``None`` or ``(1, 0)``."""
        if axes is not None and tuple(axes) != (1, 0):
            if tuple(axes) == (0, 1):
                return self
            raise ValueError(f"a 2-D tiled block transposes with axes (1, 0), got {axes!r}")
        return self.T

    def astype(self, dtype, copy=True):
        """The block with float64 or float32 values (the same object if the dtype is unchanged)."""
        dtype = np.dtype(dtype)
        base = self.T if isinstance(self, TransposedTiledBlock) else self
        if dtype == self.dtype:
            return self
        if value_dtype(dtype, "dtype") != dtype:
            raise TypeError(f"a tiled block holds float64 or float32 values, cannot cast to {dtype}")
        lay = base.layout
        arrays = dict(zip(LAYOUT_ARRAYS, lay.arrays()))
        arrays["dense_values"] = arrays["dense_values"].astype(dtype)
        arrays["data"] = arrays["data"].astype(dtype)
        new = TiledBlock(Layout(shape=lay.shape, tile=lay.tile, **arrays), dtype)
        return new.T if base is not self else new


class TiledBlock(_ChunkProtocol, TiledMatrix):
    """A :class:`TiledMatrix` that is a dask.array chunk (the array protocol Dask calls).

    Made by the builders of this module; :meth:`wrap` turns any TiledMatrix
    into one without a copy. Products: ``block @ x`` for ``x`` 1-D or 2-D (a
    block of vectors, one kernel call per column), ``x @ block``;
    ``block[rows, cols]`` for slices on tile boundaries.

    Examples
    --------
    >>> B = TiledBlock.wrap(TiledMatrix.from_dense(np.eye(4), tile=2))
    >>> B @ np.ones((4, 2))
    array([[1., 1.],
           [1., 1.],
           [1., 1.],
           [1., 1.]])
    >>> B[2:, :].shape, B.T.shape, np.transpose(B).shape
    ((2, 4), (4, 4), (4, 4))
    >>> B[1:, :]
    Traceback (most recent call last):
    ...
    IndexError: a tiled block is sliced on tile boundaries: rows must start and stop at multiples of tile=2 (or at 4), got 1:4. ...
    """

    @classmethod
    def wrap(cls, A: TiledMatrix) -> "TiledBlock":
        """``A`` as a chunk (shares its arrays)."""
        if isinstance(A, cls):
            return A
        if not isinstance(A, TiledMatrix):
            raise TypeError(f"TiledBlock.wrap expects a TiledMatrix, got {type(A).__name__}")
        return cls(A.layout, A.dtype)

    @classmethod
    def empty(cls, shape=(0, 0), tile: int = 1, dtype=np.float64) -> "TiledBlock":
        """A block without stored tiles (the meta of a dask array is a ``(0, 0)`` one)."""
        dtype = value_dtype(dtype, "dtype")
        return cls(Layout.empty(tuple(int(s) for s in shape), int(tile), dtype), dtype)

    @property
    def T(self) -> "TransposedTiledBlock":
        """The transposed chunk (no copy)."""
        return TransposedTiledBlock(self)

    def __getitem__(self, key):
        rows, cols = _index_pair(key, self.shape)
        r = _tile_range(rows, self.shape[0], self.tile, "rows")
        c = _tile_range(cols, self.shape[1], self.tile, "columns")
        if r == (0, self.shape[0]) and c == (0, self.shape[1]):
            return self
        return _sub_block(self, r, c)

    def __reduce__(self):
        lay = self.layout
        return (_rebuild_block, (lay.shape, lay.tile, self.dtype.str) + lay.arrays())

    def __repr__(self) -> str:
        return "TiledBlock" + super().__repr__()[len("TiledMatrix"):]


class TransposedTiledBlock(_ChunkProtocol, TransposedTiledMatrix):
    """The transpose of a :class:`TiledBlock` as a chunk (``A.T`` of a dask array).

    Examples
    --------
    >>> B = TiledBlock.wrap(TiledMatrix.from_dense(np.arange(6.0).reshape(2, 3), tile=2))
    >>> B.T @ np.ones(2), B.T.T is B
    (array([3., 5., 7.]), True)
    """

    def __init__(self, base: TiledBlock):
        super().__init__(TiledBlock.wrap(base))

    @property
    def tile(self) -> int:
        """The base block's tile size."""
        return self.base.tile

    @property
    def nbytes(self) -> int:
        """The base block's stored bytes."""
        return self.base.nbytes

    def to_dense(self) -> np.ndarray:
        """The transposed block as a new dense array."""
        return np.ascontiguousarray(self.base.to_dense().T)

    def to_scipy(self) -> sp.csr_array:
        """The transposed block as a canonical ``csr_array``."""
        return sp.csr_array(self.base.to_scipy().T)

    def __getitem__(self, key):
        rows, cols = _index_pair(key, self.shape)
        return self.base[cols, rows].T

    def __reduce__(self):
        return (TransposedTiledBlock, (self.base,))


def _rebuild_block(shape, tile, dtype, *arrays) -> TiledBlock:
    layout = Layout(shape=tuple(shape), tile=tile, **dict(zip(LAYOUT_ARRAYS, arrays)))
    return TiledBlock(layout, dtype)


_CHUNK_TYPES = (TiledBlock, TransposedTiledBlock)


def _index_pair(key, shape):
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (2 - len(key) + 1) + key[i + 1:]
    key = key + (slice(None),) * (2 - len(key))
    if len(key) != 2 or not all(isinstance(k, slice) for k in key):
        raise IndexError(
            f"a tiled block of shape {shape} takes two slices on tile boundaries "
            f"(rows, columns), got {key!r}; integers, arrays and None are not supported"
        )
    return key


def _tile_range(s: slice, size: int, tile: int, what: str) -> tuple[int, int]:
    start, stop, step = s.indices(size)
    if step != 1:
        raise IndexError(f"a tiled block is sliced with step 1, got step {step} for {what}")
    stop = max(start, stop)
    if start == stop:
        return start, stop
    if start % tile or (stop % tile and stop != size):
        raise IndexError(
            f"a tiled block is sliced on tile boundaries: {what} must start and stop at multiples of "
            f"tile={tile} (or at {size}), got {start}:{stop}. In a dask array this comes from slicing or "
            "rechunking across tiles, or from a dask vector whose chunks split the matrix's tiles "
            "(A @ x rechunks A to x's chunks): chunk x like the matrix, x.rechunk(A.chunks[1])"
        )
    return start, stop


def _sub_block(B: TiledBlock, r, c) -> TiledBlock:
    """Rows ``r[0]:r[1]`` and columns ``c[0]:c[1]`` (tile-aligned) of ``B``."""
    t = B.tile
    shape = (r[1] - r[0], c[1] - c[0])
    if 0 in shape:
        return TiledBlock.empty(shape, t, B.dtype)
    I0, I1, J0, J1 = r[0] // t, -(-r[1] // t), c[0] // t, -(-c[1] // t)
    tiles = (((I - I0, J - J0), tile) for (I, J), tile in B.tiles() if I0 <= I < I1 and J0 <= J < J1)
    return TiledBlock.from_tiles(shape, t, tiles, dtype=B.dtype)


# -- products --------------------------------------------------------------


def _matmul(a, b):
    """``a @ b`` with one tiled operand and a dense 1-D or 2-D one (numpy's shapes)."""
    if isinstance(a, _CHUNK_TYPES) and not isinstance(b, _CHUNK_TYPES):
        x = _dense_operand(b, "the right operand")
        if x.ndim == 1:
            return a.matvec(x)
        if x.shape[0] != a.shape[1]:
            raise ValueError(
                f"matmul: a tiled block of shape {a.shape} needs a right operand with {a.shape[1]} rows, "
                f"got shape {x.shape}"
            )
        return _columns(a.matvec, x, a.shape[0], a.dtype)
    if isinstance(b, _CHUNK_TYPES) and not isinstance(a, _CHUNK_TYPES):
        x = _dense_operand(a, "the left operand")
        if x.ndim == 1:
            return b.rmatvec(x)
        if x.shape[1] != b.shape[0]:
            raise ValueError(
                f"matmul: a tiled block of shape {b.shape} needs a left operand with {b.shape[0]} columns, "
                f"got shape {x.shape}"
            )
        return _columns(b.rmatvec, x.T, b.shape[1], b.dtype).T
    raise TypeError(
        "a tiled block multiplies a dense numpy vector or block of vectors, got "
        f"{type(a).__name__} @ {type(b).__name__}"
    )


def _dense_operand(x, what):
    if sp.issparse(x) or isinstance(x, (TiledMatrix, TransposedTiledMatrix)):
        raise TypeError(f"{what} of a tiled block product must be a dense array, got {type(x).__name__}")
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"{what} of a tiled block product must be 1-D or 2-D, got shape {x.shape}")
    value_dtype(x.dtype, what)
    return x


def _columns(product, X, length, dtype):
    """``product`` applied to each column of ``X``: a ``(length, k)`` result."""
    k = X.shape[1]
    rtype = np.result_type(dtype, value_dtype(X.dtype, "x"))
    out = np.empty((length, k), rtype)
    for j in range(k):
        out[:, j] = product(X[:, j])
    return out


def _tensordot(a, b, axes=2):
    if is_integer(axes):
        if axes != 1:
            raise ValueError(f"tensordot of a tiled block contracts one axis, got axes={axes}")
        axes = ((a.ndim - 1,), (0,))
    ia, ib = axes
    ia = tuple(np.atleast_1d(ia).tolist())
    ib = tuple(np.atleast_1d(ib).tolist())
    if len(ia) != 1 or len(ib) != 1:
        raise ValueError(f"tensordot of a tiled block contracts one axis, got axes={axes!r}")
    ia, ib = ia[0] % np.ndim(a), ib[0] % np.ndim(b)
    if np.ndim(a) == 2 and ia == 0:
        a = a.T
    if np.ndim(b) == 2 and ib == 1:
        b = b.T
    return _matmul(a, b)


def _concatenate(arrays, axis=0):
    """Chunks (tiled, scipy or dense) joined into one scipy ``csr_array``."""
    if axis not in (0, 1, -1, -2):
        raise ValueError(f"tiled blocks concatenate along axis 0 or 1, got {axis}")
    parts = [a.to_scipy() if isinstance(a, _CHUNK_TYPES) else sp.csr_array(a) for a in arrays]
    join = sp.vstack if axis % 2 == 0 else sp.hstack
    return sp.csr_array(join(parts, format="csr"))


_HANDLED = {
    np.transpose: lambda a, axes=None: a.transpose(axes),
    np.dot: lambda a, b, out=None: _matmul(a, b),
    np.matmul: lambda a, b, **kw: _matmul(a, b),
    np.tensordot: _tensordot,
    np.concatenate: lambda arrays, axis=0, **kw: _concatenate(arrays, axis),
    np.shape: lambda a: a.shape,
    np.ndim: lambda a: 2,
    np.result_type: lambda *args: np.result_type(*(getattr(a, "dtype", a) for a in args)),
}


# -- Dask registrations ----------------------------------------------------

for _t in _CHUNK_TYPES:
    register_chunk_type(_t)
    concatenate_lookup.register(_t, _concatenate)
    tensordot_lookup.register(_t, _tensordot)


@sizeof.register(TransposedTiledMatrix)
def _sizeof_transposed(A) -> int:
    return sizeof(A.base)


def _register_distributed() -> None:
    try:
        from distributed.protocol import dask_deserialize, dask_serialize
        from distributed.protocol.numpy import deserialize_numpy_ndarray, serialize_numpy_ndarray
    except ImportError:  # pragma: no cover - distributed is a dependency
        return

    @dask_serialize.register(TiledBlock)
    def _serialize(B: TiledBlock):
        lay = B.layout
        headers, frames, counts = [], [], []
        for a in lay.arrays():
            h, f = serialize_numpy_ndarray(a)
            headers.append(h)
            counts.append(len(f))
            frames.extend(f)
        header = {"shape": list(lay.shape), "tile": lay.tile, "dtype": B.dtype.str,
                  "arrays": headers, "counts": counts}
        return header, frames

    @dask_deserialize.register(TiledBlock)
    def _deserialize(header, frames):
        arrays, i = [], 0
        for h, k in zip(header["arrays"], header["counts"]):
            arrays.append(deserialize_numpy_ndarray(h, frames[i:i + k]))
            i += k
        return _rebuild_block(tuple(header["shape"]), header["tile"], header["dtype"], *arrays)


_register_distributed()


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
        return _matmul_graph(self, other)

    def __rmatmul__(self, other):
        other = self._operand(other, -1, self.shape[0], self.chunks[0], "x @ A")
        if other.ndim == 1:
            return _matmul_graph(self.T, other)
        return _matmul_graph(self.T, other.T).T

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
    return _matmul(block, x)


@asafe.typed(asafe.COMPUTE)
def _sum_parts(*parts):
    """The partial products of one row of chunks, added."""
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def _matmul_graph(A: "TiledArray", x, kernel=None) -> da.Array:
    """``A @ x``: one task per chunk (the kernels), then one sum per row of chunks.

    ``x`` is checked (:meth:`TiledArray._operand`); a numpy ``x`` enters the
    graph once, cut like the matrix's columns. dask's generic ``matmul`` (a
    blockwise product, a reduction and a squeeze: four tasks per chunk) gives
    the same result through the chunks' ``np.matmul``; this graph has one.
    ``kernel(block, x_part)`` replaces the chunk product (default
    :func:`_block_matmul`): the ``darray`` benchmark times this graph with a
    kernel that does no work, the floor of any product on a cluster.
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
    if isinstance(x, da.Array) and not isinstance(x, TiledArray) and isinstance(x._meta, _CHUNK_TYPES):
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


_GRAPHS: dict[tuple, Any] = {}
_GRAPHS_LOCK = threading.Lock()


def _graph500_parts(key):
    """The Kronecker graph and the dense tiles of ``key``, made once per process (the last kept).

    Only the sparse graph (``edgefactor`` non-zeros per row on average) is
    generated whole in each worker process; the dense tiles, most of the
    matrix's values, are made by the chunks that hold them.
    """
    from . import graph500

    scale, tile, fraction, edgefactor, seed = key
    with _GRAPHS_LOCK:
        parts = _GRAPHS.get(key)
        if parts is None:
            _GRAPHS.clear()
            graph = graph500._kronecker(scale, edgefactor, seed)
            blocks = graph500._dense_tiles(scale, tile, fraction, seed)
            parts = _GRAPHS[key] = (graph, blocks)
    return parts


def _graph500_rows(key, r0, r1):
    """Rows ``r0:r1`` (tile-aligned) of ``graph500.mixed_matrix(*key)`` as CSR, without making the rest."""
    from . import graph500

    scale, tile, fraction, edgefactor, seed = key
    graph, blocks = _graph500_parts(key)
    n = 1 << scale
    lo, hi = int(graph.indptr[r0]), int(graph.indptr[r1])
    panel = sp.csr_matrix((graph.data[lo:hi], graph.indices[lo:hi], graph.indptr[r0:r1 + 1] - lo),
                          shape=(r1 - r0, n))
    mine = blocks[(blocks[:, 0] >= r0 // tile) & (blocks[:, 0] < -(-r1 // tile))]
    if len(mine) == 0:
        return panel
    local = mine - np.array([r0 // tile, 0])
    # the same steps as mixed_matrix, on this band of tile rows only
    sparse_part = graph500._without_tiles(_square(panel, n), n, tile, local)[:r1 - r0]
    # the dense values depend on their global positions: made at rows r0:r1 of an n x n CSR
    dense_part = graph500._dense_csr(graph500._value_key(seed), n, tile, mine)[r0:r1]
    out = (sparse_part + dense_part).tocsr()
    out.sort_indices()
    return out


def _square(panel, n):
    """``panel`` (``h x n``) padded with empty rows to ``n x n`` (shares its arrays)."""
    h = panel.shape[0]
    indptr = np.concatenate([panel.indptr, np.full(n - h, panel.indptr[-1], panel.indptr.dtype)])
    return sp.csr_matrix((panel.data, panel.indices, indptr), shape=(n, n))


@asafe.typed(asafe.COMPUTE)
def _block_from_graph500(key, r0, r1, c0, c1, tile, threshold, compress) -> TiledBlock:
    S = _graph500_rows(key, r0, r1)
    if (c0, c1) != (0, S.shape[1]):
        S = S[:, c0:c1]
    return _block_from_csr(S, tile, threshold, compress)


def from_graph500(scale: int, tile: int = 256, dense_fraction: float = 0.0, edgefactor: int = 16, seed: int = 0,
                  chunks=None, *, threshold=None, reuse=None, compress=None, name: str | None = None) -> TiledArray:
    """A dask array of :func:`graph500.mixed_matrix` generated on the workers.

    Only the parameters are in the graph. Each worker process generates the
    sparse Kronecker graph once (it keeps the last one, a few bytes per edge);
    each chunk makes its own dense tiles and its band of the graph, so the
    dense values, most of the matrix, are made once, where they are stored.
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

    scale, tile, fraction, edgefactor, seed = graph500._check_mixed(scale, tile, dense_fraction, edgefactor, seed)
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
