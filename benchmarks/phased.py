"""The ``phased`` suite: the phased Graph500 workload, adaptive against static compression.

``python -m benchmarks phased [--quick] [--section NAME ...] [--phases SET] [--tune-phases SET] [--calibrate] [--out DIR]``

Tuning and evaluation use different phases. ``ratios``, ``sweep`` and
``reuse`` -- the evidence alpha, beta, window, blend and the reuse threshold are
chosen from -- run on the calibration set (``--tune-phases``, default
``calibration``); ``phases`` evaluates on the demo's phases (``--phases
default``) or on a held-out set (``--phases heldout``: other fills, tile sizes,
panel counts, phase lengths and order, and a phase where the ratio and the
payoff disagree; ``--phases heldout2``: fixed before the reuse threshold was
evaluated, with declared reuse below, at and above it; ``--phases heldout3``:
fixed before ``adaptive-sampling`` first ran, other graphs, reuse below, inside
and above the band where the per-task rule decides; ``--phases heldout4``:
fixed before a graph's arrival was let past the dwell, short phases next to
long ones; ``--phases calibration2``: where that rule's default is chosen, and
``--phases heldout5``, fixed with it, where the choice is checked; ``--phases loaded``:
graphs run quiet and then beside a competing job the graph does not show, a
bulk flow on the link or a memory stream on one core, :mod:`asafe.app.load`;
``--phases loaded2``: held out, fixed before it ran, adding another tenant's
compute on one core).

The workload is :mod:`asafe.app.workload` (four phases whose balance of computation
and communication changes for real reasons: placement, reuse, density, scale),
on an embedded ``LocalCluster`` of 2 worker processes x 1 thread. Every phase of
every run is checked against scipy; warm-up runs (numba compilation, matrix
generation on the workers) are timed apart and never sampled. The phase sets are
:mod:`benchmarks.phase_sets`, the variants :mod:`benchmarks.variants` (the
package's and those made for evaluations), the tuning sections and their rules
:mod:`benchmarks.tuning`.

Sections (all run by default)
-----------------------------
``ratios``
    Every phase with compression pinned on, then off, asafe observing (a runtime
    whose domain switches nothing): the distribution of the compute/communication
    ratio the adaptive runtime sees in each phase (10th, 50th, 90th percentile).
    This is the evidence alpha and beta are chosen from; it runs on the tuning
    phases (``--tune-phases``, the calibration set by default).
``phases``
    ``adaptive``, ``per-task`` (the per-task cost rule, :mod:`asafe.app.pertask`),
    ``static-on``, ``static-off`` (``--variants``: the other variants of
    :data:`benchmarks.variants.ALL_VARIANTS` too) interleaved in balanced orders
    (:func:`asafe.app.stats.balanced_orders`),
    ``repetitions`` rounds, and the ``oracle`` (per phase the better static
    setting by median, chosen after the fact; its total is the sum of the
    per-phase times of that setting, per round). The targets of the demo
    (:data:`asafe.app.demo.TARGETS`): adaptive >= 1.05x the better static
    setting, within 10% of the oracle, <= 2 transitions per phase; each static
    setting loses >= 20% in some phase; adaptive at least as fast as the
    per-task rule. Each verdict is the demo's, from its paired interval
    (:func:`asafe.app.stats.verdict`): met only when the whole interval is on the
    target's side, not shown when it straddles the target.
    The default sizes are the demo's default phases (larger than ``--quick``).
``sweep``
    An alpha/beta grid: the adaptive total (median of a few runs) at every point
    with ``alpha <= beta``, on the tuning phases (the calibration set by
    default), drawn as a heatmap with the static totals measured in the same
    session.

``reuse``
    The local phases of the tuning set again, each panel read by 1, 2, 4, 8 and
    16 vectors, compression pinned on and off, interleaved: the paired ratio
    off / on per reuse, the evidence the ``reuse`` threshold of the compression
    domain is chosen from (:func:`reuse_rule`). A local panel never crosses the
    network, so the ratio says *off* at every reuse; this is where reuse alone
    decides.

``--calibrate`` derives alpha and beta from a short measurement of this
machine instead of the hand-set values: the cost per element of producing and
multiplying a panel with compression off and on (in this process, thread CPU
time, on a dense-ish panel where compression costs most), and the transfer cost
per byte between the two workers (one dense panel shipped). Compression pays
for a shipped panel when the transfer it saves exceeds the conversion it costs;
with ``R = (produce + multiply) / transfer`` the ratio the runtime measures,
that is ``R < alpha* = (produce + multiply) / (conversion overhead)``; beta is
``4 alpha*`` (the band of the hand-set values). The calibrated thresholds are
then compared with the hand-set ones side by side (interleaved), and what the
calibration cost is reported.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from asafe.app import demo
from asafe.app import workload as wl
from asafe.app.comparison import compare
from asafe.app.stats import format_coverage, median, paired_ratio
from asafe.app.variants import DEFAULT_THRESHOLDS, ORACLE, VARIANTS

from . import harness, tuning
from . import variants as known_variants
from .harness import Results, format_seconds, format_table, speedup
from .phase_sets import PHASE_SETS, phases_for
from .tuning import (QUICK_REUSES, REUSES, calibrate, fixed_rounds, format_interval, per_task_rule,
                     ratio_percentiles, reuse_rule, thresholds_rule)

__all__ = ["SECTIONS", "main", "calibrate", "ratio_percentiles", "thresholds_rule", "reuse_rule", "per_task_rule",
           "under_load", "section_phases", "REUSES", "QUICK_REUSES"]

SECTIONS = ("ratios", "phases", "sweep", "reuse")


def _measurements(cmp: Any) -> dict[str, Any]:
    names = (*cmp.variants, ORACLE)
    warm = cmp.warmup_seconds
    totals = {v: fixed_rounds(v, cmp.totals(v), warmup_times=[warm[v]] if v in warm else ()) for v in names}
    per_phase = {}
    for i, phase in enumerate(cmp.phases):
        per_phase[phase.name] = {v: fixed_rounds(f"{phase.name}/{v}", [s[i] for s in cmp.samples(v)]) for v in names}
    return {"totals": totals, "per_phase": per_phase}


def under_load(phases: Sequence[Any], samples: dict[str, Sequence[Sequence[float]]],
               base: str = "adaptive") -> dict[str, Any] | None:
    """Paired ratios of ``base`` against every other variant over the phases run beside a competing job.

    ``samples[variant]`` holds one list of per-phase seconds per round (rounds in
    order, as :meth:`asafe.app.workload.Comparison.samples` gives them); the loaded
    phases' seconds are summed per round and paired. ``None`` where no phase has a
    load (:attr:`asafe.app.workload.Phase.load`) or ``base`` did not run.

    >>> from asafe.app.workload import Phase
    >>> ps = [Phase("q", scale=8), Phase("l", scale=8, load="memory")]
    >>> out = under_load(ps, {"adaptive": [[1.0, 2.0]] * 3, "per-task": [[1.0, 3.0]] * 3})
    >>> out["phases"], out["vs"]["per-task"]["ratio"]
    (['l'], 1.5)
    """

    loaded = [i for i, p in enumerate(phases) if getattr(p, "load", None) is not None]
    if not loaded or base not in samples:
        return None
    sums = {v: [sum(rnd[i] for i in loaded) for rnd in rounds] for v, rounds in samples.items()}
    out: dict[str, Any] = {"phases": [phases[i].name for i in loaded], "base": base,
                           "median_s": {v: median(x) for v, x in sums.items()}, "vs": {}}
    for other, seconds in sums.items():
        if other != base:
            ratio, ci, exact = paired_ratio(seconds, sums[base])
            out["vs"][other] = {"ratio": ratio, "ci95": list(ci), "exact": exact}
    return out


def section_phases(client: Any, phases: list, thresholds: Any, expected: list, repetitions: int,
                   results: Results, name: str = "phases", variants: Sequence[str] | None = None) -> Any:
    """The ``phases`` section: ``variants`` (names of :data:`benchmarks.variants.KNOWN`) side by side, reported."""
    def done(run: Any) -> None:
        label = "warm-up" if run.warmup else f"round {run.repetition + 1}"
        print(f"  {run.variant:>17} {label:>8}: " + " ".join(f"{p.seconds:7.3f}" for p in run.phases)
              + f"  total {run.seconds:7.3f} s  {'correct' if run.correct else 'WRONG'}"
              + (f"  transitions {len(run.transitions)}" if known_variants.KNOWN[run.variant].installed else "")
              + (f"  compressed {sum(d['compress'] for d in run.decisions)}/{len(run.decisions)}"
                 if run.decisions else ""), flush=True)

    print(f"\n{name}: {len(phases)} phases, {repetitions} interleaved rounds; "
          f"Hysteresis(alpha={thresholds.alpha:g}, beta={thresholds.beta:g}), window {thresholds.window}")
    cmp = compare(client, phases, repetitions=repetitions, thresholds=thresholds, expected=expected,
                  on_done=done, variants=variants or VARIANTS, known=known_variants.KNOWN)
    for error in cmp.errors():
        results.warn(f"{name}: {error}", kind="FAILED")
    ms = _measurements(cmp)
    totals = ms["totals"]
    rows = []
    for v, m in totals.items():
        rows.append({"variant": v, "median": format_seconds(m.median),
                     "95% CI": f"[{format_seconds(m.ci95[0])}, {format_seconds(m.ci95[1])}]",
                     "correct": cmp.correct(v), "per phase": " ".join(f"{x:.3f}" for x in cmp.phase_medians(v))})
    print(format_table(rows, ["variant", "median", "95% CI", "correct", "per phase"]))
    report = demo.build_report(cmp, env={}, timing={}, size=name, compared=known_variants.COMPARED)
    speedups = {}
    for key, paired in report["speedups"].items():
        speedups[key] = speedup(totals[paired["base"]], totals[paired["new"]])
        print(f"  {paired['new']} vs {paired['base']}: {paired['paired_ratio']:.3f}x {format_interval(paired['paired_ci95'])} "
              f"(paired ratio, 95% CI; medians {paired['base_median_s']:.3f} s and {paired['new_median_s']:.3f} s)")
    targets = report["targets"]  # every verdict from asafe.app.stats.verdict, as the demo's
    best, oracle = targets["adaptive_vs_best_static"], targets["adaptive_vs_oracle"]

    def shown(x: dict) -> str:
        return f"{format_interval(x['ci95'])} ({format_coverage(x['ci_coverage'])})" if x.get("ci95") else "(no interval)"

    if "adaptive" in cmp.variants:
        print(f"  targets (paired ratios; met: the whole interval on the target's side, not shown: it straddles the "
              f"target): adaptive {best['speedup']:.3f}x {shown(best)} the better static ({best['best_static']}; "
              f">= {best['target']}: {best['verdict']}), adaptive/oracle {oracle['slowdown']:.3f} {shown(oracle)} "
              f"(<= {oracle['target']}: {oracle['verdict']}), transitions per phase "
              f"{targets['transitions_per_phase']['max_per_phase']} (<= {targets['transitions_per_phase']['target']}: "
              f"{targets['transitions_per_phase']['verdict']})")
    else:
        print("  targets: the adaptive variant's, and it did not run (the ratios above compare the others)")
    losses = targets["static_losses"]
    for v, x in losses["variants"].items():
        print(f"  {v} loses {x['loss']:+.0%} [{x['ci95'][0]:+.0%}, {x['ci95'][1]:+.0%}] "
              f"({format_coverage(x['ci_coverage'])}) in {x['worst_phase']} (>= {losses['target']:.0%}: {x['verdict']})")
    pt = targets.get("adaptive_vs_per_task")
    if pt:
        print(f"  adaptive {pt['speedup']:.3f}x {shown(pt)} the per-task rule (>= {pt['target']}: {pt['verdict']})")
    for v in cmp.variants:
        if cmp.specs[v].rule:
            shares = cmp.compressed_share(v)
            print(f"  {v}: share of panels compressed per phase "
                  + " ".join("-" if x is None else f"{x:.0%}" for x in shares))
    loaded = under_load(phases, {v: cmp.samples(v) for v in (*cmp.variants, ORACLE)})
    if loaded:
        print(f"  under load ({', '.join(loaded['phases'])}): adaptive "
              + ", ".join(f"{x['ratio']:.3f}x {format_interval(x['ci95'])} {v}" for v, x in loaded["vs"].items()))
    results.add(name, {"totals": totals, "per_phase": ms["per_phase"], "speedups": speedups,
                       "oracle_choice": cmp.oracle_choice(), "targets": targets,
                       "transitions": report["transitions"],
                       "transitions_by_variant": report["transitions_by_variant"], "thresholds": thresholds.as_dict(),
                       "paired_speedups": report["speedups"], "variants": list(cmp.variants),
                       "compressed_share": {v: cmp.compressed_share(v) for v in cmp.variants if cmp.specs[v].rule},
                       "phases": [p.as_dict() for p in phases], "warmup_s": cmp.warmup_seconds,
                       "under_load": loaded, "loads": cmp.load_reports()})
    with results.figure(name, figsize=(10, 7.5)) as (fig, path):
        pass
    demo.plot_report(report, path, known_variants.KNOWN)  # the demo's figure: ratio over time and per-phase times
    return cmp


# --------------------------------------------------------------------------- main
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks phased", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 2)[2])
    harness.add_common_arguments(parser, max_seconds=600.0)
    parser.add_argument("--section", action="append", choices=SECTIONS, metavar="NAME",
                        help=f"run only this section (repeatable; {', '.join(SECTIONS)}; default: all)")
    parser.add_argument("--calibrate", action="store_true",
                        help="derive alpha/beta from measured costs and compare them with the hand-set ones")
    parser.add_argument("--repetitions", type=int, default=None, metavar="N",
                        help="interleaved rounds (default 6, 3 with --quick)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster workers (default 2)")
    parser.add_argument("--phases", default=None, metavar="SET",
                        help=f"phase set of the phases section: {', '.join(PHASE_SETS)} "
                             "(default: default, quick with --quick)")
    parser.add_argument("--variants", default=None, metavar="LIST",
                        help=f"variants of the phases section, comma-separated from {', '.join(known_variants.KNOWN)} "
                             f"(default: {','.join(VARIANTS)})")
    parser.add_argument("--tune-phases", default="calibration", metavar="SET",
                        help="phase set of the ratios, sweep and reuse sections (default: calibration)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected sections; print tables; write results.json and PNGs."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.workers < 2:
        print("phased: --workers must be >= 2 (panels are shipped between workers)", file=sys.stderr)
        return 2
    repetitions = args.repetitions or (3 if args.quick else 6)
    if repetitions < 1:
        print("phased: --repetitions must be >= 1", file=sys.stderr)
        return 2
    sections = args.section or list(SECTIONS)
    try:
        phases = list(phases_for(args.phases or ("quick" if args.quick else "default")))
        sweep_phases = list(phases_for(args.tune_phases))
        variants = known_variants.check_variants(args.variants) if args.variants else VARIANTS
    except ValueError as exc:
        print(f"phased: {exc}", file=sys.stderr)
        return 2
    thresholds = DEFAULT_THRESHOLDS
    results = Results("phased", args.out)
    results.set_environment(scheduler="distributed LocalCluster", workers=args.workers, threads_per_worker=1,
                            suite_options={"sections": sections, "quick": args.quick, "calibrate": args.calibrate,
                                           "repetitions": repetitions,
                                           "phases": args.phases or ("quick" if args.quick else "default"),
                                           "tune_phases": args.tune_phases, "variants": list(variants)},
                            tuned_parameters={"thresholds": thresholds.as_dict()})
    if args.quick:
        results.warn("--quick: small phases and few rounds, a smoke run, not a result to report", kind="QUICK")
    print(f"phased suite: sections {', '.join(sections)}{' + calibrate' if args.calibrate else ''}; "
          f"load average {', '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cpus "
          "(shared machines are noisy: trust the side-by-side ratios)")
    print(f"thresholds: alpha {thresholds.alpha:g}, beta {thresholds.beta:g}, window {thresholds.window}, "
          f"dwell {thresholds.dwell:g} s / {thresholds.dwell_tasks} tasks, blend {thresholds.blend:g}")
    print("  " + thresholds.how.replace("\n", "\n  "))
    t0 = time.perf_counter()
    with demo.connect(None, args.workers, 1) as (client, where, startup):
        print(f"cluster: {where}, started in {startup:.1f} s")
        results.add("startup", {"cluster_start_s": startup})
        t1 = time.perf_counter()
        expected = [wl.reference(p) for p in phases]
        sweep_expected = [wl.reference(p) for p in sweep_phases]
        results.add("references", {"seconds": time.perf_counter() - t1,
                                   "what": "scipy power iterations of every phase, in the client"})
        if "ratios" in sections:
            for variant in ("static-on", "static-off"):  # warm-up apart
                tuning.run_variant(client, sweep_phases, variant, thresholds, sweep_expected)
            tuning.section_ratios(client, sweep_phases, thresholds, sweep_expected, results)
        if "phases" in sections:
            section_phases(client, phases, thresholds, expected, repetitions, results, variants=variants)
        if "sweep" in sections:
            tuning.section_sweep(client, sweep_phases, thresholds, sweep_expected, args.quick, results)
        if "reuse" in sections:
            tuning.section_reuse(client, sweep_phases, thresholds, args.quick, repetitions, results)
        if args.calibrate:
            tuning.section_calibrate(client, phases, thresholds, expected, repetitions, results)
    path = results.save()
    print(f"\nwrote {path} (and {len(results.figures)} figure(s)) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
