"""The chunk types of a tiled dask array: :class:`TiledBlock` and :class:`TransposedTiledBlock`.

A :class:`TiledBlock` is a :class:`~asafe.compression.TiledMatrix` with the
part of the array protocol Dask calls on chunks: ``ndim``, ``__getitem__`` for
whole tiles, ``T`` (:class:`TransposedTiledBlock`), ``np.matmul`` (dask's
``A @ x`` runs ``np.matmul(block, x_block)`` per block, then sums over the
contraction axis), ``np.dot``/``np.tensordot``, ``np.transpose`` and
``np.concatenate`` (to a scipy ``csr_array``: ``A.compute()`` returns one).
Both are registered with Dask as pydata/sparse and cupy are, when this module is
imported: ``register_chunk_type``, ``concatenate_lookup``, ``tensordot_lookup``,
``sizeof`` and distributed's ``dask_serialize`` (the compact tile arrays travel
as frames, no pickle of the values). ``np.asarray(block)`` raises: densifying
is explicit (``block.to_dense()``, ``A.map_blocks(...)``).

The dask arrays made of these chunks, and their builders, are in
:mod:`asafe.compression.array`.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from dask.array.chunk_types import register_chunk_type
from dask.array.dispatch import concatenate_lookup, tensordot_lookup
from dask.sizeof import sizeof

from .layout import LAYOUT_ARRAYS, Layout
from .matrix import TiledMatrix, TransposedTiledMatrix
from .tiles import is_integer, value_dtype

__all__ = ["TiledBlock", "TransposedTiledBlock", "CHUNK_TYPES", "matmul"]


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
            return matmul(*inputs)
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
        return matmul(self, x)

    def __rmatmul__(self, x):
        if sp.issparse(x):
            return NotImplemented
        return matmul(x, self)

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


#: The two chunk types (for ``isinstance`` tests).
CHUNK_TYPES = (TiledBlock, TransposedTiledBlock)


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


def matmul(a, b):
    """``a @ b`` with one tiled operand and a dense 1-D or 2-D one (numpy's shapes).

    What ``np.matmul``, ``np.dot`` and ``@`` do with a chunk: one kernel call per
    column of a 2-D operand; a tiled block on the left multiplies by
    :meth:`~asafe.compression.TiledMatrix.matvec`, on the right by
    :meth:`~asafe.compression.TiledMatrix.rmatvec`.

    Examples
    --------
    >>> B = TiledBlock.wrap(TiledMatrix.from_dense(np.eye(2), tile=1))
    >>> matmul(B, np.ones(2)), matmul(np.ones((1, 2)), B)
    (array([1., 1.]), array([[1., 1.]]))
    """
    if isinstance(a, CHUNK_TYPES) and not isinstance(b, CHUNK_TYPES):
        x = _dense_operand(b, "the right operand")
        if x.ndim == 1:
            return a.matvec(x)
        if x.shape[0] != a.shape[1]:
            raise ValueError(
                f"matmul: a tiled block of shape {a.shape} needs a right operand with {a.shape[1]} rows, "
                f"got shape {x.shape}"
            )
        return _columns(a.matvec, x, a.shape[0], a.dtype)
    if isinstance(b, CHUNK_TYPES) and not isinstance(a, CHUNK_TYPES):
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
    return matmul(a, b)


def _concatenate(arrays, axis=0):
    """Chunks (tiled, scipy or dense) joined into one scipy ``csr_array``."""
    if axis not in (0, 1, -1, -2):
        raise ValueError(f"tiled blocks concatenate along axis 0 or 1, got {axis}")
    parts = [a.to_scipy() if isinstance(a, CHUNK_TYPES) else sp.csr_array(a) for a in arrays]
    join = sp.vstack if axis % 2 == 0 else sp.hstack
    return sp.csr_array(join(parts, format="csr"))


_HANDLED = {
    np.transpose: lambda a, axes=None: a.transpose(axes),
    np.dot: lambda a, b, out=None: matmul(a, b),
    np.matmul: lambda a, b, **kw: matmul(a, b),
    np.tensordot: _tensordot,
    np.concatenate: lambda arrays, axis=0, **kw: _concatenate(arrays, axis),
    np.shape: lambda a: a.shape,
    np.ndim: lambda a: 2,
    np.result_type: lambda *args: np.result_type(*(getattr(a, "dtype", a) for a in args)),
}


# -- Dask registrations ----------------------------------------------------

for _t in CHUNK_TYPES:
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
