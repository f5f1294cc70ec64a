"""TiledMatrix: a matrix cut into tiles that are dense, sparse or absent.

An ``m x n`` matrix is cut into ``tile x tile`` blocks on a grid of
``ceil(m / tile) x ceil(n / tile)`` cells; the last tile row and column are
smaller when ``tile`` does not divide the shape. Every stored tile is dense or
sparse (CSR with compact in-tile indices, see :mod:`asafe.compression.tiles`);
all-zero tiles are not stored. Values are float64 or float32.

Storage is the flattened :class:`~asafe.compression.layout.Layout` the numba
kernels walk: no Python object per tile (dense tiles in one buffer, the
non-zeros of sparse tiles merged row by row; that module says why). Tile
objects are made on demand by :meth:`TiledMatrix.tiles` and
:meth:`TiledMatrix.get_tile`: dense tiles as views, sparse tiles as compact
in-tile CSR copies.

Building one
------------
:meth:`~TiledMatrix.from_dense` counts the non-zeros of every tile in one pass,
picks each tile's form by the threshold (see :mod:`asafe.compression.engine`)
and fills the compact arrays in a second pass. :meth:`~TiledMatrix.from_scipy`
takes any scipy.sparse format and goes through CSR without ever making the
whole matrix dense (O(nnz + stored tiles) work and memory beyond the result).
:meth:`~TiledMatrix.from_tiles` takes ``((row_block, col_block), tile)`` pairs
from any iterable, keeps each tile's form, and so builds matrices that would
not fit in memory as dense, one tile at a time. The work of the three is done
in :mod:`asafe.compression.build`; this module holds the matrix itself.

Products and their semantics
----------------------------
``A @ x`` (:meth:`~TiledMatrix.matvec`) and ``A.T @ x`` / ``x @ A``
(:meth:`~TiledMatrix.rmatvec`) take a 1-D ``x``; accumulation is float64; the
result is float32 only when both the matrix and ``x`` are float32 (numpy's
``result_type``). Integer and bool ``x`` count as float64; complex, object or
string ``x`` raise ``TypeError``; a 2-D or wrongly sized ``x`` raises
``ValueError``.

NaN and Inf: ``y[i]`` is the sum of ``A[i, j] * x[j]`` over the *stored*
elements of row ``i``: every element of a dense tile, zeros included (exactly as
numpy's dense ``A.to_dense() @ x``), and the non-zeros of a sparse tile (as
scipy's CSR ``A.to_scipy() @ x``, where an unstored zero never multiplies).
So an Inf or NaN in ``x[j]`` reaches ``y[i]`` when ``(i, j)`` lies in a dense
tile or is a non-zero, and not when it is a zero of a sparse or empty tile.
NaN and Inf in the matrix are non-zeros, hence always stored, and propagate as
in numpy. Which tiles are dense is reported by :meth:`~TiledMatrix.tile_kinds`.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from dask.sizeof import sizeof

from asafe.schedulers import sizes

from . import build, kernels
from . import layout as layout_mod
from .layout import LAYOUT_ARRAYS, Layout
from .tiles import DenseTile, EmptyTile, SparseTile, Tile, is_integer, value_dtype
from .tiling import DENSE_TILE, EMPTY_TILE, SPARSE_TILE, tile_grid

__all__ = ["TiledMatrix", "TransposedTiledMatrix", "EMPTY_TILE", "SPARSE_TILE", "DENSE_TILE"]

_F64 = np.dtype(np.float64)


# ---------------------------------------------------------------------------
# TiledMatrix
# ---------------------------------------------------------------------------


class TiledMatrix:
    """A matrix of dense and sparse tiles, multiplied by numba kernels.

    Build one with :meth:`from_dense`, :meth:`from_scipy` or
    :meth:`from_tiles`; see the module docstring for the layout and the exact
    NaN/Inf semantics of the products.

    Parameters
    ----------
    layout : Layout
        The flattened tiles (constructors build it).
    dtype : numpy.dtype
        float64 or float32.

    Examples
    --------
    >>> D = np.zeros((5, 5)); D[:2, :2] = 1.0; D[4, 4] = 2.0
    >>> A = TiledMatrix.from_dense(D, tile=2, threshold=2)
    >>> A
    TiledMatrix(shape=(5, 5), tile=2, dtype=float64, dense=1, sparse=1, empty=7, nbytes=...)
    >>> A @ np.ones(5)
    array([2., 2., 0., 0., 2.])
    >>> np.array_equal(A.to_dense(), D)
    True
    """

    # numpy defers ``x @ A`` (and other binary operators) to this class.
    __array_ufunc__ = None

    def __init__(self, layout: Layout, dtype=None):
        if not isinstance(layout, Layout):
            raise TypeError(
                "TiledMatrix(layout) takes a Layout; build a matrix with "
                "TiledMatrix.from_dense, from_scipy or from_tiles"
            )
        self.layout = layout
        self.dtype = np.dtype(layout.dense_values.dtype if dtype is None else dtype)

    # -- constructors ------------------------------------------------------

    @classmethod
    def from_dense(cls, D, tile: int, threshold=None, compress: bool | None = True) -> "TiledMatrix":
        """Tile a dense 2-D array.

        Parameters
        ----------
        D : array_like, 2-D
            float64 and float32 are kept; integers and bool become float64.
        tile : int
            Tile size (> 0).
        threshold : None, int or CostModel
            Tiles with ``0 < nnz < T`` are stored sparse, all-zero tiles not at
            all (see :func:`~asafe.compression.engine.tile_threshold`).
        compress : bool or None
            ``False`` stores every tile dense without inspecting a value;
            ``None`` asks ``asafe.is_on("compression")``.

        Examples
        --------
        >>> A = TiledMatrix.from_dense(np.eye(300), tile=128)
        >>> A.tile_summary()["sparse"]["tiles"], A.tile_summary()["empty"]["tiles"]
        (3, 6)
        >>> TiledMatrix.from_dense(np.eye(300), tile=128, compress=False).tile_summary()["dense"]["tiles"]
        9
        """
        return cls(build.layout_from_dense(D, tile, threshold, compress))

    @classmethod
    def from_scipy(cls, S, tile: int, threshold=None) -> "TiledMatrix":
        """Tile a scipy sparse matrix or array (any format), never densifying it.

        Tiles with at least ``T`` non-zeros become dense tiles (one tile at a
        time); duplicates are summed and explicit zeros dropped first (on a
        copy when needed; a canonical CSR input is used as it is).

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> S = sp.random_array((300, 200), density=0.01, random_state=0, format="coo")
        >>> A = TiledMatrix.from_scipy(S, tile=64)
        >>> A.shape, A.nnz == S.nnz
        ((300, 200), True)
        >>> bool(np.allclose(A @ np.ones(200), S @ np.ones(200)))
        True
        """
        return cls(build.layout_from_scipy(S, tile, threshold))

    @classmethod
    def from_tiles(cls, shape, tile: int, tiles, dtype=None) -> "TiledMatrix":
        """Assemble a matrix from ``((row_block, col_block), tile)`` pairs.

        Each tile keeps its form: a :class:`~asafe.compression.DenseTile`, a
        :class:`~asafe.compression.SparseTile`, an
        :class:`~asafe.compression.EmptyTile` (skipped, as a sparse tile
        without entries), a 2-D numpy array (dense, never inspected) or a scipy
        sparse block (sparse). Blocks not given are empty.
        ``tiles`` may be any iterable (a generator producing one tile at a
        time): only the compact forms are kept.

        Parameters
        ----------
        shape : (int, int)
        tile : int
        tiles : iterable of ((int, int), tile)
        dtype : float32 or float64, optional
            Default: float32 when every tile is float32, else float64.

        Examples
        --------
        >>> tiles = [((0, 0), np.ones((2, 2))), ((1, 1), SparseTile((1, 1), [0, 1], [0], [5.0]))]
        >>> A = TiledMatrix.from_tiles((3, 3), 2, tiles)
        >>> A.to_dense()
        array([[1., 1., 0.],
               [1., 1., 0.],
               [0., 0., 5.]])
        >>> B = TiledMatrix.from_tiles(A.shape, A.tile, A.tiles())
        >>> np.array_equal(B.to_dense(), A.to_dense())
        True
        """
        return cls(build.layout_from_tiles(shape, tile, tiles, dtype))

    # -- properties --------------------------------------------------------

    @property
    def shape(self) -> tuple[int, int]:
        """``(m, n)``."""
        return self.layout.shape

    @property
    def tile(self) -> int:
        """The tile size."""
        return self.layout.tile

    @property
    def ndim(self) -> int:
        """Always 2."""
        return 2

    @property
    def grid(self) -> tuple[int, int]:
        """Tile rows and tile columns: ``(ceil(m / tile), ceil(n / tile))``.

        Examples
        --------
        >>> TiledMatrix.from_dense(np.ones((5, 3)), tile=2).grid
        (3, 2)
        """
        return tile_grid(self.shape, self.tile)

    @property
    def nnz(self) -> int:
        """Stored values: every element of the dense tiles plus the sparse non-zeros.

        :meth:`count_nonzero` counts the true non-zeros.

        Examples
        --------
        >>> D = np.array([[1.0, 0.0], [0.0, 0.0]])
        >>> TiledMatrix.from_dense(D, tile=2, threshold=0).nnz, TiledMatrix.from_dense(D, tile=2, threshold=2).nnz
        (4, 1)
        """
        return int(self.layout.dense_values.size + self.layout.data.size)

    @property
    def nbytes(self) -> int:
        """Bytes held: values, indices, row pointers and tile metadata.

        Examples
        --------
        >>> TiledMatrix.from_dense(np.zeros((4, 4)), tile=2).nbytes  # only pointers
        88
        """
        return self.layout.nbytes

    @property
    def logical_nbytes(self) -> int:
        """Dense-equivalent size: ``m * n * itemsize``.

        Examples
        --------
        >>> TiledMatrix.from_dense(np.zeros((4, 4), np.float32), tile=2).logical_nbytes
        64
        """
        m, n = self.shape
        return m * n * self.dtype.itemsize

    @property
    def T(self) -> "TransposedTiledMatrix":
        """A transposed view: ``A.T @ x`` calls :meth:`rmatvec`.

        Examples
        --------
        >>> A = TiledMatrix.from_dense(np.array([[1.0, 2.0]]), tile=1)
        >>> A.T.shape, A.T @ np.array([3.0])
        ((2, 1), array([3., 6.]))
        """
        return TransposedTiledMatrix(self)

    # -- products ----------------------------------------------------------

    def _vector(self, x, length: int, name: str):
        """Check a vector argument; return it, as float64, and the result dtype."""
        if (type(x) is np.ndarray and x.dtype == _F64 and x.ndim == 1
                and x.shape[0] == length and x.flags.c_contiguous):
            return x, x, _F64  # the common case, without conversions
        if sp.issparse(x):
            raise TypeError(f"{name} must be a dense 1-D array, got a scipy.sparse {type(x).__name__}")
        x = np.asarray(x)
        if x.ndim != 1:
            raise ValueError(
                f"{name} must be a 1-D array of length {length} for a matrix of shape {self.shape}, "
                f"got a {x.ndim}-D array of shape {x.shape}"
            )
        if x.shape[0] != length:
            raise ValueError(
                f"{name} has length {x.shape[0]}, but a matrix of shape {self.shape} needs length {length}"
            )
        rtype = np.result_type(self.dtype, value_dtype(x.dtype, name))
        return x, np.ascontiguousarray(x, dtype=np.float64), rtype

    def _run(self, kernel, x, out, length_in: int, length_out: int, name: str):
        x, x64, rtype = self._vector(x, length_in, name)
        if out is not None:
            _check_out(out, length_out, rtype)
        direct = (
            out is not None and out.dtype == np.float64 and out.flags.c_contiguous
            and not np.may_share_memory(out, x)
        )
        y = out if direct else np.empty(length_out, np.float64)
        kernel(self.layout, x64, y)  # unchecked kernel entry: x64 and y were checked above
        if direct:
            return out
        if out is not None:
            out[...] = y
            return out
        return y.astype(rtype, copy=False)

    def matvec(self, x, out=None) -> np.ndarray:
        """``A @ x`` for a 1-D ``x`` of length ``n``.

        Parameters
        ----------
        x : array_like, 1-D
            float64 or float32 (integers and bool count as float64).
        out : numpy.ndarray, optional
            Where to write the result: 1-D of length ``m`` with the result
            dtype (float32 only when the matrix and ``x`` are float32). It may
            alias ``x``.

        Raises
        ------
        ValueError
            ``x`` not 1-D or of the wrong length; a wrong ``out`` shape.
        TypeError
            Complex or non-numeric ``x``; a wrong ``out`` dtype.

        Notes
        -----
        NaN and Inf in ``x`` follow the *stored* elements, as in scipy's sparse
        product: ``y[i]`` sums ``A[i, j] * x[j]`` over every element of the
        dense tiles of row ``i`` (zeros included, exactly numpy's
        ``A.to_dense() @ x``) and over the non-zeros of its sparse tiles
        (exactly scipy's ``A.to_scipy() @ x``); the zeros of sparse and empty
        tiles are structural and never multiply. So a NaN or Inf in ``x[j]``
        reaches ``y[i]`` when ``(i, j)`` lies in a dense tile or is a non-zero,
        and not otherwise: with non-finite ``x`` the result depends on which
        tiles are dense (:meth:`tile_kinds`), that is on the threshold and on
        whether compression was on, just as numpy's and scipy's products of
        the same matrix differ. With finite ``x`` it does not (up to
        rounding). NaN and Inf in the matrix are non-zeros, always stored,
        and always propagate. The kernels add no per-element test for this.

        Examples
        --------
        >>> A = TiledMatrix.from_dense(np.arange(6.0).reshape(2, 3), tile=2)
        >>> A.matvec(np.ones(3))
        array([ 3., 12.])
        >>> A.matvec(np.ones(2))
        Traceback (most recent call last):
        ...
        ValueError: x has length 2, but a matrix of shape (2, 3) needs length 3

        A NaN in ``x`` meets the stored zeros of a dense tile (numpy's
        ``0 * nan = nan``), not the structural zeros of a sparse tile:

        >>> D = np.array([[1.0, 0.0], [0.0, 0.0]])
        >>> x = np.array([1.0, np.nan])
        >>> TiledMatrix.from_dense(D, tile=2, threshold=0) @ x    # one dense tile
        array([nan, nan])
        >>> TiledMatrix.from_dense(D, tile=2, threshold=5) @ x    # one sparse tile
        array([1., 0.])
        """
        m, n = self.shape
        return self._run(kernels.matvec_unchecked, x, out, n, m, "x")

    def rmatvec(self, x, out=None) -> np.ndarray:
        """``A.T @ x`` for a 1-D ``x`` of length ``m`` (same rules as :meth:`matvec`).

        NaN and Inf in ``x[i]`` reach ``y[j]`` when ``(i, j)`` lies in a dense
        tile or is a non-zero (the stored elements, see :meth:`matvec`).

        Examples
        --------
        >>> A = TiledMatrix.from_dense(np.arange(6.0).reshape(2, 3), tile=2)
        >>> A.rmatvec(np.ones(2))
        array([3., 5., 7.])
        """
        m, n = self.shape
        return self._run(kernels.rmatvec_unchecked, x, out, m, n, "x")

    def __matmul__(self, x):
        """``A @ x``: :meth:`matvec` for a 1-D ``x``.

        NaN and Inf in ``x`` propagate through the stored elements only: every
        element of a dense tile, the non-zeros of a sparse tile (scipy's rule:
        structural zeros do not propagate them). So with non-finite ``x`` the
        result depends on which tiles are dense; see :meth:`matvec`.
        """
        if sp.issparse(x) or isinstance(x, (TiledMatrix, TransposedTiledMatrix)):
            return NotImplemented
        return self.matvec(x)

    def __rmatmul__(self, x):
        """``x @ A``: :meth:`rmatvec` (same NaN/Inf rule as :meth:`matvec`)."""
        if sp.issparse(x):
            return NotImplemented
        return self.rmatvec(x)

    # -- tiles -------------------------------------------------------------

    def tile_kinds(self) -> np.ndarray:
        """The grid of tile kinds: 0 empty, 1 sparse, 2 dense (``int8``).

        Examples
        --------
        >>> TiledMatrix.from_dense(np.eye(4), tile=2, threshold=2).tile_kinds()
        array([[2, 0],
               [0, 2]], dtype=int8)
        """
        lay = self.layout
        kinds = np.zeros(self.grid, np.int8)
        nbr = self.grid[0]
        d_rows = np.repeat(np.arange(nbr), np.diff(lay.dense_ptr))
        s_rows = np.repeat(np.arange(nbr), np.diff(lay.sparse_ptr))
        kinds[d_rows, lay.dense_col] = DENSE_TILE
        kinds[s_rows, lay.sparse_col] = SPARSE_TILE
        return kinds

    def tile_summary(self) -> dict:
        """Counts and bytes of the dense, sparse and empty tiles.

        Returns
        -------
        dict
            ``{"dense": {"tiles", "nnz", "nbytes"}, "sparse": {...},
            "empty": {"tiles", "nnz", "nbytes"}, "total": {"tiles", "nnz",
            "nbytes", "logical_nbytes"}}``; ``nbytes`` of a kind counts its
            values, indices and row pointers; the total adds tile metadata.

        Examples
        --------
        >>> s = TiledMatrix.from_dense(np.eye(4), tile=2, threshold=3).tile_summary()
        >>> s["sparse"], s["empty"]["tiles"]
        ({'tiles': 2, 'nnz': 4, 'nbytes': 80}, 2)
        """
        lay = self.layout
        nd, ns = lay.n_dense, lay.n_sparse
        nbr, nbc = self.grid
        sparse_bytes = lay.row_ptr.nbytes + lay.col.nbytes + lay.data.nbytes if ns else 0
        return {
            "dense": {"tiles": nd, "nnz": int(lay.dense_values.size), "nbytes": int(lay.dense_values.nbytes)},
            "sparse": {"tiles": ns, "nnz": int(lay.data.size), "nbytes": int(sparse_bytes)},
            "empty": {"tiles": nbr * nbc - nd - ns, "nnz": 0, "nbytes": 0},
            "total": {"tiles": nbr * nbc, "nnz": self.nnz, "nbytes": self.nbytes,
                      "logical_nbytes": self.logical_nbytes},
        }

    def get_tile(self, row_block: int, col_block: int) -> Tile:
        """The tile at grid cell ``(row_block, col_block)``.

        A dense tile is a view of the matrix's buffer; a sparse tile a compact
        in-tile CSR copy; an empty cell an :class:`~asafe.compression.EmptyTile`.

        Examples
        --------
        >>> A = TiledMatrix.from_dense(np.eye(3), tile=2, threshold=3)
        >>> A.get_tile(0, 0), A.get_tile(0, 1).kind
        (SparseTile(shape=(2, 2), dtype=float64, nnz=2, nbytes=30), 'empty')
        """
        nbr, nbc = self.grid
        if not (is_integer(row_block) and is_integer(col_block)
                and 0 <= row_block < nbr and 0 <= col_block < nbc):
            raise IndexError(f"tile ({row_block}, {col_block}) is outside the {nbr}x{nbc} tile grid")
        lay = self.layout
        for kind, ptr, cols in (("dense", lay.dense_ptr, lay.dense_col), ("sparse", lay.sparse_ptr, lay.sparse_col)):
            lo, hi = ptr[row_block], ptr[row_block + 1]
            t = lo + int(np.searchsorted(cols[lo:hi], col_block))
            if t < hi and cols[t] == col_block:
                return self._dense_view(row_block, t) if kind == "dense" else self._sparse_view(row_block, t)
        return EmptyTile(self._tile_shape(row_block, col_block), self.dtype)

    def tiles(self):
        """Iterate over the stored tiles as ``((row_block, col_block), tile)`` pairs.

        In row-major grid order; empty tiles are skipped. The output feeds
        :meth:`from_tiles`.

        Examples
        --------
        >>> [(ij, t.kind) for ij, t in TiledMatrix.from_dense(np.eye(3), tile=2, threshold=3).tiles()]
        [((0, 0), 'sparse'), ((1, 1), 'sparse')]
        """
        lay = self.layout
        for I in range(self.grid[0]):
            d, d_end = int(lay.dense_ptr[I]), int(lay.dense_ptr[I + 1])
            s, s_end = int(lay.sparse_ptr[I]), int(lay.sparse_ptr[I + 1])
            while d < d_end or s < s_end:
                if s >= s_end or (d < d_end and lay.dense_col[d] < lay.sparse_col[s]):
                    yield (I, int(lay.dense_col[d])), self._dense_view(I, d)
                    d += 1
                else:
                    yield (I, int(lay.sparse_col[s])), self._sparse_view(I, s)
                    s += 1

    def _tile_shape(self, I: int, J: int) -> tuple[int, int]:
        m, n = self.shape
        return min(self.tile, m - I * self.tile), min(self.tile, n - J * self.tile)

    def _dense_view(self, I: int, t: int) -> DenseTile:
        lay = self.layout
        h, w = self._tile_shape(I, int(lay.dense_col[t]))
        off = int(lay.dense_off[t])
        return DenseTile(lay.dense_values[off:off + h * w].reshape(h, w))

    def _sparse_view(self, I: int, t: int) -> SparseTile:
        shape, indptr, indices, data = layout_mod.extract_sparse_tile(self.layout, I, int(self.layout.sparse_col[t]))
        return SparseTile.from_parts(shape, indptr, indices, data)

    # -- conversions -------------------------------------------------------

    def to_scipy(self) -> sp.csr_array:
        """The matrix as a canonical ``scipy.sparse.csr_array`` (zeros of dense tiles dropped).

        Examples
        --------
        >>> TiledMatrix.from_dense(np.eye(3), tile=2, threshold=0).to_scipy().nnz
        3
        """
        indptr, indices, data = layout_mod.to_csr(self.layout)
        S = sp.csr_array((data, indices, indptr), shape=self.shape)
        S.sum_duplicates()
        return S

    def to_dense(self) -> np.ndarray:
        """The matrix as a new dense array.

        Examples
        --------
        >>> TiledMatrix.from_dense(np.eye(2, dtype=np.float32), tile=1).to_dense().dtype
        dtype('float32')
        """
        return layout_mod.to_dense(self.layout)

    def toarray(self) -> np.ndarray:
        """Alias of :meth:`to_dense` (scipy's name).

        Examples
        --------
        >>> TiledMatrix.from_dense(np.ones((1, 1)), tile=1).toarray()
        array([[1.]])
        """
        return self.to_dense()

    def count_nonzero(self) -> int:
        """The true number of non-zeros (inspects the dense tiles).

        Examples
        --------
        >>> TiledMatrix.from_dense(np.eye(3), tile=3, threshold=0).count_nonzero()
        3
        """
        lay = self.layout
        return int(np.count_nonzero(lay.dense_values) + np.count_nonzero(lay.data))

    # -- protocol ----------------------------------------------------------

    def __reduce__(self):
        lay = self.layout
        return (_rebuild, (lay.shape, lay.tile, self.dtype.str) + lay.arrays())

    def __repr__(self) -> str:
        s = self.tile_summary()
        return (
            f"TiledMatrix(shape={self.shape}, tile={self.tile}, dtype={self.dtype}, "
            f"dense={s['dense']['tiles']}, sparse={s['sparse']['tiles']}, "
            f"empty={s['empty']['tiles']}, nbytes={self.nbytes})"
        )


def _rebuild(shape, tile, dtype, *arrays) -> TiledMatrix:
    layout = Layout(shape=tuple(shape), tile=tile, **dict(zip(LAYOUT_ARRAYS, arrays)))
    return TiledMatrix(layout, dtype)


def _check_out(out, length: int, rtype) -> None:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.shape != (length,):
        raise ValueError(f"out must have shape ({length},), got {out.shape}")
    if out.dtype != rtype:
        raise TypeError(f"out must have dtype {rtype} (the result dtype), got {out.dtype}")
    if not out.flags.writeable:
        raise ValueError("out is read-only")


class TransposedTiledMatrix:
    """The transpose of a :class:`TiledMatrix`, for ``A.T @ x`` (no copy).

    Examples
    --------
    >>> A = TiledMatrix.from_dense(np.array([[1.0, 2.0], [3.0, 4.0]]), tile=1)
    >>> A.T @ np.array([1.0, 0.0]), A.T.T is A
    (array([1., 2.]), True)
    """

    def __init__(self, base: TiledMatrix):
        self.base = base

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, m)``."""
        m, n = self.base.shape
        return n, m

    @property
    def dtype(self) -> np.dtype:
        """The base matrix's dtype."""
        return self.base.dtype

    @property
    def T(self) -> TiledMatrix:
        """The base matrix."""
        return self.base

    def matvec(self, x, out=None) -> np.ndarray:
        """``A.T @ x`` (:meth:`TiledMatrix.rmatvec`)."""
        return self.base.rmatvec(x, out)

    def rmatvec(self, x, out=None) -> np.ndarray:
        """``A @ x`` (:meth:`TiledMatrix.matvec`)."""
        return self.base.matvec(x, out)

    def __matmul__(self, x):
        if sp.issparse(x) or isinstance(x, (TiledMatrix, TransposedTiledMatrix)):
            return NotImplemented
        return self.matvec(x)

    def __repr__(self) -> str:
        return f"{self.base!r}.T"


@sizeof.register(TiledMatrix)
def _sizeof_matrix(A: TiledMatrix) -> int:
    sizes.note(A.logical_nbytes, A.nbytes)  # for the cluster plugins (asafe.schedulers.sizes)
    return A.nbytes + 1000


sizes.register(TiledMatrix, sizeof=False)
