"""The ``kernels`` suite's comparison sections: ``paper``, ``large``, ``scale`` and ``tiles``.

The tiled product against numpy dense, scipy CSR and dask.array on the paper's
size, on a large matrix with a bandwidth roofline, and on sweeps of the scale
and the tile size (see :mod:`benchmarks.kernels` for what each measures and its
targets).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import harness
from ._kernels_common import (NUMPY, NUMPY1, SCIPY, TILED, TILED128, BlasThreads, Context, best_of, checker,
                              make_problem, rate_rows, representation_bytes, run_measure, section, tile_table,
                              variants_for, verdict)
from .harness import Measurement, Results, format_seconds, format_table, speedup, summary_table

TARGET_PAPER_POINT = 1.0
TARGET_PAPER_GEOMEAN = 1.15
TARGET_LARGE_NUMPY = 4.0
TARGET_LARGE_SCIPY = 2.5
TARGET_ROOFLINE = 0.70


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
