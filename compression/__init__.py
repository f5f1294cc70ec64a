"""asafe.compression: the tile engine, mixed dense/sparse tiled matrices.

Modules, by theme:

* :mod:`asafe.compression.tiles` -- tile objects (:class:`DenseTile`,
  :class:`SparseTile`, :class:`EmptyTile`): their sizes, pickling and
  ``dask.sizeof``;
* :mod:`asafe.compression.engine` -- which tiles to compress (the
  :class:`CostModel` or a fixed threshold) and :func:`produce` /
  :func:`maybe_compress`, which inspect a block only when the runtime's
  ``"compression"`` optimization is on;
* :mod:`asafe.compression.csr` -- one CSR block: its compact index dtype and
  the numba kernels that convert and multiply it;
* :mod:`asafe.compression.tiling` -- the tile grid, and the numba passes that
  count a matrix's tiles and fill a layout from a dense array or a CSR;
* :mod:`asafe.compression.layout` -- the flattened arrays a matrix is stored
  in, their allocation, and the kernels that read them back;
* :mod:`asafe.compression.kernels` -- the numba product kernels of a whole
  matrix, the parallel/serial dispatch and its settings, the BLAS spin
  mitigation;
* :mod:`asafe.compression.build` -- the constructors' work: input checks, the
  count pass, the engine's decision, allocation and the fill;
* :mod:`asafe.compression.matrix` -- :class:`TiledMatrix`;
* :mod:`asafe.compression.graph500` -- Graph500 Kronecker matrices and mixed
  dense/sparse test matrices;
* :mod:`asafe.compression.blocks` -- the chunk types :class:`TiledBlock` and
  :class:`TransposedTiledBlock`, registered with Dask;
* :mod:`asafe.compression.array` -- dask.array integration: dask arrays whose
  chunks are tiled blocks (:func:`from_scipy`, :func:`from_array`,
  :func:`from_graph500`).

Examples
--------
>>> import numpy as np
>>> from asafe.compression import TiledMatrix
>>> A = TiledMatrix.from_dense(np.eye(4), tile=2)
>>> A @ np.arange(4.0)
array([0., 1., 2., 3.])
"""
import importlib

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

# Where each public name lives. The package imports a module when one of its
# names is first used (PEP 562), never during its own initialisation: a worker
# unpickles a TiledMatrix that arrives from a peer on a communication thread,
# which imports ``asafe.compression.matrix`` (holding that module's import lock
# while it imports this package first), while a task on an executor thread may
# be importing this package. Were the package to import its modules here, each
# thread would wait for the lock the other holds; CPython breaks that cycle by
# handing one thread a partially initialised module, and the task fails with
# "cannot import name 'TiledMatrix' from partially initialized module".
_HOME = {
    "TiledMatrix": "matrix",
    "TransposedTiledMatrix": "matrix",
    "Tile": "tiles",
    "DenseTile": "tiles",
    "SparseTile": "tiles",
    "EmptyTile": "tiles",
    "CostModel": "engine",
    "tile_threshold": "engine",
    "choose_kind": "engine",
    "produce": "engine",
    "maybe_compress": "engine",
    "decompress": "engine",
    "inspection_count": "engine",
    "graph500": "graph500",
    "TiledArray": "array",
    "TiledBlock": "blocks",
    "TransposedTiledBlock": "blocks",
    "from_scipy": "array",
    "from_array": "array",
    "from_graph500": "array",
}


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f".{home}", __name__)
    value = module if home == name else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
