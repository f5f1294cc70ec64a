"""Numba kernels of :mod:`asafe.compression.graph500` (kept apart so that importing the
generator does not import numba)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

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
def fill_overlay(key, n, tile, rows, cols, offsets, out):
    """out[offsets[t]:] = the values of tile (rows[t], cols[t]), row-major (graph500._dense_values)."""
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
