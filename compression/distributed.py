"""A distributed tiled matvec: ``y = A @ x`` as a Dask graph of row panels.

The graph has three kinds of tasks, each typed with :func:`asafe.typed` so that
the type survives graph optimization and fusion:

``produce_panel`` (compute)
    Makes one row panel of ``A`` -- a band of whole tile rows -- as a
    :class:`~asafe.compression.TiledMatrix`. The panel's blocks come from a
    :class:`PanelSource` as dense arrays (the uncompressed form the data exists
    in); each block goes through the tile producer
    :func:`~asafe.compression.engine.produce`, which compresses it when
    ``asafe.is_on("compression")`` and the block is a candidate (it holds fewer
    non-zeros than the threshold), and otherwise emits it dense without reading
    it. The panel reports ``logical_nbytes`` (dense-equivalent) and ``nbytes``
    (what crosses the network), which the cluster plugins use to count transfers
    in uncompressed-equivalent bytes (see :mod:`asafe.schedulers.sizes` and the Architecture page, "The cluster plugins").
``multiply_panel`` (compute)
    ``panel @ x`` with the numba kernels: a slice of ``y``.
``assemble`` (communication)
    Gathers the slices into ``y``.

Granularity. A task costs the distributed scheduler 1-2 ms; one task per
128 x 128 tile would cost more than the tile's multiply. A panel carries whole
tile rows (``grid_rows / panels`` of them, every tile of those rows), so a task
does milliseconds to seconds of work and the tile loops stay inside the numba
kernels. The default (:func:`default_panels`) aims at a few panels per worker
thread so that producers and multiplies overlap.

Where panels are produced and multiplied is the scheduler's choice unless
``producers`` / ``consumers`` pin them (the benchmarks pin them to different
workers to make a phase transfer-bound: every panel then crosses the network).

>>> import numpy as np, scipy.sparse as sp, dask
>>> S = sp.random_array((300, 300), density=0.02, random_state=0, format="csr")
>>> x = np.ones(300)
>>> y = matvec_graph(ScipySource(S, tile=64), x, panels=3)
>>> bool(np.allclose(dask.compute(y, scheduler="sync")[0], S @ x))
True
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import dask
import numpy as np
import scipy.sparse as sp
from dask.base import tokenize
from dask.delayed import delayed

from asafe import COMMUNICATION, COMPUTE, typed

from . import engine
from .matrix import TiledMatrix

__all__ = [
    "PanelSource",
    "ScipySource",
    "Graph500Source",
    "default_panels",
    "panel_bounds",
    "produce_panel",
    "multiply_panel",
    "assemble",
    "matvec_graph",
    "matvec",
]


class PanelSource:
    """Where a panel's dense blocks come from (subclass and implement :meth:`blocks`).

    A source travels inside every ``produce_panel`` task, so it should be small
    (parameters, or a reference to data the workers can load).

    :func:`matvec_graph` names its tasks after ``dask.base.tokenize(source)``:
    a subclass should define ``__dask_tokenize__`` returning a token of
    everything :meth:`blocks` and the threshold depend on (dask's default for
    other objects hashes their pickle).

    Attributes
    ----------
    shape : (int, int)
    tile : int
    threshold : None, int or CostModel
        Passed to :func:`~asafe.compression.engine.produce`.
    """

    shape: tuple[int, int]
    tile: int
    threshold: Any = None

    @property
    def grid(self) -> tuple[int, int]:
        """Tiles per side: ``(ceil(m / tile), ceil(n / tile))``."""
        m, n = self.shape
        return -(-m // self.tile), -(-n // self.tile)

    def blocks(self, first_row: int, stop_row: int) -> Iterator[tuple[tuple[int, int], np.ndarray]]:
        """``((row_block, col_block), dense block)`` for every tile of tile rows ``[first_row, stop_row)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement blocks(first_row, stop_row)")


class ScipySource(PanelSource):
    """Blocks of a scipy sparse matrix, densified one tile row at a time.

    Examples
    --------
    >>> S = sp.eye_array(4, format="csr")
    >>> [(ij, float(b.sum())) for ij, b in ScipySource(S, tile=2).blocks(0, 1)]
    [((0, 0), 2.0), ((0, 1), 0.0)]
    """

    def __init__(self, S: Any, tile: int, threshold: Any = None) -> None:
        if not sp.issparse(S):
            raise TypeError(f"ScipySource needs a scipy.sparse matrix, got {type(S).__name__}")
        self.S = S.tocsr()
        self.shape = (int(S.shape[0]), int(S.shape[1]))
        self.tile = int(tile)
        self.threshold = threshold

    def matrix(self) -> Any:
        """The CSR matrix the blocks are cut from."""
        return self.S

    def __dask_tokenize__(self) -> str:
        """The source's content: the CSR arrays, shape and dtype, the tile and the threshold.

        :func:`matvec_graph` names its tasks after it, so equal content gives
        equal keys and different content never does. (dask does not hash the
        arrays of a returned tuple, hence a token string.)
        """
        S = self.S
        return tokenize(_kind(self), self.shape, S.dtype.str, S.indptr, S.indices, S.data,
                        self.tile, _threshold_token(self.threshold))

    def blocks(self, first_row: int, stop_row: int) -> Iterator[tuple[tuple[int, int], np.ndarray]]:
        S = self.matrix()
        m, n = self.shape
        t = self.tile
        for rb in range(first_row, stop_row):
            slab = S[rb * t:min(m, (rb + 1) * t)].toarray()  # the tile row, dense
            for cb in range(-(-n // t)):
                yield (rb, cb), slab[:, cb * t:(cb + 1) * t]


_CACHE: dict[tuple, Any] = {}
_CACHE_LOCK = threading.Lock()


class Graph500Source(ScipySource):
    """Blocks of :func:`asafe.compression.graph500.mixed_matrix`, generated where used.

    Only the parameters travel with the tasks; each worker process generates the
    matrix once (cached per parameters) and cuts its panels from it.

    Examples
    --------
    >>> source = Graph500Source(scale=4, tile=4, dense_fraction=0.25)
    >>> source.shape, source.grid
    ((16, 16), (4, 4))
    """

    def __init__(self, scale: int, tile: int, dense_fraction: float, edgefactor: int = 16, seed: int = 0,
                 threshold: Any = None) -> None:
        self.scale, self.dense_fraction, self.edgefactor, self.seed = int(scale), float(dense_fraction), int(edgefactor), int(seed)
        self.shape = (1 << self.scale, 1 << self.scale)
        self.tile = int(tile)
        self.threshold = threshold

    def _key(self) -> tuple:
        return (self.scale, self.tile, self.dense_fraction, self.edgefactor, self.seed)

    def matrix(self) -> Any:
        key = self._key()
        with _CACHE_LOCK:
            S = _CACHE.get(key)
            if S is None:
                from . import graph500

                S = _CACHE[key] = graph500.mixed_matrix(self.scale, self.tile, self.dense_fraction,
                                                        self.edgefactor, self.seed)
        return S

    def __reduce__(self):
        return (Graph500Source, (self.scale, self.tile, self.dense_fraction, self.edgefactor, self.seed,
                                 self.threshold))

    def __dask_tokenize__(self) -> str:
        """Every parameter: the matrix is a function of them, the tiles of the threshold too."""
        return tokenize(_kind(self), self.scale, self.tile, self.dense_fraction, self.edgefactor, self.seed,
                        _threshold_token(self.threshold))

    def __repr__(self) -> str:
        return (f"Graph500Source(scale={self.scale}, tile={self.tile}, dense_fraction={self.dense_fraction}, "
                f"edgefactor={self.edgefactor}, seed={self.seed}, threshold={self.threshold!r})")


def _kind(source) -> str:
    cls = type(source)
    return f"{cls.__module__}.{cls.__qualname__}"


def _threshold_token(threshold) -> Any:
    """``threshold`` as what it means: None and the default CostModel are the same rule."""
    return engine.check_threshold(threshold)


def default_panels(source: PanelSource, threads: int = 2, per_thread: int = 4) -> int:
    """Number of row panels: ``per_thread`` per worker thread, at most one per tile row.

    Examples
    --------
    >>> default_panels(Graph500Source(scale=14, tile=128, dense_fraction=0.25), threads=2)
    8
    """
    return max(1, min(source.grid[0], threads * per_thread))


def panel_bounds(grid_rows: int, panels: int) -> list[tuple[int, int]]:
    """Tile-row ranges ``[first, stop)`` of ``panels`` near-equal panels.

    Examples
    --------
    >>> panel_bounds(10, 4)
    [(0, 2), (2, 5), (5, 7), (7, 10)]
    """
    if panels < 1:
        raise ValueError(f"panels must be >= 1, got {panels}")
    panels = min(panels, grid_rows)
    edges = [i * grid_rows // panels for i in range(panels + 1)]
    return [(edges[i], edges[i + 1]) for i in range(panels)]


@typed(COMPUTE)
def produce_panel(source: PanelSource, first_row: int, stop_row: int) -> TiledMatrix:
    """Tile rows ``[first_row, stop_row)`` of the source as a TiledMatrix.

    Each block is emitted by the tile producer, compressed when
    ``asafe.is_on("compression")`` says so and the block is a candidate.
    """
    m, n = source.shape
    t = source.tile
    rows = min(m, stop_row * t) - first_row * t
    tiles = (
        ((rb - first_row, cb), engine.produce(block, threshold=source.threshold))
        for (rb, cb), block in source.blocks(first_row, stop_row)
    )
    return TiledMatrix.from_tiles((rows, n), t, tiles)


@typed(COMPUTE)
def multiply_panel(panel: TiledMatrix, x: np.ndarray) -> np.ndarray:
    """One slice of ``y``: ``panel @ x``."""
    return panel @ x


@typed(COMMUNICATION)
def assemble(*parts: np.ndarray) -> np.ndarray:
    """``y`` from its slices, in panel order."""
    return np.concatenate(parts) if parts else np.zeros(0)


def matvec_graph(
    source: PanelSource,
    x: np.ndarray,
    *,
    panels: int | None = None,
    producers: Sequence[str] | None = None,
    consumers: Sequence[str] | None = None,
) -> Any:
    """The Dask graph of ``y = A @ x`` (a :class:`~dask.delayed.Delayed`).

    Parameters
    ----------
    source : PanelSource
        The matrix ``A``.
    x : numpy.ndarray
        1-D, of length ``A.shape[1]``; it enters the graph once and every
        multiply depends on it.
    panels : int, optional
        Row panels (default :func:`default_panels`).
    producers, consumers : list of worker addresses, optional
        Pin the panel producers, resp. the multiplies, to these workers.
    """
    x = np.asarray(x)
    if x.ndim != 1 or x.shape[0] != source.shape[1]:
        raise ValueError(f"x must be 1-D of length {source.shape[1]}, got shape {x.shape}")
    if panels is None:
        panels = default_panels(source)
    bounds = panel_bounds(source.grid[0], int(panels))
    # the source's content, not its repr: see ScipySource.__dask_tokenize__
    token = tokenize(source, x, bounds)
    x_node = delayed(x, name=f"asafe-x-{token}")
    with _pinned(producers):
        produced = [
            delayed(produce_panel, pure=True)(source, lo, hi, dask_key_name=(f"asafe-panel-{token}", i))
            for i, (lo, hi) in enumerate(bounds)
        ]
    with _pinned(consumers):
        parts = [
            delayed(multiply_panel, pure=True)(p, x_node, dask_key_name=(f"asafe-multiply-{token}", i))
            for i, p in enumerate(produced)
        ]
    return delayed(assemble, pure=True)(*parts, dask_key_name=f"asafe-matvec-{token}")


def _pinned(workers: Sequence[str] | None):
    if not workers:
        return contextlib.nullcontext()
    return dask.annotate(workers=list(workers), allow_other_workers=False)


def matvec(client: Any, source: PanelSource, x: np.ndarray, **kwargs: Any) -> np.ndarray:
    """Compute ``A @ x`` on the cluster behind ``client`` (see :func:`matvec_graph`)."""
    future = client.compute(matvec_graph(source, x, **kwargs))
    try:
        return future.result()
    finally:
        future.release()
