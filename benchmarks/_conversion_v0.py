"""The scipy -> tiled conversion as it was at 4757a96 (one element at a time, serial).

The ``conversion`` section of the kernels suite times it beside the current one
(the "before" of the conversion cost); ``tests/compression/test_conversion.py``
holds the same code as its reference.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from asafe.compression import TiledMatrix
from asafe.compression import layout as layout_mod
from asafe.compression.build import canonical_csr
from asafe.compression.engine import keeps_dense_on_grid

__all__ = ["old_from_scipy"]


@njit(nogil=True, cache=True)
def _old_csr_tile_counts(indptr, indices, m, tile, nbc, cap):
    nbr = (m + tile - 1) // tile
    cnt = np.zeros(nbc, np.int64)
    touched = np.empty(nbc, np.int64)
    tr_ptr = np.zeros(nbr + 1, np.int64)
    out_col = np.empty(cap, np.int64)
    out_cnt = np.empty(cap, np.int64)
    q = 0
    for I in range(nbr):
        nt = 0
        for k in range(indptr[I * tile], indptr[min(m, I * tile + tile)]):
            J = indices[k] // tile
            if cnt[J] == 0:
                touched[nt] = J
                nt += 1
            cnt[J] += 1
        cols = np.sort(touched[:nt])
        for J in cols:
            out_col[q] = J
            out_cnt[q] = cnt[J]
            cnt[J] = 0
            q += 1
        tr_ptr[I + 1] = q
    return tr_ptr, out_col[:q], out_cnt[:q]


@njit(nogil=True, cache=True)
def _old_fill_from_csr(indptr, indices, values, m, n, tile, tr_ptr, t_col, t_slot,
                       dense_off, dense_values, row_ptr, col, data):
    nbr = tr_ptr.size - 1
    nbc = (n + tile - 1) // tile
    slot_of = np.full(nbc, -1, np.int64)
    pos = 0
    for I in range(nbr):
        r0 = I * tile
        for q in range(tr_ptr[I], tr_ptr[I + 1]):
            slot_of[t_col[q]] = t_slot[q]
        for r in range(min(tile, m - r0)):
            i = r0 + r
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                J = j // tile
                slot = slot_of[J]
                if slot >= 0:
                    c0 = J * tile
                    w = min(tile, n - c0)
                    dense_values[dense_off[slot] + r * w + (j - c0)] = values[k]
                else:
                    col[pos] = j
                    data[pos] = values[k]
                    pos += 1
            row_ptr[i + 1] = pos
        for q in range(tr_ptr[I], tr_ptr[I + 1]):
            slot_of[t_col[q]] = -1


def old_from_scipy(S, tile, threshold=None):
    S = canonical_csr(S)
    m, n = shape = (int(S.shape[0]), int(S.shape[1]))
    nbr, nbc = -(-m // tile), -(-n // tile)
    cap = int(min(S.indices.size, nbr * nbc))
    tr_ptr, t_col, t_nnz = _old_csr_tile_counts(S.indptr, S.indices, m, tile, nbc, cap)
    t_row = np.repeat(np.arange(tr_ptr.size - 1, dtype=np.int64), np.diff(tr_ptr))
    t_dense = keeps_dense_on_grid(shape, tile, S.dtype, t_row, t_col, t_nnz, threshold)
    lay, t_slot = layout_mod.allocate(shape, tile, S.dtype, t_row, t_col, t_nnz, t_dense)
    _old_fill_from_csr(S.indptr, S.indices, S.data, m, n, tile, tr_ptr, t_col, t_slot,
                       lay.dense_off, lay.dense_values, lay.row_ptr, lay.col, lay.data)
    return TiledMatrix(lay)
