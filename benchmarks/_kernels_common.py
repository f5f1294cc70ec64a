"""The ``kernels`` suite's shared parts: the section registry, the problems, the checks.

Every section module of the suite (``_kernels_paper``, ``_kernels_baselines``,
``_kernels_tuning``) registers its sections here with :func:`section` and builds
its measurements from these pieces: :func:`make_problem` (a mixed Graph500
matrix, its vector and a reference product), the variants of a point
(:func:`variants_for`), their checks (:func:`checker`, and the independent
reference of :func:`baseline_reference` with :func:`baseline_checker`), and
:func:`run_measure`. :mod:`benchmarks.kernels` runs the sections.
"""
from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .harness import Measurement, Results, format_seconds, format_table, measure

RTOL = 1e-12

TILED = "tiled (cost model)"
TILED128 = "tiled (threshold=128)"
NUMPY = "numpy dense"
NUMPY1 = "numpy dense 1t"
SCIPY = "scipy CSR"
DASK = "dask.array (scipy.sparse chunks)"


# --------------------------------------------------------------------------- registry
@dataclass
class Context:
    """What a section gets: parsed options, the results to add to, budgets."""

    args: argparse.Namespace
    results: Results
    quick: bool
    max_seconds: float
    rel_ci: float
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Section:
    """A named measurement of the suite."""

    name: str
    help: str
    run: Callable[[Context], None]


#: Every section of the suite, in run order (name -> Section).
SECTIONS: dict[str, Section] = {}


def section(name: str, help: str) -> Callable[[Callable[[Context], None]], Callable[[Context], None]]:
    """Register ``fn(ctx)`` as the section ``name``."""

    def register(fn: Callable[[Context], None]) -> Callable[[Context], None]:
        SECTIONS[name] = Section(name, help, fn)
        return fn

    return register


# --------------------------------------------------------------------------- problems
class BlasThreads:
    """Switch BLAS's thread count around one call (two ctypes calls, ~1 us)."""

    def __init__(self) -> None:
        from threadpoolctl import ThreadpoolController

        self.libs = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
        self.default = [lib.num_threads for lib in self.libs]

    def limited(self, fn: Callable[[], Any], threads: int = 1) -> Callable[[], Any]:
        """``fn`` wrapped so that BLAS runs it with ``threads`` threads."""
        libs, default = self.libs, self.default

        def call():
            for lib in libs:
                lib.set_num_threads(threads)
            try:
                return fn()
            finally:
                for lib, n in zip(libs, default):
                    lib.set_num_threads(n)

        return call


@dataclass
class Problem:
    """One matrix in every form, its vector and the reference product."""

    scale: int
    tile: int
    dense_fraction: float
    S: Any  # scipy.sparse.csr_array
    x: np.ndarray
    reference: np.ndarray
    bound: np.ndarray  # per-row tolerance: RTOL * (|S| @ |x|)
    D: np.ndarray | None = None
    setup: dict[str, float] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.S.shape[0]

    def check(self, name: str, y) -> None:
        """Raise unless ``y`` matches the reference within the per-row bound."""
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape != self.reference.shape:
            raise AssertionError(f"result has shape {y.shape}, expected {self.reference.shape}")
        err = np.abs(y - self.reference)
        if not np.all(err <= self.bound):
            i = int(np.argmax(err - self.bound))
            raise AssertionError(f"row {i}: |y - ref| = {err[i]:.3g} > {self.bound[i]:.3g}")


def make_problem(scale: int, tile: int, dense_fraction: float, *, dense: bool, seed: int = 0) -> Problem:
    """Generate the mixed Graph500 matrix and its reference product (timed as setup)."""
    import scipy.sparse as sp

    from asafe.compression import graph500

    t0 = time.perf_counter()
    S = sp.csr_array(graph500.mixed_matrix(scale, tile, dense_fraction, seed=seed))
    generate = time.perf_counter() - t0
    x = np.random.default_rng(seed + 1).random(S.shape[1])
    D = None
    setup = {"generate_s": generate}
    if dense:
        t0 = time.perf_counter()
        D = S.toarray()
        setup["densify_s"] = time.perf_counter() - t0
        reference = D @ x  # numpy's product is the reference of the others
    else:
        reference = S @ x
    bound = RTOL * (abs(S) @ np.abs(x)) + 1e-300
    return Problem(scale, tile, dense_fraction, S, x, reference, bound, D, setup)


def first_use() -> dict[str, float]:
    """Time the engine's first use in this process (JIT compilation or cache load), apart.

    Builds and multiplies a small Graph500 matrix once per kernel path, so that the
    conversions and products timed afterwards are steady state (rule 2).
    """
    import scipy.sparse as sp

    from asafe.compression import TiledMatrix, graph500, kernels

    S = sp.csr_array(graph500.mixed_matrix(7, 16, 0.25, seed=0))
    x = np.ones(S.shape[1])
    out = {}
    t0 = time.perf_counter()
    A = TiledMatrix.from_scipy(S, 16)
    out["first_from_scipy_s"] = time.perf_counter() - t0
    for parallel in (False, True):
        t0 = time.perf_counter()
        kernels.matvec(A.layout, x, np.empty(S.shape[0]), parallel=parallel)
        out[f"first_{'parallel' if parallel else 'serial'}_matvec_s"] = time.perf_counter() - t0
    return out


def tiled(problem: Problem, threshold=None):
    """Build a TiledMatrix from the problem's CSR; return it and the build (conversion) time."""
    from asafe.compression import TiledMatrix

    t0 = time.perf_counter()
    A = TiledMatrix.from_scipy(problem.S, problem.tile, threshold=threshold)
    return A, time.perf_counter() - t0


def dask_variant(problem: Problem):
    """``dask.array`` of row-panel ``csr_matrix`` chunks, its product with x (threaded)."""
    import dask.array as da
    import scipy.sparse as sp

    t0 = time.perf_counter()
    rows = min(problem.n, 4 * problem.tile)
    A = da.from_array(sp.csr_matrix(problem.S), chunks=(rows, problem.n), asarray=False, fancy=False)
    X = da.from_array(problem.x[:, None], chunks=(problem.n, 1))
    y = A.dot(X)
    build = time.perf_counter() - t0
    return (lambda: y.compute(scheduler="threads")), build


def representation_bytes(problem: Problem, A=None) -> dict[str, int]:
    """Bytes each representation must read for one product (matrix + x + y).

    The tiled matrix's are :attr:`Layout.product_nbytes
    <asafe.compression.layout.Layout.product_nbytes>`: its values array is not
    read when the sparse part is iso-valued.
    """
    n = problem.n
    vec = 16 * n
    out = {
        NUMPY: 8 * n * n + vec,
        SCIPY: problem.S.data.nbytes + problem.S.indices.nbytes + problem.S.indptr.nbytes + vec,
    }
    out[NUMPY1] = out[NUMPY]
    if A is not None:
        out[TILED] = A.layout.product_nbytes + vec
    return out


def variants_for(problem: Problem, blas: BlasThreads, *, numpy_dense: bool, with_128: bool = True,
                 with_dask: bool = True):
    """The variants of one point and their one-off build costs."""
    A, build = tiled(problem)
    variants: dict[str, Callable[[], Any]] = {}
    builds: dict[str, float] = {TILED: build}
    mats = {TILED: A}
    if numpy_dense and problem.D is not None:
        D, x = problem.D, problem.x
        variants[NUMPY] = lambda: D @ x
        variants[NUMPY1] = blas.limited(lambda: D @ x)
    S, x = problem.S, problem.x
    variants[SCIPY] = lambda: S @ x
    variants[TILED] = lambda: A @ x
    if with_128:
        A128, build128 = tiled(problem, threshold=128)
        variants[TILED128] = lambda: A128 @ x
        builds[TILED128] = build128
        mats[TILED128] = A128
    if with_dask:
        variants[DASK], builds[DASK] = dask_variant(problem)
    return variants, builds, mats


def checker(problem: Problem) -> Callable[[str, Any], None]:
    """The ``check`` of :func:`measure`: numpy's variants against scipy, the others against numpy."""
    scipy_reference = problem.S @ problem.x

    def check(name: str, y) -> None:
        if name in (NUMPY, NUMPY1):
            y = np.asarray(y)
            err = np.abs(y - scipy_reference)
            if not np.all(err <= problem.bound):
                raise AssertionError(f"numpy dense differs from scipy by {err.max():.3g}")
            return
        problem.check(name, y)

    return check


def run_measure(ctx: Context, variants, check, *, budget: float | None = None) -> dict[str, Measurement]:
    return measure(variants, check=check, rel_ci=ctx.rel_ci, max_seconds=budget or ctx.max_seconds,
                   min_samples=5 if ctx.quick else 7)


def best_of(measurements: dict[str, Measurement], names: Sequence[str]) -> Measurement | None:
    ok = [measurements[n] for n in names if n in measurements and measurements[n].ok]
    return min(ok, key=lambda m: m.median) if ok else None


def verdict(low: float, high: float, target: float) -> str:
    """``met`` when the whole interval is at or above ``target``, ``not met`` below, else inconclusive."""
    if low >= target:
        return "met"
    if high < target:
        return "not met"
    return "inconclusive"


def tile_table(mats: dict[str, Any]) -> str:
    rows = []
    for name, A in mats.items():
        s = A.tile_summary()
        rows.append({"representation": name, "dense": s["dense"]["tiles"], "sparse": s["sparse"]["tiles"],
                     "empty": s["empty"]["tiles"], "MB": A.nbytes / 1e6,
                     "of dense": f"{A.nbytes / A.logical_nbytes:.1%}"})
    return format_table(rows, ["representation", "dense", "sparse", "empty", "MB", "of dense"])


def rate_rows(measurements: dict[str, Measurement], nbytes: dict[str, int], bandwidth: float | None):
    rows = []
    for name, m in measurements.items():
        if not m.ok or name not in nbytes:
            continue
        row = {"variant": name, "median": format_seconds(m.median), "MB read": nbytes[name] / 1e6,
               "GB/s": nbytes[name] / m.median / 1e9}
        if bandwidth:
            row["of roofline"] = f"{nbytes[name] / bandwidth / m.median:.0%}"
        rows.append(row)
    return rows


def engine_settings() -> dict[str, Any]:
    """The tuned parameters the results depend on (printed and recorded)."""
    from asafe.compression import engine, kernels

    model = engine.DEFAULT_COST_MODEL
    cfg = kernels.settings()
    return {
        "cost_model": {"sparse_weight": model.sparse_weight, "reuse": model.reuse,
                       "pointer_bytes": model.pointer_bytes,
                       "threshold_128x128_uint16": engine.tile_threshold((128, 128), np.float64, index=np.uint16),
                       "threshold_256x256_uint16": engine.tile_threshold((256, 256), np.float64, index=np.uint16),
                       "how_chosen": "python -m benchmarks kernels --section calibrate (see engine docstring)"},
        "serial_work": cfg.serial_work, "threads": cfg.threads,
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
        "dask_chunks": "row panels of 4 tiles (csr_matrix chunks), threaded scheduler",
    }


# --------------------------------------------------------------------------- an independent reference
def baseline_reference(S, x) -> tuple[np.ndarray, np.ndarray]:
    """An independent reference of ``S @ x`` (a COO ``bincount``, no library product) and its bound.

    The bound per row is ``max(RTOL, 4 eps k) * (|S| @ |x|)`` for a row of ``k``
    non-zeros: the worst-case error of a sum of ``k`` terms in any order (the
    threaded libraries sum in their own order), never below ``RTOL``.
    """
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    ref = np.bincount(rows, weights=S.data * x[S.indices], minlength=S.shape[0])
    mag = np.bincount(rows, weights=np.abs(S.data) * np.abs(x[S.indices]), minlength=S.shape[0])
    k = np.diff(S.indptr)
    bound = np.maximum(RTOL, 4 * np.finfo(np.float64).eps * k) * mag + 1e-300
    return ref, bound


def baseline_checker(reference: np.ndarray, bound: np.ndarray, converters: dict[str, Callable[[Any], np.ndarray]]):
    """``check(name, result)``: the result (converted for the libraries that return their own type) within ``bound``."""

    def check(name: str, y) -> None:
        conv = converters.get(name)
        y = np.asarray(conv(y) if conv else y, dtype=np.float64).ravel()
        if y.shape != reference.shape:
            raise AssertionError(f"result has shape {y.shape}, expected {reference.shape}")
        err = np.abs(y - reference)
        if not np.all(err <= bound):  # NaN fails too
            i = int(np.nanargmax(np.where(np.isnan(err), np.inf, err - bound)))
            raise AssertionError(f"row {i}: |y - ref| = {err[i]:.3g} > {bound[i]:.3g}")

    return check
