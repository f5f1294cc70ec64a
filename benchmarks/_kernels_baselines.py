"""The ``kernels`` suite's sections against other libraries: ``baselines`` and ``conversion``.

``baselines`` sets asafe against numpy, scipy, SuiteSparse:GraphBLAS and MKL at
equal thread counts; ``conversion`` prices the build of a tiled matrix in
products, now and as it was (see :mod:`benchmarks.kernels`).
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ._kernels_common import (BlasThreads, Context, baseline_checker, baseline_reference, best_of, make_problem,
                              run_measure, section, verdict)
from .harness import format_seconds, format_table, measure, speedup, summary_table

TARGET_BASELINES_POINT = 1.0
TARGET_BASELINES_GEOMEAN = 1.5
ASAFE = "asafe tiled"


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
