"""The public-workloads suite's data kinds and result digests (see :mod:`benchmarks.workloads`).

Every block is made from ``(seed, its position)`` on the worker that holds it;
results are compared by digests small enough to gather: SHA-1 of the bytes
where the same graph must give the same bits, segment sums with a tolerance
where the summation order may differ.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


__all__ = [
    "DATA_KINDS",
    "DEFAULT_ZERO_FRACTION",
    "INT_DISTINCT",
    "SMOOTH_STEP",
    "RTOL",
    "SEGMENTS",
    "random_block",
    "zeros_block",
    "smooth_block",
    "ints_block",
    "make_block",
    "kind_array",
    "kind_frame",
    "array_digest",
    "frame_digest",
    "compare_digests",
]

#: The data kinds, in the order they run.
DATA_KINDS = ("random", "zeros", "smooth", "ints")
#: Share of exact zeros of the ``zeros`` kind unless ``--zero-fraction`` says otherwise.
DEFAULT_ZERO_FRACTION = 0.5
#: Distinct values of the ``ints`` kind.
INT_DISTINCT = 1000
#: The ``smooth`` kind's values are multiples of this.
SMOOTH_STEP = 1.0 / 1024
#: Tolerance of the results compared by segment sums (``reduce``, ``matmul``, ``groupby``).
RTOL = 1e-9
#: Segments of a block summed for a comparison with tolerance.
SEGMENTS = 256


# --------------------------------------------------------------------------- data kinds
def random_block(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Standard normal float64: the incompressible kind.

    >>> random_block(np.random.default_rng(0), (2, 3)).shape
    (2, 3)
    """
    return rng.standard_normal(shape)


def zeros_block(rng: np.random.Generator, shape: tuple[int, ...], fraction: float) -> np.ndarray:
    """Standard normal float64 of which exactly ``round(fraction * size)`` elements are ``0.0``.

    The zeros sit at random places; every other element is non-zero (a normal
    draw of exactly 0.0, which the generator could in principle return, is
    replaced by 1.0).

    >>> b = zeros_block(np.random.default_rng(0), (10, 10), 0.25)
    >>> int((b == 0).sum())
    25
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"zero fraction must be in [0, 1], got {fraction!r}")
    block = rng.standard_normal(shape)
    block[block == 0.0] = 1.0
    size = block.size
    zeros = int(round(fraction * size))
    if zeros:
        block.reshape(-1)[rng.choice(size, size=zeros, replace=False)] = 0.0
    return block


def smooth_block(seed: int, offset: Sequence[int], shape: tuple[int, ...]) -> np.ndarray:
    """A smooth field of the global position, rounded to multiples of :data:`SMOOTH_STEP`.

    One or two dimensions: ``sin(i/97 + p0) * cos(j/61 + p1) + 0.5 sin((i + 2j)/211 + p2)``
    (``j`` = 0 in one dimension), phases ``p`` drawn from ``seed``. The values lie
    in [-1.5, 1.5]; neighbours differ by a few steps; the block at ``offset`` of a
    larger array equals that part of the array made in one piece.

    >>> b = smooth_block(0, (0, 0), (4, 4))
    >>> bool(np.all(b * 1024 == np.round(b * 1024)))
    True
    >>> bool(np.array_equal(smooth_block(0, (2, 0), (2, 4)), b[2:]))
    True
    """
    if len(shape) not in (1, 2) or len(offset) != len(shape):
        raise ValueError(f"smooth_block makes 1-D or 2-D blocks with an offset per axis, got shape {shape} "
                         f"and offset {tuple(offset)}")
    p0, p1, p2 = np.random.default_rng(seed).uniform(0.0, 2 * np.pi, 3)
    i = np.arange(offset[0], offset[0] + shape[0], dtype=np.float64)
    if len(shape) == 1:
        field = np.sin(i / 97.0 + p0) * np.cos(p1) + 0.5 * np.sin(i / 211.0 + p2)
    else:
        j = np.arange(offset[1], offset[1] + shape[1], dtype=np.float64)
        field = (np.sin(i / 97.0 + p0)[:, None] * np.cos(j / 61.0 + p1)[None, :]
                 + 0.5 * np.sin((i[:, None] + 2.0 * j[None, :]) / 211.0 + p2))
    return np.round(field / SMOOTH_STEP) * SMOOTH_STEP


def ints_block(rng: np.random.Generator, shape: tuple[int, ...], distinct: int = INT_DISTINCT) -> np.ndarray:
    """int64 ids in ``[0, distinct)``.

    >>> b = ints_block(np.random.default_rng(0), (1000,), 7)
    >>> b.dtype.name, int(b.min()) >= 0, int(b.max()) < 7
    ('int64', True, True)
    """
    return rng.integers(0, distinct, size=shape, dtype=np.int64)


def make_block(kind: str, shape: tuple[int, ...], offset: Sequence[int], seed: int,
               zero_fraction: float = DEFAULT_ZERO_FRACTION) -> np.ndarray:
    """The block of ``kind`` at ``offset``: the same arguments give the same block, on any worker.

    Parameters
    ----------
    kind : {"random", "zeros", "smooth", "ints"}
    shape : tuple of int
    offset : sequence of int
        The block's position in its array (its first index on every axis);
        seeds the random kinds (with ``seed``) and places the smooth field.
    seed : int
    zero_fraction : float
        The ``zeros`` kind's share of exact zeros.

    Examples
    --------
    >>> a = make_block("zeros", (3, 4), (0, 0), seed=1)
    >>> bool(np.array_equal(a, make_block("zeros", (3, 4), (0, 0), seed=1)))
    True
    >>> bool(np.array_equal(a, make_block("zeros", (3, 4), (3, 0), seed=1)))
    False
    >>> make_block("sparse", (2,), (0,), seed=1)
    Traceback (most recent call last):
    ...
    ValueError: unknown data kind 'sparse'; allowed: random, zeros, smooth, ints
    """
    shape = tuple(int(s) for s in shape)
    if kind == "smooth":
        return smooth_block(seed, offset, shape)
    if kind not in DATA_KINDS:
        raise ValueError(f"unknown data kind {kind!r}; allowed: {', '.join(DATA_KINDS)}")
    rng = np.random.default_rng([int(seed), *(int(o) for o in offset)])
    if kind == "random":
        return random_block(rng, shape)
    if kind == "zeros":
        return zeros_block(rng, shape, zero_fraction)
    return ints_block(rng, shape)


def _array_block(kind: str, seed: int, zero_fraction: float, block_info: dict | None = None) -> np.ndarray:
    info = block_info[None]
    offset = [start for start, _ in info["array-location"]]
    return make_block(kind, tuple(info["chunk-shape"]), offset, seed, zero_fraction)


def kind_array(kind: str, shape: tuple[int, ...], chunks: tuple[int, ...], seed: int,
               zero_fraction: float = DEFAULT_ZERO_FRACTION) -> Any:
    """A dask array of ``kind`` whose blocks are made where they are computed (on the workers).

    Examples
    --------
    >>> x = kind_array("ints", (6, 4), (3, 4), seed=0)
    >>> x.dtype.name, x.numblocks
    ('int64', (2, 1))
    >>> bool(np.array_equal(x.compute(scheduler="sync")[3:], make_block("ints", (3, 4), (3, 0), 0)))
    True
    """
    import dask.array as da

    if kind not in DATA_KINDS:
        raise ValueError(f"unknown data kind {kind!r}; allowed: {', '.join(DATA_KINDS)}")
    dtype = np.dtype(np.int64 if kind == "ints" else np.float64)
    chunks = da.core.normalize_chunks(chunks, shape, dtype=dtype)
    return da.map_blocks(_array_block, kind, seed, zero_fraction, chunks=chunks, dtype=dtype,
                         meta=np.empty((0,) * len(shape), dtype))


def _frame_partition(index: int, kind: str, rows: int, n_ids: int, seed: int, zero_fraction: float,
                     unique: bool) -> Any:
    """One partition: ``id`` and ``x``, ``y`` (``unique``: ids ``index*rows ...``, one column ``z``)."""
    import pandas as pd

    rng = np.random.default_rng([int(seed), int(index)])
    if unique:
        ids = np.arange(index * rows, (index + 1) * rows, dtype=np.int64)
        names = ("z",)
    else:
        ids = rng.integers(0, n_ids, size=rows, dtype=np.int64)
        names = ("x", "y")
    columns: dict[str, Any] = {"id": _string_ids(ids) if kind == "ints" else ids}
    for c, name in enumerate(names):
        if kind == "smooth":
            columns[name] = smooth_block(seed * 7 + c, (index * rows,), (rows,))
        else:
            columns[name] = make_block(kind, (rows,), (index * rows, c), seed, zero_fraction)
    return pd.DataFrame(columns)


def _string_ids(ids: np.ndarray) -> Any:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    strings = pc.binary_join_element_wise("id-", pc.cast(pa.array(ids), pa.string()), "")
    return pd.array(strings, dtype=pd.StringDtype("pyarrow"))


def kind_frame(kind: str, rows: int, partitions: int, n_ids: int, seed: int,
               zero_fraction: float = DEFAULT_ZERO_FRACTION, *, unique: bool = False) -> Any:
    """A dask dataframe of ``kind``, ``partitions`` x ``rows`` rows, made on the workers (``from_map``).

    ``id`` is drawn from ``n_ids`` values (strings ``"id-<n>"`` for the ``ints``
    kind); ``unique=True`` makes the table of every id once (``n_ids`` must then be
    ``rows * partitions``) with one value column ``z``.

    Examples
    --------
    >>> df = kind_frame("ints", 5, 2, 4, seed=0).compute(scheduler="sync")
    >>> len(df), list(df.columns), str(df["id"].dtype), str(df["x"].dtype)
    (10, ['id', 'x', 'y'], 'string', 'int64')
    >>> sorted(kind_frame("random", 3, 2, 6, seed=0, unique=True).compute(scheduler="sync")["id"])
    [0, 1, 2, 3, 4, 5]
    """
    import dask.dataframe as dd

    if kind not in DATA_KINDS:
        raise ValueError(f"unknown data kind {kind!r}; allowed: {', '.join(DATA_KINDS)}")
    if unique and n_ids != rows * partitions:
        raise ValueError(f"a table of unique ids needs n_ids == rows * partitions, got {n_ids} != {rows * partitions}")
    meta = _frame_partition(0, kind, 0, max(n_ids, 1), seed, zero_fraction, unique)
    return dd.from_map(_frame_partition, range(partitions), kind=kind, rows=rows, n_ids=n_ids, seed=seed,
                       zero_fraction=zero_fraction, unique=unique, meta=meta, enforce_metadata=False,
                       label=f"{kind}-frame")


# --------------------------------------------------------------------------- result digests
def _segment_sums(values: np.ndarray, segments: int = SEGMENTS) -> list[float]:
    flat = np.ascontiguousarray(values).reshape(-1).astype(np.float64, copy=False)
    if flat.size == 0:
        return []
    bounds = np.linspace(0, flat.size, min(segments, flat.size) + 1).astype(np.int64)
    return np.add.reduceat(flat, bounds[:-1]).tolist()


def array_digest(block: np.ndarray) -> dict[str, Any]:
    """What a comparison needs of one array block: shape, dtype, SHA-1 of its bytes, segment sums.

    >>> d = array_digest(np.arange(6.0).reshape(2, 3))
    >>> d["shape"], d["dtype"], d["sums"][:3]
    ([2, 3], 'float64', [0.0, 1.0, 2.0])
    """
    block = np.asarray(block)
    data = np.ascontiguousarray(block)
    return {"shape": list(block.shape), "dtype": str(block.dtype),
            "sha1": hashlib.sha1(memoryview(data).cast("B")).hexdigest() if data.size else "",
            "sums": _segment_sums(block)}


def frame_digest(frame: Any, by: str | None = None) -> dict[str, Any]:
    """What a comparison needs of one partition, whatever the order of its rows.

    Without ``by``: row count, columns, dtypes and the wrapping (mod 2**64) sum of
    pandas' row hashes (``hash_pandas_object(index=False)``), the same for any order
    of the same rows. With ``by`` (a column or the index's name): the rows sorted by
    it, its values hashed exactly, the other numeric columns as segment sums.

    >>> import pandas as pd
    >>> a = pd.DataFrame({"id": [1, 2, 3], "x": [0.5, 1.5, 2.5]})
    >>> frame_digest(a) == frame_digest(a.iloc[::-1])
    True
    >>> frame_digest(a) == frame_digest(a.assign(x=[0.5, 1.5, 2.0]))
    False
    """
    import pandas as pd

    if by is not None:
        frame = frame.reset_index() if by not in frame.columns else frame
        frame = frame.sort_values(by, kind="stable")
    digest: dict[str, Any] = {"rows": int(len(frame)), "columns": [str(c) for c in frame.columns],
                              "dtypes": [str(t) for t in frame.dtypes]}
    if by is None:
        hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
        digest["hash"] = int(np.add.reduce(hashes, dtype=np.uint64)) if hashes.size else 0
        return digest
    keys = pd.util.hash_pandas_object(frame[by], index=False).to_numpy()
    digest["keys"] = hashlib.sha1(keys.tobytes()).hexdigest()
    digest["sums"] = {str(c): _segment_sums(frame[c].to_numpy(dtype=np.float64))
                      for c in frame.columns if c != by and pd.api.types.is_numeric_dtype(frame[c])}
    return digest


def compare_digests(reference: Sequence[Mapping[str, Any]], result: Sequence[Mapping[str, Any]],
                    exact: bool, rtol: float = RTOL) -> str | None:
    """``None`` when ``result`` equals ``reference``, else the first difference in words.

    ``exact``: every field equal (array blocks: the SHA-1 of their bytes too).
    Otherwise the ``sums`` are compared with ``numpy.allclose(rtol=rtol,
    atol=rtol * largest |sum| of the reference block)`` and every other field
    (except an array block's SHA-1) exactly.

    Examples
    --------
    >>> ref = [array_digest(np.ones(4))]
    >>> compare_digests(ref, [array_digest(np.ones(4))], exact=True) is None
    True
    >>> compare_digests(ref, [array_digest(np.ones(4) * (1 + 1e-12))], exact=False) is None
    True
    >>> compare_digests(ref, [array_digest(np.ones(4) * (1 + 1e-12))], exact=True)
    'part 0: sha1 differs'
    >>> compare_digests(ref, [array_digest(np.ones(5))], exact=False)
    'part 0: shape differs: [4] != [5]'
    >>> compare_digests(ref, [], exact=True)
    'result has 0 parts, reference 1'
    """
    if len(reference) != len(result):
        return f"result has {len(result)} parts, reference {len(reference)}"
    for i, (ref, got) in enumerate(zip(reference, result)):
        if set(ref) != set(got):
            return f"part {i}: fields differ: {sorted(ref)} != {sorted(got)}"
        for key in ref:
            a, b = ref[key], got[key]
            if key == "sums" and not exact:
                problem = _sums_differ(a, b, rtol)
                if problem:
                    return f"part {i}: {problem}"
            elif key == "sha1" and not exact:
                continue
            elif a != b:
                return f"part {i}: {key} differs" + ("" if key in ("sha1", "hash", "keys", "sums") else f": {a} != {b}")
    return None


def _sums_differ(a: Any, b: Any, rtol: float) -> str | None:
    if isinstance(a, Mapping):
        if set(a) != set(b):
            return f"columns differ: {sorted(a)} != {sorted(b)}"
        for name in a:
            problem = _sums_differ(a[name], b[name], rtol)
            if problem:
                return f"column {name}: {problem}"
        return None
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        return f"{x.size} segment sums != {y.size}"
    atol = rtol * (float(np.abs(x).max()) if x.size else 0.0)
    close = np.isclose(y, x, rtol=rtol, atol=atol, equal_nan=True)
    if not close.all():
        k = int(np.argmin(close))
        return f"segment sum {k} differs: {y[k]!r} != {x[k]!r} (rtol {rtol:g}, atol {atol:.3g})"
    return None
