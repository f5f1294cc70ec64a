"""The per-task cost rule: the strongest alternative to a global mode, as a baseline.

asafe switches an optimization from a *global* mode vector. The alternative is
a decision made per task, from that task's own costs, with no mode at all:
StarPU's ``dmda`` scheduler picks a worker per task from ``a * T_exec + b *
T_transfer``, and PaRSEC picks a representation per tile. For tile compression
the per-task rule is: compress a panel when what compression saves on this
panel -- its transfer to a consumer on another worker, and its reads in the
compact form -- exceeds what it costs to make.

:class:`PerTask` decides one panel at the moment it is produced, from what a
per-task rule can know then:

* *placement*: whether its consumer is pinned to another worker (``remote``:
  the restriction the consumer was submitted with, which a scheduler-side rule
  reads from ``ts.worker_restrictions``);
* *reuse*: how many times the panel is read in its chosen form (``reads``);
* *its content*: the non-zeros of every tile, estimated from every
  ``stride``-th row (a sample costs ``1/stride`` of the inspection pass that
  compression makes; Dask's ``comm.compression: auto`` samples too);
* *calibrated costs* (:func:`calibrate`, once per process, as StarPU calibrates
  its performance models): seconds per element of the dense copy, the counting
  pass and the conversion, per non-zero written, and per element or non-zero
  read by the dense and the sparse kernel;
* *the measured bandwidth*: the worker's own moving average of its transfers
  (``distributed.Worker.bandwidth``).

The two costs of a panel of ``E`` elements, where the sample puts ``E_c``
elements (``nnz_c`` non-zeros) in compression candidates and ``E_k`` in tiles
kept dense::

    off = E c_copy + reads E c_dense + remote 8 E / bandwidth
    on  = E c_count + E_c c_scan + nnz_c c_nnz + E_k c_copy
          + reads (E_k c_dense + nnz_c c_sparse) + remote bytes_on / bandwidth

and the panel is compressed when ``on < off``. Each tile's form, once
compression is on, is the engine's cost model's as for every variant.

*Hybrid* (``PerTask(..., prior=True)``): the global mode is the prior and the
panel's own payoff the evidence (:func:`hybrid`). Where the evidence is strong
-- one form expected at least :data:`MARGIN` times cheaper than the other --
it decides; where the two costs are within that margin, where calibrated
constants and a sample are least to be trusted, ``asafe.is_on("compression")``
does (the mode saw the phase coming from the scheduled graph, and it measures
what the calibration cannot: load, contention, the optimization's own effect).

*Deferred* (``PerTask(..., deferred=True)``, the ``adaptive-sampling`` run):
the global mode decides, and asks the rule only where its own information
cannot. The runtime carries a second optimization, :data:`PER_TASK` (the
per-panel sample and its decision, an optimization with a cost like any other),
whose efficiency domain is the declared reuse at which the calibration phases
disagreed (compression paid in some local phases and not in others: the
content decides, which the graph does not show). A panel is compressed when
``compression`` is on; else, when ``per-task-compression`` is on, the rule
decides it from its sample; else it is not compressed, and nothing is sampled.

Every decision is logged in the producing process (:func:`drain`), so a run can
show which panels each rule compressed and when.
"""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["Costs", "PerTask", "PER_TASK", "Estimate", "calibrate", "estimate", "decide", "hybrid", "seconds",
           "drain"]

#: Sampled rows: every ``STRIDE``-th row of a panel is read to estimate its tiles.
STRIDE = 8
#: Hybrid: the per-task evidence overrides the mode when one form is expected
#: this many times cheaper than the other.
MARGIN = 1.25
#: The optimization whose state lets a deferred rule decide the panels that the
#: mode leaves uncompressed (``PerTask(..., deferred=True)``).
PER_TASK = "per-task-compression"


@dataclass(frozen=True)
class Costs:
    """Calibrated seconds of the producer's and the kernel's operations (see :func:`calibrate`)."""

    copy: float  #: per element: the dense copy of an uncompressed tile
    count: float  #: per element: the counting pass of the inspection
    scan: float  #: per element of a candidate tile: the conversion's scan
    nnz: float  #: per non-zero written by the conversion
    dense: float  #: per element read by the dense kernel (one vector)
    sparse: float  #: per non-zero read by the sparse kernel (one vector)

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class Estimate:
    """What the row sample says of one panel: element and non-zero counts by the form its tiles would take."""

    elements: int  #: E
    candidate_elements: float  #: E_c, elements of the tiles compression would store sparse
    candidate_nnz: float  #: nnz_c
    kept_elements: float  #: E_k, elements of the tiles that would stay dense
    compressed_bytes: float  #: bytes of the panel once compressed


@dataclass(frozen=True)
class PerTask:
    """The per-task decision for one panel (passed to the producer in place of ``compress``).

    Parameters
    ----------
    reads : int
        Reads of the panel in its chosen form (>= 1).
    remote : bool
        The consumer is pinned to another worker (the panel crosses).
    prior : bool
        Hybrid: the panel's payoff where one form is :data:`MARGIN` times
        cheaper, the global mode's state on closer calls (:func:`hybrid`).
    deferred : bool
        The global mode first: compressed where ``compression`` is on; decided
        by this rule where it is off and :data:`PER_TASK` is on; else not
        compressed, without a sample.

    Examples
    --------
    >>> PerTask(reads=2, remote=True)
    PerTask(reads=2, remote=True, prior=False, deferred=False)
    >>> PerTask(reads=0, remote=False)
    Traceback (most recent call last):
    ...
    ValueError: reads must be an integer >= 1, got 0
    >>> PerTask(reads=2, remote=False, prior=True, deferred=True)
    Traceback (most recent call last):
    ...
    ValueError: a rule is either a hybrid (prior=True) or deferred (deferred=True), not both
    """

    reads: int
    remote: bool
    prior: bool = False
    deferred: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.reads, bool) or not isinstance(self.reads, (int, np.integer)) or self.reads < 1:
            raise ValueError(f"reads must be an integer >= 1, got {self.reads!r}")
        if self.prior and self.deferred:
            raise ValueError("a rule is either a hybrid (prior=True) or deferred (deferred=True), not both")

    def __call__(self, dense: np.ndarray, tile: int, threshold: Any) -> bool:
        """Compress this panel? (Logs the decision; see :func:`drain`.)"""
        if self.deferred:
            from ..schedulers.board import is_on

            mode_on = is_on("compression")
            if mode_on or not is_on(PER_TASK):  # the mode decides; no sample is taken
                _log(self, mode_on, "mode", None, None)
                return mode_on
        began = time.perf_counter()
        est = estimate(dense, tile, threshold)
        on, off = seconds(est, calibrate(), self.reads, self.remote, _bandwidth())
        spent = time.perf_counter() - began
        if self.prior:
            from ..schedulers.board import is_on

            compress, why = hybrid(on, off, is_on("compression"))
        else:
            compress, why = on < off, "payoff"
        _log(self, compress, why, on, off, spent)
        return compress


def hybrid(on: float, off: float, mode_on: bool, margin: float = MARGIN) -> tuple[bool, str]:
    """``(compress, why)``: the panel's payoff where it is clear, the global mode where it is not.

    Examples
    --------
    >>> hybrid(on=1.0, off=3.0, mode_on=False)   # compression clearly pays: the evidence wins
    (True, 'payoff')
    >>> hybrid(on=3.0, off=1.0, mode_on=True)    # clearly does not
    (False, 'payoff')
    >>> hybrid(on=1.0, off=1.1, mode_on=False)   # a close call: the mode decides
    (False, 'mode')
    """
    if on * margin <= off:
        return True, "payoff"
    if off * margin <= on:
        return False, "payoff"
    return bool(mode_on), "mode"


def seconds(est: Estimate, costs: Costs, reads: int, remote: bool, bandwidth: float) -> tuple[float, float]:
    """``(on, off)``: expected seconds of a panel made and used compressed, and uncompressed.

    Examples
    --------
    >>> costs = Costs(copy=1e-9, count=1e-9, scan=2e-9, nnz=1e-9, dense=1e-9, sparse=4e-9)
    >>> est = Estimate(elements=10**6, candidate_elements=10**6, candidate_nnz=10**4, kept_elements=0,
    ...                compressed_bytes=2e5)
    >>> on, off = seconds(est, costs, reads=1, remote=True, bandwidth=1e8)
    >>> round(on, 3), round(off, 3)   # 8 MB at 100 MB/s against 0.2 MB
    (0.005, 0.082)
    >>> on, off = seconds(est, costs, reads=1, remote=False, bandwidth=1e8)
    >>> on > off   # made and read once where it is made: the inspection does not pay
    True
    """
    E = est.elements
    off = E * costs.copy + reads * E * costs.dense + (8.0 * E / bandwidth if remote else 0.0)
    on = (E * costs.count + est.candidate_elements * costs.scan + est.candidate_nnz * costs.nnz
          + est.kept_elements * costs.copy
          + reads * (est.kept_elements * costs.dense + est.candidate_nnz * costs.sparse)
          + (est.compressed_bytes / bandwidth if remote else 0.0))
    return on, off


def decide(dense: np.ndarray, tile: int, threshold: Any, reads: int, remote: bool,
           bandwidth: float = 1e8) -> bool:
    """The per-task rule for one panel, without logging (see :class:`PerTask`).

    Examples
    --------
    >>> D = np.zeros((256, 1024)); D[::16, ::16] = 1.0
    >>> decide(D, 128, None, reads=1, remote=True, bandwidth=1e8)   # sparse and shipped: compress
    True
    >>> decide(np.ones((256, 1024)), 128, None, reads=1, remote=True, bandwidth=1e8)  # full: no gain
    False
    """
    on, off = seconds(estimate(dense, tile, threshold), calibrate(), reads, remote, bandwidth)
    return on < off


# --------------------------------------------------------------------------- the sample
def estimate(dense: np.ndarray, tile: int, threshold: Any = None, stride: int = STRIDE) -> Estimate:
    """Estimate the tiles of ``dense`` from every ``stride``-th row.

    Examples
    --------
    >>> D = np.zeros((256, 256)); D[:128, :128] = 1.0; D[128:, 128:][:, ::32] = 1.0
    >>> e = estimate(D, 128, stride=8)
    >>> e.kept_elements, e.candidate_elements, e.candidate_nnz
    (16384.0, 16384.0, 512.0)
    """
    from ..compression import engine

    dense = np.asarray(dense)
    if dense.ndim != 2:
        raise ValueError(f"estimate needs a 2-D panel, got an array of shape {dense.shape}")
    for name, value in (("tile", tile), ("stride", stride)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    rows, cols = dense.shape
    counts, sampled = _sample(dense, int(tile), int(stride))
    heights, widths = _extent(rows, tile), _extent(cols, tile)
    nnz = counts * (heights / np.maximum(sampled, 1))[:, None]
    grid_heights = np.broadcast_to(heights[:, None], counts.shape)
    grid_widths = np.broadcast_to(widths[None, :], counts.shape)
    limits = engine.tile_thresholds(grid_heights.ravel(), grid_widths.ravel(), dense.dtype,
                                    threshold).reshape(counts.shape)
    elements = grid_heights * grid_widths
    candidate = (nnz > 0) & (nnz < limits)
    kept = (nnz > 0) & (nnz >= limits)  # all-zero tiles are not stored at all
    itemsize = dense.dtype.itemsize
    # the CSR bytes of every tile as the engine counts them, one tile width at a time (at most two:
    # the tile and the last column's remainder), so that the sample stays the rule's only pass
    model = threshold if isinstance(threshold, engine.CostModel) else engine.DEFAULT_COST_MODEL
    sparse_bytes = np.empty_like(nnz)
    for width in np.unique(widths):
        same = widths == width
        sparse_bytes[:, same] = model.sparse_bytes((heights[:, None], int(width)), dense.dtype, nnz[:, same])
    return Estimate(
        elements=int(rows * cols),
        candidate_elements=float(elements[candidate].sum()),
        candidate_nnz=float(nnz[candidate].sum()),
        kept_elements=float(elements[kept].sum()),
        compressed_bytes=float(sparse_bytes[candidate].sum() + itemsize * elements[kept].sum()),
    )


def _extent(size: int, tile: int) -> np.ndarray:
    starts = np.arange(0, size, tile)
    return np.minimum(tile, size - starts).astype(np.float64)


_SAMPLE: Any = None


def _sample(dense: np.ndarray, tile: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-zeros per tile among the sampled rows, and the sampled rows per tile row (numba)."""
    global _SAMPLE
    if _SAMPLE is None:
        import numba

        @numba.njit(nogil=True, cache=True)
        def sample(D, tile, stride, counts, sampled):  # pragma: no cover - compiled
            m, n = D.shape
            nbc = counts.shape[1]
            for i in range(0, m, stride):
                I = i // tile
                sampled[I] += 1
                for J in range(nbc):  # a branch-free count per tile, as the inspection pass counts
                    k = 0
                    for j in range(J * tile, min(n, J * tile + tile)):
                        k += D[i, j] != 0
                    counts[I, J] += k

        _SAMPLE = sample
    grid = (-(-dense.shape[0] // tile), -(-dense.shape[1] // tile))
    counts = np.zeros(grid, np.int64)
    sampled = np.zeros(grid[0], np.int64)
    _SAMPLE(dense, tile, stride, counts, sampled)
    return counts, sampled


# --------------------------------------------------------------------------- calibration
_COSTS: Costs | None = None
_COSTS_LOCK = threading.Lock()


def calibrate(force: bool = False) -> Costs:
    """The calibrated :class:`Costs` of this process (measured on first use, about 0.1 s).

    Each operation is timed on a 256 x 4096 panel of 128-tiles (8 MiB, out of the
    L2 cache as the workload's panels are), the best of three.
    """
    global _COSTS
    with _COSTS_LOCK:
        if _COSTS is None or force:
            _COSTS = _measure()
        return _COSTS


def _best(fn: Any, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _measure() -> Costs:
    from ..compression import TiledMatrix
    from ..compression import layout as layout_mod

    rng = np.random.default_rng(0)
    rows, cols, tile = 256, 4096, 128
    E = rows * cols
    thin = np.where(rng.random((rows, cols)) < 0.01, 1.0, 0.0)
    full = np.where(rng.random((rows, cols)) < 0.3, 1.0, 0.0)
    every = tile * tile + 1  # every non-empty tile a candidate: the conversion is timed
    x = np.ones(cols)
    TiledMatrix.from_dense(thin, tile, threshold=every, compress=True) @ x  # compile, first touch
    copy = _best(lambda: TiledMatrix.from_dense(full, tile, compress=False)) / E
    count = _best(lambda: layout_mod.dense_tile_counts(full, tile)) / E
    thin_on = _best(lambda: TiledMatrix.from_dense(thin, tile, threshold=every, compress=True))
    full_on = _best(lambda: TiledMatrix.from_dense(full, tile, threshold=every, compress=True))
    nnz_thin, nnz_full = float(np.count_nonzero(thin)), float(np.count_nonzero(full))
    per_nnz = max((full_on - thin_on) / (nnz_full - nnz_thin), 0.0)
    scan = max(thin_on / E - count - per_nnz * nnz_thin / E, 0.0)
    dense_panel = TiledMatrix.from_dense(full, tile, compress=False)
    sparse_panel = TiledMatrix.from_dense(full, tile, threshold=every, compress=True)
    dense = _best(lambda: dense_panel @ x) / E
    sparse = _best(lambda: sparse_panel @ x) / nnz_full
    return Costs(copy=copy, count=count, scan=scan, nnz=per_nnz, dense=dense, sparse=sparse)


# --------------------------------------------------------------------------- bandwidth and the log
def _bandwidth() -> float:
    """The worker's measured bandwidth (bytes/s), or Dask's default outside a worker."""
    try:
        from distributed import get_worker

        return float(get_worker().bandwidth)
    except (ImportError, ValueError):
        import dask.config
        from dask.utils import parse_bytes

        return float(parse_bytes(dask.config.get("distributed.scheduler.bandwidth", "100 MB")))


_LOG: list[dict[str, Any]] = []
_LOG_LOCK = threading.Lock()


def _log(rule: PerTask, compress: bool, why: str, on: float | None, off: float | None,
         estimate_s: float | None = None) -> None:
    with _LOG_LOCK:
        if len(_LOG) < 100_000:
            _LOG.append({"time": time.time(), "compress": compress, "why": why, "remote": rule.remote,
                         "reads": rule.reads, "on_s": on, "off_s": off, "estimate_s": estimate_s})


def drain() -> list[dict[str, Any]]:
    """Every decision logged in this process since the last call (``client.run(drain)`` on a cluster).

    Each entry holds ``estimate_s``: the seconds the rule spent deciding (the
    sample, the calibrated costs and the bandwidth; ``None`` where no sample was
    taken, a deferred rule that left the panel to the mode).

    Examples
    --------
    >>> _ = drain(); PerTask(reads=1, remote=False)(np.ones((256, 256)), 128, None)
    False
    >>> [(d["compress"], d["why"], d["estimate_s"] > 0) for d in drain()]
    [(False, 'payoff', True)]
    """
    with _LOG_LOCK:
        out = list(_LOG)
        _LOG.clear()
    return out
