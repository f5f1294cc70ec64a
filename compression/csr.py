"""One CSR block: its compact index dtype, iso-valued values, and the numba kernels that convert and multiply it.

The forms below are those of a :class:`~asafe.compression.SparseTile` (and of
the tiles a :class:`~asafe.compression.TiledMatrix` hands out): CSR with
``int32`` row pointers (``int64`` beyond 2**31 elements) and the narrowest
unsigned column index that holds the block's width (:func:`index_dtype`).

* :func:`count_nonzero_rows` and :func:`dense_to_csr` -- a dense block to CSR
  in two passes (count, then fill), the engine's conversion when it compresses
  a tile;
* :func:`csr_to_dense` and :func:`csr_matvec` -- back to dense, and ``y = S @ x``
  for one block;
* :func:`is_iso` -- whether every stored value is the same, bit for bit (the
  product kernels then read one value instead of the values array, see
  :mod:`~asafe.compression.kernels`);
* :func:`check_vector` and :func:`check_output` -- the O(1) checks of a
  kernel's vectors, shared by every checked entry point (numba does no bounds
  checks).

Each public function is a thin typed wrapper around a private ``@njit`` kernel
of this module.
"""
from __future__ import annotations

from . import _openmp  # noqa: F401  (the OpenMP wait policy, before numba starts)

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

__all__ = [
    "index_dtype",
    "is_iso",
    "check_vector",
    "check_output",
    "count_nonzero_rows",
    "dense_to_csr",
    "csr_to_dense",
    "csr_matvec",
]

_JIT = dict(nogil=True, cache=True)
_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)


def index_dtype(width: int) -> np.dtype:
    """The compact unsigned index dtype for column indices below ``width``.

    Parameters
    ----------
    width : int
        The tile width (in-tile indices) or the matrix width.

    Returns
    -------
    numpy.dtype
        ``uint8`` up to 256, ``uint16`` up to 65536, ``uint32`` up to 2**32,
        else ``uint64``.

    Examples
    --------
    >>> index_dtype(128), index_dtype(256), index_dtype(257), index_dtype(65536)
    (dtype('uint8'), dtype('uint8'), dtype('uint16'), dtype('uint16'))
    """
    for dtype in (np.uint8, np.uint16, np.uint32):
        if width <= int(np.iinfo(dtype).max) + 1:
            return np.dtype(dtype)
    return np.dtype(np.uint64)


@njit(**_JIT)
def _bits_all_equal(bits):
    first = bits[0]
    for k in range(1, bits.size):
        if bits[k] != first:
            return False
    return True


def is_iso(data: np.ndarray) -> bool:
    """Whether every value of a non-empty 1-D ``data`` array is the same, bit for bit.

    Bit for bit: ``0.0`` and ``-0.0`` differ, and NaN is never iso (two NaNs
    may carry different payloads; the first one's decides). Stops at the first
    value that differs, so a non-iso array costs a few loads.

    Examples
    --------
    >>> is_iso(np.ones(5)), is_iso(np.array([1.0, 2.0])), is_iso(np.array([0.0, -0.0]))
    (True, False, False)
    >>> is_iso(np.zeros(0))
    False
    """
    if data.size == 0:
        return False
    if np.isnan(data[0]):
        return False
    bits = np.ascontiguousarray(data).view(np.uint64 if data.dtype.itemsize == 8 else np.uint32)
    return bool(_bits_all_equal(bits))


def check_vector(a, name: str, length: int, what: str) -> None:
    """O(1) check of a kernel vector: a C-contiguous float64 ndarray of shape ``(length,)``.

    numba does no bounds checks, so every checked entry point of the kernels
    (:func:`csr_matvec` here, :func:`~asafe.compression.kernels.matvec` and
    :func:`~asafe.compression.kernels.rmatvec`) checks its vectors with this
    function first. ``TypeError`` names a wrong type or dtype, ``ValueError`` a
    wrong shape (``what`` says where the length comes from) or layout.

    Examples
    --------
    >>> check_vector(np.zeros(3), "x", 3, "the number of columns")
    >>> check_vector(np.zeros(2), "x", 3, "the number of columns")
    Traceback (most recent call last):
    ...
    ValueError: x must have shape (3,) (the number of columns), got (2,)
    """
    if isinstance(a, np.ndarray) and a.dtype == _F64 and a.shape == (length,) and a.flags.c_contiguous:
        return  # the common case in one test; the messages below say what is wrong
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of float64, got {type(a).__name__}")
    if a.dtype != _F64:
        raise TypeError(f"{name} must have dtype float64, got {a.dtype}; convert it with "
                        f"np.ascontiguousarray({name}, dtype=np.float64)")
    if a.shape != (length,):
        raise ValueError(f"{name} must have shape ({length},) ({what}), got {a.shape}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous; pass np.ascontiguousarray({name})")


def check_output(y, x, length: int, what: str) -> None:
    """O(1) check of a kernel's output ``y``: :func:`check_vector`, writable, not overlapping ``x``.

    Examples
    --------
    >>> x = np.zeros(3)
    >>> check_output(x[:2], x, 2, "the number of rows")
    Traceback (most recent call last):
    ...
    ValueError: y must not overlap x (TiledMatrix.matvec(x, out=x) handles aliasing)
    """
    check_vector(y, "y", length, what)
    if not y.flags.writeable:
        raise ValueError("y is read-only")
    if np.may_share_memory(x, y):  # bounds only: O(1)
        raise ValueError("y must not overlap x (TiledMatrix.matvec(x, out=x) handles aliasing)")


# ---------------------------------------------------------------------------
# Conversions (count, then fill) and the product of one block
# ---------------------------------------------------------------------------

@njit(**_JIT)
def _count_rows(block, counts):
    rows, cols = block.shape
    total = 0
    for r in range(rows):
        k = 0
        for c in range(cols):
            if block[r, c] != 0:
                k += 1
        counts[r] = k
        total += k
    return total


def count_nonzero_rows(block: np.ndarray) -> tuple[int, np.ndarray]:
    """Count the non-zeros of each row of a 2-D block (one pass over it).

    NaN counts as non-zero (it is not equal to 0), ``-0.0`` as zero.

    Returns
    -------
    total : int
    counts : numpy.ndarray of int64, one per row

    Examples
    --------
    >>> count_nonzero_rows(np.array([[0.0, 1.0], [np.nan, 2.0]]))
    (3, array([1, 2]))
    """
    counts = np.empty(block.shape[0], np.int64)
    total = _count_rows(block, counts)
    return int(total), counts


@njit(**_JIT)
def _fill_csr(block, indptr, indices, data):
    rows, cols = block.shape
    k = 0
    for r in range(rows):
        for c in range(cols):
            v = block[r, c]
            if v != 0:
                indices[k] = c
                data[k] = v
                k += 1
        indptr[r + 1] = k


def dense_to_csr(block: np.ndarray, counts: np.ndarray | None = None, index=None):
    """Convert a dense 2-D block to CSR arrays with compact column indices.

    ``counts`` (from :func:`count_nonzero_rows`) skips the counting pass.

    Returns
    -------
    indptr : int32 array (int64 for blocks over 2**31 elements)
    indices : compact unsigned array (see :func:`index_dtype`)
    data : array of the block's dtype

    Examples
    --------
    >>> indptr, indices, data = dense_to_csr(np.array([[0.0, 5.0], [6.0, 0.0]]))
    >>> indptr, indices, data
    (array([0, 1, 2], dtype=int32), array([1, 0], dtype=uint8), array([5., 6.]))
    """
    rows, cols = block.shape
    if counts is None:
        total, counts = count_nonzero_rows(block)
    else:
        total = int(counts.sum())
    indptr = np.zeros(rows + 1, np.int32 if rows * cols < 2**31 else np.int64)
    indices = np.empty(total, index_dtype(cols) if index is None else index)
    data = np.empty(total, block.dtype)
    _fill_csr(block, indptr, indices, data)
    return indptr, indices, data


@njit(**_JIT)
def _csr_to_dense(indptr, indices, data, out):
    for r in range(out.shape[0]):
        for k in range(indptr[r], indptr[r + 1]):
            out[r, indices[k]] += data[k]


def csr_to_dense(indptr, indices, data, shape, dtype=None) -> np.ndarray:
    """Expand CSR arrays into a new dense array (duplicates are summed).

    Examples
    --------
    >>> csr_to_dense(np.array([0, 1, 1]), np.array([1], np.uint8), np.array([7.0]), (2, 2))
    array([[0., 7.],
           [0., 0.]])
    """
    out = np.zeros(shape, data.dtype if dtype is None else dtype)
    _csr_to_dense(indptr, indices, data, out)
    return out


@njit(**_JIT)
def _csr_matvec(indptr, indices, data, x, y):
    for r in range(indptr.size - 1):
        s = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            s += np.float64(data[k]) * x[indices[k]]
        y[r] = s


def _check_index_array(a, name: str, size=None) -> None:
    if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype.kind not in "iu":
        got = f"{a.ndim}-D {a.dtype}" if isinstance(a, np.ndarray) else type(a).__name__
        raise TypeError(f"{name} must be a 1-D numpy array of integers, got {got}")
    if size is not None and a.size != size:
        raise ValueError(f"{name} must have length {size}, got {a.size}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")


def csr_matvec(indptr, indices, data, x: np.ndarray, y: np.ndarray, *, shape) -> np.ndarray:
    """``y[:] = S @ x`` for one ``shape = (rows, cols)`` CSR block (float64 ``x`` and ``y``).

    O(1) checks: ``indptr`` has ``rows + 1`` integers from 0 to ``len(indices)``,
    ``indices`` (integers) and ``data`` (float32 or float64) have the same
    length, ``x`` is a C-contiguous float64 vector of length ``cols`` and ``y``
    a writable one of length ``rows`` not overlapping ``x``; wrong types raise
    ``TypeError``, wrong lengths ``ValueError``. The structure itself
    (``indptr`` non-decreasing, ``indices < cols``) is trusted, as by scipy's
    ``sparsetools``: checking it is an O(nnz) pass, which
    :class:`~asafe.compression.SparseTile` makes once at construction.

    Examples
    --------
    >>> csr_matvec(np.array([0, 1, 2], np.int32), np.array([1, 0], np.uint8),
    ...            np.array([5.0, 6.0]), np.array([1.0, 2.0]), np.empty(2), shape=(2, 2))
    array([10.,  6.])
    >>> csr_matvec(np.array([0, 1, 2], np.int32), np.array([1, 0], np.uint8),
    ...            np.array([5.0, 6.0]), np.array([1.0]), np.empty(2), shape=(2, 2))
    Traceback (most recent call last):
    ...
    ValueError: x must have shape (2,) (the number of columns of the block), got (1,)
    """
    if not (isinstance(shape, tuple) and len(shape) == 2
            and all(isinstance(v, (int, np.integer)) and v >= 0 for v in shape)):
        raise ValueError(f"shape must be two non-negative integers (rows, cols), got {shape!r}")
    rows, cols = int(shape[0]), int(shape[1])
    _check_index_array(indptr, "indptr", rows + 1)
    _check_index_array(indices, "indices")
    if not isinstance(data, np.ndarray) or data.ndim != 1 or data.dtype not in (_F64, _F32):
        got = f"{data.ndim}-D {data.dtype}" if isinstance(data, np.ndarray) else type(data).__name__
        raise TypeError(f"data must be a 1-D numpy array of float64 or float32, got {got}")
    if data.size != indices.size:
        raise ValueError(f"data and indices must have the same length, got {data.size} and {indices.size}")
    if not data.flags.c_contiguous:
        raise ValueError("data must be C-contiguous")
    if indptr[0] != 0 or indptr[-1] != indices.size:
        raise ValueError(f"indptr must run from 0 to len(indices) = {indices.size}, "
                         f"got {int(indptr[0])} to {int(indptr[-1])}")
    check_vector(x, "x", cols, "the number of columns of the block")
    check_output(y, x, rows, "the number of rows of the block")
    _csr_matvec(indptr, indices, data, x, y)
    return y
