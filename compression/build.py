"""Building the layout of a tiled matrix: from a dense array, a scipy.sparse matrix or tile objects.

The work behind :meth:`TiledMatrix.from_dense
<asafe.compression.TiledMatrix.from_dense>`, :meth:`~asafe.compression.TiledMatrix.from_scipy`
and :meth:`~asafe.compression.TiledMatrix.from_tiles`, in the same steps each
time:

1. check the input (a clear error that names the argument);
2. count the non-zeros of every tile (:mod:`~asafe.compression.tiling`) -- for
   a dense array only when compression is on (:func:`~asafe.compression.engine.wants_compression`),
   the inspection the engine counts;
3. let the engine decide the form of every non-empty tile
   (:func:`~asafe.compression.engine.keeps_dense_on_grid`, the one rule of
   every path);
4. allocate the layout (:func:`~asafe.compression.layout.allocate`) and fill
   it in one pass (:mod:`~asafe.compression.tiling`), or assemble the tile
   objects (:func:`~asafe.compression.layout.from_tile_objects`).

Each builder returns the :class:`~asafe.compression.layout.Layout`; the
classmethods of :class:`~asafe.compression.TiledMatrix` wrap it.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import engine, tiling
from . import layout as layout_mod
from .layout import Layout
from .tiles import DenseTile, SparseTile, Tile, is_integer, value_dtype
from .tiling import DENSE_TILE, SPARSE_TILE, tile_extent, tile_grid

__all__ = ["layout_from_dense", "layout_from_scipy", "layout_from_tiles", "canonical_csr"]

_MAX_TILE = 2**62


# ---------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------


def _check_tile(tile) -> int:
    if not is_integer(tile):
        raise TypeError(f"tile must be a positive integer, got {tile!r} of type {type(tile).__name__}")
    if tile <= 0:
        raise ValueError(f"tile must be a positive integer, got {tile}")
    if tile > _MAX_TILE:  # the kernels index in int64: m + tile must not overflow
        raise ValueError(f"tile must be at most 2**62, got {tile}; any tile >= the matrix's size gives one tile")
    return int(tile)


def _check_shape(shape) -> tuple[int, int]:
    if not (isinstance(shape, (tuple, list)) and len(shape) == 2 and all(is_integer(s) for s in shape)):
        raise ValueError(f"shape must be two non-negative integers (rows, cols), got {shape!r}")
    m, n = int(shape[0]), int(shape[1])
    if m < 0 or n < 0:
        raise ValueError(f"shape must be two non-negative integers (rows, cols), got {shape!r}")
    return m, n


def _as_dense_matrix(D) -> np.ndarray:
    if sp.issparse(D):
        raise TypeError("from_dense expects a dense array; use TiledMatrix.from_scipy for scipy.sparse input")
    D = np.asarray(D)
    if D.ndim != 2:
        raise ValueError(f"expected a 2-D matrix, got a {D.ndim}-D array of shape {D.shape}")
    return np.ascontiguousarray(D, dtype=value_dtype(D.dtype, "matrix values"))


def canonical_csr(S, check_zeros: bool = True):
    """A CSR copy of ``S`` only where needed: sorted, no duplicates, no explicit zeros.

    ``check_zeros=False`` skips the scan for explicit zeros (the caller finds them
    while it reads the values anyway, see :func:`layout_from_scipy`). Values
    become float64 or float32 (:func:`~asafe.compression.tiles.value_dtype`).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> S = sp.csr_array(np.eye(3))
    >>> canonical_csr(S) is S
    True
    >>> canonical_csr(sp.coo_array(([1.0, 2.0], ([0, 0], [1, 1])), shape=(2, 2))).toarray()
    array([[0., 3.],
           [0., 0.]])
    """
    dtype = value_dtype(S.dtype, "matrix values")
    if S.format == "csr" and S.has_canonical_format and not (check_zeros and (S.data == 0).any()):
        if S.data.dtype == dtype:
            return S
        return sp.csr_array((S.data.astype(dtype), S.indices, S.indptr), shape=S.shape)
    S = sp.csr_array(S, dtype=dtype, copy=True)
    S.sum_duplicates()
    S.eliminate_zeros()
    return S


# ---------------------------------------------------------------------------
# The builders
# ---------------------------------------------------------------------------


def layout_from_dense(D, tile: int, threshold=None, compress: bool | None = True) -> Layout:
    """The layout of a dense 2-D array (what :meth:`TiledMatrix.from_dense
    <asafe.compression.TiledMatrix.from_dense>` wraps; same parameters).

    Examples
    --------
    >>> lay = layout_from_dense(np.eye(4), tile=2, threshold=3)
    >>> lay.n_dense, lay.n_sparse
    (0, 2)
    """
    D = _as_dense_matrix(D)
    tile = _check_tile(tile)
    threshold = engine.check_threshold(threshold)
    grid = tile_grid(D.shape, tile)
    if engine.wants_compression(compress):
        counts = tiling.dense_tile_counts(D, tile)
        engine.record_inspections(grid[0] * grid[1])
        t_row, t_col = np.nonzero(counts)
        t_nnz = counts[t_row, t_col]
        t_dense = engine.keeps_dense_on_grid(D.shape, tile, D.dtype, t_row, t_col, t_nnz, threshold)
    else:
        t_row, t_col = (a.ravel() for a in np.indices(grid))
        t_nnz = tile_extent(D.shape[0], tile, t_row) * tile_extent(D.shape[1], tile, t_col)
        t_dense = np.ones(t_row.size, bool)
    layout, t_slot = layout_mod.allocate(D.shape, tile, D.dtype, t_row, t_col, t_nnz, t_dense)
    kinds = np.zeros(grid, np.int8)
    kinds[t_row, t_col] = np.where(t_dense, DENSE_TILE, SPARSE_TILE)
    slots = np.zeros(grid, np.int64)
    slots[t_row, t_col] = t_slot
    tiling.from_dense_plan(D, layout, kinds, slots)
    return layout


def layout_from_scipy(S, tile: int, threshold=None) -> Layout:
    """The layout of a scipy sparse matrix or array, never densifying it (what
    :meth:`TiledMatrix.from_scipy <asafe.compression.TiledMatrix.from_scipy>` wraps).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> lay = layout_from_scipy(sp.eye_array(4, format="csr"), tile=2, threshold=2)
    >>> lay.n_dense, lay.n_sparse
    (2, 0)
    """
    if not sp.issparse(S):
        raise TypeError(
            f"from_scipy expects a scipy.sparse matrix or array, got {type(S).__name__}; "
            "use TiledMatrix.from_dense for dense arrays"
        )
    if S.ndim != 2:
        raise ValueError(f"expected a 2-D matrix, got a {S.ndim}-D sparse array of shape {S.shape}")
    tile = _check_tile(tile)
    threshold = engine.check_threshold(threshold)
    # explicit zeros are looked for while the values are copied (one pass over
    # them, not two); when there are any, the build is redone from a copy without
    original, S = S, canonical_csr(S, check_zeros=False)
    shape = (int(S.shape[0]), int(S.shape[1]))
    tr_ptr, t_col, t_nnz = tiling.csr_tile_counts(S.indptr, S.indices, shape, tile)
    t_row = np.repeat(np.arange(tr_ptr.size - 1, dtype=np.int64), np.diff(tr_ptr))
    t_dense = engine.keeps_dense_on_grid(shape, tile, S.dtype, t_row, t_col, t_nnz, threshold)
    layout, t_slot = layout_mod.allocate(shape, tile, S.dtype, t_row, t_col, t_nnz, t_dense)
    if tiling.from_csr_plan(S, layout, tr_ptr, t_col, t_slot):
        return layout_from_scipy(canonical_csr(original), tile, threshold)
    return layout


def layout_from_tiles(shape, tile: int, tiles, dtype=None) -> Layout:
    """The layout of ``((row_block, col_block), tile)`` pairs, each tile in its own form (what
    :meth:`TiledMatrix.from_tiles <asafe.compression.TiledMatrix.from_tiles>` wraps).

    Examples
    --------
    >>> lay = layout_from_tiles((2, 2), 1, [((1, 1), np.ones((1, 1)))])
    >>> lay.n_dense, lay.dense_values.dtype
    (1, dtype('float64'))
    """
    shape = _check_shape(shape)
    tile = _check_tile(tile)
    entries = _collect_tiles(shape, tile, tiles)
    if dtype is None:
        dtypes = {t.dtype for _, _, t in entries}
        dtype = np.float32 if dtypes == {np.dtype(np.float32)} else np.float64
    dtype = value_dtype(dtype, "dtype")
    return layout_mod.from_tile_objects(shape, tile, dtype, entries)


# ---------------------------------------------------------------------------
# Tile objects
# ---------------------------------------------------------------------------


def _as_tile(obj) -> Tile:
    if isinstance(obj, Tile):
        return obj
    if sp.issparse(obj):
        return SparseTile.from_scipy(obj)
    if isinstance(obj, np.ndarray):
        return DenseTile(obj)
    raise TypeError(
        f"a tile must be a Tile, a 2-D numpy array or a scipy.sparse block, got {type(obj).__name__}"
    )


def _collect_tiles(shape, tile, tiles) -> list:
    """Check ``((I, J), tile)`` pairs; return the non-empty ones sorted by (I, J)."""
    nbr, nbc = tile_grid(shape, tile)
    seen = set()
    entries = []
    for item in tiles:
        if not (isinstance(item, (tuple, list)) and len(item) == 2
                and isinstance(item[0], (tuple, list)) and len(item[0]) == 2):
            raise ValueError(f"tiles must be ((row_block, col_block), tile) pairs, got {item!r}")
        (I, J), obj = item
        if not (is_integer(I) and is_integer(J) and 0 <= I < nbr and 0 <= J < nbc):
            raise ValueError(f"tile position ({I!r}, {J!r}) is outside the {nbr}x{nbc} tile grid")
        I, J = int(I), int(J)
        if (I, J) in seen:
            raise ValueError(f"tile ({I}, {J}) is given twice")
        seen.add((I, J))
        t = _as_tile(obj)
        expected = (min(tile, shape[0] - I * tile), min(tile, shape[1] - J * tile))
        if t.shape != expected:
            raise ValueError(f"tile ({I}, {J}) must have shape {expected}, got {t.shape}")
        if t.kind == "dense" or t.nnz > 0:  # empty tiles, and sparse ones with no entry, are not stored
            entries.append((I, J, t))
    entries.sort(key=lambda e: (e[0], e[1]))
    return entries
