"""Tile objects: one block of a tiled matrix, dense, sparse or empty.

A tile is the unit the engine produces and Dask ships. Three kinds:

* :class:`DenseTile` -- a C-contiguous 2-D float64 or float32 array;
* :class:`SparseTile` -- CSR with *compact in-tile* column indices
  (``uint8`` for tiles up to 256 columns wide, ``uint16`` up to 65536, see
  :func:`~asafe.compression.csr.index_dtype`) and ``int32`` row pointers;
* :class:`EmptyTile` -- only a shape and a dtype (what the engine emits for an
  all-zero block; a :class:`~asafe.compression.TiledMatrix` does not store it).

Every tile reports two sizes: ``logical_nbytes`` is the dense-equivalent size
(``rows * cols * itemsize``, what the block *means*) and ``nbytes`` the size of
the arrays it actually holds (what it costs in memory and on the wire). The
distributed runtime counts communication in logical bytes, so that compression
does not change the signal it is judged by, and ``dask.sizeof`` reports
``nbytes`` (registered below) so that Dask's memory accounting sees the real
size.

Tiles pickle through ``__reduce__`` with their raw arrays, never a dense
expansion: with pickle protocol 5 (what Dask uses) the arrays travel as
out-of-band buffers without copies, and a sparse tile costs bytes in proportion
to its non-zeros. Constructors check shapes and dtypes in O(1) (plus one O(nnz)
pass for :class:`SparseTile` with ``check=True``) and never inspect a dense
block's values: deciding whether a block is worth compressing is the engine's
job (:mod:`asafe.compression.engine`), and it must not happen behind its back.
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from dask.sizeof import sizeof

from asafe.schedulers import sizes

from . import csr

__all__ = [
    "Tile",
    "DenseTile",
    "SparseTile",
    "EmptyTile",
    "DENSE",
    "SPARSE",
    "EMPTY",
    "value_dtype",
]

DENSE = "dense"
SPARSE = "sparse"
EMPTY = "empty"

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# A Python object header, its shape tuple and the array headers: what a tile
# costs beyond its buffers (reported by dask.sizeof).
_OVERHEAD = 200


def value_dtype(dtype, what: str = "values") -> np.dtype:
    """The value dtype a tile or matrix stores for input of ``dtype``.

    float32 and float64 are kept; bool, integers and float16 become float64
    (float16 becomes float32); anything else (complex, object, strings, ...) is
    refused: the tile engine is real-valued.

    Parameters
    ----------
    dtype : dtype-like
    what : str
        How to call the input in the error message.

    Raises
    ------
    TypeError
        For complex and non-numeric dtypes.

    Examples
    --------
    >>> value_dtype(np.float32), value_dtype(np.int64), value_dtype(bool)
    (dtype('float32'), dtype('float64'), dtype('float64'))
    >>> value_dtype(np.complex128)
    Traceback (most recent call last):
    ...
    TypeError: values must be real (float64, float32, integer or bool), got complex128; ...
    """
    dtype = np.dtype(dtype)
    if dtype in _FLOATS:
        return dtype
    if dtype == np.float16:
        return np.dtype(np.float32)
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    hint = "; take the real part (.real) or split real and imaginary parts" if dtype.kind == "c" else ""
    raise TypeError(
        f"{what} must be real (float64, float32, integer or bool), got {dtype}{hint}"
    )


def _check_shape(shape) -> tuple[int, int]:
    try:
        rows, cols = (int(s) for s in shape)
    except (TypeError, ValueError):
        raise ValueError(f"a tile shape is two non-negative integers, got {shape!r}") from None
    if rows < 0 or cols < 0:
        raise ValueError(f"a tile shape is two non-negative integers, got {shape!r}")
    return rows, cols


class Tile:
    """Base class of the three tile kinds.

    Attributes
    ----------
    kind : str
        ``"dense"``, ``"sparse"`` or ``"empty"``.
    shape : tuple of int
    dtype : numpy.dtype

    Examples
    --------
    >>> t = DenseTile(np.ones((2, 3)))
    >>> isinstance(t, Tile), t.kind, t.shape
    (True, 'dense', (2, 3))
    """

    __slots__ = ()
    kind: str = ""

    @property
    def logical_nbytes(self) -> int:
        """Dense-equivalent size in bytes (``rows * cols * itemsize``).

        Examples
        --------
        >>> EmptyTile((128, 128)).logical_nbytes
        131072
        """
        rows, cols = self.shape
        return rows * cols * self.dtype.itemsize

    @property
    def nbytes(self) -> int:  # pragma: no cover - overridden
        """Bytes of the arrays the tile holds (its in-memory and wire size)."""
        raise NotImplementedError

    @property
    def nnz(self) -> int:  # pragma: no cover - overridden
        """Stored values (every element of a dense tile)."""
        raise NotImplementedError

    def to_dense(self) -> np.ndarray:  # pragma: no cover - overridden
        """The block as a dense 2-D array."""
        raise NotImplementedError

    def to_scipy(self) -> sp.csr_array:
        """The block as a ``scipy.sparse.csr_array`` (zeros of a dense tile dropped).

        Examples
        --------
        >>> DenseTile(np.array([[0.0, 2.0]])).to_scipy().nnz
        1
        """
        return sp.csr_array(self.to_dense())

    def matvec(self, x) -> np.ndarray:
        """``tile @ x`` for a 1-D ``x`` (float64 result, float32 for float32 both).

        Examples
        --------
        >>> SparseTile.from_scipy(np.array([[0.0, 2.0], [3.0, 0.0]])).matvec([1.0, 1.0])
        array([2., 3.])
        """
        x = np.asarray(x)
        rows, cols = self.shape
        if x.ndim != 1 or x.shape[0] != cols:
            raise ValueError(
                f"x must be a 1-D array of length {cols} to multiply a {rows}x{cols} tile, "
                f"got shape {x.shape}"
            )
        out = np.result_type(self.dtype, value_dtype(x.dtype, "x"))
        return self._matvec(np.ascontiguousarray(x, dtype=np.float64)).astype(out, copy=False)

    def __matmul__(self, x):
        return self.matvec(x)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, "
            f"nnz={self.nnz}, nbytes={self.nbytes})"
        )


class DenseTile(Tile):
    """A dense block: a C-contiguous 2-D float64 or float32 array.

    Parameters
    ----------
    values : array_like, 2-D
        Kept without a copy when it is already a C-contiguous float32/float64
        array; other real dtypes are converted (see :func:`value_dtype`). The
        values are never inspected.

    Examples
    --------
    >>> D = np.arange(6.0).reshape(2, 3)
    >>> t = DenseTile(D)
    >>> t.values is D, t.nbytes, t.logical_nbytes, t.nnz
    (True, 48, 48, 6)
    """

    __slots__ = ("values",)
    kind = DENSE

    def __init__(self, values):
        values = np.asarray(values)
        if values.ndim != 2:
            raise ValueError(f"a dense tile is a 2-D array, got {values.ndim}-D with shape {values.shape}")
        self.values = np.ascontiguousarray(values, dtype=value_dtype(values.dtype))

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)

    @property
    def nnz(self) -> int:
        return int(self.values.size)

    def to_dense(self) -> np.ndarray:
        """The values (not a copy).

        Examples
        --------
        >>> DenseTile(np.eye(2)).to_dense()
        array([[1., 0.],
               [0., 1.]])
        """
        return self.values

    def _matvec(self, x):
        return self.values @ x

    def __reduce__(self):
        return (DenseTile, (self.values,))


class SparseTile(Tile):
    """A sparse block in CSR form with compact in-tile column indices.

    Parameters
    ----------
    shape : (int, int)
    indptr : array_like of int, length ``rows + 1``
        Row pointers, starting at 0; stored as int32 (int64 beyond 2**31
        elements).
    indices : array_like of int, length ``nnz``
        Column indices in ``[0, cols)``; kept when already an unsigned dtype
        wide enough, else converted to :func:`~asafe.compression.csr.index_dtype`.
    data : array_like, length ``nnz``
        Values (float64 or float32; other real dtypes converted).
    check : bool
        Validate lengths, pointer monotonicity and index range (one O(nnz)
        pass). Internal constructors that built the arrays pass ``False``.

    Examples
    --------
    >>> t = SparseTile((2, 300), [0, 1, 2], [299, 0], [1.0, 2.0])
    >>> t.indices.dtype, t.nnz, t.nbytes
    (dtype('uint16'), 2, 32)
    >>> t.to_dense()[0, 299], t.logical_nbytes
    (np.float64(1.0), 4800)
    """

    __slots__ = ("shape", "indptr", "indices", "data")
    kind = SPARSE

    def __init__(self, shape, indptr, indices, data, check: bool = True):
        rows, cols = _check_shape(shape)
        self.shape = (rows, cols)
        ptype = np.int32 if rows * cols < 2**31 else np.int64
        self.indptr = np.ascontiguousarray(indptr, dtype=ptype)
        self.indices = _compact_indices(np.asarray(indices), cols)
        data = np.asarray(data)
        self.data = np.ascontiguousarray(data, dtype=value_dtype(data.dtype))
        if check:
            self._check()

    def _check(self) -> None:
        rows, cols = self.shape
        p, i, d = self.indptr, self.indices, self.data
        if p.ndim != 1 or p.size != rows + 1:
            raise ValueError(f"indptr must have length rows + 1 = {rows + 1}, got shape {p.shape}")
        if i.ndim != 1 or d.ndim != 1 or i.size != d.size:
            raise ValueError(f"indices and data must be 1-D of equal length, got {i.shape} and {d.shape}")
        if p[0] != 0 or p[-1] != i.size or (rows and np.any(np.diff(p) < 0)):
            raise ValueError(
                f"indptr must rise from 0 to nnz = {i.size} without decreasing, "
                f"got {p[0]} ... {p[-1]}"
            )
        if i.size and int(i.max()) >= cols:
            raise ValueError(f"column index {int(i.max())} out of range for a tile {cols} wide")

    @classmethod
    def from_parts(cls, shape, indptr, indices, data) -> "SparseTile":
        """Trusted constructor: the arrays are taken as they are, with no conversion and no check.

        For arrays already in a tile's form (``int32`` or ``int64`` pointers,
        compact unsigned indices, float values): the engine's conversion of a
        block, the tiles a matrix hands out, unpickling. Anything else goes
        through ``SparseTile(...)``.

        Examples
        --------
        >>> t = SparseTile.from_parts((1, 2), np.array([0, 1], np.int32), np.array([1], np.uint8), np.array([4.0]))
        >>> t.to_dense()
        array([[0., 4.]])
        """
        self = object.__new__(cls)
        self.shape = tuple(shape)
        self.indptr, self.indices, self.data = indptr, indices, data
        return self

    @classmethod
    def from_scipy(cls, block) -> "SparseTile":
        """A sparse tile from a scipy sparse block (or a dense array, via scipy).

        Duplicates are summed and explicit zeros dropped.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> SparseTile.from_scipy(sp.coo_array(([5.0], ([1], [2])), shape=(3, 3))).nnz
        1
        """
        S = sp.csr_array(block, copy=True)
        S.sum_duplicates()
        S.eliminate_zeros()
        return cls(S.shape, S.indptr, S.indices, S.data)

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.indices.nbytes + self.data.nbytes)

    def to_dense(self) -> np.ndarray:
        """The block as a new dense array.

        Examples
        --------
        >>> SparseTile((1, 2), [0, 1], [1], [4.0]).to_dense()
        array([[0., 4.]])
        """
        return csr.csr_to_dense(self.indptr, self.indices, self.data, self.shape)

    def to_scipy(self) -> sp.csr_array:
        """The block as a ``scipy.sparse.csr_array`` (its arrays, indices widened).

        Examples
        --------
        >>> SparseTile((1, 2), [0, 1], [1], [4.0]).to_scipy().toarray()
        array([[0., 4.]])
        """
        return sp.csr_array(
            (self.data, self.indices.astype(np.int32), self.indptr), shape=self.shape
        )

    def _matvec(self, x):
        return csr.csr_matvec(self.indptr, self.indices, self.data, x, np.empty(self.shape[0]),
                              shape=self.shape)

    def __reduce__(self):
        return (SparseTile.from_parts, (self.shape, self.indptr, self.indices, self.data))


def _compact_indices(indices: np.ndarray, cols: int) -> np.ndarray:
    if indices.dtype.kind == "u" and cols <= np.iinfo(indices.dtype).max + 1:
        return np.ascontiguousarray(indices)
    if indices.size and indices.dtype.kind in "iu" and (int(indices.min()) < 0 or int(indices.max()) >= cols):
        bad = int(indices.min()) if int(indices.min()) < 0 else int(indices.max())
        raise ValueError(f"column index {bad} out of range for a tile {cols} wide")
    if indices.dtype.kind not in "iu" and indices.size:
        raise TypeError(f"indices must be integers, got {indices.dtype}")
    return np.ascontiguousarray(indices, dtype=csr.index_dtype(cols))


class EmptyTile(Tile):
    """An all-zero block: a shape and a dtype, nothing stored.

    Examples
    --------
    >>> t = EmptyTile((2, 2), np.float32)
    >>> t.nnz, t.nbytes, t.logical_nbytes
    (0, 0, 16)
    >>> t @ np.ones(2)
    array([0., 0.])
    """

    __slots__ = ("shape", "dtype")
    kind = EMPTY

    def __init__(self, shape, dtype=np.float64):
        self.shape = _check_shape(shape)
        self.dtype = value_dtype(dtype, "dtype")

    @property
    def nnz(self) -> int:
        return 0

    @property
    def nbytes(self) -> int:
        return 0

    def to_dense(self) -> np.ndarray:
        """A new array of zeros."""
        return np.zeros(self.shape, self.dtype)

    def to_scipy(self) -> sp.csr_array:
        """An empty ``csr_array`` of the tile's shape."""
        return sp.csr_array(self.shape, dtype=self.dtype)

    def _matvec(self, x):
        return np.zeros(self.shape[0])

    def __reduce__(self):
        return (EmptyTile, (self.shape, self.dtype.str))


@sizeof.register(Tile)
def _sizeof_tile(tile: Tile) -> int:
    sizes.note(tile.logical_nbytes, tile.nbytes)  # for the cluster plugins (asafe.schedulers.sizes)
    return tile.nbytes + _OVERHEAD


sizes.register(Tile, sizeof=False)


def is_integer(value) -> bool:
    """Whether ``value`` is an integer (numpy integers included, bool excluded).

    Examples
    --------
    >>> is_integer(3), is_integer(np.int16(3)), is_integer(True), is_integer(3.0)
    (True, True, False, False)
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
