"""Public workloads: asafe on the dask.array, dask.dataframe and futures workloads Dask users run.

``python -m benchmarks workloads [--link 1gbit] [options]`` measures plain Dask
against asafe on workloads the project did not design for it (issue 29, item 4),
each of which moves data between worker processes -- where wire compression
can help or hurt.

Workloads (``--workloads``; ``--mib`` sets the size of one input array of float64:
96 MiB by default, 16 MiB with ``--quick``; frames are a quarter of it)
    ``rechunk-tasks``, ``rechunk-p2p``
        A (R, 2R) array in row chunks rechunked to column chunks, by tasks and
        by P2P (``rechunk(method=...)``, what ``array.rechunk.method`` selects).
        Every block moves; about half of the bytes cross between two workers.
    ``transpose``
        ``x.T`` of a square array in row chunks, persisted into row chunks again
        (Dask's own rechunk method choice): all-to-all.
    ``reduce``
        ``x.sum(axis=0)`` and ``x.mean(axis=1)`` of a grid of chunks: partial
        results move, little data (a low-traffic control).
    ``map-overlap``
        A Gaussian filter (sigma 1, ``depth`` 4) of a square array in 4 x 4
        chunks by ``map_overlap``: halos move.
    ``stencil``
        A five-point Laplacian written with shifted slices
        (``x[2:, 1:-1] + x[:-2, 1:-1] + ... - 4 * x[1:-1, 1:-1]``) of a square
        array in row slabs: chunks that do not line up, slivers move. (In 4 x 4
        chunks the same expression makes over 1,300 tasks and costs several
        seconds of scheduling per run here, whatever the size.)
    ``matmul``
        ``A @ B``, A (N, 128) in chunks (N/16, 64), B (128, 128) float64
        weights: the two partial products of each row of blocks are summed
        where one of them lives.
    ``diff``
        ``x[1:, 1:] - y[:-1, :-1]`` of two independent arrays (after the
        ``double_diff`` benchmark of coiled/benchmarks): chunks that do not line
        up, and half of the pairs of blocks live apart (``x[1:] - x[:-1]`` of one
        array would pair blocks that mostly live together).
    ``anomaly``
        ``x - rolling_mean(x)`` along the chunked time axis (a centred window of
        33 steps by ``map_overlap``; the anomaly of climate data).
    ``shuffle``
        ``df.shuffle("id", shuffle_method="p2p")`` of a frame of an id and two
        value columns (24 MiB and 1M rows at the default size, 16 partitions).
    ``groupby``
        ``df.groupby("id").agg({"x": "sum", "y": "mean"}, split_out=P)`` with
        about four rows per id: the partial aggregates are shuffled (Dask's
        default method, P2P on a cluster).
    ``merge``
        ``left.merge(right, on="id")``, right a table of the unique ids (a
        quarter of left's rows): both sides shuffled (Dask's default).
    ``futures``
        ``client.map`` over 16 blocks, then a tree of pairwise sums by
        ``client.submit``, gathering blocks across workers.

    The inputs are made on the workers (``map_blocks``, ``from_map``,
    ``client.map`` of generator functions; nothing is shipped from the client)
    and persisted once per workload; each sample times building the graph,
    persisting the output and waiting for it (outputs stay on the workers; no
    gather to the client is timed).

Data kinds (``--data``; deterministic seeds, every block from ``(seed, its position)``)
    ``random``
        ``rng.standard_normal``: incompressible floats.
    ``zeros``
        Standard normal floats of which exactly ``round(zero_fraction * size)``
        elements of every block, at random places, are ``0.0`` (``--zero-fraction``,
        default 0.5; the other elements are never zero).
    ``smooth``
        A smooth field (sums of sines of the global position, seeded phases)
        rounded to 1/1024: low-precision sensor-like floats, at most 3073
        distinct values.
    ``ints``
        int64 ids with 1000 distinct values (arrays; ``matmul`` multiplies them
        by float64 weights). Frames: string ids (``"id-123"``, pyarrow strings)
        and int64 value columns with 1000 distinct values.

    Frames of the float kinds have an int64 ``id`` and two float64 value
    columns ``x``, ``y`` of the kind.

Variants (``--variants``), interleaved on one cluster per (link, data kind)
    ``dask``
        Plain Dask: asafe not installed, its serializers unwrapped on every
        worker and in the client.
    ``asafe``
        ``asafe.install(client)`` with its defaults: a fresh
        ``AdaptiveRuntime()`` per sample, so it must find its mode within the run.
    ``static-<codec>``
        ``wire-compression`` forced to ``codec`` for each codec of
        ``asafe.schedulers.wire.CODEC_STATES`` (``lz4``, ``zstd`` where that name
        is missing): ``asafe.install(client, AdaptiveRuntime([Optimization(
        "wire-compression", Fixed(codec), initial=codec)]))``.

    Each workload first runs every variant once (the warm-up: first P2P run,
    imports and first touch on the workers; timed, recorded apart, never in
    the samples), then rounds of one sample per variant in balanced orders
    (:func:`asafe.app.stats.balanced_orders`, rule 5). Between two samples the
    installation is removed (``handle.uninstall()``, then
    :func:`asafe.schedulers.wire.disable` on every worker and in the client), the
    output is released until the scheduler has forgotten its keys, and every
    input is put back on the worker that made it, one replica each (the
    scheduler's housekeeping requests that the Active Memory Manager uses), so
    that every sample starts from the same placement. Before each sample, every worker is asked for its
    wire state: a ``dask`` sample that finds asafe's serializers or a state
    still in place stops the run (a harness bug); a static variant whose state
    did not arrive is reported as failed. ``asafe.schedulers.wire.stats()`` of
    every worker is recorded per sample (frames compressed and skipped, bytes,
    codec seconds).

Results checked equal (rule 1)
    The ``dask`` variant's warm-up result is the reference. Array blocks are
    compared by digest (shape, dtype, SHA-1 of the bytes) where the same graph
    must give the same bits (every workload but ``reduce`` and ``matmul``);
    ``reduce`` and ``matmul`` compare 256 segment sums of every block with
    ``rtol=1e-9`` and ``atol=1e-9 x`` the largest segment (the digest recording
    whether they were also bit-identical). Frame partitions (``shuffle``,
    ``merge``: rows arrive in any order) compare the row count, the dtypes and
    the wrapping sum of pandas' 64-bit row hashes, which does not depend on
    row order; ``groupby`` (sums of floats in the arrival order) compares each
    partition sorted by id: the ids exactly and the value columns by segment
    sums at the same tolerance. A variant whose result differs, or that raises,
    is reported as failed with the first difference and never timed again.

Statistics (``asafe.app.stats``)
    Per workload and variant, the median seconds and its order-statistic 95%
    interval; the *paired ratio* of a variant, plain Dask's time / the variant's
    time in each round (> 1: faster than Dask), its median with the
    distribution-free interval (exact from 6 rounds); the *best static codec*,
    the static variant with the highest median paired ratio; and asafe against
    it (best static's time / asafe's time per round). Rounds stop at
    ``--rounds`` (default 6, the fewest for an exact 95% interval) or earlier
    when every median's interval is within ``--rel-ci``, or when a workload's
    sampling passes ``--max-seconds`` (then the file says so).

Transfer-bound, measured
    Behind a shaped link (``--link``) the suite runs in a network namespace
    whose only interface is the shaped loopback, so its byte counters count
    exactly the cluster's traffic. A workload is *transfer-bound* on a data
    kind when, in plain Dask's samples, the bytes over the link at the link's
    rate take at least half of the wall time (median over the samples;
    :data:`TRANSFER_BOUND_SHARE`). On the loopback as it is the counters are
    shared with every process of the host, and nothing is called transfer-bound.

Targets (issue 29; "met" only where the 95% interval clears the target, "not
met" where it lies wholly on the wrong side, else "not shown"; intervals from
fewer than 6 rounds are never "met")
    (a) every workload, data kind and link: asafe's paired ratio at least 0.98
        and no interval wholly below 1;
    (b) behind 1 Gbit/s, every transfer-bound workload on the ``zeros``,
        ``smooth`` and ``ints`` kinds: asafe's paired ratio at least 1.3, and
        within 10% of the best static codec (best static / asafe at least 1/1.1).

Output
    ``OUT/workloads/workloads-<link>-<data>.json`` per data kind (every sample,
    warm-up, wire counters, CPU seconds, asafe's transitions, the environment and
    git commit at the start, the load average at the start and the end),
    rewritten after every workload; and a console table per (workload, data kind) with the targets'
    summary.

Sizes, rounds and wall time (this project's 2-core machine)
    The default, ``--mib 96`` and 6 rounds (the fewest for an exact 95% interval),
    is 13 workloads x 4 kinds x 4 variants (two codecs) x 7 runs (a warm-up and 6
    rounds), 1,456 runs per link. Per run of plain Dask at that size, the
    rechunks and the transpose send about 150 MB over the loopback, the matrix
    product 260 MB, the frames and the futures 40-80 MB, the others less (0.3-2 s
    behind 1 Gbit/s; about 1 GB, 8.5 s, for one run of each workload). The
    frames are a quarter of ``--mib`` because Dask's P2P shuffle costs about
    0.05 CPU seconds per MiB here (pyarrow, disk), ten times what 1 Gbit/s costs
    per MiB: they are CPU-bound at any size, and at the arrays' size they alone
    would take about half of the run. Estimated wall time: about 30 minutes on
    the loopback and at 10 Gbit/s, about 40 minutes behind 1 Gbit/s. The
    estimate comes from the CPU seconds that every sample records (``cpu_s``)
    in a ``--quick`` run (16 MiB) and a one-round 64 MiB run of the ``zeros``
    kind, extrapolated linearly to 96 MiB (about 20 CPU seconds for one run of
    each of the 13 workloads), as wall = 1.3 x CPU / 2 cores, plus 0.3 s per run
    of installing, checking and cleaning up, plus the link time where it does
    not overlap the computing (47 minutes if it never did). Wall times measured
    here are no guide: the machine was shared; the whole ``--quick`` suite on
    the loopback took 15 minutes at a load average of 4-5 (about 10 on a quiet
    machine by the same estimate). Every results file records its ``wall_s``.

Run the full suite, one link per invocation (``docs/benchmarking.rst``)::

    python -m benchmarks workloads --out docs/results/workloads
    python -m benchmarks workloads --link 10gbit --out docs/results/workloads
    python -m benchmarks workloads --link 1gbit --out docs/results/workloads
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import math
import os
import sys
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from asafe.app import stats

from . import harness

__all__ = [
    "DATA_KINDS",
    "WORKLOADS",
    "DEFAULT_ZERO_FRACTION",
    "INT_DISTINCT",
    "SMOOTH_STEP",
    "TRANSFER_BOUND_SHARE",
    "TARGET_A",
    "TARGET_B_SPEEDUP",
    "TARGET_B_OF_BEST",
    "Spec",
    "Workload",
    "codec_states",
    "variant_names",
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
    "verdict",
    "combine_verdicts",
    "target_a",
    "target_b",
    "transfer_share",
    "summarize_workload",
    "run_workload",
    "table",
    "target_summary",
    "main",
]

#: The data kinds, in the order they run.
DATA_KINDS = ("random", "zeros", "smooth", "ints")
#: Share of exact zeros of the ``zeros`` kind unless ``--zero-fraction`` says otherwise.
DEFAULT_ZERO_FRACTION = 0.5
#: Distinct values of the ``ints`` kind.
INT_DISTINCT = 1000
#: The ``smooth`` kind's values are multiples of this.
SMOOTH_STEP = 1.0 / 1024
#: A workload is transfer-bound when the link is busy at least this share of plain Dask's time.
TRANSFER_BOUND_SHARE = 0.5
#: Target (a): asafe's paired ratio against plain Dask, every workload, kind and link.
TARGET_A = 0.98
#: Target (b): asafe's paired ratio on transfer-bound workloads, compressible kinds, behind 1 Gbit/s ...
TARGET_B_SPEEDUP = 1.3
#: ... and at least this share of the best static codec's speed (within 10%).
TARGET_B_OF_BEST = 1 / 1.1
#: The link rate (bits/s) at which target (b) applies.
TARGET_B_LINK_BITS = 1e9
#: Kinds that target (b) counts as compressible.
COMPRESSIBLE_KINDS = ("zeros", "smooth", "ints")
#: Tolerance of the results compared by segment sums (``reduce``, ``matmul``, ``groupby``).
RTOL = 1e-9
#: Segments of a block summed for a comparison with tolerance.
SEGMENTS = 256
#: Rounds needed for an exact 95% order-statistic interval of a median.
EXACT_ROUNDS = 6
#: Default input size (MiB of one input array) and the ``--quick`` one.
DEFAULT_MIB, QUICK_MIB = 96, 16
#: Default rounds and the ``--quick`` ones.
DEFAULT_ROUNDS, QUICK_ROUNDS = EXACT_ROUNDS, 3

_FALLBACK_CODECS = ("lz4", "zstd")


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


# --------------------------------------------------------------------------- workloads
@dataclasses.dataclass(frozen=True)
class Spec:
    """What a workload is built from: the data kind and the size.

    Attributes
    ----------
    kind : str
        One of :data:`DATA_KINDS`.
    mib : float
        MiB of one input array (of float64; an ``ints`` array has the same shape).
    zero_fraction : float
        The ``zeros`` kind's share of exact zeros.
    seed : int
        Base seed; each workload derives its own from it and its name.
    """

    kind: str
    mib: float
    zero_fraction: float = DEFAULT_ZERO_FRACTION
    seed: int = 0

    @property
    def elements(self) -> int:
        """float64 elements of one input array."""
        return max(int(self.mib * 2**20 / 8), 4096)

    def seed_for(self, name: str, which: int = 0) -> int:
        """The seed of input ``which`` of workload ``name`` (stable across runs and processes)."""
        return (self.seed * 1_000_003 + zlib.crc32(f"{name}/{which}".encode())) % 2**31

    def grid(self, aspect: int = 1, multiple: int = 16) -> tuple[int, int]:
        """``(rows, aspect * rows)`` holding about :attr:`elements`, rows a multiple of ``multiple``."""
        rows = max(multiple, int(math.sqrt(self.elements / aspect)) // multiple * multiple)
        return rows, aspect * rows


@dataclasses.dataclass(frozen=True)
class Workload:
    """One workload of the suite.

    Attributes
    ----------
    name, family : str
        ``family`` is ``"array"``, ``"dataframe"`` or ``"futures"`` (how outputs are digested).
    description : str
    prepare : callable(client, Spec) -> dict
        Makes and persists the inputs on the workers (not timed); returns them by name.
    run : callable(client, inputs, Spec) -> list
        The timed step: a list of dask collections to persist, or of futures.
    exact : bool
        Whether every variant must give the same bits (else segment sums within :data:`RTOL`).
    sort_by : str or None
        Frames: compare partitions sorted by this column (``groupby``), else by row hashes.
    """

    name: str
    family: str
    description: str
    prepare: Callable[[Any, Spec], dict]
    run: Callable[[Any, dict, Spec], list]
    exact: bool = True
    sort_by: str | None = None


def _persist(client: Any, **collections: Any) -> dict:
    from distributed import wait

    persisted = dict(zip(collections, client.persist(list(collections.values()))))
    wait(list(persisted.values()))
    return persisted


def _gaussian(block: np.ndarray) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    return gaussian_filter(block.astype(np.float64, copy=False), sigma=1.0, truncate=4.0, mode="reflect")


def _rolling_mean(block: np.ndarray, window: int) -> np.ndarray:
    from scipy.ndimage import uniform_filter1d

    return uniform_filter1d(block.astype(np.float64, copy=False), size=window, axis=0, mode="reflect")


def _prep_square(chunk_div: int, two: bool = False, rows_only: bool = False):
    def prepare(client: Any, spec: Spec, name: str) -> dict:
        n, _ = spec.grid(1)
        chunks = (n // chunk_div, n) if rows_only else (n // chunk_div, n // chunk_div)
        arrays = {"x": kind_array(spec.kind, (n, n), chunks, spec.seed_for(name), spec.zero_fraction)}
        if two:
            arrays["y"] = kind_array(spec.kind, (n, n), chunks, spec.seed_for(name, 1), spec.zero_fraction)
        return _persist(client, **arrays)
    return prepare


def _prep_wide(chunk_rows: int, chunk_cols: int):
    def prepare(client: Any, spec: Spec, name: str) -> dict:
        rows, cols = spec.grid(2)
        x = kind_array(spec.kind, (rows, cols), (rows // chunk_rows, cols // chunk_cols), spec.seed_for(name),
                       spec.zero_fraction)
        return _persist(client, x=x)
    return prepare


def _prep_matmul(client: Any, spec: Spec, name: str) -> dict:
    k = 128
    n = max(16, spec.elements // k // 16 * 16)
    a = kind_array(spec.kind, (n, k), (n // 16, k // 2), spec.seed_for(name), spec.zero_fraction)
    b = kind_array("random", (k, k), (k // 2, k), spec.seed_for(name, 1))
    return _persist(client, a=a, b=b)


#: The frames' size as a share of :attr:`Spec.mib` (see the module's docstring, "Sizes").
FRAME_SHARE = 0.25


def _frame_sizes(spec: Spec) -> tuple[int, int, int]:
    """``(partitions, rows per partition, ids)``: :data:`FRAME_SHARE` of :attr:`Spec.mib` in 24-byte rows, 4 per id."""
    partitions = 16 if spec.mib * FRAME_SHARE >= 16 else 8
    rows = max(64, int(spec.mib * FRAME_SHARE * 2**20 / 24) // partitions)
    n_ids = max(8, rows * partitions // 4) // partitions * partitions
    return partitions, rows, n_ids


def _prep_frame(with_right: bool):
    def prepare(client: Any, spec: Spec, name: str) -> dict:
        partitions, rows, n_ids = _frame_sizes(spec)
        frames = {"df": kind_frame(spec.kind, rows, partitions, n_ids, spec.seed_for(name), spec.zero_fraction)}
        if with_right:
            right_parts = max(2, partitions // 4)
            frames["right"] = kind_frame(spec.kind, n_ids // right_parts, right_parts, n_ids,
                                         spec.seed_for(name, 1), spec.zero_fraction, unique=True)
        return _persist(client, **frames)
    return prepare


_FUTURE_BLOCKS = 16


def _future_block(index: int, kind: str, side: int, seed: int, zero_fraction: float) -> np.ndarray:
    return make_block(kind, (side, side), (index * side, 0), seed, zero_fraction)


def _scaled(block: np.ndarray) -> np.ndarray:
    return block * 3


def _pair_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


def _prep_futures(client: Any, spec: Spec, name: str) -> dict:
    from distributed import wait

    side = max(8, int(math.sqrt(spec.elements / _FUTURE_BLOCKS)))
    blocks = client.map(_future_block, range(_FUTURE_BLOCKS), kind=spec.kind, side=side,
                        seed=spec.seed_for(name), zero_fraction=spec.zero_fraction,
                        key=[f"wl-input-{name}-{spec.kind}-{i}" for i in range(_FUTURE_BLOCKS)])
    wait(blocks)
    return {f"block-{i}": b for i, b in enumerate(blocks)}


_sample_counter = iter(range(1 << 62))


def _run_futures(client: Any, inputs: dict, spec: Spec) -> list:
    n = next(_sample_counter)
    level = client.map(_scaled, list(inputs.values()), key=[f"wl-scaled-{n}-{i}" for i in range(len(inputs))])
    depth = 0
    while len(level) > 1:
        pairs = [level[i:i + 2] for i in range(0, len(level), 2)]
        level = [client.submit(_pair_sum, *p, key=f"wl-sum-{n}-{depth}-{j}") if len(p) == 2 else p[0]
                 for j, p in enumerate(pairs)]
        depth += 1
    return level


def _laplacian(x: Any) -> Any:
    return x[2:, 1:-1] + x[:-2, 1:-1] + x[1:-1, 2:] + x[1:-1, :-2] - 4 * x[1:-1, 1:-1]


def _with_name(prepare: Callable[[Any, Spec, str], dict], name: str) -> Callable[[Any, Spec], dict]:
    return lambda client, spec: prepare(client, spec, name)


def _workloads() -> dict[str, Workload]:
    def array(name: str, description: str, prepare: Callable, run: Callable, exact: bool = True) -> Workload:
        return Workload(name, "array", description, _with_name(prepare, name), run, exact)

    def frame(name: str, description: str, prepare: Callable, run: Callable, exact: bool = True,
              sort_by: str | None = None) -> Workload:
        return Workload(name, "dataframe", description, _with_name(prepare, name), run, exact, sort_by)

    def rechunk(method: str) -> Callable:
        return lambda client, inp, spec: [inp["x"].rechunk((inp["x"].shape[0], inp["x"].shape[1] // 8),
                                                           method=method)]

    items = [
        array("rechunk-tasks", "(R, 2R) row chunks -> column chunks, rechunk(method='tasks')",
              _prep_wide(8, 1), rechunk("tasks")),
        array("rechunk-p2p", "(R, 2R) row chunks -> column chunks, rechunk(method='p2p')",
              _prep_wide(8, 1), rechunk("p2p")),
        array("transpose", "x.T of a square array in row chunks, into row chunks (Dask's rechunk method)",
              _prep_square(8, rows_only=True),
              lambda client, inp, spec: [inp["x"].T.rechunk(inp["x"].chunks)]),
        array("reduce", "x.sum(axis=0) and x.mean(axis=1) of a 4 x 4 grid of chunks",
              _prep_wide(4, 4), lambda client, inp, spec: [inp["x"].sum(axis=0), inp["x"].mean(axis=1)],
              exact=False),
        array("map-overlap", "Gaussian filter (sigma 1) by map_overlap(depth=4, boundary='reflect'), 4 x 4 chunks",
              _prep_square(4),
              lambda client, inp, spec: [inp["x"].map_overlap(_gaussian, depth=4, boundary="reflect",
                                                              dtype=np.float64)]),
        array("stencil", "five-point Laplacian by shifted slices (chunks that do not line up), row slabs",
              _prep_square(8, rows_only=True), lambda client, inp, spec: [_laplacian(inp["x"])]),
        array("matmul", "A (N, 128) chunks (N/16, 64) @ B (128, 128) float64 weights",
              _prep_matmul, lambda client, inp, spec: [inp["a"] @ inp["b"]], exact=False),
        array("diff", "x[1:, 1:] - y[:-1, :-1] of two arrays, 4 x 4 chunks (chunks that do not line up)",
              _prep_square(4, two=True), lambda client, inp, spec: [inp["x"][1:, 1:] - inp["y"][:-1, :-1]]),
        array("anomaly", "x - rolling mean over 33 steps of the time axis (map_overlap), time slabs",
              _prep_square(8, rows_only=True),
              lambda client, inp, spec: [inp["x"] - inp["x"].map_overlap(
                  _rolling_mean, depth={0: 16, 1: 0}, boundary="reflect", dtype=np.float64, window=33)]),
        frame("shuffle", "df.shuffle('id', shuffle_method='p2p')", _prep_frame(False),
              lambda client, inp, spec: [inp["df"].shuffle("id", shuffle_method="p2p")]),
        frame("groupby", "df.groupby('id').agg({'x': 'sum', 'y': 'mean'}, split_out=partitions)",
              _prep_frame(False),
              lambda client, inp, spec: [inp["df"].groupby("id").agg(
                  {"x": "sum", "y": "mean"}, split_out=inp["df"].npartitions)],
              exact=False, sort_by="id"),
        frame("merge", "df.merge(right, on='id'), right the unique ids (a quarter of the rows)",
              _prep_frame(True), lambda client, inp, spec: [inp["df"].merge(inp["right"], on="id", how="inner")]),
        Workload("futures", "futures", "client.map over 16 blocks, then a tree of pairwise sums (client.submit)",
                 _with_name(_prep_futures, "futures"), _run_futures),
    ]
    return {w.name: w for w in items}


#: The workloads, by name, in the order they run.
WORKLOADS: dict[str, Workload] = _workloads()


# --------------------------------------------------------------------------- variants
def codec_states() -> tuple[str, ...]:
    """The codecs that ``wire-compression`` may be forced to (``wire.CODEC_STATES``, else lz4 and zstd)."""
    from asafe.schedulers import wire

    return tuple(getattr(wire, "CODEC_STATES", _FALLBACK_CODECS))


def variant_names(codecs: Sequence[str] | None = None) -> list[str]:
    """``dask``, ``asafe`` and ``static-<codec>`` for every codec.

    >>> variant_names(["lz4", "zstd"])
    ['dask', 'asafe', 'static-lz4', 'static-zstd']
    """
    return ["dask", "asafe"] + [f"static-{c}" for c in (codec_states() if codecs is None else codecs)]


def _install(client: Any, variant: str) -> Any:
    import asafe

    if variant == "dask":
        return None
    if variant == "asafe":
        return asafe.install(client)  # its defaults: a fresh AdaptiveRuntime() every time
    codec = variant.removeprefix("static-")
    runtime = asafe.AdaptiveRuntime([asafe.Optimization("wire-compression", asafe.Fixed(codec), initial=codec)])
    return asafe.install(client, runtime)


def _worker_wire_state() -> dict[str, Any]:
    from asafe.schedulers import board, wire

    return {"enabled": wire.enabled(), "on": wire.stats().get("on", False),
            "state": board.snapshot().get(wire.NAME)}


def _expected_state(variant: str) -> Any:
    """The wire state a variant must find on every worker before its sample (None: not installed)."""
    if variant == "dask":
        return None
    if variant == "asafe":
        return "any"
    return variant.removeprefix("static-")


def _uninstall(client: Any, handle: Any) -> None:
    from asafe.schedulers import wire

    if handle is not None:
        handle.uninstall()
    client.run(wire.disable)
    wire.disable()


def _check_state(client: Any, variant: str) -> str | None:
    """Raise where plain Dask would see asafe; return why a static variant's state is missing."""
    from asafe.schedulers import wire

    states = client.run(_worker_wire_state)
    expected = _expected_state(variant)
    if expected is None:
        leftover = {w: s for w, s in states.items() if s["enabled"] or s["on"] or s["state"] is not None}
        if leftover or wire.enabled():
            raise RuntimeError(f"the dask variant would see asafe left by the previous variant: workers {leftover}, "
                               f"client serializers wrapped {wire.enabled()}")
        return None
    if expected == "any":
        return None
    wrong = {w: s["state"] for w, s in states.items() if s["state"] != expected}
    return f"wire-compression state {expected!r} did not reach workers {wrong}" if wrong else None


def _wire_counters(client: Any) -> tuple[dict[str, float], dict[str, dict]]:
    from asafe.schedulers import wire

    per_worker = client.run(wire.stats)
    total: dict[str, float] = {}
    for counters in per_worker.values():
        for key, value in counters.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total, per_worker


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (every thread: tasks, comms, codecs)."""
    times = os.times()
    return times.user + times.system


def _link_bytes() -> int | None:
    try:
        import psutil

        counters = psutil.net_io_counters(pernic=True).get("lo")
    except Exception:  # a record must not fail the run it records
        return None
    return None if counters is None else int(counters.bytes_sent)


# --------------------------------------------------------------------------- cluster housekeeping
def _keys_of(outputs: list) -> list:
    from dask.core import flatten
    from distributed import Future

    keys: list = []
    for out in outputs:
        if isinstance(out, Future):
            keys.append(out.key)
        else:
            keys.extend(flatten(out.__dask_keys__()))
    return keys


def _known(dask_scheduler: Any, keys: list) -> int:
    tasks = dask_scheduler.tasks
    return sum(1 for k in keys if k in tasks)


def _wait_forgotten(client: Any, keys: list, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while client.run_on_scheduler(_known, keys=keys):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the scheduler still holds outputs of the previous sample after {timeout:.0f} s")
        time.sleep(0.02)


def _holders(dask_scheduler: Any, keys: list) -> dict:
    return {k: sorted(ws.address for ws in dask_scheduler.tasks[k].who_has) for k in keys
            if k in dask_scheduler.tasks}


def _restore_step(dask_scheduler: Any, placement: dict) -> int:
    """One step back to ``placement`` (key -> its original worker); returns the keys not there yet.

    A key with several replicas loses those not on its original worker; a key
    whose only replica is elsewhere (the Active Memory Manager dropped the
    original during the sample) is fetched back by its original worker first.
    The scheduler's own housekeeping calls, as the Active Memory Manager uses them.
    """
    stimulus = f"asafe-workloads-placement-{time.time()}"
    pending = 0
    for key, original in placement.items():
        ts = dask_scheduler.tasks.get(key)
        if ts is None or original not in dask_scheduler.workers:
            continue
        holders = {ws.address for ws in ts.who_has or ()}
        if holders == {original} or not holders:
            continue
        pending += 1
        if original in holders:
            for addr in sorted(holders - {original}):
                dask_scheduler.request_remove_replicas(addr, [key], stimulus_id=stimulus)
        else:
            dask_scheduler.request_acquire_replicas(original, [key], stimulus_id=stimulus)
    return pending


def _restore_placement(client: Any, placement: dict, timeout: float = 60.0) -> int:
    """Put the inputs back where they were made, one replica each; returns how many keys had moved or spread."""
    if not placement:
        return 0
    first = client.run_on_scheduler(_restore_step, placement=placement)
    deadline = time.monotonic() + timeout
    pending = first
    while pending:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{pending} inputs were not back on their workers within {timeout:.0f} s")
        time.sleep(0.05)
        pending = client.run_on_scheduler(_restore_step, placement=placement)
    return first


# --------------------------------------------------------------------------- one sample
def _digest(client: Any, workload: Workload, outputs: list) -> list[dict]:
    import dask
    from distributed import Future

    if workload.family == "futures":
        futures = [client.submit(array_digest, f, pure=False) for f in outputs if isinstance(f, Future)]
        return client.gather(futures)
    function = array_digest if workload.family == "array" else (
        lambda part: frame_digest(part, workload.sort_by))
    pieces = [d for out in outputs
              for d in (out.to_delayed().ravel() if workload.family == "array" else out.to_delayed())]
    parts = [dask.delayed(function, pure=False)(d) for d in pieces]
    return list(client.compute(parts, sync=True))


def _run_once(client: Any, workload: Workload, spec: Spec, inputs: dict, placement: dict,
              variant: str, handle: Any) -> dict[str, Any]:
    """Time one run of ``variant`` (already installed as ``handle``); uninstall, digest, clean up."""
    from distributed import wait

    record: dict[str, Any] = {"variant": variant}
    outputs: list = []
    built: list = []
    try:
        missing = _check_state(client, variant)
        if missing:
            record["error"] = missing
            return record
        client.run(_reset_wire)
        cpu_before = client.run(_cpu_seconds)
        lo_before = _link_bytes()
        here_before = _cpu_seconds()
        wall = time.time()
        start = time.perf_counter()
        built = workload.run(client, inputs, spec)
        outputs = built if workload.family == "futures" else client.persist(built)
        wait(outputs)
        record["seconds"] = time.perf_counter() - start
        here_after = _cpu_seconds()
        lo_after = _link_bytes()
        cpu_after = client.run(_cpu_seconds)
        record["link_bytes"] = None if lo_before is None or lo_after is None else lo_after - lo_before
        record["cpu_s"] = {"workers": sum(cpu_after[w] - cpu_before[w] for w in cpu_after if w in cpu_before),
                           "scheduler_and_client": here_after - here_before}
        record["wire"], record["wire_per_worker"] = _wire_counters(client)
        if handle is not None:
            record["state_at_end"] = handle.states.get("wire-compression")
            record["transitions"] = [[round(t.time - wall, 3), t.old, t.new] for t in handle.history
                                     if t.optimization == "wire-compression" and t.time >= wall - 1.0]
    except Exception as exc:  # a variant that raises is reported, the others go on
        record["error"] = f"raised: {type(exc).__name__}: {exc}"
    finally:
        _uninstall(client, handle)
    try:
        if "error" not in record:
            record["digest"] = _digest(client, workload, outputs)
    except Exception as exc:
        record["error"] = f"its result could not be read: {type(exc).__name__}: {exc}"
    keys = _keys_of(outputs)
    del outputs, built
    _wait_forgotten(client, keys)
    record["spread_inputs"] = _restore_placement(client, placement)
    return record


def _reset_wire() -> None:
    from asafe.schedulers import wire

    wire.reset_stats()


# --------------------------------------------------------------------------- one workload
def run_workload(client: Any, workload: Workload, spec: Spec, variants: Sequence[str], *,
                 rounds: int, rel_ci: float = 0.05, max_seconds: float = math.inf,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
    """Warm up, then time ``variants`` of ``workload`` in balanced rounds on the cluster behind ``client``.

    The ``dask`` variant must be among ``variants``: its warm-up result is the
    reference every result is compared with (:func:`compare_digests`).

    Returns
    -------
    dict
        ``samples`` (one record per timed run: round, position, variant, seconds,
        wire counters, link bytes, asafe's state and transitions, whether the
        result was bit-identical), ``warmup``, ``failed`` (variant -> why),
        ``stop_reason``, ``rounds``, and :func:`summarize_workload`'s fields.
    """
    if "dask" not in variants:
        raise ValueError(f"the variants must include 'dask' (the reference and the base of every ratio), "
                         f"got {list(variants)}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds!r}")
    started = time.perf_counter()
    inputs = workload.prepare(client, spec)
    prepare_s = time.perf_counter() - started
    placement = {k: h[0] for k, h in client.run_on_scheduler(_holders, keys=_keys_of(list(inputs.values()))).items()
                 if h}
    result: dict[str, Any] = {"workload": workload.name, "family": workload.family,
                              "description": workload.description, "exact": workload.exact,
                              "inputs": _describe_inputs(inputs), "prepare_s": prepare_s, "warmup": {},
                              "failed": {}, "samples": []}
    reference: list | None = None
    failed: dict[str, str] = result["failed"]

    def attempt(variant: str, what: str) -> dict[str, Any] | None:
        nonlocal reference
        try:
            handle = _install(client, variant)
        except Exception as exc:
            failed[variant] = f"install raised on {what}: {type(exc).__name__}: {exc}"
            _uninstall(client, None)  # whatever it left in the serializers
            return None
        record = _run_once(client, workload, spec, inputs, placement, variant, handle)
        if "error" in record:
            failed[variant] = f"{what}: {record.pop('error')}"
            return None
        digest = record.pop("digest")
        if reference is None:
            reference = digest
        problem = compare_digests(reference, digest, workload.exact)
        if problem:
            failed[variant] = f"wrong result on {what}: {problem}"
            return None
        record["identical"] = digest == reference  # every bit (or segment sum) the same as plain Dask's
        return record

    try:
        for variant in ["dask"] + [v for v in variants if v != "dask"]:
            record = attempt(variant, "warm-up")
            if record is not None:
                result["warmup"][variant] = record
                log(f"  warm-up {variant:<12} {record['seconds']:7.3f} s{_wire_note(record)}")
            elif variant == "dask":
                log(f"  {workload.name}: the dask variant failed ({failed['dask']}); workload skipped")
                return result
        live = [v for v in variants if v not in failed]
        samples: dict[str, list[float]] = {v: [] for v in live}
        sampling = time.perf_counter()
        decision = None
        for rnd, order in enumerate(stats.balanced_orders(list(variants), rounds)):
            for position, variant in enumerate(order):
                if variant in failed:
                    continue
                record = attempt(variant, f"round {rnd}")
                if record is None:
                    log(f"  FAILED {variant}: {failed[variant]}")
                    samples.pop(variant, None)
                    result["samples"] = [s for s in result["samples"] if s["variant"] != variant]
                    continue
                record.update(round=rnd, position=position)
                samples[variant].append(record["seconds"])
                result["samples"].append(record)
                log(f"  round {rnd} {variant:<12} {record['seconds']:7.3f} s{_wire_note(record)}")
            if "dask" in failed or not samples:
                break
            decision = stats.stop_decision(samples, rel_ci=rel_ci, min_samples=min(EXACT_ROUNDS, rounds),
                                           max_samples=rounds, elapsed=time.perf_counter() - sampling,
                                           max_seconds=max_seconds)
            if decision.stop:
                break
        result["stop_reason"] = decision.reason if decision is not None else "no round completed"
        result["rounds"] = min((len(s) for s in samples.values()), default=0)
    finally:
        keys = _keys_of(list(inputs.values()))
        del inputs
        _wait_forgotten(client, keys)
    return result


def _describe_inputs(inputs: dict) -> dict[str, Any]:
    out = {}
    for name, value in inputs.items():
        if hasattr(value, "chunks") and hasattr(value, "dtype"):
            out[name] = {"shape": list(value.shape), "chunks": [list(c) for c in value.chunks],
                         "dtype": str(value.dtype), "nbytes": int(value.nbytes)}
        elif hasattr(value, "npartitions"):
            out[name] = {"partitions": int(value.npartitions), "columns": [str(c) for c in value.columns],
                         "dtypes": [str(t) for t in value.dtypes]}
        else:
            out[name] = {"type": type(value).__name__}
    return out


def _wire_note(record: Mapping[str, Any]) -> str:
    wire = record.get("wire") or {}
    logical = wire.get("compressed_logical_bytes", 0)
    note = ""
    if logical:
        note = (f", compressed {logical / 2**20:.1f} MiB -> {wire.get('compressed_wire_bytes', 0) / 2**20:.1f} MiB"
                f" in {int(wire.get('compressed_frames', 0))} frames")
    if record.get("link_bytes") is not None:
        note += f", {record['link_bytes'] / 2**20:.1f} MiB on lo"
    if record.get("transitions"):
        note += f", transitions {[tuple(t[1:]) for t in record['transitions']]}"
    return note


# --------------------------------------------------------------------------- statistics and targets
def verdict(ci: Sequence[float], target: float, exact: bool = True) -> str:
    """``"met"`` when the interval clears ``target``, ``"not met"`` when it lies wholly below, else ``"not shown"``.

    An interval that does not reach 95% (``exact=False``, fewer than 6 rounds) shows
    nothing either way.

    >>> verdict((1.02, 1.10), 0.98), verdict((0.90, 0.97), 0.98), verdict((0.95, 1.05), 0.98)
    ('met', 'not met', 'not shown')
    >>> verdict((1.02, 1.10), 0.98, exact=False), verdict((0.90, 0.97), 0.98, exact=False)
    ('not shown', 'not shown')
    """
    low, high = float(ci[0]), float(ci[1])
    if not exact:
        return "not shown"
    if high < target:
        return "not met"
    if low >= target:
        return "met"
    return "not shown"


def combine_verdicts(*verdicts: str) -> str:
    """All parts met: "met"; any not met: "not met"; else "not shown".

    >>> combine_verdicts("met", "not shown"), combine_verdicts("met", "not met"), combine_verdicts("met", "met")
    ('not shown', 'not met', 'met')
    """
    if any(v == "not met" for v in verdicts):
        return "not met"
    if verdicts and all(v == "met" for v in verdicts):
        return "met"
    return "not shown"


def target_a(speedup: Mapping[str, Any] | None) -> str:
    """Target (a) from asafe's paired ratio against plain Dask (``ratio``, ``ci95``, ``exact``).

    Met when the interval clears :data:`TARGET_A`; not met when it lies wholly
    below 1 (so also when wholly below :data:`TARGET_A`); an interval of fewer
    than 6 rounds shows neither.

    >>> target_a({"ratio": 1.0, "ci95": [0.99, 1.02], "exact": True})
    'met'
    >>> target_a({"ratio": 0.97, "ci95": [0.95, 0.99], "exact": True})
    'not met'
    >>> target_a({"ratio": 0.99, "ci95": [0.985, 0.995], "exact": True})
    'not met'
    >>> target_a({"ratio": 0.99, "ci95": [0.97, 1.01], "exact": True})
    'not shown'
    >>> target_a(None)
    'no result'
    """
    if not speedup:
        return "no result"
    if speedup["ci95"][1] < 1.0 and speedup["exact"]:  # wholly below 1 (so also whenever wholly below 0.98)
        return "not met"
    return verdict(speedup["ci95"], TARGET_A, speedup["exact"])


def target_b(speedup: Mapping[str, Any] | None, of_best: Mapping[str, Any] | None, *, kind: str,
             link_bits: float | None, transfer_bound: bool | None) -> str:
    """Target (b): behind 1 Gbit/s, transfer-bound, compressible kind -> >= 1.3x Dask and within 10% of the best static.

    ``"n/a"`` (with the reason) where it does not apply.

    >>> good = {"ratio": 1.5, "ci95": [1.4, 1.6], "exact": True}
    >>> near = {"ratio": 0.97, "ci95": [0.95, 0.99], "exact": True}
    >>> target_b(good, near, kind="zeros", link_bits=1e9, transfer_bound=True)
    'met'
    >>> target_b(good, {"ratio": 0.8, "ci95": [0.7, 0.85], "exact": True}, kind="zeros", link_bits=1e9,
    ...          transfer_bound=True)
    'not met'
    >>> target_b(good, near, kind="random", link_bits=1e9, transfer_bound=True)
    'n/a: random data'
    >>> target_b(good, near, kind="zeros", link_bits=1e9, transfer_bound=False)
    'n/a: not transfer-bound'
    """
    if link_bits is None or not math.isclose(link_bits, TARGET_B_LINK_BITS):
        return "n/a: not behind 1 Gbit/s"
    if kind not in COMPRESSIBLE_KINDS:
        return f"n/a: {kind} data"
    if transfer_bound is None:
        return "n/a: transfer share not measured"
    if not transfer_bound:
        return "n/a: not transfer-bound"
    if not speedup or not of_best:
        return "no result"
    return combine_verdicts(verdict(speedup["ci95"], TARGET_B_SPEEDUP, speedup["exact"]),
                            verdict(of_best["ci95"], TARGET_B_OF_BEST, of_best["exact"]))


def transfer_share(record: Mapping[str, Any], link_bits: float | None) -> float | None:
    """Share of a sample's wall time the link was busy: its bytes on the shaped loopback at the link's rate.

    None on the loopback as it is (its counters are shared with the whole host).

    >>> transfer_share({"seconds": 2.0, "link_bytes": 125_000_000}, 1e9)
    0.5
    >>> transfer_share({"seconds": 2.0, "link_bytes": 125_000_000}, None) is None
    True
    """
    if link_bits is None or record.get("link_bytes") is None or not record.get("seconds"):
        return None
    return record["link_bytes"] * 8 / link_bits / record["seconds"]


def _paired(base: Sequence[float], new: Sequence[float]) -> dict[str, Any]:
    ratio, ci, exact = stats.paired_ratio(base, new)
    return {"ratio": ratio, "ci95": [ci[0], ci[1]], "exact": exact, "n": len(base)}


def summarize_workload(result: Mapping[str, Any], variants: Sequence[str], *, kind: str,
                       link_bits: float | None, rel_ci: float = 0.05) -> dict[str, Any]:
    """Medians, paired ratios, best static codec, transfer share and the targets of one workload's samples.

    Returns a dict with ``summary`` (variant -> :func:`asafe.app.stats.describe`),
    ``vs_dask`` (variant -> paired ratio dask / variant), ``best_static``,
    ``asafe_vs_best`` (best static / asafe per round), ``transfer_share`` and
    ``transfer_bound``, and ``targets`` (``a``, ``b``).
    """
    by_variant: dict[str, list[float]] = {}
    for s in result.get("samples", []):
        by_variant.setdefault(s["variant"], []).append(s["seconds"])
    live = [v for v in variants if by_variant.get(v) and v not in result.get("failed", {})]
    out: dict[str, Any] = {"summary": {v: stats.describe(by_variant[v], rel_ci) for v in live},
                           "vs_dask": {}, "best_static": None, "asafe_vs_best": None}
    base = by_variant.get("dask") if "dask" in live else None
    if base is not None:
        for v in live:
            if v != "dask" and len(by_variant[v]) == len(base):
                out["vs_dask"][v] = _paired(base, by_variant[v])
    statics = [v for v in out["vs_dask"] if v.startswith("static-")]
    if statics:
        best = max(statics, key=lambda v: out["vs_dask"][v]["ratio"])
        out["best_static"] = best
        if "asafe" in live and len(by_variant["asafe"]) == len(by_variant[best]):
            out["asafe_vs_best"] = _paired(by_variant[best], by_variant["asafe"])
    shares = [transfer_share(s, link_bits) for s in result.get("samples", []) if s["variant"] == "dask"]
    shares = [s for s in shares if s is not None]
    out["transfer_share"] = float(np.median(shares)) if shares else None
    out["transfer_bound"] = None if out["transfer_share"] is None else out["transfer_share"] >= TRANSFER_BOUND_SHARE
    asafe_speedup = out["vs_dask"].get("asafe")
    out["targets"] = {
        "a": target_a(asafe_speedup),
        "b": target_b(asafe_speedup, out["asafe_vs_best"], kind=kind, link_bits=link_bits,
                      transfer_bound=out["transfer_bound"]),
    }
    return out


# --------------------------------------------------------------------------- console
def _fmt_ratio(r: Mapping[str, Any] | None) -> str:
    if not r:
        return "-"
    flag = "" if r["exact"] else "*"
    return f"{r['ratio']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]{flag}"


def table(results: Sequence[Mapping[str, Any]], variants: Sequence[str]) -> str:
    """The console table: one row per (workload, data kind)."""
    rows = []
    for r in results:
        s = r.get("analysis", {})
        row: dict[str, Any] = {"workload": r["workload"], "data": r["kind"]}
        for v in variants:
            d = s.get("summary", {}).get(v)
            row[f"{v} s"] = "FAILED" if v in r.get("failed", {}) else (f"{d['median_s']:.3f}" if d else "-")
        row["asafe speedup"] = _fmt_ratio(s.get("vs_dask", {}).get("asafe"))
        best = s.get("best_static")
        row["best static"] = f"{best.removeprefix('static-')} {s['vs_dask'][best]['ratio']:.3f}" if best else "-"
        row["asafe/best"] = _fmt_ratio(s.get("asafe_vs_best"))
        share = s.get("transfer_share")
        row["link share"] = "-" if share is None else f"{share:.2f}"
        row["(a)"] = s.get("targets", {}).get("a", "-")
        row["(b)"] = s.get("targets", {}).get("b", "-")
        rows.append(row)
    columns = (["workload", "data"] + [f"{v} s" for v in variants]
               + ["asafe speedup", "best static", "asafe/best", "link share", "(a)", "(b)"])
    return harness.format_table(rows, columns)


def target_summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts of each verdict of targets (a) and (b), and the (workload, kind) pairs not met or failed."""
    summary: dict[str, Any] = {}
    for name in ("a", "b"):
        counts: dict[str, int] = {}
        not_met = []
        for r in results:
            v = r.get("analysis", {}).get("targets", {}).get(name, "no result")
            key = "n/a" if v.startswith("n/a") else v
            counts[key] = counts.get(key, 0) + 1
            if v in ("not met", "no result"):
                not_met.append(f"{r['workload']}/{r['kind']}")
        summary[name] = {"counts": counts, "not_met_or_no_result": not_met}
    summary["failed"] = {f"{r['workload']}/{r['kind']}": r["failed"] for r in results if r.get("failed")}
    return summary


# --------------------------------------------------------------------------- command line
def _csv(allowed: Sequence[str], what: str) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        unknown = [t for t in items if t not in allowed]
        if unknown or not items:
            raise argparse.ArgumentTypeError(f"{what}: unknown {unknown or 'none given'}; choose from "
                                             f"{', '.join(allowed)}")
        return list(dict.fromkeys(items))
    return parse


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    variants = variant_names()
    parser = argparse.ArgumentParser(prog="python -m benchmarks workloads", description=__doc__.splitlines()[0])
    harness.add_common_arguments(parser, max_seconds=600.0)
    parser.add_argument("--workloads", type=_csv(list(WORKLOADS), "--workloads"), default=list(WORKLOADS),
                        help=f"comma-separated (default: all): {', '.join(WORKLOADS)}")
    parser.add_argument("--data", type=_csv(DATA_KINDS, "--data"), default=list(DATA_KINDS),
                        help=f"data kinds, comma-separated (default: all): {', '.join(DATA_KINDS)}")
    parser.add_argument("--variants", type=_csv(variants, "--variants"), default=variants,
                        help=f"comma-separated, dask always included (default: all): {', '.join(variants)}")
    parser.add_argument("--rounds", type=_positive_int, default=None,
                        help=f"most rounds per workload (default {DEFAULT_ROUNDS}, --quick {QUICK_ROUNDS}; "
                             f"{EXACT_ROUNDS} or more for an exact 95%% interval)")
    parser.add_argument("--mib", type=_positive_float, default=None,
                        help=f"MiB of one input array (default {DEFAULT_MIB}, --quick {QUICK_MIB})")
    parser.add_argument("--zero-fraction", type=_fraction, default=DEFAULT_ZERO_FRACTION,
                        help="share of exact zeros of the zeros kind (default: %(default)s)")
    parser.add_argument("--workers", type=_positive_int, default=2, help="worker processes (default: %(default)s)")
    parser.add_argument("--threads", type=_positive_int, default=1, help="threads per worker (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="base seed of the data (default: %(default)s)")
    return parser


def _load() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def _write(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(harness.to_jsonable(data), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite on one link: one cluster per data kind, every workload, variants interleaved."""
    import cloudpickle
    import dask
    from distributed import Client, LocalCluster

    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    variants = list(dict.fromkeys(["dask"] + args.variants))
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else DEFAULT_ROUNDS)
    mib = args.mib or (QUICK_MIB if args.quick else DEFAULT_MIB)
    link = args.link.rate if args.link is not None else "loopback"
    link_bits = args.link.bits_per_s if args.link is not None else None
    if "dataframe" in {WORKLOADS[w].family for w in args.workloads}:
        try:
            import dask.dataframe  # noqa: F401  (needs pandas and pyarrow)
        except ImportError as exc:
            print(f"workloads: the dataframe workloads need pandas and pyarrow ({exc}); "
                  f'pip install -e ".[bench]", or leave them out with --workloads', file=sys.stderr)
            return 2
    git_at_start = harness.environment()["git"]  # the code that runs (see harness.credit_git_at_start)
    out_dir = Path(args.out) / "workloads"
    options = {"workloads": args.workloads, "data": args.data, "variants": variants, "codecs": list(codec_states()),
               "rounds": rounds, "mib": mib, "zero_fraction": args.zero_fraction, "workers": args.workers,
               "threads_per_worker": args.threads, "seed": args.seed, "quick": args.quick, "rel_ci": args.rel_ci,
               "max_seconds_per_workload": args.max_seconds}
    definitions = {
        "paired_ratio": "median over rounds of dask seconds / variant seconds (> 1: faster than plain Dask), "
                        "order-statistic 95% interval (exact from 6 rounds)",
        "best_static": "the static-<codec> variant with the highest median paired ratio against dask",
        "asafe_vs_best": "median over rounds of best static seconds / asafe seconds",
        "transfer_share": "plain Dask's bytes over the shaped loopback x 8 / link bits per s / wall seconds, median",
        "transfer_bound": f"transfer_share >= {TRANSFER_BOUND_SHARE}",
        "target_a": f"asafe vs dask interval >= {TARGET_A} (met), wholly below {TARGET_A} or 1 (not met)",
        "target_b": f"behind 1 Gbit/s, transfer-bound, kinds {COMPRESSIBLE_KINDS}: asafe vs dask interval >= "
                    f"{TARGET_B_SPEEDUP} and asafe vs best static interval >= 1/1.1",
        "tolerance": f"reduce, matmul, groupby: segment sums within rtol {RTOL:g}, atol {RTOL:g} x largest; "
                     "others: identical bytes (arrays) or row-hash sums (frames)",
    }
    def describe(load_at_start: list[float] | None) -> dict[str, Any]:
        return harness.credit_git_at_start(harness.environment(
            load_average_at_start=load_at_start, workers=args.workers, threads_per_worker=args.threads,
            cluster="distributed LocalCluster",
            dask_config={k: dask.config.get(k, None) for k in (
                "array.rechunk.method", "dataframe.shuffle.method", "distributed.p2p.storage.disk",
                "distributed.scheduler.active-memory-manager.start", "asafe.wire")}), git_at_start)

    print(f"workloads on {link}: {len(args.workloads)} workloads x {len(args.data)} data kinds, variants "
          f"{', '.join(variants)}; {mib:g} MiB per input, up to {rounds} rounds"
          + (" (--quick: a smoke run)" if args.quick else ""))
    all_results: list[dict[str, Any]] = []
    from asafe.schedulers import wire

    wire.disable()  # plain Dask in this process too, whatever ran in it before
    module = sys.modules[__name__]  # the workers cannot import benchmarks (not installed): send it by value
    registered = module.__name__ not in cloudpickle.list_registry_pickle_by_value()
    if registered:
        cloudpickle.register_pickle_by_value(module)
    # distributed logs every P2P run's start and end at WARNING from the scheduler (in this process)
    shuffle_log = logging.getLogger("distributed.shuffle")
    shuffle_level = shuffle_log.level
    shuffle_log.setLevel(logging.ERROR)
    try:
        for kind in args.data:
            spec = Spec(kind, mib, args.zero_fraction, args.seed)
            load_at_start = _load()
            started = time.perf_counter()
            started_utc = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            path = out_dir / f"workloads-{link}-{kind}.json"
            file: dict[str, Any] = {"suite": "workloads", "link": link, "data": kind, "started": started_utc,
                                    "command": [Path(sys.argv[0]).name] + sys.argv[1:], "options": options,
                                    "definitions": definitions, "workloads": {}}
            with LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                              dashboard_address=":0") as cluster, Client(cluster) as client:
                client.wait_for_workers(args.workers)
                file["environment"] = describe(load_at_start)  # with the shaped link's measured check
                file["cluster_start_s"] = time.perf_counter() - started
                print(f"\n== data {kind}: cluster of {args.workers} workers x {args.threads} threads up in "
                      f"{file['cluster_start_s']:.1f} s")
                for name in args.workloads:
                    print(f"-- {name} / {kind}")
                    result = run_workload(client, WORKLOADS[name], spec, variants, rounds=rounds, rel_ci=args.rel_ci,
                                          max_seconds=args.max_seconds)
                    result["kind"] = kind
                    result["analysis"] = summarize_workload(result, variants, kind=kind, link_bits=link_bits,
                                                            rel_ci=args.rel_ci)
                    file["workloads"][name] = result
                    all_results.append(result)
                    file["wall_s"] = time.perf_counter() - started
                    file["targets"] = target_summary([r for r in all_results if r["kind"] == kind])
                    file["load_average"] = {"start": load_at_start, "end": _load()}
                    _write(path, file)
            print(f"results: {path} ({time.perf_counter() - started:.0f} s)")
    finally:
        if registered:
            cloudpickle.unregister_pickle_by_value(module)
        shuffle_log.setLevel(shuffle_level)
    print()
    print(table(all_results, variants))
    print("speedup: dask / asafe seconds per round, median [95% interval]; asafe/best: best static / asafe; "
          "* fewer than 6 rounds (interval below 95%); link share: plain Dask's bytes on the shaped link / its time")
    summary = target_summary(all_results)
    for name, label in (("a", f"(a) asafe >= {TARGET_A}x plain Dask, no interval below 1"),
                        ("b", f"(b) transfer-bound, compressible, 1 Gbit/s: >= {TARGET_B_SPEEDUP}x and within 10% "
                              "of the best static codec")):
        counts = ", ".join(f"{k} {v}" for k, v in sorted(summary[name]["counts"].items()))
        missing = summary[name]["not_met_or_no_result"]
        print(f"{label}: {counts}" + (f"; not met or no result: {', '.join(missing)}" if missing else ""))
    for pair, why in summary["failed"].items():
        print(f"FAILED {pair}: {why}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
