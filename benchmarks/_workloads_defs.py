"""The public-workloads suite's workloads: what each prepares on the workers and what it runs.

See :mod:`benchmarks.workloads` for the list and what each moves.
"""
from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np


from ._workloads_data import DEFAULT_ZERO_FRACTION, kind_array, kind_frame, make_block


__all__ = [
    "Spec",
    "Workload",
    "FRAME_SHARE",
    "WORKLOADS",
]

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
