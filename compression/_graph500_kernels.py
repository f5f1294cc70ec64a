"""The numba side of :mod:`asafe.compression.graph500`: a mixed matrix built straight into a tiled layout.

:func:`tiled_from_graph` is the work of
:func:`~asafe.compression.graph500.mixed_tiled`, and :func:`_fill_overlay` its
kernel (the dense values, hashed into the tiles' buffer in parallel over
tiles). Kept apart so that importing the generator imports neither numba nor
the tile engine: :mod:`~asafe.compression.graph500` imports this module when
:func:`~asafe.compression.graph500.mixed_tiled` is first called.
"""
from __future__ import annotations

from . import _openmp  # noqa: F401  (the OpenMP wait policy, before numba starts)

import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

from . import engine, tiling  # noqa: E402
from . import layout as layout_mod  # noqa: E402
from ._graph500_parts import dense_csr, without_tiles  # noqa: E402
from .matrix import TiledMatrix  # noqa: E402

_C0 = np.uint64(0x9E3779B97F4A7C15)
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_ONE = np.uint64(1)
_SCALE = 2.0 ** -53


@njit(nogil=True, cache=True, inline="always")
def _splitmix64(x):
    x = x + _C0
    x = (x ^ (x >> _S30)) * _C1
    x = (x ^ (x >> _S27)) * _C2
    return x ^ (x >> _S31)


@njit(nogil=True, cache=True, parallel=True)
def _fill_overlay(key, n, tile, rows, cols, offsets, out):
    """out[offsets[t]:] = the values of tile (rows[t], cols[t]), row-major (as ``_dense_values`` of ``_graph500_parts``)."""
    for t in prange(rows.size):
        r0 = rows[t] * tile
        c0 = cols[t] * tile
        h = min(tile, n - r0)
        w = min(tile, n - c0)
        base = offsets[t]
        for r in range(h):
            gr = np.uint64(r0 + r)
            for c in range(w):
                gc = np.uint64(c0 + c)
                lo = min(gr, gc)
                hi = max(gr, gc)
                v = _splitmix64(_splitmix64(lo ^ key) ^ hi)
                out[base + r * w + c] = np.float64((v >> _S11) + _ONE) * _SCALE


def tiled_from_graph(graph, n, tile, blocks, key, threshold):
    """The tiled mixed matrix of ``graph`` overlaid with the dense tiles ``blocks`` (values of ``key``).

    :func:`~asafe.compression.graph500.mixed_tiled` after its checks: the graph
    without the dense tiles goes through the CSR passes of
    :mod:`~asafe.compression.tiling`, and the dense values are hashed straight
    into the dense tiles' buffer by :func:`_fill_overlay`.
    """
    sparse = without_tiles(graph, n, tile, blocks) if len(blocks) else graph
    tr_ptr, g_col, g_nnz = tiling.csr_tile_counts(sparse.indptr, sparse.indices, (n, n), tile)
    g_row = np.repeat(np.arange(tr_ptr.size - 1, dtype=np.int64), np.diff(tr_ptr))
    b_row = np.ascontiguousarray(blocks[:, 0], np.int64) if len(blocks) else np.zeros(0, np.int64)
    b_col = np.ascontiguousarray(blocks[:, 1], np.int64) if len(blocks) else np.zeros(0, np.int64)
    b_nnz = np.minimum(tile, n - tile * b_row) * np.minimum(tile, n - tile * b_col)
    t_row = np.concatenate([g_row, b_row])
    t_col = np.concatenate([g_col, b_col])
    t_nnz = np.concatenate([g_nnz, b_nnz])
    overlay = np.concatenate([np.zeros(g_row.size, bool), np.ones(b_row.size, bool)])
    order = np.lexsort((t_col, t_row))  # the graph has no entry in an overlaid tile: no ties
    t_row, t_col, t_nnz, overlay = t_row[order], t_col[order], t_nnz[order], overlay[order]
    t_dense = engine.keeps_dense_on_grid((n, n), tile, np.dtype(np.float64), t_row, t_col, t_nnz, threshold)
    if (overlay & ~t_dense).any():  # an overlaid tile stored sparse: the general path
        out = without_tiles(graph, n, tile, blocks)
        out = (out + dense_csr(key, n, tile, blocks)).tocsr()
        out.sort_indices()
        return TiledMatrix.from_scipy(out, tile, threshold)
    layout, t_slot = layout_mod.allocate((n, n), tile, np.float64, t_row, t_col, t_nnz, t_dense)
    plan_ptr = np.zeros(tr_ptr.size, np.int64)
    np.cumsum(np.bincount(t_row, minlength=tr_ptr.size - 1), out=plan_ptr[1:])
    tiling.from_csr_plan(sparse, layout, plan_ptr, t_col, t_slot)  # 0/1 graph: no explicit zeros
    _fill_overlay(np.uint64(key), n, tile, t_row[overlay], t_col[overlay], layout.dense_off[t_slot[overlay]],
                  layout.dense_values)
    return TiledMatrix(layout)
