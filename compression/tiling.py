"""Cutting a matrix into tiles: the grid, and the numba passes that plan and fill a layout.

A matrix is built in two passes over its input (see
:meth:`~asafe.compression.TiledMatrix.from_dense` and
:meth:`~asafe.compression.TiledMatrix.from_scipy`):

1. a **count pass** -- the non-zeros of every tile: :func:`dense_tile_counts`
   for a dense array, :func:`csr_tile_counts` for a canonical CSR (non-empty
   tiles only, in O(runs + tile rows));
2. the engine decides each tile's form from its count, the layout is
   allocated (:func:`~asafe.compression.layout.allocate`), and a **fill pass**
   copies the values in: :func:`from_dense_plan`, :func:`from_csr_plan`. Both
   note, while they copy, whether every sparse value is the same (the iso form
   of :meth:`Layout.iso_value <asafe.compression.layout.Layout.iso_value>`),
   so that no product needs a pass of its own to find out.

The CSR passes run in parallel over tile rows from :data:`PARALLEL_BUILD_NNZ`
non-zeros on, and below it in serial twins of the same kernels (see
``_serial_twin`` for why a twin needs a name of its own). :func:`tile_grid`
and :func:`tile_extent` are the geometry of the grid every module shares: the
last tile row and column are smaller when the tile does not divide the shape.

The fill passes write into an allocated
:class:`~asafe.compression.layout.Layout`, which they take as it is (this
module sits below :mod:`~asafe.compression.layout` and does not import it).
"""
from __future__ import annotations

import types

from . import _openmp  # noqa: F401  (the OpenMP wait policy, before numba starts)

import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

from .csr import is_iso  # noqa: E402

__all__ = [
    "tile_grid",
    "tile_extent",
    "dense_tile_counts",
    "csr_tile_counts",
    "from_dense_plan",
    "from_csr_plan",
    "PARALLEL_BUILD_NNZ",
]

_JIT = dict(nogil=True, cache=True)

#: Codes of a grid of tile kinds (:meth:`TiledMatrix.tile_kinds
#: <asafe.compression.TiledMatrix.tile_kinds>`, the ``kinds`` of :func:`from_dense_plan`).
EMPTY_TILE, SPARSE_TILE, DENSE_TILE = 0, 1, 2


def tile_grid(shape, tile) -> tuple[int, int]:
    """``(tile rows, tile columns)`` of an ``m x n`` matrix cut into ``tile x tile`` blocks.

    Examples
    --------
    >>> tile_grid((5, 3), 2)
    (3, 2)
    """
    return -(-shape[0] // tile), -(-shape[1] // tile)


def tile_extent(size: int, tile: int, block) -> np.ndarray:
    """Heights (or widths) of the tile rows (columns) ``block`` along an axis of ``size``.

    Examples
    --------
    >>> tile_extent(5, 2, [0, 1, 2])
    array([2, 2, 1])
    """
    return np.minimum(tile, size - tile * np.asarray(block, np.int64))


# ---------------------------------------------------------------------------
# From a dense array
# ---------------------------------------------------------------------------


@njit(**_JIT)
def _dense_tile_counts(D, tile, counts):
    m, n = D.shape
    nbc = counts.shape[1]
    for i in range(m):
        I = i // tile
        for J in range(nbc):
            k = 0
            for j in range(J * tile, min(n, J * tile + tile)):
                if D[i, j] != 0:
                    k += 1
            counts[I, J] += k


def dense_tile_counts(D: np.ndarray, tile: int) -> np.ndarray:
    """Non-zeros of every tile of a dense matrix, as an ``(nbr, nbc)`` grid.

    NaN counts as a non-zero, ``-0.0`` as a zero.

    Examples
    --------
    >>> dense_tile_counts(np.array([[1.0, 0.0, 2.0], [0.0, np.nan, 3.0]]), 2)
    array([[2, 2]])
    """
    counts = np.zeros(tile_grid(D.shape, tile), np.int64)
    _dense_tile_counts(D, tile, counts)
    return counts


@njit(**_JIT)
def _fill_from_dense(D, tile, kinds, slots, dense_off, dense_values, row_ptr, col, data):
    """The copy of :func:`from_dense_plan`; returns whether the sparse values are iso (see :func:`_record_iso`)."""
    m, n = D.shape
    nbc = kinds.shape[1]
    pos = 0
    same = True
    for i in range(m):
        I = i // tile
        r = i - I * tile
        for J in range(nbc):
            kind = kinds[I, J]
            c0 = J * tile
            w = min(tile, n - c0)
            if kind == DENSE_TILE:  # unsigned positions: no wraparound test in the loop, which then vectorizes
                base = np.uint64(dense_off[slots[I, J]] + r * w)
                uc0 = np.uint64(c0)
                for c in range(np.uint64(w)):
                    dense_values[base + c] = D[i, uc0 + c]
            elif kind == SPARSE_TILE:
                for c in range(w):
                    v = D[i, c0 + c]
                    if v != 0:
                        col[pos] = c0 + c
                        data[pos] = v
                        same &= v == data[0]
                        pos += 1
        row_ptr[i + 1] = pos
    return same and pos > 0


def from_dense_plan(D, layout, kinds: np.ndarray, slots: np.ndarray) -> None:
    """Copy a dense matrix into an allocated layout.

    ``kinds`` is the ``(nbr, nbc)`` grid of tile kinds (``EMPTY_TILE``,
    ``SPARSE_TILE``, ``DENSE_TILE``) and ``slots`` the index of each dense tile
    among the dense tiles. Used by :meth:`~asafe.compression.TiledMatrix.from_dense`,
    which has a doctest of the whole path.
    """
    iso = _fill_from_dense(D, layout.tile, kinds, slots, layout.dense_off, layout.dense_values,
                           layout.row_ptr, layout.col, layout.data)
    _record_iso(layout, iso)


def _record_iso(layout, same: bool) -> None:
    """Cache :meth:`Layout.iso_value <asafe.compression.layout.Layout.iso_value>` from a fill's copy, which compared every stored value with the first.

    The copy stores no zero (the CSR builder's are rebuilt away), so value
    equality is bit equality there but for NaN, which :func:`~asafe.compression.csr.is_iso`
    never calls iso: a copy saves the product a pass over the values.
    """
    iso = same and is_iso(layout.data[:1])  # every value equals the first, and the first may be iso (not NaN)
    layout.cache["iso"] = float(layout.data[0]) if iso else None



# ---------------------------------------------------------------------------
# From a canonical CSR
# ---------------------------------------------------------------------------


@njit(**_JIT)
def _run_end(indices, k, end, j, bound):
    """End of the run of row non-zeros ``k:`` whose columns lie below ``bound``.

    The row is canonical (columns strictly increasing), so when the element
    ``bound - j - 1`` positions on has column ``bound - 1`` the run is every
    column ``j .. bound - 1``: found in O(1), without reading it (a row of a
    dense tile). Otherwise a short scan (a row of a sparse tile).
    """
    last = k + (bound - j) - 1
    # try the jump only where the run starts with two consecutive columns: in a
    # sparse row a jump far ahead (a hub row of thousands) would be a cache miss
    if last < end and (last == k or indices[k + 1] == j + 1) and indices[last] == bound - 1:
        return last + 1
    q = k + 1
    while q < end and indices[q] < bound:
        q += 1
    return q


@njit(**_JIT)
def _tile_of(j, tile, shift):
    """``j // tile``, as a shift when the tile is a power of two (``shift >= 0``)."""
    if shift >= 0:
        return j >> shift
    return j // tile


def _shift_of(tile: int) -> int:
    return tile.bit_length() - 1 if tile & (tile - 1) == 0 else -1


#: A tile row's non-empty tile columns are put in order by a scan of its counts
#: when they number at least 1/_SCAN_FACTOR of the tile columns, else by a sort:
#: a scan costs one test per tile column, a sort ~log2(tiles) compares and
#: branch misses per tile. The count pass of a scale-17 Graph500 graph (tile
#: 256: 512 tile rows of ~500 tiles each) took 17.7 ms with sorts, 6.4 ms with
#: scans (best of 9, one thread).
_SCAN_FACTOR = 16


@njit(parallel=True, **_JIT)
def _csr_tile_counts(indptr, indices, m, n, tile, nbc, cap_ptr, shift):
    """One pass, parallel over tile rows; tile row ``I`` writes at ``cap_ptr[I]`` (an upper bound)."""
    nbr = (m + tile - 1) // tile
    row_tiles = np.zeros(nbr, np.int64)
    buf_col = np.empty(cap_ptr[nbr], np.int64)
    buf_cnt = np.empty(cap_ptr[nbr], np.int64)
    for I in prange(nbr):
        cnt = np.zeros(nbc, np.int64)
        base = cap_ptr[I]
        nt = 0
        for i in range(I * tile, min(m, I * tile + tile)):
            k = np.int64(indptr[i])
            end = np.int64(indptr[i + 1])
            while k < end:
                j = np.int64(indices[k])
                J = _tile_of(j, tile, shift)
                if k + 1 < end and indices[k + 1] == j + 1:  # a run: find its end (O(1) in a dense tile)
                    q = _run_end(indices, k, end, j, min((J + 1) * tile, n))
                else:  # a lone non-zero (a sparse row): one at a time, as a plain count
                    q = k + 1
                if cnt[J] == 0:
                    buf_col[base + nt] = J
                    nt += 1
                cnt[J] += q - k
                k = q
        if nt * _SCAN_FACTOR >= nbc:  # many tiles in the row: their columns in order by a scan of cnt
            t = 0
            for J in range(nbc):
                if cnt[J] != 0:
                    buf_col[base + t] = J
                    t += 1
        else:  # few tiles in a wide row: sort the columns found
            buf_col[base:base + nt].sort()
        for t in range(nt):
            buf_cnt[base + t] = cnt[buf_col[base + t]]
        row_tiles[I] = nt
    tr_ptr = np.zeros(nbr + 1, np.int64)
    for I in range(nbr):
        tr_ptr[I + 1] = tr_ptr[I] + row_tiles[I]
    out_col = np.empty(tr_ptr[nbr], np.int64)
    out_cnt = np.empty(tr_ptr[nbr], np.int64)
    for I in range(nbr):
        for t in range(row_tiles[I]):
            out_col[tr_ptr[I] + t] = buf_col[cap_ptr[I] + t]
            out_cnt[tr_ptr[I] + t] = buf_cnt[cap_ptr[I] + t]
    return tr_ptr, out_col, out_cnt


#: Below this many non-zeros the CSR passes run serial copies of their kernels
#: (prange as range): a parallel region costs more than the whole pass on small matrices.
PARALLEL_BUILD_NNZ = 1 << 18


def _serial_twin(kernel):
    """A serial copy of a parallel ``@njit`` kernel (prange runs as range), cached apart from it.

    numba's on-disk cache names a function by module, qualified name and first
    line, and keys its entries by signature and machine, not by ``parallel``:
    a serial dispatcher made from the kernel's own ``py_func`` shared the
    parallel kernel's cache file, and whichever compiled first was loaded for
    both. The parallel builders then ran on one thread in every later process
    (the fill of a scale-14 matrix with 10% dense tiles: 65 ms at 1.0 cpu per
    wall second, 37 ms at 1.96 with its own cache entry). The twin is the same
    code under another qualified name, so it gets a file of its own.
    """
    f = kernel.py_func
    name = f.__name__ + "_serial"
    twin = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    twin.__qualname__ = f.__qualname__ + "_serial"
    twin.__doc__ = f"Serial twin of :func:`{f.__name__}` (see :func:`_serial_twin`)."
    return njit(**_JIT)(twin)


_csr_tile_counts_serial = _serial_twin(_csr_tile_counts)


def csr_tile_counts(indptr, indices, shape, tile):
    """Non-empty tiles of a canonical CSR matrix and their non-zero counts.

    Returns ``(tile_row_ptr, tile_col, count)``: the non-empty tiles of tile row
    ``I`` are ``tile_row_ptr[I]:tile_row_ptr[I + 1]``, sorted by tile column.
    Costs O(runs + tile rows), never O(tiles of the grid): a run is the part
    of one row inside one tile, found in O(1) when the row is full there (see
    :func:`_run_end`). Parallel over tile rows.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> S = sp.csr_array(np.array([[1.0, 0, 0], [0, 0, 2.0], [0, 3.0, 0]]))
    >>> csr_tile_counts(S.indptr, S.indices, S.shape, 2)
    (array([0, 2, 3]), array([0, 1, 0]), array([1, 1, 1]))
    """
    m, n = shape
    nbr, nbc = tile_grid(shape, tile)
    # at most min(nbc, nnz of the tile row) tiles per tile row: where each writes
    row_nnz = np.diff(np.asarray(indptr)[np.minimum(np.arange(nbr + 1) * tile, m)])
    cap_ptr = np.zeros(nbr + 1, np.int64)
    np.cumsum(np.minimum(row_nnz, nbc), out=cap_ptr[1:])
    kernel = _csr_tile_counts if indices.size >= PARALLEL_BUILD_NNZ else _csr_tile_counts_serial
    return kernel(indptr, indices, m, n, tile, nbc, cap_ptr, _shift_of(tile))


@njit(**_JIT)
def _copy_row(values, src, out, dst, w):
    """``out[dst:dst + w] = values[src:src + w]``; returns how many of them are zero.

    Unsigned positions (``np.uint64`` all through): with signed ones numba
    tests every index for negative wraparound, which keeps LLVM from
    vectorizing the loop -- 3.6x slower for 256-element rows (a 216 MB copy
    in rows of 256: 52 ms signed, 14 ms unsigned, numpy's ``copyto`` 17 ms).
    """
    z = 0
    for p in range(w):
        v = values[src + p]
        out[dst + p] = v
        z += np.int64(v == 0)
    return z


@njit(**_JIT)
def _slots_of_row(I, nbc, tr_ptr, t_col, t_slot):
    slot_of = np.full(nbc, -1, np.int64)
    for q in range(tr_ptr[I], tr_ptr[I + 1]):
        slot_of[t_col[q]] = t_slot[q]
    return slot_of


@njit(parallel=True, **_JIT)
def _fill_from_csr(indptr, indices, values, m, n, tile, tr_ptr, t_col, t_slot, sparse_start,
                   dense_off, dense_values, row_ptr, col, data, shift):
    """Scatter the runs of each row: dense-tile runs into their tile, the others to the CSR.

    Parallel over tile rows: tile row ``I`` writes its sparse non-zeros from
    ``sparse_start[I]`` on and sets its own entries of ``row_ptr``. Returns
    the number of explicit zeros seen (the caller redoes the work on a
    canonical copy when there are any).
    """
    nbr = tr_ptr.size - 1
    nbc = (n + tile - 1) // tile
    zeros = np.zeros(nbr, np.int64)
    row_same = np.ones(nbr, np.bool_)  # every sparse value of the tile row equals its first
    for I in prange(nbr):
        r0 = I * tile
        pos = sparse_start[I]
        z = 0
        same = True
        has_dense = False
        for q in range(tr_ptr[I], tr_ptr[I + 1]):
            has_dense = has_dense or t_slot[q] >= 0
        if not has_dense:  # a tile row of sparse tiles only: one straight copy of its non-zeros
            a = np.int64(indptr[r0])
            for i in range(r0, min(m, r0 + tile)):
                row_ptr[i + 1] = pos + (np.int64(indptr[i + 1]) - a)
            end = np.int64(indptr[min(m, r0 + tile)])
            src = np.uint64(a)
            dst = np.uint64(pos)
            first = values[a] if end > a else 0.0
            for t in range(np.uint64(end - a)):  # unsigned positions: see _copy_row
                v = values[src + t]
                col[dst + t] = indices[src + t]
                data[dst + t] = v
                z += np.int64(v == 0)
                same &= v == first
            zeros[I] = z
            row_same[I] = same
            continue
        slot_of = _slots_of_row(I, nbc, tr_ptr, t_col, t_slot)
        for r in range(min(tile, m - r0)):
            i = r0 + r
            k = np.int64(indptr[i])
            end = np.int64(indptr[i + 1])
            while k < end:
                j = np.int64(indices[k])
                J = _tile_of(j, tile, shift)
                c0 = J * tile
                w = min(tile, n - c0)
                q = _run_end(indices, k, end, j, c0 + w)
                slot = slot_of[J]
                if slot >= 0:
                    base = dense_off[slot] + r * w - c0
                    if q - k == w:  # the whole row of the tile: a contiguous copy
                        z += _copy_row(values, np.uint64(k), dense_values, np.uint64(base + c0), np.uint64(w))
                    else:
                        for p in range(k, q):
                            v = values[p]
                            dense_values[base + indices[p]] = v
                            z += np.int64(v == 0)
                else:
                    for p in range(k, q):
                        v = values[p]
                        col[pos] = indices[p]
                        data[pos] = v
                        z += np.int64(v == 0)
                        same &= v == data[sparse_start[I]]
                        pos += 1
                k = q
            row_ptr[i + 1] = pos
        zeros[I] = z
        row_same[I] = same
    # iso: every tile row's values equal its first, and the firsts equal data[0]
    same = True
    for I in range(nbr):
        if sparse_start[I + 1] > sparse_start[I]:
            same = same and row_same[I] and data[sparse_start[I]] == data[0]
    return zeros.sum(), same


_fill_from_csr_serial = _serial_twin(_fill_from_csr)


def from_csr_plan(S, layout, tile_row_ptr, t_col, t_slot) -> int:
    """Scatter a CSR matrix ``S`` with sorted, unique indices into an allocated layout.

    The plan is that of :func:`allocate`, with the tiles of tile row ``I`` at
    ``tile_row_ptr[I]:tile_row_ptr[I + 1]`` (from :func:`csr_tile_counts`).
    Costs O(nnz + stored tiles) in one pass parallel over tile rows (a full
    row of a dense tile is one contiguous copy). Returns the number of
    explicit zeros of ``S`` (stored as if non-zero: the caller that wants
    them dropped rebuilds from a canonical copy). Used by
    :meth:`~asafe.compression.TiledMatrix.from_scipy`.
    """
    m, n = layout.shape
    nbr, _ = layout.grid
    sparse_start = np.zeros(nbr + 1, np.int64)
    np.cumsum(layout.sparse_nnz, out=(tmp := np.zeros(layout.sparse_nnz.size + 1, np.int64))[1:])
    sparse_start[:] = tmp[layout.sparse_ptr]
    kernel = _fill_from_csr if S.indices.size >= PARALLEL_BUILD_NNZ else _fill_from_csr_serial
    zeros, iso = kernel(S.indptr, S.indices, S.data, m, n, layout.tile,
                        np.ascontiguousarray(tile_row_ptr, np.int64), np.ascontiguousarray(t_col, np.int64),
                        np.ascontiguousarray(t_slot, np.int64), sparse_start,
                        layout.dense_off, layout.dense_values, layout.row_ptr, layout.col, layout.data,
                        _shift_of(layout.tile))
    _record_iso(layout, iso)
    return int(zeros)

