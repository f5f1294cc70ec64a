"""The pieces of :mod:`asafe.compression.graph500`'s mixed matrices, unvalidated.

Everything here takes arguments :mod:`~asafe.compression.graph500` has checked
already (``seed`` an int, ``tile`` at most the matrix's size); that module's
docstring tells the rules these pieces implement and why:

* the Kronecker generator and kernel 1 (:func:`kronecker_endpoints`,
  :func:`kronecker_graph`);
* the tile grid (:func:`grid`, :func:`grid_n`, :func:`dense_count`);
* the choice of the dense tiles (:func:`choose_dense_tiles`);
* their values, a counter-based hash of the global position
  (:func:`value_key` and the private ``_dense_values``);
* the CSR pieces of :func:`~asafe.compression.graph500.mixed_matrix`
  (:func:`without_tiles`, :func:`dense_csr`);
* the tile stream of :func:`~asafe.compression.graph500.iter_mixed_tiles`
  (:func:`stream_tiles`).

numpy and scipy only: the numba side (a mixed matrix built straight into a
tiled layout) is ``_graph500_kernels``.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

#: Graph500 initiator probabilities (A, B, C, D).
INITIATOR = (0.57, 0.19, 0.19, 0.05)

# Stream tags appended to an integer seed: independent streams for the dense-tile choice and
# the dense values (the graph itself uses ``default_rng(seed)``).
_TAG_TILES = 0x7A11E5
_TAG_VALUES = 0x5A1E5
# Dense entries hashed per batch in dense_csr() (bounds the hash temporaries).
_DENSE_BATCH = 1 << 20


# --------------------------------------------------------------------------- the generator


def label_dtype(n):
    """Smallest signed integer dtype that holds the labels ``0 .. n-1``."""
    return np.int32 if n <= 2**31 else np.int64


def kronecker_endpoints(scale, edgefactor, rng):
    """Draw the ``M`` (start, end) labels, bit level by bit level, then relabel them.

    Returns two arrays of the index dtype; self-loops and duplicates are kept.
    """
    a, b, c, _ = INITIATOR
    ab = a + b
    c_norm = c / (1.0 - ab)
    a_norm = a / ab
    n = 1 << scale
    m = edgefactor * n
    dtype = label_dtype(n)
    ii = np.zeros(m, dtype=dtype)
    jj = np.zeros(m, dtype=dtype)
    u = np.empty(m)
    ibit = np.empty(m, dtype=bool)
    jbit = np.empty(m, dtype=bool)
    tmp = np.empty(m, dtype=bool)
    shifted = np.empty(m, dtype=dtype)
    for ib in range(scale):
        rng.random(out=u)
        np.greater(u, ab, out=ibit)
        rng.random(out=u)
        # jbit = u > (c_norm if ibit else a_norm); since c_norm > a_norm this is
        # (u > a_norm) and not (ibit and u <= c_norm), without a float temporary.
        np.greater(u, a_norm, out=jbit)
        np.less_equal(u, c_norm, out=tmp)
        tmp &= ibit
        np.logical_not(tmp, out=tmp)
        jbit &= tmp
        np.left_shift(ibit, ib, out=shifted, dtype=dtype)
        ii |= shifted
        np.left_shift(jbit, ib, out=shifted, dtype=dtype)
        jj |= shifted
    del u, ibit, jbit, tmp, shifted
    perm = rng.permutation(n).astype(dtype, copy=False)
    return perm[ii], perm[jj]


def _kernel_1(ii, jj, n):
    """Graph500 kernel 1: drop self-loops, symmetrise, collapse duplicates to 1.0 (CSR)."""
    # Orient every edge as (low, high): duplicates in either direction meet in the upper
    # triangle, so only M entries (not 2M) go through the sort-and-merge of tocsr().
    lo = np.minimum(ii, jj)
    np.maximum(ii, jj, out=jj)
    hi = jj
    keep = lo != hi
    lo = lo[keep]
    hi = hi[keep]
    del keep
    upper = sp.csr_matrix(
        (np.ones(lo.size), (lo, hi)), shape=(n, n)
    )  # duplicates are summed here ...
    del lo, hi
    upper.data[:] = 1.0  # ... and collapsed to one entry of value 1 (spones)
    graph = (upper + upper.T).tocsr()
    graph.sort_indices()
    return graph


def kronecker_graph(scale, edgefactor, seed):
    """:func:`~asafe.compression.graph500.kronecker` without validation (``seed`` an int)."""
    rng = np.random.default_rng(seed)
    ii, jj = kronecker_endpoints(scale, edgefactor, rng)
    return _kernel_1(ii, jj, 1 << scale)


# --------------------------------------------------------------------------- the grid


def grid(scale, tile):
    """Number of tile rows (= tile columns) of the ``2**scale`` matrix."""
    return grid_n(1 << scale, tile)


def grid_n(n, tile):
    """Number of tile rows (= tile columns) of an ``n x n`` matrix."""
    return -(-n // tile)


def dense_count(nb, fraction):
    """Number of dense tiles: ``fraction * nb**2`` rounded to nearest, halves up."""
    return min(nb * nb, math.floor(fraction * nb * nb + 0.5))


# --------------------------------------------------------------------------- dense tiles


def _unrank_pairs(k):
    """Map pair ranks ``k`` to ``(i, j)``, ``i > j``, ranked as ``k = i*(i-1)/2 + j``."""
    i = np.floor((1.0 + np.sqrt(1.0 + 8.0 * k.astype(np.float64))) / 2.0).astype(np.int64)
    # Correct float rounding by at most one either way.
    i -= (i * (i - 1) // 2 > k)
    i += ((i + 1) * i // 2 <= k)
    return i, k - i * (i - 1) // 2


def _diagonal_count(nb, k):
    """Diagonal tiles among ``k`` symmetric dense tiles (see the module docstring)."""
    lo = max(0, k - nb * (nb - 1))
    hi = min(nb, k)
    d = round(k / nb)
    if (d - k) % 2:
        # Move to the nearer value of the right parity (toward k / nb).
        d = d + 1 if k / nb > d else d - 1
    if d < lo:
        d = lo
    if d > hi:
        d = hi - ((hi - k) % 2)
    return d


def choose_dense_tiles(scale, tile, fraction, seed):
    """:func:`~asafe.compression.graph500.dense_tiles` without validation (``seed`` an int)."""
    nb = grid(scale, tile)
    k = dense_count(nb, fraction)
    d = _diagonal_count(nb, k)
    pairs = (k - d) // 2
    rng = np.random.default_rng([seed, _TAG_TILES])
    diag = rng.choice(nb, size=d, replace=False).astype(np.int64)
    ranks = rng.choice(nb * (nb - 1) // 2, size=pairs, replace=False).astype(np.int64)
    i, j = _unrank_pairs(ranks)
    rows = np.concatenate([diag, i, j])
    cols = np.concatenate([diag, j, i])
    order = np.lexsort((cols, rows))
    return np.stack([rows[order], cols[order]], axis=1)


# --------------------------------------------------------------------------- dense values


def _splitmix64(x):
    """splitmix64 finaliser on a ``uint64`` array (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def value_key(seed):
    """64-bit hash key of the dense values for ``seed``."""
    return np.random.SeedSequence([seed, _TAG_VALUES]).generate_state(1, np.uint64)[0]


def _dense_values(key, rows, cols):
    """Symmetric pseudo-random values in ``(0, 1]`` at global positions ``(rows, cols)``."""
    rows = np.asarray(rows, dtype=np.uint64)
    cols = np.asarray(cols, dtype=np.uint64)
    lo = np.minimum(rows, cols)
    hi = np.maximum(rows, cols)
    h = _splitmix64(_splitmix64(lo ^ key) ^ hi)
    return ((h >> np.uint64(11)) + np.uint64(1)).astype(np.float64) * 2.0**-53


def _tile_values(key, n, tile, rb, cb):
    """The dense tile ``(rb, cb)`` as a 2-D ``float64`` array (edge tiles are smaller)."""
    r = np.arange(rb * tile, min(n, (rb + 1) * tile), dtype=np.uint64)
    c = np.arange(cb * tile, min(n, (cb + 1) * tile), dtype=np.uint64)
    return _dense_values(key, r[:, None], c[None, :])


def _block_starts(blocks, nb):
    """``starts[rb]:starts[rb + 1]`` indexes the dense tiles of tile row ``rb`` in ``blocks``."""
    return np.searchsorted(blocks[:, 0], np.arange(nb + 1))


# --------------------------------------------------------------------------- CSR pieces


def dense_csr(key, n, tile, blocks):
    """The dense tiles ``blocks`` (sorted row-major) alone, as a canonical ``n x n`` CSR.

    Every row of a tile row has the same dense columns, so each tile row is one broadcast
    ``(height, width)`` block of values, written in place into preallocated arrays.
    """
    nb = grid_n(n, tile)
    starts = _block_starts(blocks, nb)
    span = np.arange(tile, dtype=np.int64)
    row_cols = {}
    counts = np.zeros(n, dtype=np.int64)
    for rb in np.unique(blocks[:, 0]).tolist():
        cbs = blocks[starts[rb]:starts[rb + 1], 1]
        cols = (cbs[:, None] * tile + span[None, :]).ravel()
        row_cols[rb] = cols = cols[cols < n]  # edge tiles are cut at the border
        counts[rb * tile:min(n, (rb + 1) * tile)] = cols.size
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    data = np.empty(indptr[-1])
    indices = np.empty(indptr[-1], dtype=_csr_index_dtype(indptr[-1], n))
    for rb, cols in row_cols.items():
        r1 = min(n, (rb + 1) * tile)
        step = max(1, _DENSE_BATCH // cols.size)
        for r0 in range(rb * tile, r1, step):
            rows = np.arange(r0, min(r1, r0 + step), dtype=np.int64)
            lo, hi = indptr[rows[0]], indptr[rows[-1] + 1]
            shape = (rows.size, cols.size)
            data[lo:hi].reshape(shape)[...] = _dense_values(key, rows[:, None], cols[None, :])
            indices[lo:hi].reshape(shape)[...] = cols
    return _csr(data, indices, indptr, n)


def _csr_index_dtype(nnz, n):
    """Index dtype scipy would pick: ``int32`` while it holds ``nnz`` and ``n``."""
    return np.int32 if nnz < 2**31 and n < 2**31 else np.int64


def _csr(data, indices, indptr, n):
    """Canonical ``n x n`` CSR from its arrays, with scipy's smallest index dtype."""
    idx = _csr_index_dtype(indptr[-1], n)
    out = sp.csr_matrix(
        (data, indices.astype(idx, copy=False), indptr.astype(idx, copy=False)),
        shape=(n, n),
    )
    out.has_sorted_indices = True
    out.has_canonical_format = True
    return out


def without_tiles(graph, n, tile, blocks):
    """``graph`` with every entry inside the tiles ``blocks`` removed (canonical CSR)."""
    nb = grid_n(n, tile)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(graph.indptr))
    keep = ~_dense_mask(nb, blocks, rows // tile, graph.indices // tile)
    counts = np.bincount(rows[keep], minlength=n)
    del rows
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return _csr(graph.data[keep], graph.indices[keep], indptr, n)


def _dense_mask(nb, blocks, row_blocks, col_blocks):
    """Boolean mask: is tile ``(row_blocks[e], col_blocks[e])`` one of ``blocks``?"""
    if len(blocks) == 0:
        return np.zeros(row_blocks.shape, dtype=bool)
    keys = np.sort(blocks[:, 0] * nb + blocks[:, 1])
    query = row_blocks.astype(np.int64) * nb + col_blocks
    pos = np.searchsorted(keys, query)
    pos[pos == keys.size] = 0
    return keys[pos] == query


# --------------------------------------------------------------------------- streaming tiles


def stream_tiles(graph, tile, blocks, key):
    """The tiles of ``graph`` overlaid with the dense tiles ``blocks``, row-major, empty ones skipped.

    What :func:`~asafe.compression.graph500.iter_mixed_tiles` yields: dense
    tiles as 2-D arrays of the values of ``key``, the others as
    ``csr_matrix`` of the tile's shape. One tile row at a time.
    """
    n = graph.shape[0]
    nb = grid_n(n, tile)
    starts = _block_starts(blocks, nb) if len(blocks) else None
    for rb in range(nb):
        dense_cols = (
            blocks[starts[rb]:starts[rb + 1], 1].tolist() if starts is not None else []
        )
        sparse = _row_tiles(graph, n, tile, rb, set(dense_cols))
        yield from _merge_row(key, n, tile, rb, dense_cols, sparse)


def _row_tiles(graph, n, tile, rb, dense_cols):
    """Sparse tiles of tile row ``rb`` as ``{col_block: csr_matrix}`` (non-empty, not dense)."""
    r0, r1 = rb * tile, min(n, (rb + 1) * tile)
    lo, hi = graph.indptr[r0], graph.indptr[r1]
    cols = graph.indices[lo:hi]
    rows = np.repeat(np.arange(r1 - r0), np.diff(graph.indptr[r0:r1 + 1]))
    cb = cols // tile
    order = np.argsort(cb, kind="stable")  # row-major order inside each tile is kept
    cb, rows, cols = cb[order], rows[order], cols[order]
    bounds = np.flatnonzero(np.diff(cb)) + 1
    out = {}
    for start, stop in zip(np.r_[0, bounds], np.r_[bounds, cb.size]):
        if start == stop:
            continue
        c = int(cb[start])
        if c in dense_cols:
            continue
        width = min(n, (c + 1) * tile) - c * tile
        indptr = np.zeros(r1 - r0 + 1, dtype=graph.indptr.dtype)
        np.cumsum(np.bincount(rows[start:stop], minlength=r1 - r0), out=indptr[1:])
        out[c] = sp.csr_matrix(
            (np.ones(stop - start), cols[start:stop] - c * tile, indptr),
            shape=(r1 - r0, width),
        )
    return out


def _merge_row(key, n, tile, rb, dense_cols, sparse):
    """Yield the dense and sparse tiles of one tile row in column order."""
    for c in sorted(set(dense_cols) | sparse.keys()):
        if c in sparse:
            yield (rb, c), sparse[c]
        else:
            yield (rb, c), _tile_values(key, n, tile, rb, c)

