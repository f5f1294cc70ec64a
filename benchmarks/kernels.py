"""The ``kernels`` suite: tiled matvec against numpy dense, scipy CSR, GraphBLAS and MKL.

``python -m benchmarks kernels [--quick] [--section NAME ...] [--out DIR]``

Every section measures with :func:`benchmarks.harness.measure` (warm-up apart,
interleaved rounds, medians with distribution-free 95% CIs, loop calibration
below 1 ms) and checks every result against an independent float64 reference
(numpy's dense product, or scipy's for the numpy variant itself) to
``1e-12 * (|A| @ |x|)`` per row; a wrong variant is reported FAILED, never timed.
Matrices are ``graph500.mixed_matrix`` (a Graph500 Kronecker graph, edgefactor
16, seed 0, with a fraction of its tiles overlaid fully dense).

Sections (all run by default; ``baselines`` and ``conversion`` need the ``[bench]`` extra for
GraphBLAS and MKL, and skip what is missing)
-----------------------------
``paper``
    The paper's size: scale 11 (n = 2048), tile 128, dense fraction 0, 0.1, 0.25
    and 0.5. Variants: ``numpy dense`` (``D @ x``, BLAS's default threads),
    ``numpy dense 1t`` (BLAS limited to one thread around the call: on shared
    machines the multithreaded ``dgemv`` can be the slower one, and the best
    numpy setting is the baseline), ``scipy CSR`` (``S @ x``), ``tiled (cost
    model)`` (``TiledMatrix.from_scipy(S, tile)``), ``tiled (threshold=128)`` (the
    paper's fixed threshold) and ``dask.array (scipy.sparse chunks)`` (row panels
    of 4 tiles as ``csr_matrix`` chunks, ``A.dot(x).compute()`` on the threaded
    scheduler). Targets: at every point ``tiled (cost model)`` at least as fast as
    the better of numpy dense and scipy CSR, and >= 1.15x faster than it on the
    geometric mean over the sweep. Also reported: the cost model against the
    fixed 128, and the one-off costs (conversion from scipy, JIT or cache load)
    with the number of products after which the conversion has paid for itself.
``large``
    Scale 14 (n = 16384), tile 256, dense fraction 0.1. Targets: >= 4x numpy
    dense, >= 2.5x scipy CSR, >= 70% of a bandwidth roofline: the bytes the tiled
    representation must read (values, indices, pointers, tile metadata, ``x``
    and ``y``) divided by the read bandwidth numpy's dense product sustains in
    the same run (``8 n^2`` bytes / its median).
``scale``
    Time against scale 11 to 16 (tile 256, dense fraction 0.02, so that scale 16
    stays within memory): scipy CSR, tiled (cost model), numpy dense up to scale
    13.
``tiles``
    Time against the tile size 64 to 1024 at scale 13, dense fraction 0.1.
``hazard``
    The BLAS spin hazard: in a child process per OpenMP wait policy (``PASSIVE``,
    the kernels' default; the GNU default, unset; ``ACTIVE``), the tiled
    product (parallel kernel forced) timed back to back, right after numpy's
    ``D @ x`` (BLAS threads spinning), right after ``D @ x`` with BLAS limited
    to one thread, and right after ``D.sum()`` (the same memory traffic without
    BLAS threads: the cache-eviction part of the slowdown); and numpy's product
    back to back and right after the tiled one. Samples are single calls, not
    batched: the hazard is a first-call effect.
``crossover``
    Serial against parallel kernel on growing problems: where the serial path
    threshold (``asafe.compression.kernels.DEFAULT_SERIAL_WORK``) should sit.
``calibrate``
    Single-thread sparse against dense kernel on the same random tiles at fills
    1% to 50%: the per-byte weight ``w`` of the cost model and the fill at which
    the two forms break even.
``iso``
    Iso-valued sparse parts: on pure Graph500 graphs (all values 1.0) at
    ``--scales`` (default 11 to 17; tile 128 up to scale 11, 256 above), the
    serial product kernel (``kernels.matvec_unchecked``, ``parallel=False``)
    handed the layout's values array and handed its one value
    (``Layout.product_arrays``), interleaved with scipy's CSR product on one
    thread. What iso-valued storage is worth, apart from everything else.

``baselines``
    The strong baselines, every library at 1 and 2 threads (``--threads``) on a
    sweep of scales (``--scales``, default 11 to 14; tile 128 up to scale 11,
    256 above, or ``--tile``) and dense fractions (``--fractions``, default 0,
    0.1, 0.25, 0.5): ``numpy dense`` (BLAS threads through threadpoolctl, up to
    ``--dense-max-scale``), ``scipy CSR`` (single-threaded: the same run is the
    baseline at every thread count), SuiteSparse:GraphBLAS (python-graphblas,
    ``gb.ss.config["nthreads"]``), Intel MKL (sparse_dot_mkl,
    ``mkl_set_num_threads``) and asafe (``kernels.configure(threads=t)`` and
    ``numba.set_num_threads(t)``), all interleaved in one measurement per point,
    each checked against a COO ``bincount`` reference (see
    :func:`baseline_reference`). A library that is not installed or does not
    load is skipped with its reason printed and recorded. Per point: the best
    library at each thread count, asafe's ratio to it with its interval, the
    path asafe's 2-thread products took (serial below ``serial_work``, else the
    share of parallel calls the PathChooser made), and the scipy -> tiled
    conversion in products. Points with more than ``--max-dense-entries`` dense
    entries are skipped (said so). Targets: >= 1.0x the best library at every
    point, >= 1.5x on the geometric mean.
``conversion``
    Build cost in products (build median / product median, interleaved): the
    scipy -> tiled conversion now and as it was at 4757a96, and generator ->
    tiled (``from_scipy(mixed_matrix(...))`` with the old conversion against
    ``graph500.mixed_tiled``), beside the Kronecker graph alone; dense fraction
    ``--conversion-fraction`` (0.1), scales as ``--scales`` (11 to 16), the
    generator paths up to ``--generator-max-scale`` (14). Target: <= 10
    products from scipy at scale 14 and beyond.

``--quick`` shrinks every section (scale 9 to 11, fewer points, a small
sampling budget): a smoke run in well under a minute, not a result to report.
Output: console tables, ``<out>/kernels/results.json`` and PNGs next to it.
These machines are shared: trust the ratios measured side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import harness
from .harness import Measurement, Results, format_seconds, format_table, measure, speedup, summary_table

__all__ = ["SECTIONS", "Section", "Context", "section", "Problem", "make_problem", "main"]

TARGET_PAPER_POINT = 1.0
TARGET_PAPER_GEOMEAN = 1.15
TARGET_LARGE_NUMPY = 4.0
TARGET_LARGE_SCIPY = 2.5
TARGET_ROOFLINE = 0.70
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


# --------------------------------------------------------------------------- paper
@section("paper", "scale 11, tile 128, dense fraction 0 / 0.1 / 0.25 / 0.5: all variants side by side")
def paper(ctx: Context) -> None:
    scale, tile = (9, 64) if ctx.quick else (11, 128)
    fractions = (0.0, 0.25) if ctx.quick else (0.0, 0.1, 0.25, 0.5)
    blas = BlasThreads()
    record: dict[str, Any] = {"scale": scale, "tile": tile, "points": {}}
    ratios, ratio_lows, ratio_highs = [], [], []
    figure = {}
    for df in fractions:
        problem = make_problem(scale, tile, df, dense=True)
        variants, builds, mats = variants_for(problem, blas, numpy_dense=True)
        print(f"\n== paper: scale {scale} (n={problem.n}), tile {tile}, dense fraction {df} ==")
        print(tile_table(mats))
        m = run_measure(ctx, variants, checker(problem))
        print(summary_table(m))
        base = best_of(m, [NUMPY, NUMPY1, SCIPY])
        point: dict[str, Any] = {"measurements": m, "build_s": builds, "setup_s": problem.setup,
                                 "tiles": {k: v.tile_summary() for k, v in mats.items()}}
        if base is not None and m[TILED].ok:
            s = speedup(base, m[TILED])
            point["tiled_vs_best_baseline"] = s
            point["verdict"] = verdict(*s.ci95, TARGET_PAPER_POINT)
            ratios.append(s.ratio)
            ratio_lows.append(s.ci95[0])
            ratio_highs.append(s.ci95[1])
            print(f"{s}\n  target: at least as fast as the best baseline ({base.name}): {point['verdict']}")
        if m[TILED].ok and m.get(TILED128) is not None and m[TILED128].ok:
            point["cost_model_vs_128"] = s128 = speedup(m[TILED128], m[TILED])
            print(f"cost model vs threshold=128: {s128}")
        if m[TILED].ok and m[SCIPY].ok and m[SCIPY].median > m[TILED].median:
            point["break_even_products"] = builds[TILED] / (m[SCIPY].median - m[TILED].median)
            print(f"conversion from scipy CSR: {format_seconds(builds[TILED])} (steady state; the first "
                  f"product's warm-up call took {format_seconds(m[TILED].warmup_s)}): paid back after "
                  f"{point['break_even_products']:.0f} products against scipy CSR")
        record["points"][str(df)] = point
        figure[df] = m
    if ratios:
        geo = float(np.exp(np.mean(np.log(ratios))))
        geo_ci = (float(np.exp(np.mean(np.log(ratio_lows)))), float(np.exp(np.mean(np.log(ratio_highs)))))
        record["geomean_speedup_vs_best_baseline"] = {
            "value": geo, "interval": geo_ci,
            "interval_method": "geometric means of the per-point bootstrap bounds (not a joint interval)",
            "target": TARGET_PAPER_GEOMEAN, "verdict": verdict(*geo_ci, TARGET_PAPER_GEOMEAN)}
        ctx.summary["paper geomean vs best baseline"] = (f"{geo:.2f}x [{geo_ci[0]:.2f}, {geo_ci[1]:.2f}] "
                                                         f"target {TARGET_PAPER_GEOMEAN}x: "
                                                         f"{verdict(*geo_ci, TARGET_PAPER_GEOMEAN)}")
        print(f"\npaper sweep: geometric mean speedup of {TILED} over the best baseline: "
              f"{ctx.summary['paper geomean vs best baseline']}")
    ctx.results.add("paper", record)
    _draw_sweep(ctx.results, "paper", figure, f"scale {scale}, tile {tile}: time per product by dense fraction")


def _draw_sweep(results: Results, name: str, points: dict[Any, dict[str, Measurement]], title: str,
                xlabel: str = "dense fraction") -> None:
    names = []
    for m in points.values():
        names += [k for k in m if k not in names]
    with results.figure(name, figsize=(9, 5)) as (fig, _):
        ax = fig.subplots()
        xs = np.arange(len(points))
        width = 0.8 / max(1, len(names))
        for i, variant in enumerate(names):
            med = [points[p][variant].median * 1e3 if variant in points[p] and points[p][variant].ok else np.nan
                   for p in points]
            lo = [points[p][variant].ci95[0] * 1e3 if variant in points[p] and points[p][variant].ok else np.nan
                  for p in points]
            hi = [points[p][variant].ci95[1] * 1e3 if variant in points[p] and points[p][variant].ok else np.nan
                  for p in points]
            err = [np.subtract(med, lo), np.subtract(hi, med)]
            ax.bar(xs + i * width, med, width, yerr=err, capsize=2, label=variant)
        ax.set_xticks(xs + width * (len(names) - 1) / 2)
        ax.set_xticklabels([str(p) for p in points])
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("median time per product (ms, 95% CI)")
        ax.set_title(title)
        ax.legend(fontsize=8)


# --------------------------------------------------------------------------- large
@section("large", "scale 14, tile 256, dense fraction 0.1: speedups and bandwidth roofline")
def large(ctx: Context) -> None:
    scale, tile = (11, 128) if ctx.quick else (14, 256)
    df = 0.1
    blas = BlasThreads()
    problem = make_problem(scale, tile, df, dense=True)
    variants, builds, mats = variants_for(problem, blas, numpy_dense=True)
    print(f"\n== large: scale {scale} (n={problem.n}), tile {tile}, dense fraction {df} ==")
    print(tile_table(mats))
    m = run_measure(ctx, variants, checker(problem))
    print(summary_table(m))
    record: dict[str, Any] = {"scale": scale, "tile": tile, "dense_fraction": df, "measurements": m,
                              "build_s": builds, "setup_s": problem.setup}
    nbytes = representation_bytes(problem, mats[TILED])
    nbytes[TILED128] = mats[TILED128].layout.product_nbytes + 16 * problem.n
    numpy_best = best_of(m, [NUMPY, NUMPY1])
    bandwidth = nbytes[NUMPY] / numpy_best.median if numpy_best else None
    rows = rate_rows(m, nbytes, bandwidth)
    print(format_table(rows, ["variant", "median", "MB read", "GB/s", "of roofline"]))
    record["bytes_read"] = nbytes
    record["numpy_read_bandwidth_Bps"] = bandwidth
    if m[TILED].ok:
        if numpy_best:
            s = speedup(numpy_best, m[TILED])
            record["vs_numpy"] = {"speedup": s, "target": TARGET_LARGE_NUMPY,
                                  "verdict": verdict(*s.ci95, TARGET_LARGE_NUMPY)}
            print(f"{s}\n  target >= {TARGET_LARGE_NUMPY}x: {record['vs_numpy']['verdict']}")
            ctx.summary["large vs numpy"] = f"{s.ratio:.2f}x [{s.ci95[0]:.2f}, {s.ci95[1]:.2f}]: {record['vs_numpy']['verdict']}"
        if m[SCIPY].ok:
            s = speedup(m[SCIPY], m[TILED])
            record["vs_scipy"] = {"speedup": s, "target": TARGET_LARGE_SCIPY,
                                  "verdict": verdict(*s.ci95, TARGET_LARGE_SCIPY)}
            print(f"{s}\n  target >= {TARGET_LARGE_SCIPY}x: {record['vs_scipy']['verdict']}")
            ctx.summary["large vs scipy"] = f"{s.ratio:.2f}x [{s.ci95[0]:.2f}, {s.ci95[1]:.2f}]: {record['vs_scipy']['verdict']}"
        if bandwidth:
            roof = nbytes[TILED] / bandwidth
            frac = roof / m[TILED].median
            frac_ci = (roof / m[TILED].ci95[1], roof / m[TILED].ci95[0])
            record["roofline"] = {"bytes": nbytes[TILED], "bandwidth_Bps": bandwidth, "roofline_s": roof,
                                  "fraction": frac, "fraction_interval": frac_ci,
                                  "interval_method": "roofline / CI bounds of the tiled median (numpy's median fixed)",
                                  "target": TARGET_ROOFLINE, "verdict": verdict(*frac_ci, TARGET_ROOFLINE)}
            print(f"roofline: {nbytes[TILED] / 1e6:.1f} MB at numpy's {bandwidth / 1e9:.1f} GB/s = "
                  f"{format_seconds(roof)}; tiled reaches {frac:.0%} [{frac_ci[0]:.0%}, {frac_ci[1]:.0%}], "
                  f"target >= {TARGET_ROOFLINE:.0%}: {record['roofline']['verdict']}")
            ctx.summary["large roofline"] = f"{frac:.0%} [{frac_ci[0]:.0%}, {frac_ci[1]:.0%}]: {record['roofline']['verdict']}"
    ctx.results.add("large", record)
    with ctx.results.figure("large") as (fig, _):
        harness.plot_samples(fig.subplots(), m, title=f"scale {scale}, tile {tile}, dense fraction {df}")


# --------------------------------------------------------------------------- scaling
@section("scale", "time against scale 11..16 (tile 256, dense fraction 0.02)")
def scale_sweep(ctx: Context) -> None:
    scales = (9, 10, 11) if ctx.quick else (11, 12, 13, 14, 15, 16)
    tile, df = (64, 0.02) if ctx.quick else (256, 0.02)
    blas = BlasThreads()
    points, record = {}, {"tile": tile, "dense_fraction": df, "points": {}}
    for scale in scales:
        with_dense = scale <= 13
        problem = make_problem(scale, tile, df, dense=with_dense)
        variants, builds, mats = variants_for(problem, blas, numpy_dense=with_dense, with_128=False,
                                              with_dask=False)
        if with_dense:
            variants.pop(NUMPY1)
        print(f"\n== scale {scale} (n={problem.n}, nnz={problem.S.nnz:,}), tile {tile}, dense fraction {df} ==")
        m = run_measure(ctx, variants, checker(problem), budget=ctx.max_seconds / 2)
        print(summary_table(m))
        point = {"n": problem.n, "nnz": problem.S.nnz, "measurements": m, "build_s": builds,
                 "tiles": mats[TILED].tile_summary()}
        if m[TILED].ok and m[SCIPY].ok:
            point["vs_scipy"] = s = speedup(m[SCIPY], m[TILED])
            print(s)
        record["points"][str(scale)] = point
        points[problem.n] = m
        del problem, variants, mats
    ctx.results.add("scale", record)
    _draw_lines(ctx.results, "scale", points, "n (log)", f"time per product vs size (tile {tile}, dense fraction {df})")


@section("tiles", "time against the tile size 64..1024 (scale 13, dense fraction 0.1)")
def tile_sweep(ctx: Context) -> None:
    scale, tiles, df = (10, (32, 64, 128), 0.1) if ctx.quick else (13, (64, 128, 256, 512, 1024), 0.1)
    blas = BlasThreads()
    points, record = {}, {"scale": scale, "dense_fraction": df, "points": {}}
    for tile in tiles:
        problem = make_problem(scale, tile, df, dense=False)
        variants, builds, mats = variants_for(problem, blas, numpy_dense=False, with_dask=False)
        print(f"\n== tile {tile}: scale {scale} (n={problem.n}), dense fraction {df} ==")
        print(tile_table(mats))
        m = run_measure(ctx, variants, checker(problem), budget=ctx.max_seconds / 2)
        print(summary_table(m))
        point = {"measurements": m, "build_s": builds, "tiles": {k: v.tile_summary() for k, v in mats.items()}}
        if m[TILED].ok and m[SCIPY].ok:
            point["vs_scipy"] = s = speedup(m[SCIPY], m[TILED])
            print(s)
        record["points"][str(tile)] = point
        points[tile] = m
    ctx.results.add("tiles", record)
    _draw_lines(ctx.results, "tiles", points, "tile size (log)", f"time per product vs tile size (scale {scale}, dense fraction {df})")


def _draw_lines(results: Results, name: str, points: dict[int, dict[str, Measurement]], xlabel: str, title: str) -> None:
    names = []
    for m in points.values():
        names += [k for k in m if k not in names]
    with results.figure(name) as (fig, _):
        ax = fig.subplots()
        for variant in names:
            xs = [p for p in points if variant in points[p] and points[p][variant].ok]
            med = np.array([points[p][variant].median for p in xs]) * 1e3
            lo = np.array([points[p][variant].ci95[0] for p in xs]) * 1e3
            hi = np.array([points[p][variant].ci95[1] for p in xs]) * 1e3
            ax.errorbar(xs, med, yerr=[med - lo, hi - med], marker="o", capsize=3, label=variant)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("median time per product (ms, 95% CI)")
        ax.set_title(title)
        ax.legend(fontsize=8)


# --------------------------------------------------------------------------- baselines
TARGET_BASELINES_POINT = 1.0
TARGET_BASELINES_GEOMEAN = 1.5
ASAFE = "asafe tiled"


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


class PathCounter:
    """Counts the products that took asafe's parallel kernel inside the ``with`` block.

    ``parallel``: the difference of :func:`asafe.compression.kernels.parallel_runs`
    between entry and exit (the products of this process).
    """

    def __init__(self) -> None:
        from asafe.compression import kernels

        self.kernels = kernels
        self.parallel = 0
        self._start = 0

    def __enter__(self) -> "PathCounter":
        self._start = self.kernels.parallel_runs()
        self.parallel = 0
        return self

    def __exit__(self, *exc) -> None:
        self.parallel = self.kernels.parallel_runs() - self._start


def asafe_variant(A, x, threads: int, calls: list[int]) -> Callable[[], Any]:
    """``A @ x`` with asafe's kernels at ``threads`` chunks and numba threads (1: the serial kernel)."""
    import numba

    from asafe.compression import kernels

    def run():
        old = kernels.configure(threads=threads)
        old_numba = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            calls[0] += 1
            return A @ x
        finally:
            numba.set_num_threads(old_numba)
            kernels.configure(threads=old.threads)

    return run


def _geomean(values):
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


@section("baselines", "numpy, scipy, GraphBLAS, MKL and asafe at 1 and 2 threads on a scale x dense-fraction sweep")
def baselines(ctx: Context) -> None:
    import scipy.sparse as sp

    from asafe.compression import TiledMatrix, kernels

    from . import _sparse_libs

    args = ctx.args
    scales = args.scales or ((8, 9) if ctx.quick else (11, 12, 13, 14))
    fractions = args.fractions or ((0.0, 0.25) if ctx.quick else (0.0, 0.1, 0.25, 0.5))
    threads_list = args.threads or (1, 2)
    libs, skipped = _sparse_libs.load()
    for name, reason in skipped.items():
        print(f"baselines: {name} skipped: {reason}")
        ctx.results.warn(f"baselines: {name} skipped: {reason}", kind="SKIPPED")
    blas = BlasThreads()
    record: dict[str, Any] = {
        "libraries": {name: {"version": lib.version, "notes": lib.notes, **lib.info} for name, lib in libs.items()},
        "skipped": skipped, "threads": list(threads_list),
        "thread_control": {"numpy dense": "threadpoolctl (BLAS: " + ", ".join(
            f"{lib.internal_api} {lib.version}" for lib in blas.libs) + ")",
            "scipy CSR": "single-threaded (scipy's csr_matvec has no threads): the same run is the 1- and "
                         "2-thread baseline",
            **{name: lib.notes.split("threads: ")[-1] for name, lib in libs.items()},
            ASAFE: "asafe.compression.kernels.configure(threads=t) and numba.set_num_threads(t); "
                   "t=1: serial kernel; t=2: serial_work rule, then the PathChooser's measured choice"},
        "reference": "COO bincount of S.data * x[S.indices]; bound max(1e-12, 4 eps k) * (|S| @ |x|) per row",
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
        "points": [],
    }
    rows, ratios = [], {t: [] for t in threads_list}
    for scale in scales:
        tile = args.tile or (128 if scale <= 11 else 256)
        for df in fractions:
            n = 1 << scale
            dense_entries = df * n * n
            if dense_entries > args.max_dense_entries:
                reason = (f"scale {scale}, dense fraction {df}: {dense_entries:.3g} dense entries > "
                          f"--max-dense-entries {args.max_dense_entries:.3g} (memory and time)")
                print(f"baselines: point skipped: {reason}")
                record["points"].append({"scale": scale, "dense_fraction": df, "tile": tile, "skipped": reason})
                continue
            with_dense = scale <= args.dense_max_scale
            problem = make_problem(scale, tile, df, dense=with_dense)
            S, x = problem.S, problem.x
            reference, bound = baseline_reference(S, x)
            t0 = time.perf_counter()
            A = TiledMatrix.from_scipy(S, tile)
            first_build = time.perf_counter() - t0
            variants: dict[str, Callable[[], Any]] = {}
            converters: dict[str, Callable[[Any], np.ndarray]] = {}
            groups: dict[int, list[str]] = {t: [] for t in threads_list}
            calls = {t: [0] for t in threads_list}
            for t in threads_list:
                if with_dense:
                    D = problem.D
                    variants[f"numpy dense {t}t"] = blas.limited(lambda D=D: D @ x, threads=t)
                    groups[t].append(f"numpy dense {t}t")
                groups[t].append("scipy CSR 1t")
            variants["scipy CSR 1t"] = lambda: S @ x
            for name, lib in libs.items():
                call = lib.prepare(S, x)
                for t in threads_list:
                    key = f"{name} {t}t"
                    variants[key] = lib.with_threads(call, t)
                    converters[key] = lib.to_numpy
                    groups[t].append(key)
            for t in threads_list:
                variants[f"{ASAFE} {t}t"] = asafe_variant(A, x, t, calls[t])

            def convert(S=S, tile=tile):
                return TiledMatrix.from_scipy(S, tile)

            variants["convert scipy -> tiled"] = convert
            # checked with the serial kernel, so that only asafe's own variants reach the path counter
            converters["convert scipy -> tiled"] = lambda B: kernels.matvec(B.layout, x, np.empty(B.shape[0]),
                                                                           parallel=False)
            print(f"\n== baselines: scale {scale} (n={n}, nnz={S.nnz:,}), tile {tile}, dense fraction {df} ==")
            with PathCounter() as counter:
                m = run_measure(ctx, variants, baseline_checker(reference, bound, converters))
            print(summary_table(m))
            chooser = A.layout.cache.get("path")
            work = A.layout.work()
            point: dict[str, Any] = {
                "scale": scale, "n": n, "nnz": int(S.nnz), "tile": tile, "dense_fraction": df,
                "tiles": A.tile_summary(), "setup_s": problem.setup, "first_from_scipy_s": first_build,
                "measurements": m, "comparisons": {},
                "asafe_path": {
                    "work": work, "serial_work": kernels.settings().serial_work,
                    "calls_2t_and_more": sum(calls[t][0] for t in threads_list if t > 1),
                    "parallel_calls": counter.parallel,
                    "chooser": None if chooser is None else {
                        "serial_median_s": chooser.median(False) if chooser.times[0] else None,
                        "parallel_median_s": chooser.median(True) if chooser.times[1] else None,
                        "last_best": None if chooser.last_best is None else
                        ("parallel" if chooser.last_best else "serial")},
                },
            }
            many = point["asafe_path"]["calls_2t_and_more"]
            share = counter.parallel / many if many else 0.0
            path_2t = ("serial (work below serial_work)" if work < kernels.settings().serial_work
                       else f"parallel {share:.0%} of calls")
            point["asafe_path"]["path_2t"] = path_2t
            conv = m["convert scipy -> tiled"]
            for t in threads_list:
                mine = m[f"{ASAFE} {t}t"]
                base = best_of(m, groups[t])
                row = {"scale": scale, "df": df, "threads": t, "path": "serial" if t == 1 else path_2t}
                if base is not None and mine.ok:
                    sp_ = speedup(base, mine)
                    ratios[t].append(sp_.ratio)
                    point["comparisons"][str(t)] = {"best_baseline": base.name, "speedup": sp_,
                                                    "verdict": verdict(*sp_.ci95, TARGET_BASELINES_POINT)}
                    row.update({"best baseline": base.name, "its time": format_seconds(base.median),
                                "asafe": format_seconds(mine.median),
                                "ratio [95% CI]": f"{sp_.ratio:.2f} [{sp_.ci95[0]:.2f}, {sp_.ci95[1]:.2f}]",
                                "verdict": point["comparisons"][str(t)]["verdict"]})
                if conv.ok and mine.ok:
                    row["convert (products)"] = f"{conv.median / mine.median:.1f}"
                    point["comparisons"].setdefault(str(t), {})["conversion_products"] = conv.median / mine.median
                rows.append(row)
            record["points"].append(point)
            del problem, S, A, variants
    print("\n== baselines: asafe against the best library at equal threads ==")
    print(format_table(rows, ["scale", "df", "threads", "best baseline", "its time", "asafe", "ratio [95% CI]",
                              "verdict", "path", "convert (products)"]))
    summary = {}
    for t in threads_list:
        if ratios[t]:
            g = _geomean(ratios[t])
            worst = min(ratios[t])
            summary[str(t)] = {"geomean": g, "min": worst, "points": len(ratios[t]),
                               "geomean_target": TARGET_BASELINES_GEOMEAN, "point_target": TARGET_BASELINES_POINT,
                               "geomean_met": g >= TARGET_BASELINES_GEOMEAN, "every_point_met": worst >= 1.0}
            line = (f"{t} thread(s): geometric mean {g:.2f}x over {len(ratios[t])} points (target "
                    f"{TARGET_BASELINES_GEOMEAN}x: {'met' if g >= TARGET_BASELINES_GEOMEAN else 'not met'}); "
                    f"worst point {worst:.2f}x (target >= 1.0 everywhere: {'met' if worst >= 1 else 'not met'})")
            print(line)
            ctx.summary[f"baselines {t}t"] = line
    record["summary"] = summary
    ctx.results.add("baselines", record)


# --------------------------------------------------------------------------- conversion
TARGET_CONVERSION_PRODUCTS = 10.0


@section("conversion", "cost of building the tiled matrix (from scipy, from the generator) in products, before and now")
def conversion(ctx: Context) -> None:
    """Build times against one product's time, interleaved in one measure() per scale.

    ``from scipy (before)`` is the conversion of 4757a96 (``benchmarks/_conversion_v0``);
    ``generator -> tiled (before)`` is ``from_scipy(mixed_matrix(...))`` with it, ``(now)``
    is :func:`asafe.compression.graph500.mixed_tiled`; ``generator alone`` is the
    Kronecker graph (no overlay, no tiles), the floor of any generator path. The
    product is asafe's at the default settings (2 threads, measured path choice).
    """
    from asafe.compression import TiledMatrix, graph500

    from ._conversion_v0 import old_from_scipy

    args = ctx.args
    scales = args.scales or ((8, 9) if ctx.quick else (11, 12, 13, 14, 15, 16))
    df = args.conversion_fraction
    record: dict[str, Any] = {"dense_fraction": df, "points": [], "target_products": TARGET_CONVERSION_PRODUCTS,
                              "before": "4757a96 (benchmarks/_conversion_v0.py)"}
    rows = []
    for scale in scales:
        tile = args.tile or (128 if scale <= 11 else 256)
        if df * 4**scale > args.max_dense_entries:
            reason = (f"scale {scale}, dense fraction {df}: {df * 4**scale:.3g} dense entries > "
                      f"--max-dense-entries {args.max_dense_entries:.3g}")
            print(f"conversion: point skipped: {reason}")
            record["points"].append({"scale": scale, "skipped": reason})
            continue
        problem = make_problem(scale, tile, df, dense=False)
        S, x = problem.S, problem.x
        reference, bound = baseline_reference(S, x)
        A = TiledMatrix.from_scipy(S, tile)
        product = lambda: A @ x  # noqa: E731
        variants = {"product (asafe)": product,
                    "from scipy (before)": lambda: old_from_scipy(S, tile),
                    "from scipy (now)": lambda: TiledMatrix.from_scipy(S, tile)}
        gen = scale <= args.generator_max_scale
        if gen:
            variants["generator -> tiled (before)"] = lambda: old_from_scipy(graph500.mixed_matrix(scale, tile, df), tile)
            variants["generator -> tiled (now)"] = lambda: graph500.mixed_tiled(scale, tile, df)
            variants["generator alone (graph)"] = lambda: graph500.kronecker(scale)
        converters = {name: (lambda B: B @ x) for name in variants if name.startswith(("from", "generator ->"))}
        check = baseline_checker(reference, bound, converters)

        def checked(name, y, check=check):
            if name != "generator alone (graph)":
                check(name, y)

        print(f"\n== conversion: scale {scale} (n={problem.n}, nnz={S.nnz:,}), tile {tile}, dense fraction {df} ==")
        m = measure(variants, check=checked, rel_ci=ctx.rel_ci, max_seconds=ctx.max_seconds,
                    min_samples=3 if gen else 5)
        print(summary_table(m))
        point: dict[str, Any] = {"scale": scale, "tile": tile, "n": problem.n, "nnz": int(S.nnz), "measurements": m,
                                 "products": {}}
        row = {"scale": scale, "tile": tile, "product": format_seconds(m["product (asafe)"].median)}
        for name, mm in m.items():
            if name == "product (asafe)" or not (mm.ok and m["product (asafe)"].ok):
                continue
            sp_ = speedup(mm, m["product (asafe)"])  # build time / product time, with its interval
            point["products"][name] = {"ratio": sp_.ratio, "ci95": sp_.ci95}
            row[name] = f"{sp_.ratio:.1f} [{sp_.ci95[0]:.1f}, {sp_.ci95[1]:.1f}]"
        record["points"].append(point)
        rows.append(row)
        del problem, S, A, variants
    cols = ["scale", "tile", "product", "from scipy (before)", "from scipy (now)", "generator -> tiled (before)",
            "generator -> tiled (now)", "generator alone (graph)"]
    print("\n== conversion cost in products (build median / product median [95% CI]) ==")
    print(format_table(rows, cols))
    ctx.results.add("conversion", record)


# --------------------------------------------------------------------------- hazard
HAZARD_POLICIES = {"PASSIVE (kernels' default)": "PASSIVE", "unset (GNU default)": None, "ACTIVE": "ACTIVE"}
HAZARD_SCENARIOS = (
    "tiled, back to back",
    "tiled right after D @ x",
    "tiled right after D @ x, BLAS limited to 1 thread",
    "tiled right after D.sum() (same memory traffic, no BLAS)",
    "D @ x, back to back",
    "D @ x right after tiled",
)


def hazard_child(scale: int, tile: int, rounds: int) -> dict[str, Any]:
    """Run in a child process: time single calls after each predecessor, interleaved.

    In the ``BLAS 1 thread`` scenario BLAS is limited to one thread from before
    ``D @ x`` until after the timed product (the threadpoolctl mitigation).
    """
    from asafe.compression import kernels

    blas = BlasThreads()
    problem = make_problem(scale, tile, 0.25, dense=True)
    A, _ = tiled(problem)
    D, x = problem.D, problem.x
    y = np.empty(problem.n)

    def tiled_call():
        return kernels.matvec(A.layout, x, y, parallel=True)

    def dense_call():
        return D @ x

    def read_call():
        return D.sum()

    def set_blas(threads):
        for lib, default in zip(blas.libs, blas.default):
            lib.set_num_threads(threads or default)

    # scenario -> (predecessor, timed call, BLAS threads during both; None: default)
    plan = {
        HAZARD_SCENARIOS[0]: (tiled_call, tiled_call, None),
        HAZARD_SCENARIOS[1]: (dense_call, tiled_call, None),
        HAZARD_SCENARIOS[2]: (dense_call, tiled_call, 1),
        HAZARD_SCENARIOS[3]: (read_call, tiled_call, None),
        HAZARD_SCENARIOS[4]: (dense_call, dense_call, None),
        HAZARD_SCENARIOS[5]: (tiled_call, dense_call, None),
    }
    samples = {s: [] for s in HAZARD_SCENARIOS}
    failed: dict[str, str] = {}
    for fn in (tiled_call, dense_call, read_call):  # warm-up, kept apart
        fn()
    k = len(HAZARD_SCENARIOS)
    for r in range(rounds):
        for s in HAZARD_SCENARIOS[r % k:] + HAZARD_SCENARIOS[:r % k]:
            before, timed, threads = plan[s]
            if threads:
                set_blas(threads)
            before()
            t0 = time.perf_counter()
            result = timed()
            samples[s].append(time.perf_counter() - t0)
            if threads:
                set_blas(None)
            try:
                problem.check(s, result)
            except AssertionError as exc:
                failed[s] = str(exc)
            time.sleep(0.001)
    import numba

    return {"samples": samples, "failed": failed, "threading_layer": numba.threading_layer(),
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"), "serial_work": kernels.settings().serial_work}


@section("hazard", "the BLAS spin hazard under each OpenMP wait policy (child processes)")
def hazard(ctx: Context) -> None:
    scale, tile, rounds = (10, 64, 30) if ctx.quick else (11, 128, 150)
    record: dict[str, Any] = {"scale": scale, "tile": tile, "dense_fraction": 0.25, "policies": {}}
    figure = {}
    for label, policy in HAZARD_POLICIES.items():
        env = dict(os.environ)
        env.pop("OMP_WAIT_POLICY", None)
        if policy is not None:
            env["OMP_WAIT_POLICY"] = policy
        else:
            # the kernels module sets PASSIVE when the variable is absent: opt out
            env["ASAFE_KEEP_OMP_DEFAULT"] = "1"
        cmd = [sys.executable, "-m", "benchmarks.kernels", "--hazard-child", str(scale), str(tile), str(rounds)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200,
                              cwd=Path(__file__).resolve().parents[1])
        if proc.returncode != 0:
            ctx.results.warn(f"hazard child for {label} failed: {proc.stderr[-500:]}", kind="FAILED")
            continue
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        ms = {s: Measurement.from_samples(s, v, reached_target=True, stop_reason=f"{rounds} rounds",
                                          rel_ci=ctx.rel_ci, failed=data["failed"].get(s))
              for s, v in data["samples"].items()}
        print(f"\n== hazard: OpenMP wait policy {label} (layer {data['threading_layer']}) ==")
        print(summary_table(ms))
        rec: dict[str, Any] = {"measurements": ms, "threading_layer": data["threading_layer"]}
        base = ms[HAZARD_SCENARIOS[0]]
        for s in HAZARD_SCENARIOS[1:4]:
            if base.ok and ms[s].ok:
                rec[f"slowdown: {s}"] = sp = speedup(ms[s], base)
                print(f"{s}: {sp.ratio:.2f}x the back-to-back time [{sp.ci95[0]:.2f}, {sp.ci95[1]:.2f}]")
        if ms[HAZARD_SCENARIOS[4]].ok and ms[HAZARD_SCENARIOS[5]].ok:
            rec["slowdown: D @ x right after tiled"] = sp = speedup(ms[HAZARD_SCENARIOS[5]], ms[HAZARD_SCENARIOS[4]])
            print(f"D @ x right after tiled: {sp.ratio:.2f}x its back-to-back time [{sp.ci95[0]:.2f}, {sp.ci95[1]:.2f}]")
        record["policies"][label] = rec
        figure[label] = ms
    ctx.results.add("hazard", record)
    if figure:
        import dataclasses
        import textwrap

        with ctx.results.figure("hazard", figsize=(6 * len(figure), 6)) as (fig, _):
            axes = fig.subplots(1, len(figure), squeeze=False)[0]
            for ax, (label, ms) in zip(axes, figure.items()):
                short = {k: dataclasses.replace(m, name=textwrap.fill(k, 16)) for k, m in ms.items()}
                harness.plot_samples(ax, short, title=f"OMP_WAIT_POLICY {label}")
                ax.set_yscale("log")
                ax.tick_params(axis="x", labelsize=7)


# --------------------------------------------------------------------------- crossover
@section("crossover", "serial against parallel kernel on growing problems (the serial threshold)")
def crossover(ctx: Context) -> None:
    from asafe.compression import kernels

    cases = ((6, 16), (8, 32), (9, 64), (10, 64)) if ctx.quick else (
        (6, 16), (7, 32), (8, 32), (9, 64), (10, 64), (10, 128), (11, 128), (12, 128))
    rows, record = [], {"points": []}
    for scale, tile in cases:
        for df in (0.0, 0.25):
            problem = make_problem(scale, tile, df, dense=False)
            A, _ = tiled(problem)
            x, y = problem.x, np.empty(problem.n)
            variants = {"serial": lambda: kernels.matvec(A.layout, x, y, parallel=False),
                        "parallel": lambda: kernels.matvec(A.layout, x, y, parallel=True)}
            m = run_measure(ctx, variants, lambda name, r: problem.check(name, r), budget=ctx.max_seconds / 6)
            work = A.layout.work()
            point = {"scale": scale, "tile": tile, "dense_fraction": df, "work": work, "measurements": m}
            if m["serial"].ok and m["parallel"].ok:
                s = speedup(m["serial"], m["parallel"])
                point["parallel_vs_serial"] = s
                rows.append({"scale": scale, "tile": tile, "df": df, "work": work,
                             "serial": format_seconds(m["serial"].median),
                             "parallel": format_seconds(m["parallel"].median),
                             "parallel speedup": f"{s.ratio:.2f} [{s.ci95[0]:.2f}, {s.ci95[1]:.2f}]",
                             "faster": "parallel" if s.ci95[0] > 1 else ("serial" if s.ci95[1] < 1 else "tie")})
            record["points"].append(point)
    print("\n== crossover: serial vs parallel kernel ==")
    print(format_table(rows, ["scale", "tile", "df", "work", "serial", "parallel", "parallel speedup", "faster"]))
    wins = sorted(r["work"] for r in rows if r["faster"] == "parallel")
    losses = sorted(r["work"] for r in rows if r["faster"] == "serial")
    suggestion = None
    if wins:
        below = [w for w in losses if w < wins[0]]
        suggestion = (max(below) + wins[0]) / 2 if below else wins[0]
    record["suggested_serial_work"] = suggestion
    record["current_serial_work"] = kernels.settings().serial_work
    print(f"parallel is faster from work {wins[0] if wins else '-'} on; suggested serial_work "
          f"{suggestion if suggestion is not None else '- (parallel never won here)'} "
          f"(current {kernels.settings().serial_work:g})")
    ctx.results.add("crossover", record)
    with ctx.results.figure("crossover") as (fig, _):
        ax = fig.subplots()
        pts = [p for p in record["points"] if "parallel_vs_serial" in p]
        ax.errorbar([p["work"] for p in pts], [p["parallel_vs_serial"].ratio for p in pts],
                    yerr=[[p["parallel_vs_serial"].ratio - p["parallel_vs_serial"].ci95[0] for p in pts],
                          [p["parallel_vs_serial"].ci95[1] - p["parallel_vs_serial"].ratio for p in pts]],
                    fmt="o", capsize=3)
        ax.axhline(1.0, color="grey", lw=1)
        ax.axvline(kernels.settings().serial_work, color="crimson", ls="--", label="serial_work")
        ax.set_xscale("log")
        ax.set_xlabel("estimated work (dense-element units)")
        ax.set_ylabel("serial time / parallel time")
        ax.set_title("parallel speedup of the tiled kernel vs problem size")
        ax.legend()


# --------------------------------------------------------------------------- calibrate
@section("calibrate", "sparse vs dense kernel per byte on the same tiles (the cost model's w)")
def calibrate(ctx: Context) -> None:
    import scipy.sparse as sp

    from asafe.compression import TiledMatrix, kernels

    configs = ((512, 64),) if ctx.quick else ((2048, 128), (4096, 256))
    fills = (0.01, 0.1, 0.5) if ctx.quick else (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
    rows, record = [], {"points": []}
    for n, tile in configs:
        rng = np.random.default_rng(0)
        x = rng.random(n)
        for fill in fills:
            S = sp.random_array((n, n), density=fill, rng=rng, format="csr")
            A_sparse = TiledMatrix.from_scipy(S, tile, threshold=tile * tile + 1)
            A_dense = TiledMatrix.from_scipy(S, tile, threshold=0)
            ref = S @ x
            bound = RTOL * (abs(S) @ x) + 1e-300
            y1, y2 = np.empty(n), np.empty(n)
            variants = {"sparse": lambda: kernels.matvec(A_sparse.layout, x, y1, parallel=False),
                        "dense": lambda: kernels.matvec(A_dense.layout, x, y2, parallel=False)}

            def check(name, y):
                if not np.all(np.abs(y - ref) <= bound):
                    raise AssertionError("wrong product")

            m = run_measure(ctx, variants, check, budget=ctx.max_seconds / 6)
            if not (m["sparse"].ok and m["dense"].ok):
                continue
            lay = A_sparse.layout
            sparse_bytes = lay.data.nbytes + lay.col.nbytes + lay.row_ptr.nbytes
            dense_bytes = A_dense.layout.dense_values.nbytes
            ratio = m["sparse"].median / m["dense"].median
            w = (m["sparse"].median / sparse_bytes) / (m["dense"].median / dense_bytes)
            rows.append({"n": n, "tile": tile, "fill": fill, "sparse": format_seconds(m["sparse"].median),
                         "dense": format_seconds(m["dense"].median), "sparse/dense": ratio, "w per byte": w,
                         "ns/nnz": m["sparse"].median / S.nnz * 1e9, "ns/elem": m["dense"].median / n / n * 1e9})
            record["points"].append({"n": n, "tile": tile, "fill": fill, "measurements": m,
                                     "sparse_over_dense": ratio, "w": w})
    print("\n== calibrate: single-thread sparse vs dense kernel on the same tiles ==")
    print(format_table(rows, ["n", "tile", "fill", "sparse", "dense", "sparse/dense", "w per byte", "ns/nnz", "ns/elem"]))
    for n, tile in configs:
        pts = [p for p in record["points"] if p["n"] == n]
        even = [p["fill"] for p in pts if p["sparse_over_dense"] >= 1.0]
        record[f"break_even_fill_n{n}"] = even[0] if even else None
        print(f"n={n}, tile {tile}: the sparse form stops paying between fills "
              f"{max([p['fill'] for p in pts if p['sparse_over_dense'] < 1], default='-')} and {even[0] if even else '> max'}")
    record["current"] = engine_settings()["cost_model"]
    ctx.results.add("calibrate", record)
    with ctx.results.figure("calibrate") as (fig, _):
        ax = fig.subplots()
        for n, tile in configs:
            pts = [p for p in record["points"] if p["n"] == n]
            ax.plot([p["fill"] for p in pts], [p["sparse_over_dense"] for p in pts], "o-", label=f"n={n}, tile {tile}")
        ax.axhline(1.0, color="grey", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("fill of the tiles")
        ax.set_ylabel("sparse kernel time / dense kernel time")
        ax.set_title("where the sparse form stops paying (single thread)")
        ax.legend()


@section("iso", "the serial kernel with and without the values read, on pure Graph500 graphs (iso-valued)")
def iso(ctx: Context) -> None:
    from asafe.compression import TiledMatrix, graph500, kernels
    from asafe.compression.layout import LAYOUT_ARRAYS, Layout

    scales = ctx.args.scales or ((9, 10) if ctx.quick else (11, 12, 13, 14, 15, 16, 17))
    rows, record = [], {"points": []}
    for scale in scales:
        tile = ctx.args.tile or (128 if scale <= 11 else 256)
        S = graph500.kronecker(scale, edgefactor=16, seed=0)
        lay = TiledMatrix.from_scipy(S, tile).layout
        if lay.iso_value() is None:
            raise AssertionError(f"scale {scale}: the graph's layout is not iso-valued")
        m, n = lay.shape
        x = np.random.default_rng(scale).random(n)
        reference, bound = baseline_reference(S, x)
        # the same arrays, in a layout told that its sparse values are not iso: its products read them
        values = Layout(shape=lay.shape, tile=lay.tile, **dict(zip(LAYOUT_ARRAYS, lay.arrays())),
                        cache={"iso": None})

        def serial_product(layout, m=m, x=x):
            """The serial kernel of this layout's product (values array or one value) into its own y."""
            y = np.empty(m)
            return lambda: kernels.matvec_unchecked(layout, x, y, parallel=False)

        variants = {"values read": serial_product(values),
                    "iso (one value)": serial_product(lay), "scipy CSR": lambda S=S: S @ x}
        meas = run_measure(ctx, variants, baseline_checker(reference, bound, {}))
        point = {"scale": scale, "tile": tile, "nnz": int(S.nnz), "measurements": meas,
                 "bytes": {"values read": lay.nbytes, "iso (one value)": lay.product_nbytes}}
        row = {"scale": scale, "nnz": f"{S.nnz:,}"}
        if all(v.ok for v in meas.values()):
            for base in ("values read", "scipy CSR"):
                s = speedup(meas[base], meas["iso (one value)"])
                point[f"iso_vs_{base}"] = s
                row[f"iso vs {base}"] = f"{s.ratio:.2f}x [{s.ci95[0]:.2f}, {s.ci95[1]:.2f}]"
            row.update({name: format_seconds(v.median) for name, v in meas.items()})
        record["points"].append(point)
        rows.append(row)
    print("\n== iso: serial kernel, values read against one value, pure Graph500 graphs ==")
    print(format_table(rows, ["scale", "nnz", "values read", "iso (one value)", "scipy CSR", "iso vs values read",
                              "iso vs scipy CSR"]))
    ctx.results.add("iso", record)


# --------------------------------------------------------------------------- main
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks kernels", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="sections:\n" + "\n".join(f"  {s.name:<10} {s.help}" for s in SECTIONS.values()))
    harness.add_common_arguments(parser, max_seconds=20.0)
    parser.add_argument("--section", action="append", choices=list(SECTIONS), metavar="NAME",
                        help="run only this section (repeatable; default: all)")
    parser.add_argument("--scales", type=int, nargs="+", metavar="S", help="baselines: scales (default 11 12 13 14)")
    parser.add_argument("--fractions", type=float, nargs="+", metavar="F",
                        help="baselines: dense fractions (default 0 0.1 0.25 0.5)")
    parser.add_argument("--threads", type=int, nargs="+", metavar="T", help="baselines: thread counts (default 1 2)")
    parser.add_argument("--tile", type=int, metavar="T", help="baselines: tile size (default 128 up to scale 11, else 256)")
    parser.add_argument("--dense-max-scale", type=int, default=14, metavar="S",
                        help="baselines: numpy dense only up to this scale (default %(default)s)")
    parser.add_argument("--max-dense-entries", type=float, default=float(1 << 27), metavar="N",
                        help="baselines: skip points with more dense-tile entries (default 2**27)")
    parser.add_argument("--conversion-fraction", type=float, default=0.1, metavar="F",
                        help="conversion: the dense fraction (default %(default)s)")
    parser.add_argument("--generator-max-scale", type=int, default=14, metavar="S",
                        help="conversion: time the generator paths up to this scale (default %(default)s)")
    parser.add_argument("--hazard-child", nargs=3, type=int, metavar=("SCALE", "TILE", "ROUNDS"),
                        help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected sections, print tables, write results.json and PNGs."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.hazard_child:
        if os.environ.pop("ASAFE_KEEP_OMP_DEFAULT", None):
            os.environ["OMP_WAIT_POLICY"] = "__unset__"  # placeholder removed below
        _run_hazard_child(*args.hazard_child)
        return 0
    names = args.section or list(SECTIONS)
    max_seconds = min(args.max_seconds, 2.0) if args.quick else args.max_seconds
    results = Results("kernels", args.out)
    settings = engine_settings()
    results.set_environment(suite_options={"sections": names, "quick": args.quick, "max_seconds": max_seconds,
                                           "rel_ci": args.rel_ci}, tuned_parameters=settings)
    print(f"kernels suite: sections {', '.join(names)}; budget {max_seconds:g} s per measurement; load average "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cpus (shared machines are noisy: "
          f"trust the side-by-side ratios)")
    print("tuned parameters: " + json.dumps(settings))
    if args.quick:
        results.warn("--quick: small problems and budgets, a smoke run, not a result to report", kind="QUICK")
    ctx = Context(args, results, args.quick, max_seconds, args.rel_ci)
    if set(names) - {"hazard"}:
        warm = first_use()
        results.add("first_use", warm)
        print("first use in this process (JIT compilation or cache load, kept out of every timing): "
              + ", ".join(f"{k} {format_seconds(v)}" for k, v in warm.items()))
    for name in names:
        SECTIONS[name].run(ctx)
    if ctx.summary:
        print("\n== targets ==")
        for key, value in ctx.summary.items():
            print(f"{key}: {value}")
        results.add("targets", ctx.summary)
    path = results.save()
    print(f"\nwrote {path}" + "".join(f"\nwrote {f}" for f in results.figures))
    return 0


def _run_hazard_child(scale: int, tile: int, rounds: int) -> None:
    if os.environ.get("OMP_WAIT_POLICY") == "__unset__":
        # keep libgomp's default: the kernels module only sets the variable when absent,
        # so hold a sentinel during its import and remove it before OpenMP starts
        import asafe.compression.kernels  # noqa: F401

        del os.environ["OMP_WAIT_POLICY"]
    data = hazard_child(scale, tile, rounds)
    print(json.dumps(data))


if __name__ == "__main__":
    sys.exit(main())
