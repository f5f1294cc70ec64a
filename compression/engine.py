"""The compression engine: which tiles to compress, and producing them on demand.

When is a tile worth compressing?
---------------------------------
A tile with ``rows x cols = E`` elements and ``k`` non-zeros is stored sparse
when ``0 < k < T``, dense when ``k >= T``, and not at all when ``k == 0``.
``threshold`` sets ``T``:

* an integer is ``T`` itself, for every tile (the paper's setting is 128 for
  128 x 128 tiles);
* ``None`` (the default) asks the default :class:`CostModel`; a
  :class:`CostModel` instance asks that one.

The cost model compares the bytes each form makes a matvec move, weighted by
how fast each kernel moves them, plus the conversion, amortized::

    dense  = s * E                                       (s: bytes per value)
    sparse = k * (s + i) + p * (rows + 1)                (i: index bytes, p: 4)
    convert = dense + sparse             (read the block again, write the CSR)

    compress  <=>  w * sparse + convert / R  <  dense

``w`` (``sparse_weight``) is the measured cost of a byte read by the sparse
kernel relative to a byte streamed by the dense kernel (indirect loads of
``x``, short rows: a sparse byte is slower). ``R`` (``reuse``) is how many times
the tile is read in its chosen form after the conversion (matvecs, transfers).
Solving for ``k`` gives ``T = ceil((dense * (1 - 1/R) - p * (rows + 1) * (w + 1/R))
/ ((s + i) * (w + 1/R)))``, at least 0. Counting the non-zeros is not charged: it
is the inspection the decision needs in any case, and the engine pays it only
when compression is on.

One rule for every path. :func:`keeps_dense` is the only place the decision is
made: :func:`produce`, :func:`maybe_compress`, :meth:`TiledMatrix.from_dense`
and :meth:`TiledMatrix.from_scipy` (a tile that arrives sparse) all call it, so
a tile gets the same form whichever path builds it. ``i`` is the size of the
tile's own compact in-tile index (``uint8`` up to 256 columns, the form a
:class:`SparseTile` has on the wire), even though a
:class:`~asafe.compression.TiledMatrix` stores the column indices of its merged
sparse part as ``uint16`` or wider: so a tile's form depends only on the tile
(shape, value dtype, non-zeros), not on the matrix it lands in. (The matrix
constructors used to count ``uint16`` indices and :func:`produce` ``uint8``
ones, so a 128 x 128 tile between 36% and 40% full got a different form on the
two paths.)

With the defaults (``w = 2``, ``R = 16``) a 128 x 128 float64 tile is compressed
below 6563 non-zeros (40% fill; with ``uint16`` indices the bound would be 5907,
36%, well inside the model's uncertainty on ``w``); a 256 x 256 one below 26365
(40%). The paper compresses below a fixed
128 (0.8% fill), which keeps Graph500 tiles with hundreds or thousands of
non-zeros dense. ``w`` was measured with ``python -m benchmarks kernels
--section calibrate`` (single-thread time of the sparse and the dense kernel on the
same tiles at fills from 1% to 50%): the per-byte ratio is 1.3 to 1.7 while the
tiles are cache-resident (the kernels break even near 50% fill) and about 3
once the sparse data streams from memory (break-even near 27% fill); ``w = 2``
sits between the two. ``R = 16`` assumes a matrix built once and multiplied
many times (an iterative solver, a benchmark). The kernels benchmark compares
the model's choice with the fixed 128.

Producing tiles on demand
-------------------------
Deciding needs a pass over the whole block, as costly as one dense multiply, so
the engine inspects a block only when compression is on. :func:`produce` and
:func:`maybe_compress` take ``compress``: ``True`` or ``False`` force it, and
``None`` (the default) asks the runtime, ``asafe.is_on("compression")``, which
is ``False`` outside an adaptive run. When it is off the block is wrapped as a
:class:`DenseTile` without reading a single value. :func:`inspection_count`
counts the blocks inspected in this process (tests and benchmarks read it).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from asafe import is_on

from . import csr
from .tiles import DENSE, EMPTY, SPARSE, DenseTile, EmptyTile, SparseTile, Tile, is_integer
from .tiling import tile_extent

__all__ = [
    "CostModel",
    "DEFAULT_COST_MODEL",
    "check_threshold",
    "tile_threshold",
    "tile_thresholds",
    "keeps_dense",
    "keeps_dense_on_grid",
    "choose_kind",
    "produce",
    "maybe_compress",
    "decompress",
    "inspection_count",
    "record_inspections",
    "wants_compression",
]

OPTIMIZATION = "compression"


@dataclass(frozen=True)
class CostModel:
    """The byte-cost model that picks a tile's form (see the module docstring).

    Parameters
    ----------
    sparse_weight : float
        Cost of a byte read by the sparse kernel relative to a byte streamed by
        the dense kernel (``w``, > 0).
    reuse : float
        Reads of the tile in its chosen form per conversion (``R``, >= 1).
    pointer_bytes : int
        Bytes of a row pointer.

    Examples
    --------
    >>> model = CostModel(sparse_weight=1.0, reuse=1e9)
    >>> model.threshold((128, 128), np.float64)   # the byte break-even: 88% fill
    14507
    >>> DEFAULT_COST_MODEL.threshold((128, 128), np.float64)
    6563
    """

    sparse_weight: float = 2.0
    reuse: float = 16.0
    pointer_bytes: int = 4

    def __post_init__(self):
        if not self.sparse_weight > 0:
            raise ValueError(f"sparse_weight must be > 0, got {self.sparse_weight!r}")
        if not self.reuse >= 1:
            raise ValueError(f"reuse must be >= 1, got {self.reuse!r}")

    def dense_bytes(self, shape, dtype) -> int:
        """Bytes of the dense form of a tile.

        Examples
        --------
        >>> CostModel().dense_bytes((128, 128), np.float64)
        131072
        """
        rows, cols = shape
        return rows * cols * np.dtype(dtype).itemsize

    def sparse_bytes(self, shape, dtype, nnz: int, index=None) -> int:
        """Bytes of the CSR form of a tile with ``nnz`` non-zeros.

        Examples
        --------
        >>> CostModel().sparse_bytes((128, 128), np.float64, 100)
        1416
        """
        rows, cols = shape
        index = csr.index_dtype(cols) if index is None else np.dtype(index)
        return nnz * (np.dtype(dtype).itemsize + index.itemsize) + self.pointer_bytes * (rows + 1)

    def threshold(self, shape, dtype, index=None) -> int:
        """``T``: tiles of this shape are compressed when ``0 < nnz < T``.

        Examples
        --------
        >>> CostModel().threshold((0, 5), np.float64)
        0
        """
        return int(self.thresholds(np.array([shape[0]]), np.array([shape[1]]), dtype, index)[0])

    def thresholds(self, rows, cols, dtype, index=None) -> np.ndarray:
        """Vectorized :meth:`threshold` over arrays of tile heights and widths.

        ``index`` is the index dtype used for every tile (default: the compact
        dtype of each tile's width).

        Examples
        --------
        >>> CostModel().thresholds(np.array([128, 128]), np.array([128, 10]), np.float64)
        array([6563,  460])
        """
        rows = np.asarray(rows, np.float64)
        cols = np.asarray(cols, np.float64)
        s = np.dtype(dtype).itemsize
        if index is None:
            i = np.where(cols <= 256, 1, np.where(cols <= 65536, 2, 4))
        else:
            i = np.dtype(index).itemsize
        a = self.sparse_weight + 1.0 / self.reuse
        dense = s * rows * cols
        bound = (dense * (1.0 - 1.0 / self.reuse) - self.pointer_bytes * (rows + 1) * a) / ((s + i) * a)
        # 0 <= T <= E + 1: at E + 1 every non-empty tile is compressed
        return np.clip(np.ceil(bound), 0, rows * cols + 1).astype(np.int64)


DEFAULT_COST_MODEL = CostModel()


def check_threshold(threshold):
    """Validate a ``threshold`` argument; return an int or a :class:`CostModel`.

    Examples
    --------
    >>> check_threshold(None) is DEFAULT_COST_MODEL, check_threshold(128)
    (True, 128)
    >>> check_threshold(-1)
    Traceback (most recent call last):
    ...
    ValueError: threshold must be None (the cost model), a CostModel or an integer >= 0, got -1
    """
    if threshold is None:
        return DEFAULT_COST_MODEL
    if isinstance(threshold, CostModel):
        return threshold
    msg = f"threshold must be None (the cost model), a CostModel or an integer >= 0, got {threshold!r}"
    if not is_integer(threshold):
        raise TypeError(msg)
    if threshold < 0:
        raise ValueError(msg)
    return int(threshold)


def tile_thresholds(rows, cols, dtype, threshold=None, index=None) -> np.ndarray:
    """``T`` for arrays of tile heights and widths (see :func:`tile_threshold`).

    Examples
    --------
    >>> tile_thresholds(np.array([4, 4]), np.array([4, 2]), np.float64, threshold=3)
    array([3, 3])
    """
    threshold = check_threshold(threshold)
    if isinstance(threshold, CostModel):
        return threshold.thresholds(rows, cols, dtype, index)
    return np.full(np.shape(rows), threshold, np.int64)


def tile_threshold(shape, dtype=np.float64, threshold=None, index=None) -> int:
    """``T`` for one tile: it is compressed when ``0 < nnz < T``.

    Parameters
    ----------
    shape : (int, int)
    dtype : dtype-like
        Value dtype of the tile.
    threshold : None, int or CostModel
        ``None``: the default :class:`CostModel`; an int: ``T`` itself.
    index : dtype-like, optional
        Index dtype (default: the compact dtype for the tile's width).

    Examples
    --------
    >>> tile_threshold((128, 128)), tile_threshold((128, 128), threshold=128)
    (6563, 128)
    """
    return int(tile_thresholds(np.array([shape[0]]), np.array([shape[1]]), dtype, threshold, index)[0])


def keeps_dense(nnz, rows, cols, dtype=np.float64, threshold=None) -> np.ndarray:
    """The one compression rule: which tiles with ``nnz > 0`` non-zeros stay dense.

    A tile stays dense when ``nnz >= T`` (:func:`tile_thresholds` of its
    height, width and value dtype, with the index dtype of its own compact
    in-tile indices). Every path calls this function -- :func:`produce` and
    :func:`maybe_compress` (through :func:`choose_kind`),
    :meth:`TiledMatrix.from_dense` and :meth:`TiledMatrix.from_scipy` -- so a
    tile gets the same form whichever path builds it and whichever matrix it
    sits in. ``nnz == 0`` (empty) is the caller's case.

    Examples
    --------
    >>> keeps_dense(np.array([5906, 6562, 6563]), np.array([128] * 3), np.array([128] * 3))
    array([False, False,  True])
    """
    return np.asarray(nnz, np.int64) >= tile_thresholds(rows, cols, dtype, threshold)


def keeps_dense_on_grid(shape, tile, dtype, t_row, t_col, t_nnz, threshold=None) -> np.ndarray:
    """:func:`keeps_dense` for tiles named by their place on a matrix's grid.

    Tile ``k`` is cell ``(t_row[k], t_col[k])`` of an ``m x n`` matrix
    (``shape``) cut into ``tile x tile`` blocks, with ``t_nnz[k] > 0``
    non-zeros; edge tiles are smaller. The matrix builders ask this for all
    their non-empty tiles at once.

    Examples
    --------
    >>> keeps_dense_on_grid((5, 5), 4, np.float64, [0, 1], [0, 1], [16, 1], threshold=2)
    array([ True, False])
    """
    h = tile_extent(shape[0], tile, t_row)
    w = tile_extent(shape[1], tile, t_col)
    return keeps_dense(t_nnz, h, w, dtype, threshold)


def choose_kind(nnz: int, shape, dtype=np.float64, threshold=None) -> str:
    """The form a tile with ``nnz`` non-zeros gets: ``"empty"``, ``"sparse"`` or ``"dense"``.

    The rule of :func:`keeps_dense`, for one tile.

    Examples
    --------
    >>> [choose_kind(k, (128, 128), threshold=128) for k in (0, 127, 128)]
    ['empty', 'sparse', 'dense']
    """
    if nnz == 0:
        return EMPTY
    dense = keeps_dense(np.array([nnz]), np.array([shape[0]]), np.array([shape[1]]), dtype, threshold)[0]
    return DENSE if dense else SPARSE


_inspected = 0
_inspected_lock = threading.Lock()


def inspection_count() -> int:
    """Blocks inspected (counted for a compression decision) in this process.

    Examples
    --------
    >>> before = inspection_count()
    >>> _ = produce(np.zeros((4, 4)), compress=False)
    >>> inspection_count() - before
    0
    >>> _ = produce(np.zeros((4, 4)), compress=True)
    >>> inspection_count() - before
    1
    """
    return _inspected


def _compress_block(values: np.ndarray, threshold) -> Tile:
    """Inspect a dense block and return it in the form the threshold picks."""
    record_inspections()
    total, counts = csr.count_nonzero_rows(values)
    kind = choose_kind(total, values.shape, values.dtype, threshold)
    if kind == EMPTY:
        return EmptyTile(values.shape, values.dtype)
    if kind == SPARSE:
        indptr, indices, data = csr.dense_to_csr(values, counts)
        return SparseTile.from_parts(values.shape, indptr, indices, data)
    return DenseTile(values)


def wants_compression(compress) -> bool:
    """Whether a block is to be inspected: ``compress`` itself, or the runtime's word when it is None.

    ``None`` asks ``asafe.is_on("compression")`` (``False`` outside an adaptive
    run); ``True`` and ``False`` force it. Every producer of tiles asks this
    before it reads a value.

    Examples
    --------
    >>> wants_compression(True), wants_compression(None)   # outside an adaptive run
    (True, False)
    """
    if compress is None:
        return is_on(OPTIMIZATION)
    return bool(compress)


def produce(block, compress=None, threshold=None) -> Tile:
    """Emit a dense block as a tile, compressed when compression is on and it pays.

    Parameters
    ----------
    block : array_like, 2-D
        The dense block (float64 or float32; other real dtypes are converted).
    compress : bool or None
        ``None`` asks the runtime (``asafe.is_on("compression")``); ``False``
        wraps the block as a :class:`DenseTile` without reading its values;
        ``True`` inspects it and picks the form by ``threshold``.
    threshold : None, int or CostModel
        See :func:`tile_threshold`.

    Returns
    -------
    DenseTile, SparseTile or EmptyTile

    Examples
    --------
    >>> block = np.zeros((128, 128)); block[0, :3] = 1.0
    >>> produce(block).kind                  # outside an adaptive run: off
    'dense'
    >>> produce(block, compress=True)
    SparseTile(shape=(128, 128), dtype=float64, nnz=3, nbytes=543)
    >>> produce(np.zeros((2, 2)), compress=True).kind
    'empty'
    """
    tile = DenseTile(block)  # no inspection: a check of shape and dtype, no copy
    if not wants_compression(compress):
        return tile
    return _compress_block(tile.values, threshold)


def maybe_compress(tile: Tile, compress=None, threshold=None) -> Tile:
    """Compress a :class:`DenseTile` when compression is on and it pays.

    Sparse and empty tiles are returned unchanged; so is a dense tile that
    stays dense (the same object).

    Examples
    --------
    >>> t = DenseTile(np.eye(128))
    >>> maybe_compress(t) is t
    True
    >>> maybe_compress(t, compress=True).kind
    'sparse'
    """
    if not isinstance(tile, Tile):
        raise TypeError(f"maybe_compress expects a Tile, got {type(tile).__name__}; use produce() for arrays")
    if tile.kind != DENSE or not wants_compression(compress):
        return tile
    new = _compress_block(tile.values, threshold)
    return tile if new.kind == DENSE else new


def decompress(tile: Tile) -> DenseTile:
    """The tile as a :class:`DenseTile` (the same object if it already is one).

    Examples
    --------
    >>> decompress(EmptyTile((1, 2))).to_dense()
    array([[0., 0.]])
    """
    if not isinstance(tile, Tile):
        raise TypeError(f"decompress expects a Tile, got {type(tile).__name__}")
    if tile.kind == DENSE:
        return tile
    return DenseTile(tile.to_dense())


def record_inspections(blocks: int = 1) -> None:
    """Add ``blocks`` to :func:`inspection_count` (whole-matrix constructors call it).

    Examples
    --------
    >>> before = inspection_count(); record_inspections(3); inspection_count() - before
    3
    """
    global _inspected
    with _inspected_lock:
        _inspected += blocks

