"""The ``kernels`` suite's sections behind the tuned settings: ``hazard``, ``crossover``, ``calibrate``, ``iso``.

Each measures one choice of the tile engine: the OpenMP wait policy against the
BLAS spin hazard, the serial-path threshold, the cost model's sparse weight
``w``, and what the iso-valued form saves (see :mod:`benchmarks.kernels`).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import harness
from ._kernels_common import (RTOL, BlasThreads, Context, baseline_checker, baseline_reference, engine_settings,
                              make_problem, run_measure, section, tiled)
from .harness import Measurement, format_seconds, format_table, speedup, summary_table


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
