"""asafe.compression: the tile engine, mixed dense/sparse tiled matrices.

Modules, by theme:

* :mod:`asafe.compression.tiles` -- tile objects (:class:`DenseTile`,
  :class:`SparseTile`, :class:`EmptyTile`): their sizes, pickling and
  ``dask.sizeof``;
* :mod:`asafe.compression.engine` -- which tiles to compress (the
  :class:`CostModel` or a fixed threshold) and :func:`produce` /
  :func:`maybe_compress`, which inspect a block only when the runtime's
  ``"compression"`` optimization is on;
* :mod:`asafe.compression.kernels` -- the numba product kernels, the
  parallel/serial dispatch and its settings, the BLAS spin mitigation,
  single-tile conversions;
* :mod:`asafe.compression.layout` -- the flattened arrays a matrix is stored
  in, and the kernels that build and read them;
* :mod:`asafe.compression.matrix` -- :class:`TiledMatrix`;
* :mod:`asafe.compression.graph500` -- Graph500 Kronecker matrices and mixed
  dense/sparse test matrices;
* :mod:`asafe.compression.array` -- dask.array integration: dask arrays whose
  chunks are tiled blocks (:func:`from_scipy`, :func:`from_array`,
  :func:`from_graph500`), registered with Dask as a chunk type.

Examples
--------
>>> import numpy as np
>>> from asafe.compression import TiledMatrix
>>> A = TiledMatrix.from_dense(np.eye(4), tile=2)
>>> A @ np.arange(4.0)
array([0., 1., 2., 3.])
"""
from . import graph500
from .array import TiledArray, TiledBlock, TransposedTiledBlock, from_array, from_graph500, from_scipy
from .engine import CostModel, choose_kind, decompress, inspection_count, maybe_compress, produce, tile_threshold
from .matrix import TiledMatrix, TransposedTiledMatrix
from .tiles import DenseTile, EmptyTile, SparseTile, Tile

__all__ = [
    "TiledMatrix",
    "TransposedTiledMatrix",
    "Tile",
    "DenseTile",
    "SparseTile",
    "EmptyTile",
    "CostModel",
    "tile_threshold",
    "choose_kind",
    "produce",
    "maybe_compress",
    "decompress",
    "inspection_count",
    "graph500",
    "TiledArray",
    "TiledBlock",
    "TransposedTiledBlock",
    "from_scipy",
    "from_array",
    "from_graph500",
]

