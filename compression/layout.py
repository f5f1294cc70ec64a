"""The flattened layout of a tiled matrix: its arrays, their allocation, and the kernels that read them back.

A :class:`Layout` holds every tile of a :class:`~asafe.compression.TiledMatrix`
in a few arrays, so that a numba kernel walks them with no Python object per
tile:

* **dense tiles** -- ``dense_ptr[I]:dense_ptr[I + 1]`` are the dense tiles of
  tile row ``I``, sorted by tile column ``dense_col``; tile ``t`` is stored
  row-major and contiguous at ``dense_values[dense_off[t]:]`` with the shape of
  its grid cell (the last tile row and column are smaller when the tile size
  does not divide the shape);
* **sparse tiles** -- which cells are sparse: ``sparse_ptr``/``sparse_col`` as
  above, ``sparse_nnz`` their non-zero counts; their non-zeros themselves are
  one CSR over the matrix rows (``row_ptr``, ``col``, ``data``), each row
  holding the non-zeros of the sparse tiles it crosses, sorted by column, with
  narrow unsigned column indices (``uint16`` up to 65536 columns, see
  :func:`~asafe.compression.csr.index_dtype`);
* **empty tiles** -- nothing.

Why the sparse tiles of a tile row are merged into one row-major CSR rather
than kept as one CSR per tile (the form a :class:`~asafe.compression.SparseTile`
has on the wire): Graph500 tiles are hypersparse (about 100 non-zeros in a
256 x 256 tile at scale 14), and a per-tile CSR makes the kernel visit every
row of every tile -- 1 M row visits for 0.4 M non-zeros at scale 14, each a
mispredicted branch -- which measured 1.5x (scale 11) to 9.5x (scale 14) slower
than scipy. Merged, the kernel visits each matrix row once and the sparse part
runs 1.5x faster than scipy on one thread (scales 11 to 14, see
:mod:`~asafe.compression.kernels`). It is also smaller: 10 bytes per
non-zero plus 8 per matrix row, against 9 per non-zero plus 4 per row of
*every sparse tile* (4.4 MB against 8.0 MB at scale 14, tile 256). Tile
objects are cut out of it on demand (:func:`extract_sparse_tile`).

Building one: :func:`allocate` makes the arrays of a plan (which tiles are
stored, and in which form); :func:`~asafe.compression.tiling.from_dense_plan` and
:func:`~asafe.compression.tiling.from_csr_plan` fill them from a dense array or
a canonical CSR in one pass (O(elements) and O(nnz + stored tiles), see
:mod:`~asafe.compression.tiling`); :func:`from_tile_objects` assembles tile
objects. Reading one: :func:`to_csr` and :func:`to_dense` convert back, and
:func:`extract_sparse_tile` cuts one sparse tile out. The derived values a
product needs (work estimates, chunks, the iso value) are computed once per
layout and kept in :attr:`Layout.cache`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import _openmp  # noqa: F401  (the OpenMP wait policy, before numba starts)

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from .csr import index_dtype, is_iso  # noqa: E402
from .tiling import tile_grid  # noqa: E402

# Names that lived here before the count and fill passes moved to .tiling:
# importable here still, documented there.
from .tiling import csr_tile_counts, dense_tile_counts, from_csr_plan, from_dense_plan  # noqa: E402,F401

__all__ = [
    "Layout",
    "LAYOUT_ARRAYS",
    "allocate",
    "from_tile_objects",
    "to_csr",
    "to_dense",
    "extract_sparse_tile",
    "balance",
]

_JIT = dict(nogil=True, cache=True)

# Work units of the balance and serial-path estimates (:meth:`Layout.row_work`), in
# dense-element equivalents (measured relative costs of the inner loops of the
# product kernels): a sparse non-zero costs an index load and an indirect load
# of x, a row costs two pointer loads, a branch and a store.
W_DENSE = 1.0
W_NONZERO = 2.5
W_ROW = 4.0

#: Names of the arrays of a :class:`Layout`, in the order of :meth:`Layout.arrays`.
LAYOUT_ARRAYS = (
    "dense_ptr", "dense_col", "dense_off", "dense_values",
    "sparse_ptr", "sparse_col", "sparse_nnz",
    "row_ptr", "col", "data",
)


def _i64(a=()) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


@dataclass(eq=False)
class Layout:
    """The flattened tiles of one matrix (see the module docstring).

    Examples
    --------
    >>> lay = Layout.empty((3, 5), 2, np.float64)
    >>> lay.grid, lay.n_dense, lay.n_sparse, lay.col.dtype
    ((2, 3), 0, 0, dtype('uint16'))
    """

    shape: tuple[int, int]
    tile: int
    dense_ptr: np.ndarray
    dense_col: np.ndarray
    dense_off: np.ndarray
    dense_values: np.ndarray
    sparse_ptr: np.ndarray
    sparse_col: np.ndarray
    sparse_nnz: np.ndarray
    row_ptr: np.ndarray
    col: np.ndarray
    data: np.ndarray
    #: Values derived from the arrays, computed once and kept: ``"row_work"``,
    #: ``"work"``, ``("chunks", n)``, ``"iso"`` (the one sparse value, or None: then
    #: products read ``data``) and the product kernels' ``"path"`` and ``"rpath"``
    #: choosers (:class:`~asafe.compression.kernels.PathChooser`). The arrays of a
    #: layout are not changed in place once it is built, so the entries stay valid.
    cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def empty(cls, shape, tile, dtype) -> "Layout":
        """A layout with no stored tile."""
        nbr, _ = tile_grid(shape, tile)
        return cls(
            shape=tuple(shape), tile=tile,
            dense_ptr=np.zeros(nbr + 1, np.int64), dense_col=_i64(), dense_off=_i64(),
            dense_values=np.zeros(0, dtype),
            sparse_ptr=np.zeros(nbr + 1, np.int64), sparse_col=_i64(), sparse_nnz=_i64(),
            row_ptr=np.zeros(shape[0] + 1, np.int64), col=np.zeros(0, column_dtype(shape[1])),
            data=np.zeros(0, dtype),
        )

    @property
    def grid(self) -> tuple[int, int]:
        """``(tile rows, tile columns)``."""
        return tile_grid(self.shape, self.tile)

    @property
    def n_dense(self) -> int:
        """Number of dense tiles."""
        return int(self.dense_col.size)

    @property
    def n_sparse(self) -> int:
        """Number of sparse tiles."""
        return int(self.sparse_col.size)

    def arrays(self) -> tuple:
        """All arrays, in the order of :data:`LAYOUT_ARRAYS`."""
        return tuple(getattr(self, name) for name in LAYOUT_ARRAYS)

    def kernel_arrays(self) -> tuple:
        """The arrays the layout kernels (:func:`to_csr`, :func:`to_dense`) take, in their order."""
        return (self.dense_ptr, self.dense_col, self.dense_off, self.dense_values,
                self.row_ptr, self.col, self.data)

    def iso_value(self) -> float | None:
        """The one value of every sparse non-zero, as float64, when they are all equal bit for bit; else None.

        Found once per layout (cached; the arrays of a layout are not changed
        in place after it is built). See "Iso-valued sparse parts" in
        :mod:`~asafe.compression.kernels`.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from asafe.compression import TiledMatrix
        >>> TiledMatrix.from_scipy(sp.eye_array(64, format="csr") * 2.0, tile=32).layout.iso_value()
        2.0
        >>> S = sp.diags_array(np.arange(1.0, 65.0), format="csr")
        >>> TiledMatrix.from_scipy(S, tile=32).layout.iso_value() is None
        True
        """
        if "iso" not in self.cache:
            self.cache["iso"] = float(self.data[0]) if is_iso(self.data) else None
        return self.cache["iso"]

    def product_arrays(self) -> tuple:
        """The arguments the product kernels take after the vectors, in their order.

        As :meth:`kernel_arrays`, with the sparse part's one value in place of
        ``data`` when it is iso-valued (:meth:`iso_value`): the kernels then
        read no value per non-zero.
        """
        iso = self.iso_value()
        return (self.dense_ptr, self.dense_col, self.dense_off, self.dense_values,
                self.row_ptr, self.col, self.data if iso is None else iso)

    @property
    def nbytes(self) -> int:
        """Bytes of all arrays (values, indices, pointers and tile metadata)."""
        return int(sum(a.nbytes for a in self.arrays()))

    @property
    def product_nbytes(self) -> int:
        """Bytes one product reads of the layout: :attr:`nbytes` less ``data`` when it is iso-valued.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from asafe.compression import TiledMatrix
        >>> lay = TiledMatrix.from_scipy(sp.eye_array(64, format="csr"), tile=32).layout
        >>> lay.nbytes - lay.product_nbytes == lay.data.nbytes
        True
        """
        return self.nbytes - (self.data.nbytes if self.iso_value() is not None else 0)

    def row_work(self) -> np.ndarray:
        """Estimated work of each matrix row (see :func:`~asafe.compression.kernels.work_estimate`)."""
        work = self.cache.get("row_work")
        if work is None:
            m, n = self.shape
            tile = self.tile
            nbr, _ = self.grid
            widths = np.minimum(tile, n - tile * self.dense_col)
            tile_rows = np.repeat(np.arange(nbr), np.diff(self.dense_ptr))
            dense_width = np.bincount(tile_rows, weights=widths, minlength=nbr)
            # each tile row repeated over its own height (bounded by m, not by the tile size)
            heights = np.minimum(tile, m - tile * np.arange(nbr, dtype=np.int64))
            per_row = np.repeat(dense_width, heights)
            work = W_DENSE * per_row + W_NONZERO * np.diff(self.row_ptr) + W_ROW
            self.cache["row_work"] = work
        return work

    def work(self) -> float:
        """Total estimated work of one product (cached)."""
        total = self.cache.get("work")
        if total is None:
            total = self.cache["work"] = float(self.row_work().sum())
        return total

    def chunks(self, nchunks: int):
        """Row segments grouped into ``nchunks`` chunks of about equal work (cached).

        See :func:`balance`.
        """
        key = ("chunks", nchunks)
        cached = self.cache.get(key)
        if cached is None:
            cached = self.cache[key] = balance(self.row_work(), self.tile, nchunks)
        return cached


def column_dtype(n: int) -> np.dtype:
    """Column index dtype of the sparse part of an ``m x n`` layout: at least ``uint16``.

    (Never ``uint8``: one fewer kernel specialization to compile, for a
    difference on matrices at most 256 columns wide.)

    Examples
    --------
    >>> column_dtype(10), column_dtype(70000)
    (dtype('uint16'), dtype('uint32'))
    """
    return index_dtype(max(n, 257))


def balance(row_work: np.ndarray, tile: int, nchunks: int):
    """Cut the rows into ``nchunks`` ranges of about equal work, as row segments.

    Returns ``(chunk_ptr, seg_row, seg_lo, seg_hi)``: the segments of chunk
    ``c`` are ``chunk_ptr[c]:chunk_ptr[c + 1]``; segment ``s`` covers rows
    ``seg_lo[s]:seg_hi[s]`` (local to the tile row) of tile row
    ``seg_row[s]``. A segment never crosses a tile row.

    Examples
    --------
    >>> balance(np.array([1.0, 1.0, 1.0, 3.0]), 2, 2)
    (array([0, 2, 3]), array([0, 1, 1]), array([0, 0, 1]), array([2, 1, 2]))
    """
    m = row_work.size
    if m:
        cum = np.cumsum(row_work)
        targets = cum[-1] * np.arange(1, nchunks) / nchunks
        # cut before or after the row that crosses each target, whichever is nearer
        i = np.minimum(np.searchsorted(cum, targets, side="left"), m - 1)
        before = np.where(i > 0, cum[i - 1], 0.0)
        inner = np.where(cum[i] - targets <= targets - before, i + 1, i)
    else:
        inner = np.zeros(nchunks - 1, np.int64)
    cuts = np.concatenate([[0], inner, [m]]).astype(np.int64)
    cuts = np.minimum(np.maximum.accumulate(cuts), m)
    chunk_ptr, seg_row, seg_lo, seg_hi = [0], [], [], []
    for c in range(nchunks):
        lo, hi = int(cuts[c]), int(cuts[c + 1])
        while lo < hi:
            row = lo // tile
            end = min(hi, (row + 1) * tile)
            seg_row.append(row)
            seg_lo.append(lo - row * tile)
            seg_hi.append(end - row * tile)
            lo = end
        chunk_ptr.append(len(seg_row))
    return _i64(chunk_ptr), _i64(seg_row), _i64(seg_lo), _i64(seg_hi)


# ---------------------------------------------------------------------------
# Allocation from a plan
# ---------------------------------------------------------------------------


def _exclusive_cumsum(a) -> np.ndarray:
    out = np.zeros(len(a), np.int64)
    if len(a) > 1:
        np.cumsum(a[:-1], out=out[1:])
    return out


def _tile_row_ptr(rows, nbr) -> np.ndarray:
    ptr = np.zeros(nbr + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=nbr), out=ptr[1:])
    return ptr


def allocate(shape, tile, dtype, t_row, t_col, t_nnz, t_dense):
    """Allocate the layout of the non-empty tiles of a plan.

    The plan lists the non-empty tiles sorted by ``(t_row, t_col)`` with their
    non-zero counts ``t_nnz`` and whether they stay dense (``t_dense``).
    Returns the layout (dense values zeroed, ``row_ptr`` to be filled) and
    ``t_slot``: the index of each tile among the dense tiles.

    Examples
    --------
    >>> lay, slot = allocate((4, 4), 2, np.float64, np.array([0, 1]), np.array([1, 0]),
    ...                      np.array([4, 1]), np.array([True, False]))
    >>> lay.n_dense, lay.n_sparse, lay.dense_values.size, lay.data.size
    (1, 1, 4, 1)
    """
    m, n = shape
    nbr, _ = tile_grid(shape, tile)
    t_row = np.asarray(t_row, np.int64)
    t_col = np.asarray(t_col, np.int64)
    d = np.asarray(t_dense, bool)
    s = ~d
    heights = np.minimum(tile, m - tile * t_row[d])
    widths = np.minimum(tile, n - tile * t_col[d])
    sizes = heights * widths
    sparse_nnz = np.asarray(t_nnz, np.int64)[s]
    total = int(sparse_nnz.sum())
    layout = Layout(
        shape=(m, n), tile=tile,
        dense_ptr=_tile_row_ptr(t_row[d], nbr),
        dense_col=np.ascontiguousarray(t_col[d]),
        dense_off=_exclusive_cumsum(sizes),
        dense_values=np.zeros(int(sizes.sum()), dtype),
        sparse_ptr=_tile_row_ptr(t_row[s], nbr),
        sparse_col=np.ascontiguousarray(t_col[s]),
        sparse_nnz=np.ascontiguousarray(sparse_nnz),
        row_ptr=np.zeros(m + 1, np.int64),
        col=np.empty(total, column_dtype(n)),
        data=np.empty(total, dtype),
    )
    t_slot = np.full(t_row.size, -1, np.int64)
    t_slot[d] = np.arange(int(d.sum()))
    return layout, t_slot


# ---------------------------------------------------------------------------
# From tile objects
# ---------------------------------------------------------------------------


def from_tile_objects(shape, tile, dtype, entries) -> Layout:
    """Assemble a layout from ``(row_block, col_block, tile)`` sorted by position.

    Dense tiles are copied into the dense buffer; the non-zeros of sparse tiles
    are merged into the row-major CSR (a sort of their coordinates). Entries
    are checked already (shapes, positions, no empty tiles).

    Examples
    --------
    >>> from asafe.compression import DenseTile
    >>> lay = from_tile_objects((2, 2), 1, np.float64, [(1, 0, DenseTile(np.ones((1, 1))))])
    >>> lay.n_dense, lay.dense_values
    (1, array([1.]))
    """
    m, n = shape
    t_row = np.array([e[0] for e in entries], np.int64)
    t_col = np.array([e[1] for e in entries], np.int64)
    t_dense = np.array([e[2].kind == "dense" for e in entries], bool)
    t_nnz = np.array([e[2].nnz for e in entries], np.int64)
    layout, t_slot = allocate(shape, tile, dtype, t_row, t_col, t_nnz, t_dense)
    rows, cols, vals = [], [], []
    for (I, J, t), dense, slot in zip(entries, t_dense, t_slot):
        if dense:
            off = int(layout.dense_off[slot])
            layout.dense_values[off:off + t.values.size] = t.values.ravel()
        else:
            rows.append(I * tile + np.repeat(np.arange(t.shape[0], dtype=np.int64), np.diff(t.indptr)))
            cols.append(J * tile + t.indices.astype(np.int64))
            vals.append(t.data)
    if rows:
        rows, cols, vals = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
        order = np.lexsort((cols, rows))
        layout.col[:] = cols[order]
        layout.data[:] = vals[order]
        np.cumsum(np.bincount(rows, minlength=m), out=layout.row_ptr[1:])
    return layout


# ---------------------------------------------------------------------------
# Back to CSR and dense
# ---------------------------------------------------------------------------


@njit(**_JIT)
def _row_nnz(m, n, tile, out, dense_ptr, dense_col, dense_off, dense_values, row_ptr):
    for i in range(m):
        I = i // tile
        r = i - I * tile
        k = row_ptr[i + 1] - row_ptr[i]
        for t in range(dense_ptr[I], dense_ptr[I + 1]):
            w = min(tile, n - dense_col[t] * tile)
            base = dense_off[t] + r * w
            for c in range(w):
                if dense_values[base + c] != 0:
                    k += 1
        out[i] = k


@njit(**_JIT)
def _fill_csr(m, n, tile, out_ptr, out_ind, out_val,
              dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data):
    for i in range(m):
        I = i // tile
        r = i - I * tile
        pos = out_ptr[i]
        k = row_ptr[i]
        end = row_ptr[i + 1]
        for t in range(dense_ptr[I], dense_ptr[I + 1]):
            c0 = dense_col[t] * tile
            # sparse non-zeros left of this dense tile come first
            while k < end and col[k] < c0:
                out_ind[pos] = col[k]
                out_val[pos] = data[k]
                pos += 1
                k += 1
            w = min(tile, n - c0)
            base = dense_off[t] + r * w
            for c in range(w):
                v = dense_values[base + c]
                if v != 0:
                    out_ind[pos] = c0 + c
                    out_val[pos] = v
                    pos += 1
        while k < end:
            out_ind[pos] = col[k]
            out_val[pos] = data[k]
            pos += 1
            k += 1


def to_csr(layout: Layout):
    """CSR arrays ``(indptr, indices, data)`` of a layout; zeros of dense tiles dropped.

    Examples
    --------
    >>> from asafe.compression import TiledMatrix
    >>> A = TiledMatrix.from_dense(np.array([[0.0, 1.0], [2.0, 0.0]]), tile=1)
    >>> to_csr(A.layout)
    (array([0, 1, 2], dtype=int32), array([1, 0], dtype=int32), array([1., 2.]))
    """
    m, n = layout.shape
    row_nnz = np.empty(m, np.int64)
    _row_nnz(m, n, layout.tile, row_nnz, layout.dense_ptr, layout.dense_col,
             layout.dense_off, layout.dense_values, layout.row_ptr)
    nnz = int(row_nnz.sum())
    itype = np.int32 if max(n, nnz) < 2**31 else np.int64
    indptr = np.zeros(m + 1, itype)
    np.cumsum(row_nnz, out=indptr[1:])
    indices = np.empty(nnz, itype)
    data = np.empty(nnz, layout.dense_values.dtype)
    _fill_csr(m, n, layout.tile, indptr, indices, data, *layout.kernel_arrays())
    return indptr, indices, data


@njit(**_JIT)
def _to_dense(m, n, tile, out, dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data):
    for i in range(m):
        I = i // tile
        r = i - I * tile
        for k in range(row_ptr[i], row_ptr[i + 1]):
            out[i, col[k]] += data[k]
        for t in range(dense_ptr[I], dense_ptr[I + 1]):
            c0 = dense_col[t] * tile
            w = min(tile, n - c0)
            base = dense_off[t] + r * w
            for c in range(w):
                out[i, c0 + c] = dense_values[base + c]


def to_dense(layout: Layout) -> np.ndarray:
    """The dense ``(m, n)`` array of a layout.

    Examples
    --------
    >>> from asafe.compression import TiledMatrix
    >>> to_dense(TiledMatrix.from_dense(np.eye(2), tile=1).layout)
    array([[1., 0.],
           [0., 1.]])
    """
    m, n = layout.shape
    out = np.zeros((m, n), layout.dense_values.dtype)
    _to_dense(m, n, layout.tile, out, *layout.kernel_arrays())
    return out


@njit(**_JIT)
def _lower_bound(col, lo, hi, value):
    while lo < hi:
        mid = (lo + hi) // 2
        if col[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**_JIT)
def _extract(row_ptr, col, data, r0, h, c0, w, indptr, out_ind, out_val, fill):
    k = 0
    for r in range(h):
        i = r0 + r
        a = _lower_bound(col, row_ptr[i], row_ptr[i + 1], c0)
        b = _lower_bound(col, a, row_ptr[i + 1], c0 + w)
        if fill:
            for q in range(a, b):
                out_ind[k + q - a] = col[q] - c0
                out_val[k + q - a] = data[q]
        k += b - a
        indptr[r + 1] = k


def extract_sparse_tile(layout: Layout, row_block: int, col_block: int):
    """The in-tile CSR ``(shape, indptr, indices, data)`` of a sparse tile (a copy).

    Arrays sized by the tile's own shape ``h x w`` (smaller than ``tile`` at the
    edge, or when the tile is larger than the matrix), as :func:`engine.produce
    <asafe.compression.engine.produce>` makes them: compact indices for ``w``
    (:func:`~asafe.compression.csr.index_dtype`), ``int32`` pointers below
    2**31 elements.

    Examples
    --------
    >>> from asafe.compression import TiledMatrix
    >>> A = TiledMatrix.from_dense(np.array([[0.0, 0.0, 5.0]]), tile=2, threshold=2)
    >>> extract_sparse_tile(A.layout, 0, 1)
    ((1, 1), array([0, 1], dtype=int32), array([0], dtype=uint8), array([5.]))
    """
    m, n = layout.shape
    tile = layout.tile
    r0, c0 = row_block * tile, col_block * tile
    h, w = min(tile, m - r0), min(tile, n - c0)
    indptr = np.zeros(h + 1, np.int32 if h * w < 2**31 else np.int64)
    empty_ind = np.empty(0, index_dtype(w))
    empty_val = np.empty(0, layout.data.dtype)
    _extract(layout.row_ptr, layout.col, layout.data, r0, h, c0, w, indptr, empty_ind, empty_val, False)
    indices = np.empty(int(indptr[-1]), index_dtype(w))
    data = np.empty(int(indptr[-1]), layout.data.dtype)
    _extract(layout.row_ptr, layout.col, layout.data, r0, h, c0, w, indptr, indices, data, True)
    return (h, w), indptr, indices, data
