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

Where the code lives: this module parses the options and runs the sections;
they are defined in ``_kernels_paper`` (paper, large, scale, tiles),
``_kernels_baselines`` (baselines, conversion) and ``_kernels_tuning`` (hazard,
crossover, calibrate, iso), on the registry, problems and checks of
``_kernels_common``.

``--quick`` shrinks every section (scale 9 to 11, fewer points, a small
sampling budget): a smoke run in well under a minute, not a result to report.
Output: console tables, ``<out>/kernels/results.json`` and PNGs next to it.
These machines are shared: trust the ratios measured side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from . import harness

# importing a section module registers its sections; this order is the run order
from . import _kernels_paper  # noqa: F401,I100
from . import _kernels_baselines  # noqa: F401,I100
from . import _kernels_tuning  # noqa: I100
from ._kernels_baselines import PathCounter, asafe_variant  # noqa: F401  (the tests use them from here)
from ._kernels_common import (SECTIONS, BlasThreads, Context, Problem, Section, baseline_checker,  # noqa: F401
                              baseline_reference, engine_settings, first_use, make_problem, section)
from .harness import Results, format_seconds

__all__ = ["SECTIONS", "Section", "Context", "section", "Problem", "make_problem", "main"]


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
    data = _kernels_tuning.hazard_child(scale, tile, rounds)
    print(json.dumps(data))


if __name__ == "__main__":
    sys.exit(main())
