"""The phased Graph500 workload: a run whose balance of computation and communication changes.

Real workloads change phase, and a static optimization that wins in one phase
loses in the next. This module builds such a run on a Dask cluster from
Graph500-style mixed matrices (:func:`asafe.compression.graph500.mixed_matrix`)
and validates every phase against scipy. :mod:`asafe.app.demo` (``asafe demo``) and
the ``phased`` benchmark suite measure it.

One phase
---------
A phase is a few steps of the power iteration ``x <- A x / ||A x||`` on one
matrix ``A`` (:class:`Phase`). ``A`` is cut into row panels; each step runs three
kinds of tasks, typed so that asafe sees what they do:

``produce`` (compute, :func:`produce_panel`)
    Materializes a row panel in its uncompressed (dense) form -- as a generator,
    a dense update or a reader would deliver it -- and hands it to the tile
    producer :meth:`TiledMatrix.from_dense(..., compress=None)
    <asafe.compression.TiledMatrix.from_dense>`, which asks
    ``asafe.is_on("compression")``: when it is on, every tile is inspected (a
    pass over its ``E`` elements) and emitted as CSR when the cost model calls it
    a candidate; when it is off, the tiles are emitted dense without a look.
``multiply`` (compute, :func:`multiply_panel`)
    ``panel @ x`` with the numba kernels.
``normalize`` (communication, :func:`normalize`)
    Gathers the slices of ``y`` from every worker and normalizes them: the next ``x``.

The phase decides, for real reasons and without sleeping, how much each costs:

* **placement** -- ``"shipped"``: panel ``i`` is produced on worker ``i`` and
  multiplied on worker ``i + 1`` (``workers=`` with ``allow_other_workers=False``),
  so every panel crosses between worker processes; ``"local"``: it is produced
  and multiplied in one task on one worker (:func:`produce_and_multiply`) and
  never moves;
* **reuse** -- a panel multiplies ``vectors`` vectors (a block power iteration:
  personalized PageRank from several sources); every step produces the panels
  anew (the operator of each step is made again, as that of a time-varying
  graph or of a dense update would be);
* **density** -- ``dense_fraction`` of the tiles are blocks overlaid on the
  graph, each filled to ``fill`` (``fill=1``: fully dense; ``fill=0.3``: dense-ish
  tiles that the cost model still compresses, at a conversion cost);
* **scale** -- the graph has ``2**scale`` vertices, and the tile size varies.

Why the static settings lose
----------------------------
A Graph500 tile holds a few non-zeros, so compression shrinks a shipped panel
from ``8 E`` bytes to a few bytes per non-zero, and moving 8 bytes per element
between two worker processes costs more than the inspection pass that avoids
it: compression *off* loses wherever sparse panels are shipped (about 2x on the
2-core development machine). Dense-ish tiles made and used once on the same
worker gain nothing from CSR: the inspection and the conversion (a branchy pass
at 30% fill, about 4 ns per element against 2.5 ns for the dense copy) are pure
cost -- compression *on* loses there (1.3x to 1.6x). :data:`PHASES` alternates
the two kinds of phase, with different scales, tile sizes, reuse and densities.
``python -m benchmarks phased`` measures all of it.

What the adaptive runtime sees
------------------------------
Producers and multiplies are ``@asafe.typed("compute")``, the gather is
``@asafe.typed("communication")``, and the scheduler plugin counts every
inter-worker transfer as communication in uncompressed-equivalent seconds
(:mod:`asafe.schedulers.scheduler_plugin`). A shipped phase therefore shows a low
compute/communication ratio whether compression is on or off, and a local phase
a high one (only the small ``x`` vectors move). A local panel read by many
vectors is pure compute too, yet compression pays there: every producer declares
its panel's reads with :func:`asafe.reuse` (the ``reads`` the per-task rule is
given), and the mode carries them as its ``reuse`` signal.

Where the rest lives
--------------------
This module holds what a phase *is*: :class:`Phase`, the demo's phases
(:data:`PHASES`, :data:`QUICK_PHASES`, :data:`TEST_PHASES`), the matrix
(:class:`PhaseMatrix`), the typed tasks, the check against scipy and the
placement of the panels. :mod:`asafe.app.runner` runs phases on a cluster,
:mod:`asafe.app.variants` says what each variant does (the adaptive runtime
under :func:`~asafe.app.variants.compression_domain`, the per-task rule, the
static settings; :data:`~asafe.app.variants.DEFAULT_THRESHOLDS` says how its
settings were chosen) and :mod:`asafe.app.comparison` measures the variants
side by side. The phase sets and variants made for evaluations (calibration,
held-out and loaded sets; ``hybrid``, ``adaptive-sampling``, ...) live with the
``phased`` benchmark suite in ``benchmarks/``, run from a checkout.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from ..core.types import COMMUNICATION, COMPUTE, typed
from .load import check_load

__all__ = [
    "Phase",
    "PhaseMatrix",
    "PHASES",
    "QUICK_PHASES",
    "TEST_PHASES",
    "PHASE_SETS",
    "phases_for",
    "produce_panel",
    "multiply_panel",
    "produce_and_multiply",
    "normalize",
    "initial_vectors",
    "reference",
    "check_result",
    "panel_bounds",
    "placement_plan",
    "clear_cache",
]

PLACEMENTS = ("shipped", "local")


# --------------------------------------------------------------------------- phases
@dataclass(frozen=True)
class Phase:
    """One phase of the workload: a few power-iteration steps on one matrix.

    Parameters
    ----------
    name : str
        Short name (``"shipped-sparse"``).
    scale : int
        The graph has ``2**scale`` vertices (a ``2**scale`` square matrix).
    tile : int
        Tile side.
    dense_fraction : float
        Fraction of the tiles overlaid with a dense block (see
        :func:`asafe.compression.graph500.mixed_matrix`).
    fill : float
        Fraction of the elements of each dense block that are non-zero (1.0:
        fully dense; below the cost model's threshold, about 40% for 128 x 128
        tiles, the block is a compression candidate).
    placement : {"shipped", "local"}
        Where a panel is multiplied: on another worker than the one that
        produced it, or on the same one.
    steps : int
        Power-iteration steps; every step produces every panel again (a
        panel is used in one step only: the matrix of each step is made anew,
        as the operator of a time-varying graph or of a dense update is).
    vectors : int
        Reuse: how many vectors one produced panel multiplies (a block power
        iteration, personalized PageRank for ``vectors`` sources).
    panels : int
        Row panels (tasks of each kind per step).
    edgefactor, seed : int
        Graph500 generator settings.
    description : str
        One line on what the phase stands for.
    load : {None, "memory", "link", "cpu"}
        A competing job that runs beside the phase (:mod:`asafe.app.load`):
        ``"memory"`` streams memory on one core, ``"link"`` sends a bulk flow
        over the (shaped) loopback, ``"cpu"`` computes in cache on one core.
        The graph does not show it.

    Examples
    --------
    >>> p = Phase("p", scale=8, tile=32, steps=2, panels=4)
    >>> p.n, p.grid, p.elements
    (256, 8, 65536)
    >>> Phase("p", scale=8, placement="remote")
    Traceback (most recent call last):
    ...
    ValueError: placement must be one of ('shipped', 'local'), got 'remote'
    """

    name: str
    scale: int
    tile: int = 128
    dense_fraction: float = 0.0
    fill: float = 1.0
    placement: str = "shipped"
    steps: int = 8
    vectors: int = 1
    panels: int = 8
    edgefactor: int = 16
    seed: int = 0
    description: str = ""
    load: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a phase needs a non-empty name, got {self.name!r}")
        for attr, low in (("scale", 1), ("tile", 1), ("steps", 1), ("vectors", 1), ("panels", 1),
                          ("edgefactor", 1), ("seed", 0)):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{attr} must be an integer >= {low}, got {value!r}")
        if self.scale > 20:
            raise ValueError(f"scale must be <= 20 for this workload (dense panels), got {self.scale}")
        if not 0.0 <= float(self.dense_fraction) <= 1.0:
            raise ValueError(f"dense_fraction must be in [0, 1], got {self.dense_fraction!r}")
        if not 0.0 < float(self.fill) <= 1.0:
            raise ValueError(f"fill must be in (0, 1], got {self.fill!r}")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, got {self.placement!r}")
        check_load(self.load)

    @property
    def n(self) -> int:
        """Rows (and columns) of the matrix."""
        return 1 << self.scale

    @property
    def grid(self) -> int:
        """Tile rows (and columns)."""
        return -(-self.n // self.tile)

    @property
    def elements(self) -> int:
        """Elements of the matrix (``n**2``): what a dense step touches."""
        return self.n * self.n

    @property
    def reuse(self) -> int:
        """Reads of a produced panel in its chosen form: one per vector, plus its transfer if shipped."""
        return self.vectors + (1 if self.placement == "shipped" else 0)

    def source(self) -> "PhaseMatrix":
        """The matrix of this phase (generated where it is used).

        Its tiles are chosen by the cost model with the reuse the phase really
        has (:attr:`reuse`), so that compressing a panel is not charged as if it
        were read sixteen times (the model's default) when it is read once or
        twice -- the same model for every variant.
        """
        from ..compression import CostModel

        return PhaseMatrix(self.scale, self.tile, self.dense_fraction, self.fill, self.edgefactor, self.seed,
                           threshold=CostModel(reuse=self.reuse))

    def scaled(self, **changes: Any) -> "Phase":
        """A copy with some fields changed."""
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The default run (``asafe demo``): four phases that alternate the winner.
PHASES: tuple[Phase, ...] = (
    Phase("shipped-sparse", scale=12, dense_fraction=0.0, placement="shipped", steps=10, vectors=1, panels=16,
          description="Graph500 panels made on one worker and multiplied on the other"),
    Phase("local-denseish", scale=13, dense_fraction=1.0, fill=0.3, placement="local", steps=8, vectors=1,
          panels=16, description="30%-full blocks everywhere, made and used once on the same worker"),
    Phase("shipped-reused", scale=12, dense_fraction=0.1, placement="shipped", steps=8, vectors=8, panels=16,
          description="10% dense blocks on the graph, shipped, each panel multiplying 8 vectors"),
    Phase("local-dense", scale=13, tile=256, dense_fraction=0.9, fill=0.33, placement="local", steps=6,
          vectors=2, panels=16, description="90% of the 256-tiles 33%-full blocks, local, 2 vectors"),
)

#: ``asafe demo --quick``: the same four phases, smaller.
QUICK_PHASES: tuple[Phase, ...] = (
    PHASES[0].scaled(scale=11, steps=8, panels=8),
    PHASES[1].scaled(scale=12, steps=6, panels=16),
    PHASES[2].scaled(scale=11, steps=6, panels=8),
    PHASES[3].scaled(scale=12, steps=6, panels=16),
)

#: The test suite's sizes: every phase in well under a second.
TEST_PHASES: tuple[Phase, ...] = (
    PHASES[0].scaled(scale=9, tile=64, steps=2, panels=4),
    PHASES[1].scaled(scale=8, tile=64, steps=2, panels=4),
    PHASES[2].scaled(scale=9, tile=64, steps=2, vectors=3, panels=4),
    PHASES[3].scaled(scale=8, tile=64, steps=2, panels=4),
)

#: The named phase sets of the package: what ``asafe demo`` runs (``--quick``: ``quick``) and the tests'
#: sizes. The evaluation sets (calibration, held-out, loaded) are the ``phased`` suite's, in ``benchmarks/``.
PHASE_SETS: dict[str, tuple[Phase, ...]] = {"default": PHASES, "quick": QUICK_PHASES, "test": TEST_PHASES}


def phases_for(size: str) -> tuple[Phase, ...]:
    """The phases of a named set of :data:`PHASE_SETS`: ``"default"``, ``"quick"`` or ``"test"``.

    Examples
    --------
    >>> [p.name for p in phases_for("quick")]
    ['shipped-sparse', 'local-denseish', 'shipped-reused', 'local-dense']
    >>> phases_for("heldout")
    Traceback (most recent call last):
    ...
    ValueError: size must be one of ['default', 'quick', 'test'], got 'heldout'
    """
    try:
        return PHASE_SETS[size]
    except KeyError:
        raise ValueError(f"size must be one of {sorted(PHASE_SETS)}, got {size!r}") from None


# --------------------------------------------------------------------------- the matrix
_CACHE: dict[tuple, Any] = {}
_CACHE_LOCK = threading.Lock()


class PhaseMatrix:
    """The matrix of a phase: a Graph500 graph with (partly) dense blocks, cached per process.

    Only the parameters travel with the tasks; each process (the client for the
    reference, every worker for its panels) generates the matrix once. With
    ``fill=1`` it is :func:`~asafe.compression.graph500.mixed_matrix` (fully
    dense blocks overlaid on the Kronecker graph, symmetric). With ``fill < 1``
    the blocks chosen by :func:`~asafe.compression.graph500.dense_tiles` replace
    the graph there by independent uniform draws kept with probability ``fill``
    (values in ``(1 - fill, 1]``); the graph outside the blocks is kept, and the
    matrix is no longer symmetric.

    Examples
    --------
    >>> M = PhaseMatrix(scale=6, tile=16, dense_fraction=1.0, fill=0.5).matrix()
    >>> M.shape, 0.4 < M.nnz / 64**2 < 0.6
    ((64, 64), True)
    >>> G = PhaseMatrix(scale=6, tile=16, dense_fraction=0.25).matrix()
    >>> bool((G != G.T).nnz == 0)
    True
    >>> S = PhaseMatrix(6, 16, 0.25, 0.5)
    >>> bool((S.slab(0, 1) == S.matrix()[:16].toarray()).all())
    True
    """

    def __init__(self, scale: int, tile: int, dense_fraction: float, fill: float = 1.0, edgefactor: int = 16,
                 seed: int = 0, threshold: Any = None) -> None:
        self.scale, self.tile = int(scale), int(tile)
        self.dense_fraction, self.fill = float(dense_fraction), float(fill)
        self.edgefactor, self.seed = int(edgefactor), int(seed)
        self.threshold = threshold
        self.shape = (1 << self.scale, 1 << self.scale)

    def key(self) -> tuple:
        return (self.scale, self.tile, self.dense_fraction, self.fill, self.edgefactor, self.seed)

    def matrix(self) -> Any:
        """The matrix as scipy CSR (generated on first use in this process)."""
        key = self.key()
        with _CACHE_LOCK:
            S = _CACHE.get(key)
            if S is None:
                S = _CACHE[key] = _generate(*key)
        return S

    def slab(self, first_row: int, stop_row: int) -> np.ndarray:
        """Tile rows ``[first_row, stop_row)`` as one dense C-contiguous array.

        The array is a per-thread work buffer, reused by the next call on the
        same thread (the tile producer copies or compresses it at once): a
        producer does not pay for fresh memory for a block it hands on.
        """
        t = self.tile
        S = self.matrix()
        r0, r1 = first_row * t, min(self.shape[0], stop_row * t)
        buffer = _scratch((r1 - r0, self.shape[1]))
        _densify(S.indptr, S.indices, S.data, r0, r1, buffer)
        return buffer

    def __reduce__(self):
        return (PhaseMatrix, (*self.key(), self.threshold))

    def __repr__(self) -> str:
        return (f"PhaseMatrix(scale={self.scale}, tile={self.tile}, dense_fraction={self.dense_fraction}, "
                f"fill={self.fill}, edgefactor={self.edgefactor}, seed={self.seed})")


def _generate(scale: int, tile: int, dense_fraction: float, fill: float, edgefactor: int, seed: int) -> Any:
    import scipy.sparse as sp

    from ..compression import graph500

    if fill >= 1.0 or dense_fraction == 0.0:
        S = graph500.mixed_matrix(scale, tile, dense_fraction, edgefactor=edgefactor, seed=seed)
        S.sort_indices()
        return S
    # Blocks filled to ``fill``: the graph outside them, independent uniform
    # draws inside (one tile row at a time, so the peak memory stays at the
    # result plus one tile row of draws).
    n = 1 << scale
    nb = -(-n // tile)
    G = graph500.kronecker(scale, edgefactor=edgefactor, seed=seed).tocoo()
    blocks = graph500.dense_tiles(scale, tile, dense_fraction, seed=seed)
    mask = np.zeros((nb, nb), dtype=bool)
    mask[blocks[:, 0], blocks[:, 1]] = True
    outside = ~mask[G.row // tile, G.col // tile]
    rows, cols, vals = [G.row[outside].astype(np.int64)], [G.col[outside].astype(np.int64)], [G.data[outside]]
    del G
    rng = np.random.default_rng([seed, 0xF111])
    for rb in range(nb):
        cbs = np.flatnonzero(mask[rb])
        if cbs.size == 0:
            continue
        r0, r1 = rb * tile, min(n, (rb + 1) * tile)
        col_index = np.concatenate([np.arange(c * tile, min(n, (c + 1) * tile)) for c in cbs])
        draws = rng.random((r1 - r0, col_index.size))
        r, c = np.nonzero(draws < fill)
        rows.append(r + r0)
        cols.append(col_index[c])
        vals.append(1.0 - draws[r, c])  # in (1 - fill, 1]: never zero
    S = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    S.sum_duplicates()
    S.sort_indices()
    return S


_SCRATCH = threading.local()
_DENSIFY: Any = None


def _densify(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, r0: int, r1: int, out: np.ndarray) -> None:
    """``out[:] = S[r0:r1].toarray()`` for a CSR ``S``, in one pass (numba; compiled on first use)."""
    global _DENSIFY
    if _DENSIFY is None:
        import numba

        @numba.njit(nogil=True, cache=True)
        def densify(indptr, indices, data, r0, r1, out):  # pragma: no cover - compiled
            out[:] = 0.0
            for i in range(r0, r1):
                row = out[i - r0]
                for k in range(indptr[i], indptr[i + 1]):
                    row[indices[k]] = data[k]

        _DENSIFY = densify
    _DENSIFY(indptr, indices, data, r0, r1, out)


def _scratch(shape: tuple[int, int]) -> np.ndarray:
    """A float64 work buffer of ``shape`` for this thread (reused while the shape does not change)."""
    buffer = getattr(_SCRATCH, "buffer", None)
    if buffer is None or buffer.shape != shape:
        buffer = _SCRATCH.buffer = np.zeros(shape)
    return buffer


def clear_cache() -> int:
    """Forget the matrices generated in this process; return how many there were."""
    with _CACHE_LOCK:
        count = len(_CACHE)
        _CACHE.clear()
    return count


# --------------------------------------------------------------------------- tasks
@typed(COMPUTE)
def produce_panel(source: PhaseMatrix, first_row: int, stop_row: int, compress: Any = None) -> Any:
    """Make tile rows ``[first_row, stop_row)`` and emit them as a TiledMatrix.

    ``compress=None`` asks ``asafe.is_on("compression")`` (the adaptive run);
    ``True``/``False`` force a static setting; a :class:`~asafe.app.pertask.PerTask`
    rule decides for this panel from its own costs (the ``per-task`` run and
    every other variant that decides per panel).
    """
    from ..compression import TiledMatrix

    dense = source.slab(first_row, stop_row)
    if callable(compress):
        compress = bool(compress(dense, source.tile, source.threshold))
    return TiledMatrix.from_dense(dense, source.tile, threshold=source.threshold, compress=compress)


@typed(COMPUTE)
def multiply_panel(panel: Any, X: np.ndarray) -> np.ndarray:
    """One slice of ``Y = A @ X`` (``X``: ``n x vectors``); the panel is read once per vector."""
    Y = np.empty((panel.shape[0], X.shape[1]))
    for j in range(X.shape[1]):
        Y[:, j] = panel @ np.ascontiguousarray(X[:, j])
    return Y


@typed(COMPUTE)
def produce_and_multiply(source: PhaseMatrix, first_row: int, stop_row: int, X: np.ndarray,
                         compress: Any = None) -> np.ndarray:
    """A local panel: produced and used once in the same task, never stored or shipped."""
    return multiply_panel(produce_panel(source, first_row, stop_row, compress), X)


@typed(COMMUNICATION)
def normalize(*parts: np.ndarray) -> np.ndarray:
    """Gather the slices of ``Y`` (from every worker) into ``Y`` with unit columns."""
    return _normalize(np.concatenate(parts))


def _normalize(Y: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(Y, axis=0)
    norms[norms == 0] = 1.0
    return Y / norms


@typed(COMPUTE)
def initial_vectors(n: int, vectors: int) -> np.ndarray:
    """The start of the iteration: column ``j`` is 1 on every vertex plus 1 on every ``(j+2)``-th, normalized."""
    X = np.ones((n, vectors))
    for j in range(1, vectors):
        X[:: j + 1, j] += 1.0
    return _normalize(X)


# --------------------------------------------------------------------------- reference
def reference(phase: Phase) -> np.ndarray:
    """The phase's result computed by scipy in this process (the independent check)."""
    S = phase.source().matrix()
    X = initial_vectors(phase.n, phase.vectors)
    for _ in range(phase.steps):
        X = _normalize(np.asarray(S @ X))
    return X


#: Tolerance of the check against scipy (summation order differs between kernels).
RTOL, ATOL = 1e-9, 1e-12


def check_result(phase: Phase, x: Any, expected: np.ndarray | None = None) -> None:
    """Raise AssertionError unless ``x`` matches :func:`reference` within RTOL/ATOL."""
    expected = reference(phase) if expected is None else expected
    x = np.asarray(x)
    if x.shape != expected.shape:
        raise AssertionError(f"phase {phase.name!r}: result has shape {x.shape}, expected {expected.shape}")
    if not np.all(np.isfinite(x)):
        raise AssertionError(f"phase {phase.name!r}: result is not finite")
    err = np.abs(x - expected)
    bound = ATOL + RTOL * np.abs(expected)
    if not np.all(err <= bound):
        worst = int(np.argmax(err - bound))
        raise AssertionError(
            f"phase {phase.name!r}: result differs from scipy at {int(np.sum(err > bound))} of {x.size} entries "
            f"(worst index {worst}: {x[worst]!r} vs {expected[worst]!r}; rtol={RTOL}, atol={ATOL})"
        )


# --------------------------------------------------------------------------- placement
def panel_bounds(grid_rows: int, panels: int) -> list[tuple[int, int]]:
    """Tile-row ranges ``[first, stop)`` of ``panels`` near-equal panels.

    Examples
    --------
    >>> panel_bounds(10, 4)
    [(0, 2), (2, 5), (5, 7), (7, 10)]
    >>> panel_bounds(2, 4)
    [(0, 1), (1, 2)]
    """
    panels = max(1, min(int(panels), int(grid_rows)))
    edges = [i * grid_rows // panels for i in range(panels + 1)]
    return [(edges[i], edges[i + 1]) for i in range(panels)]


def placement_plan(placement: str, panels: int, workers: Sequence[str]) -> list[tuple[str, str]]:
    """``(producer, consumer)`` worker of every panel.

    Examples
    --------
    >>> placement_plan("shipped", 3, ["a", "b"])
    [('a', 'b'), ('b', 'a'), ('a', 'b')]
    >>> placement_plan("local", 3, ["a", "b"])
    [('a', 'a'), ('b', 'b'), ('a', 'a')]
    """
    workers = list(workers)
    if not workers:
        raise ValueError("the workload needs at least one worker")
    if placement == "shipped" and len(workers) < 2:
        raise ValueError("a shipped phase needs at least 2 workers (panels cross between them)")
    w = len(workers)
    if placement == "shipped":
        return [(workers[i % w], workers[(i + 1) % w]) for i in range(panels)]
    if placement == "local":
        return [(workers[i % w], workers[i % w]) for i in range(panels)]
    raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
