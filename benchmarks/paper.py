"""The ``paper`` suite: the ASAFESSS validation configuration, next to the paper's figures.

``python -m benchmarks paper [--quick] [--out DIR] [--max-seconds S]``

The paper (``/work/shared/seeds/004_*.asafesss-excerpt.md``, section 5.2): Graph500
matrices overlaid with dense tiles, 2048 x 2048, 128 x 128 tiles, a tile
compressed when it holds fewer than 128 non-zeros, run on four processors;
speedups of 57% to 68% over standard (dense) matrix-vector multiplication and
15% over sparse matrix-vector multiplication. The paper gives neither the dense
fraction nor what was timed, so this suite sweeps the dense fraction (0, 0.1,
0.25, 0.5) and times two things:

``kernel`` (one product in this process, no Dask)
    ``numpy dense`` (``D @ x``), ``scipy CSR`` (``S @ x``), ``tiled (threshold=128)``
    (the paper's rule) and ``tiled (cost model)`` (asafe's default
    :class:`~asafe.compression.CostModel`), built once; measured with
    :func:`benchmarks.harness.measure` (warm-up apart, loop calibration,
    interleaved rounds, median and 95% CI).
``end-to-end`` (one distributed product on a LocalCluster)
    The matrix exists as dense row panels on the workers (the form a producer
    delivers); each sample produces every panel in the variant's form on worker
    ``i`` (``dense``: as it is; ``scipy CSR``: ``csr_matrix(D)``; ``tiled``:
    ``TiledMatrix.from_dense(D, 128, threshold, compress=True)``), ships it to
    worker ``i + 1``, multiplies it there and gathers ``y`` in the client: what
    the paper's compression engine does on several processors. Generation of the
    matrix is done once per worker (warm-up) and is not in the samples.

Workers: four where the machine has four usable cores, else as many as it has
(the suite says so: the development machine has 2). Every result is checked
against scipy's ``S @ x`` (``rtol 1e-12`` of ``|S| @ |x|`` per row); speedups
are ratios of medians with the base's absolute time. Shared machines are noisy:
trust the side-by-side ratios.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import harness
from .harness import Measurement, Results, format_seconds, format_table, measure, speedup, summary_table

__all__ = ["main", "PAPER", "kernel_variants", "end_to_end_variants"]

#: The paper's configuration and figures.
PAPER = {
    "n": 2048, "scale": 11, "tile": 128, "threshold": 128, "processors": 4,
    "speedup_over_dense": (1.57, 1.68), "speedup_over_sparse": 1.15,
    "source": "St. John, dissertation (2021), section 5.2 (ASAFESSS excerpt in /work/shared/seeds)",
    "reading": "'speedups between 57% and 68%' read as 1.57x to 1.68x, '15%' as 1.15x",
}
RTOL = 1e-12
DENSE, CSR, T128, TMODEL = "numpy dense", "scipy CSR", "tiled (threshold=128)", "tiled (cost model)"
FORMS = {DENSE: "dense", CSR: "csr", T128: "tiled-128", TMODEL: "tiled-model"}


# --------------------------------------------------------------------------- kernel
def _checker(S: Any, x: np.ndarray):
    reference = S @ x
    bound = RTOL * (abs(S) @ np.abs(x)) + 1e-300

    def check(name: str, y: Any) -> None:
        y = np.asarray(y).ravel()
        err = np.abs(y - reference)
        if y.shape != reference.shape or not np.all(err <= bound):
            raise AssertionError(f"{name}: differs from scipy by up to {float(np.max(err)):.3g}")

    return check


def kernel_variants(S: Any, tile: int) -> tuple[dict, dict, dict]:
    """The four in-process variants, their build times and their matrices."""
    from asafe.compression import TiledMatrix

    x = np.random.default_rng(1).random(S.shape[1])
    t0 = time.perf_counter()
    D = S.toarray()
    builds = {DENSE: time.perf_counter() - t0}
    t0 = time.perf_counter()
    A128 = TiledMatrix.from_scipy(S, tile, threshold=PAPER["threshold"])
    builds[T128] = time.perf_counter() - t0
    t0 = time.perf_counter()
    A = TiledMatrix.from_scipy(S, tile)
    builds[TMODEL] = time.perf_counter() - t0
    variants = {DENSE: lambda: D @ x, CSR: lambda: S @ x, T128: lambda: A128 @ x, TMODEL: lambda: A @ x}
    return variants, builds, {"x": x, T128: A128, TMODEL: A}


# --------------------------------------------------------------------------- end to end
def produce(source: Any, first_row: int, stop_row: int, form: str) -> Any:
    """A row panel in the variant's form (runs on a worker)."""
    import scipy.sparse as sp

    from asafe.compression import TiledMatrix

    D = source.slab(first_row, stop_row)  # the producer's dense block (a reused work buffer)
    if form == "dense":
        return D.copy()
    if form == "csr":
        return sp.csr_matrix(D)
    threshold = PAPER["threshold"] if form == "tiled-128" else None
    return TiledMatrix.from_dense(D, source.tile, threshold=threshold, compress=True)


def multiply(panel: Any, x: np.ndarray) -> np.ndarray:
    """``panel @ x`` (numpy, scipy or the tiled kernels)."""
    return np.asarray(panel @ x).ravel()


def end_to_end_variants(client: Any, source: Any, x: np.ndarray, workers: list[str], panels: int) -> dict:
    """One callable per variant: a distributed product, produced on worker i, multiplied on worker i+1."""
    from asafe.app import workload as wl

    bounds = wl.panel_bounds(source.shape[0] // source.tile, panels)
    plan = wl.placement_plan("shipped", len(bounds), workers)
    x_future = client.scatter(x, broadcast=True)

    def variant(form: str):
        def run() -> np.ndarray:
            token = uuid.uuid4().hex
            parts = []
            for i, ((lo, hi), (a, b)) in enumerate(zip(bounds, plan)):
                p = client.submit(produce, source, lo, hi, form, key=f"paper-produce-{token}-{i}",
                                  workers=[a], allow_other_workers=False)
                parts.append(client.submit(multiply, p, x_future, key=f"paper-multiply-{token}-{i}",
                                           workers=[b], allow_other_workers=False, priority=1))
            return np.concatenate(client.gather(parts))

        return run

    return {name: variant(form) for name, form in FORMS.items()}


# --------------------------------------------------------------------------- report
def _speedup_rows(ms: dict[str, Measurement], df: float, kind: str) -> tuple[list, dict]:
    rows, record = [], {}
    for new in (T128, TMODEL):
        for base in (DENSE, CSR):
            if not (ms[new].ok and ms[base].ok):
                continue
            s = speedup(ms[base], ms[new])
            record[f"{new} vs {base}"] = s
            paper = (f"{PAPER['speedup_over_dense'][0]}-{PAPER['speedup_over_dense'][1]}x" if base == DENSE
                     else f"{PAPER['speedup_over_sparse']}x")
            rows.append({"kind": kind, "dense fraction": df, "variant": new, "base": base,
                         "base time": format_seconds(s.base_median), "speedup": f"{s.ratio:.2f}x",
                         "95% CI": f"[{s.ci95[0]:.2f}, {s.ci95[1]:.2f}]", "paper": paper,
                         "significant": s.significant})
    return rows, record


def _draw(results: Results, sweep: dict) -> None:
    dfs = sorted(sweep)
    with results.figure("paper", figsize=(11, 4.5)) as (fig, path):
        axes = fig.subplots(1, 2)
        for ax, kind in zip(axes, ("kernel", "end-to-end")):
            width = 0.2
            for k, name in enumerate((T128, TMODEL)):
                for m, base in enumerate((DENSE, CSR)):
                    vals = []
                    for df in dfs:
                        s = sweep[df][kind]["speedups"].get(f"{name} vs {base}")
                        vals.append(s.ratio if s is not None else np.nan)
                    ax.bar(np.arange(len(dfs)) + (2 * k + m - 1.5) * width, vals, width,
                           label=f"{name} vs {base}")
            lo, hi = PAPER["speedup_over_dense"]
            ax.axhspan(lo, hi, color="0.6", alpha=0.3, label="paper: over dense (1.57-1.68x)")
            ax.axhline(PAPER["speedup_over_sparse"], color="k", ls="--", lw=1, label="paper: over sparse (1.15x)")
            ax.axhline(1.0, color="k", lw=0.5)
            ax.set_xticks(range(len(dfs)), [f"{df:g}" for df in dfs])
            ax.set_xlabel("dense fraction of the tiles")
            ax.set_ylabel("speedup (ratio of medians)")
            ax.set_yscale("log")
            ax.set_title(f"{kind}: 2048 x 2048, 128 x 128 tiles", fontsize=9)
        axes[1].legend(fontsize=7, loc="upper right")


# --------------------------------------------------------------------------- main
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks paper", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 2)[2])
    harness.add_common_arguments(parser, max_seconds=10.0)
    parser.add_argument("--dense-fraction", type=float, action="append", metavar="F",
                        help="dense fractions to run (repeatable; default 0, 0.1, 0.25, 0.5)")
    parser.add_argument("--no-cluster", action="store_true", help="kernel-only (no end-to-end section)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the paper's configuration; print tables; write results.json and a PNG."""
    import cloudpickle

    from asafe.app import workload as wl

    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    dfs = args.dense_fraction or ([0.1, 0.25] if args.quick else [0.0, 0.1, 0.25, 0.5])
    if any(not 0 <= df <= 1 for df in dfs):
        print("paper: --dense-fraction must be in [0, 1]", file=sys.stderr)
        return 2
    max_seconds = min(args.max_seconds, 2.0) if args.quick else args.max_seconds
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    workers = max(2, min(PAPER["processors"], usable))
    note = (f"the paper ran on {PAPER['processors']} processors; this machine has {usable} usable core(s), "
            f"so the end-to-end section uses {workers} worker processes x 1 thread"
            + ("" if workers == PAPER["processors"] else " (not the paper's 4)"))
    results = Results("paper", args.out)
    results.set_environment(scheduler="distributed LocalCluster", workers=workers, threads_per_worker=1,
                            suite_options={"dense_fractions": dfs, "quick": args.quick, "max_seconds": max_seconds},
                            paper=PAPER, workers_note=note)
    if args.quick:
        results.warn("--quick: two dense fractions and small budgets, a smoke run", kind="QUICK")
    print(f"paper suite: n = {PAPER['n']}, tile {PAPER['tile']}, paper threshold {PAPER['threshold']} non-zeros "
          f"and asafe's cost model; dense fractions {dfs}; budget {max_seconds:g} s per measurement")
    print(f"  {note}")
    print(f"  the paper: {PAPER['speedup_over_dense'][0]}-{PAPER['speedup_over_dense'][1]}x over dense, "
          f"{PAPER['speedup_over_sparse']}x over sparse ({PAPER['reading']})")
    sweep: dict[float, dict] = {}
    all_rows: list = []
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    from asafe.app import demo

    with demo.connect(None, workers, 1) if not args.no_cluster else _nothing() as cluster:
        client = cluster[0] if cluster else None
        names = sorted(client.nthreads()) if client else []
        for df in dfs:
            source = wl.PhaseMatrix(PAPER["scale"], PAPER["tile"], df, 1.0)
            S = source.matrix()
            variants, builds, mats = kernel_variants(S, PAPER["tile"])
            check = _checker(S, mats["x"])
            summary = {name: mats[name].tile_summary() for name in (T128, TMODEL)}
            print(f"\n== dense fraction {df:g}: nnz {S.nnz}, tiles sparse/dense/empty: "
                  + "; ".join(f"{n} {s['sparse']['tiles']}/{s['dense']['tiles']}/{s['empty']['tiles']}"
                              for n, s in summary.items()))
            kernel = measure(variants, check=check, rel_ci=args.rel_ci, max_seconds=max_seconds,
                             min_samples=5 if args.quick else 7)
            print(summary_table(kernel))
            rows, speedups = _speedup_rows(kernel, df, "kernel")
            all_rows += rows
            entry = {"kernel": {"measurements": kernel, "speedups": speedups, "builds_s": builds,
                                "tiles": summary}}
            if client is not None:
                source.matrix()
                e2e_variants = end_to_end_variants(client, source, mats["x"], names, panels=2 * len(names))
                e2e = measure(e2e_variants, check=check, rel_ci=args.rel_ci, max_seconds=2 * max_seconds,
                              min_samples=5 if args.quick else 7, warmup=2)
                print(summary_table(e2e))
                rows, e2e_speedups = _speedup_rows(e2e, df, "end-to-end")
                all_rows += rows
                entry["end-to-end"] = {"measurements": e2e, "speedups": e2e_speedups,
                                       "panels": 2 * len(names), "placement": "produced on worker i, "
                                       "multiplied on worker i+1, y gathered in the client"}
                for name in (DENSE, CSR, T128, TMODEL):
                    if kernel[name].ok and e2e[name].ok:
                        print(f"  {name}: kernel {format_seconds(kernel[name].median)} is "
                              f"{kernel[name].median / e2e[name].median:.1%} of end-to-end "
                              f"{format_seconds(e2e[name].median)}")
            for name, m in entry.items():
                results.add(f"df={df:g}/{name}", m)
            sweep[df] = entry
    print("\n" + format_table(all_rows, ["kind", "dense fraction", "variant", "base", "base time", "speedup",
                                         "95% CI", "paper", "significant"]))
    if all(df_entry.get("end-to-end") for df_entry in sweep.values()):
        _draw(results, sweep)
    else:
        _draw(results, {df: {**e, "end-to-end": e["kernel"]} for df, e in sweep.items()})
    path = results.save()
    print(f"\nwrote {path}")
    return 0


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
