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
generation on the workers) are timed apart and never sampled.

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
    :data:`asafe.app.workload.ALL_VARIANTS` too) interleaved in balanced orders
    (:func:`asafe.app.stats.balanced_orders`),
    ``repetitions`` rounds, and the ``oracle`` (per phase the better static
    setting by median, chosen after the fact; its total is the sum of the
    per-phase times of that setting, per round). The targets of the demo: adaptive
    >= 1.05x the better static setting, within 15% of the oracle, <= 2
    transitions per phase; each static setting loses >= 20% in some phase.
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
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from . import harness
from .harness import Measurement, Results, format_seconds, format_table, speedup

__all__ = ["SECTIONS", "main", "calibrate", "ratio_percentiles", "thresholds_rule", "reuse_rule"]

SECTIONS = ("ratios", "phases", "sweep", "reuse")

ALPHAS = (0.5, 1.0, 2.0, 4.0)
BETAS = (4.0, 8.0, 16.0, 32.0)
QUICK_ALPHAS = (0.5, 2.0, 8.0)
QUICK_BETAS = (2.0, 8.0, 32.0)
#: Weights of the measured window against the scheduled view, tried at the chosen alpha and beta.
BLENDS = (0.1, 0.25, 0.5, 1.0)
#: Reads per panel tried on the local tuning phases (the ``reuse`` section).
REUSES = (1, 2, 4, 8, 16)
QUICK_REUSES = (1, 4, 16)
#: The static baselines run again after this many grid points.
STATIC_EVERY = 4


_PERCENTILES = (1, 5, 10, 50, 90, 95, 99)


def ratio_percentiles(ratios: Sequence[float]) -> dict[str, Any]:
    """1st to 99th percentiles of a phase's ratios (inf kept as inf; nan dropped)."""
    values = np.array([r for r in ratios if not math.isnan(r)], dtype=float)
    if values.size == 0:
        return {"n": 0, **{f"p{q}": None for q in _PERCENTILES}}
    finite = np.where(np.isinf(values), 1e300, values)
    fix = (lambda v: math.inf if v >= 1e299 else v)
    return {"n": int(values.size), **{f"p{q}": fix(float(np.percentile(finite, q))) for q in _PERCENTILES}}


def thresholds_rule(shipped_p50: float, shipped_p90: float, local_p5: float, local_p50: float,
                    blend: float | None = None) -> tuple[float, float]:
    """alpha and beta from the calibration ratios, each rounded to a power of two.

    Compression must turn on in a shipped phase and stay off in a local one: one
    evaluation below alpha is enough to switch it on, so alpha sits between what
    shipped phases typically show (their largest median) and what local phases
    rarely show (their smallest 5th percentile). Symmetrically, beta sits between
    the shipped phases' 90th percentile and the local phases' median. Each is the
    geometric mean of its two bounds.

    With a ``blend`` (the measured window's weight), beta must also stay below
    ``(1 - blend) / blend``: a scheduled view of pure compute beside a window of
    pure communication (the first moment of a local phase after a shipped one)
    reads exactly that ratio, and a beta at or above it could not switch off
    until the window itself turned over. beta is then the largest power of two
    below that ceiling (and alpha at most beta).

    Examples
    --------
    >>> thresholds_rule(0.65, 1.4, 1.6, 58.0)
    (1.0, 8.0)
    >>> thresholds_rule(0.65, 1.4, 1.6, 58.0, blend=0.1)   # ceiling 9: 8 fits
    (1.0, 8.0)
    >>> thresholds_rule(0.65, 1.4, 1.6, 58.0, blend=0.2)   # ceiling 4: beta 2
    (1.0, 2.0)
    """
    def power_of_two(x: float) -> float:
        return float(2.0 ** round(math.log2(x)))

    alpha = power_of_two(math.sqrt(shipped_p50 * local_p5))
    beta = power_of_two(math.sqrt(shipped_p90 * local_p50))
    if blend is not None and 0.0 < blend < 1.0:
        ceiling = (1.0 - blend) / blend
        while beta >= ceiling:
            beta /= 2.0
        alpha = min(alpha, beta)
    return alpha, beta


def reuse_rule(gains: dict[str, dict[int, float]]) -> float:
    """The declared reuse from which compression is on: the smallest that pays in every local tuning phase.

    ``gains[phase][reuse]`` is the paired ratio (seconds off / seconds on) of a
    local phase whose panels are read ``reuse`` times. The threshold is the
    smallest reuse at which compression won (ratio > 1) in every phase, at it and
    at every larger reuse tried -- a winner that a larger reuse contradicts is
    noise, not a threshold. ``inf`` when no reuse qualifies.

    Examples
    --------
    >>> reuse_rule({"a": {1: 0.9, 2: 0.97, 4: 1.2, 8: 1.5}, "b": {1: 0.8, 2: 1.05, 4: 1.1, 8: 1.3}})
    4.0
    >>> reuse_rule({"a": {1: 0.9, 2: 0.8}})
    inf
    """
    reuses = sorted({r for by_reuse in gains.values() for r in by_reuse})
    threshold = math.inf
    for r in reversed(reuses):
        if all(by_reuse.get(r, 0.0) > 1.0 for by_reuse in gains.values()):
            threshold = float(r)
        else:
            break
    return threshold


def per_task_rule(gains: dict[str, dict[int, float]]) -> float:
    """The declared reuse from which the mode lets the per-task rule decide (``adaptive-sampling``).

    The smallest reuse from which compression won (ratio > 1) in *at least one*
    local tuning phase, at it and at every larger reuse tried, the same reading
    of noise as :func:`reuse_rule`. Between this and :func:`reuse_rule`'s
    threshold the tuning phases disagree: whether compression pays depends on
    what the panels hold, which the declared reuse cannot say. ``inf`` when
    compression never won.

    Examples
    --------
    >>> per_task_rule({"fill20": {1: 0.94, 2: 0.94, 4: 0.89, 8: 0.96, 16: 1.08},
    ...                "dense": {1: 0.87, 2: 1.003, 4: 1.05, 8: 1.11, 16: 1.17}})
    2.0
    >>> per_task_rule({"a": {1: 0.9, 2: 0.8}})
    inf
    """
    reuses = sorted({r for by_reuse in gains.values() for r in by_reuse})
    low = math.inf
    for by_reuse in gains.values():
        for r in reversed(reuses):
            if by_reuse.get(r, 0.0) > 1.0:
                low = min(low, float(r))
            else:
                break
    return low


def _interval(ci: Sequence[float]) -> str:
    """A 95% interval as printed beside its ratio: ``[0.912, 1.104]``."""
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _fmt_ratio(v: float | None) -> str:
    if v is None:
        return "-"
    return "inf" if math.isinf(v) else f"{v:.3g}"


# --------------------------------------------------------------------------- sections
def section_ratios(client: Any, phases: list, thresholds: Any, expected: list, results: Results) -> dict:
    from asafe.app import workload as wl

    record: dict[str, Any] = {}
    rows = []
    for compress in (True, False):
        runs, ratios = wl.observe_ratios(client, phases, compress, thresholds, expected)
        for run in runs:
            if not run.correct:
                results.warn(f"ratios: {run.phase} with compression {compress}: {run.error}", kind="FAILED")
        for phase, r, run in zip(phases, ratios, runs):
            pct = ratio_percentiles(r)
            record.setdefault(phase.name, {})["on" if compress else "off"] = {**pct, "seconds": run.seconds}
            rows.append({"phase": phase.name, "compression": "on" if compress else "off", "n": pct["n"],
                         "p5": _fmt_ratio(pct["p5"]), "p10": _fmt_ratio(pct["p10"]),
                         "median": _fmt_ratio(pct["p50"]), "p90": _fmt_ratio(pct["p90"]),
                         "time": format_seconds(run.seconds)})
    print("\nratios: the compute/communication ratio asafe measures in each phase (compression pinned)")
    print(format_table(rows, ["phase", "compression", "n", "p5", "p10", "median", "p90", "time"]))
    def bound(placement: str, q: str, pick: Any) -> float | None:
        values = [record[p.name][s][q] for p in phases if p.placement == placement for s in ("on", "off")]
        values = [v for v in values if v is not None]
        return pick(values) if values else None

    bounds = {"shipped_p50_max": bound("shipped", "p50", max), "shipped_p90_max": bound("shipped", "p90", max),
              "local_p5_min": bound("local", "p5", min), "local_p50_min": bound("local", "p50", min)}
    if all(v is not None and 0 < v < math.inf for v in bounds.values()):
        alpha, beta = thresholds_rule(bounds["shipped_p50_max"], bounds["shipped_p90_max"],
                                      bounds["local_p5_min"], bounds["local_p50_min"], blend=thresholds.blend)
        record["summary"] = {**bounds, "rule_alpha": alpha, "rule_beta": beta,
                             "alpha": thresholds.alpha, "beta": thresholds.beta}
        print(f"shipped phases: median at most {_fmt_ratio(bounds['shipped_p50_max'])}, p90 at most "
              f"{_fmt_ratio(bounds['shipped_p90_max'])}; local phases: p5 at least "
              f"{_fmt_ratio(bounds['local_p5_min'])}, median at least {_fmt_ratio(bounds['local_p50_min'])}")
        print(f"the rule gives alpha = {alpha:g}, beta = {beta:g}; in use: alpha = {thresholds.alpha:g}, "
              f"beta = {thresholds.beta:g}")
        if (alpha, beta) != (thresholds.alpha, thresholds.beta):
            results.warn(f"ratios: the rule gives alpha = {alpha:g}, beta = {beta:g} on this run, the defaults "
                         f"are {thresholds.alpha:g}, {thresholds.beta:g}", kind="NOTE")
    results.add("ratios", record)
    return record


def _fixed(name: str, samples: list[float], rel_ci: float = 0.05, **kwargs: Any) -> Measurement:
    """A measurement of a fixed number of interleaved rounds (the target is checked, not pursued)."""
    from asafe.app import stats

    reached = len(samples) > 0 and stats.ci_within(samples, rel_ci)
    return Measurement.from_samples(name, samples, reached_target=reached, rel_ci=rel_ci,
                                    stop_reason="fixed number of interleaved rounds", **kwargs)


def _measurements(cmp: Any) -> dict[str, Any]:
    from asafe.app import workload as wl

    names = (*cmp.variants, wl.ORACLE)
    warm = cmp.warmup_seconds
    totals = {v: _fixed(v, cmp.totals(v), warmup_times=[warm[v]] if v in warm else ()) for v in names}
    per_phase = {}
    for i, phase in enumerate(cmp.phases):
        per_phase[phase.name] = {v: _fixed(f"{phase.name}/{v}", [s[i] for s in cmp.samples(v)]) for v in names}
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
    from asafe.app.stats import median, paired_ratio

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
    from asafe.app import demo
    from asafe.app import workload as wl

    def done(run: Any) -> None:
        label = "warm-up" if run.warmup else f"round {run.repetition + 1}"
        print(f"  {run.variant:>17} {label:>8}: " + " ".join(f"{p.seconds:7.3f}" for p in run.phases)
              + f"  total {run.seconds:7.3f} s  {'correct' if run.correct else 'WRONG'}"
              + (f"  transitions {len(run.transitions)}" if run.variant in wl.INSTALLED else "")
              + (f"  compressed {sum(d['compress'] for d in run.decisions)}/{len(run.decisions)}"
                 if run.decisions else ""), flush=True)

    print(f"\n{name}: {len(phases)} phases, {repetitions} interleaved rounds; "
          f"Hysteresis(alpha={thresholds.alpha:g}, beta={thresholds.beta:g}), window {thresholds.window}")
    cmp = wl.compare(client, phases, repetitions=repetitions, thresholds=thresholds, expected=expected,
                     on_done=done, variants=variants or wl.VARIANTS)
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
    report = demo.build_report(cmp, env={}, timing={}, size=name)
    speedups = {}
    for key, paired in report["speedups"].items():
        speedups[key] = speedup(totals[paired["base"]], totals[paired["new"]])
        print(f"  {paired['new']} vs {paired['base']}: {paired['paired_ratio']:.3f}x {_interval(paired['paired_ci95'])} "
              f"(paired ratio, 95% CI; medians {paired['base_median_s']:.3f} s and {paired['new_median_s']:.3f} s)")
    targets = report["targets"]
    best, oracle = targets["adaptive_vs_best_static"], targets["adaptive_vs_oracle"]
    if "adaptive" in cmp.variants:
        print(f"  targets (paired ratios): adaptive {best['speedup']:.3f}x {_interval(best['ci95'])} the better "
              f"static ({best['best_static']}; >= {best['target']}: {best['met']}), adaptive/oracle "
              f"{oracle['slowdown']:.3f} {_interval(oracle['ci95'])} (<= {oracle['target']}: {oracle['met']}), "
              f"transitions per phase {targets['transitions_per_phase']['max_per_phase']} (<= 2: "
              f"{targets['transitions_per_phase']['met']})")
    else:
        print("  targets: the adaptive variant's, and it did not run (the ratios above compare the others)")
    for v, x in targets["static_losses"]["variants"].items():
        print(f"  {v} loses {x['loss']:+.0%} in {x['worst_phase']} (>= 20%: {x['met']})")
    pt = targets.get("adaptive_vs_per_task")
    if pt:
        print(f"  adaptive {pt['speedup']:.3f}x {_interval(pt['ci95'])} the per-task rule (>= 1.0: {pt['met']})")
    for v in cmp.variants:
        if v in wl.RULES:
            shares = cmp.compressed_share(v)
            print(f"  {v}: share of panels compressed per phase "
                  + " ".join("-" if x is None else f"{x:.0%}" for x in shares))
    loaded = under_load(phases, {v: cmp.samples(v) for v in (*cmp.variants, wl.ORACLE)})
    if loaded:
        print(f"  under load ({', '.join(loaded['phases'])}): adaptive "
              + ", ".join(f"{x['ratio']:.3f}x {_interval(x['ci95'])} {v}" for v, x in loaded["vs"].items()))
    results.add(name, {"totals": totals, "per_phase": ms["per_phase"], "speedups": speedups,
                       "oracle_choice": cmp.oracle_choice(), "targets": targets,
                       "transitions": report["transitions"],
                       "transitions_by_variant": report["transitions_by_variant"], "thresholds": thresholds.as_dict(),
                       "paired_speedups": report["speedups"], "variants": list(cmp.variants),
                       "compressed_share": {v: cmp.compressed_share(v) for v in cmp.variants if v in wl.RULES},
                       "phases": [p.as_dict() for p in phases], "warmup_s": cmp.warmup_seconds,
                       "under_load": loaded, "loads": cmp.load_reports()})
    with results.figure(name, figsize=(10, 7.5)) as (fig, path):
        pass
    demo.plot_report(report, path)  # the demo's figure: ratio over time and per-phase times
    return cmp


def section_sweep(client: Any, phases: list, thresholds: Any, expected: list, quick: bool,
                  results: Results) -> dict:
    from asafe.app import workload as wl
    from asafe.app.stats import median

    alphas, betas = (QUICK_ALPHAS, QUICK_BETAS) if quick else (ALPHAS, BETAS)
    reps = 1 if quick else 2
    print(f"\nsweep: alpha x beta on the tuning phases, {reps} run(s) per point, the static settings again "
          f"every {STATIC_EVERY} points")
    for variant in ("adaptive", "static-on", "static-off"):  # warm-up of this phase set
        wl.run_variant(client, phases, variant, thresholds, expected)
    grid = np.full((len(alphas), len(betas)), np.nan)
    transitions = np.full_like(grid, np.nan)
    statics: dict[str, list[float]] = {"static-on": [], "static-off": []}
    samples: dict[tuple[int, int], list[float]] = {}
    points = [(i, j) for i, a in enumerate(alphas) for j, b in enumerate(betas) if a <= b]
    for rep in range(reps):
        order = points if rep % 2 == 0 else points[::-1]
        for k, (i, j) in enumerate(order):
            if k % STATIC_EVERY == 0:  # the baselines again every few points: drift hits both alike
                for static in statics:
                    statics[static].append(wl.run_variant(client, phases, static, thresholds, expected).seconds)
            th = replace(thresholds, alpha=alphas[i], beta=betas[j], how="sweep")
            run = wl.run_variant(client, phases, "adaptive", th, expected)
            if not run.correct:
                results.warn(f"sweep alpha={alphas[i]} beta={betas[j]}: wrong result", kind="FAILED")
                continue
            samples.setdefault((i, j), []).append(run.seconds)
            transitions[i, j] = max(0 if np.isnan(transitions[i, j]) else transitions[i, j], len(run.transitions))
    blend_samples: dict[float, list[float]] = {}
    for rep in range(reps):  # the blend at the chosen alpha and beta, the baselines beside
        for static in statics:
            statics[static].append(wl.run_variant(client, phases, static, thresholds, expected).seconds)
        for blend in (BLENDS if rep % 2 == 0 else BLENDS[::-1]):
            run = wl.run_variant(client, phases, "adaptive", replace(thresholds, blend=blend, how="sweep"), expected)
            if run.correct:
                blend_samples.setdefault(blend, []).append(run.seconds)
    for (i, j), values in samples.items():
        grid[i, j] = median(values)
    static_median = {k: median(v) for k, v in statics.items()}
    best = min(static_median.values())
    rows = [{"alpha": alphas[i], "beta": betas[j], "total": format_seconds(grid[i, j]),
             "vs best static": f"{best / grid[i, j]:.2f}x", "transitions": int(transitions[i, j])}
            for i, j in points if not np.isnan(grid[i, j])]
    print(format_table(rows, ["alpha", "beta", "total", "vs best static", "transitions"]))
    print("static totals: " + ", ".join(f"{k} {format_seconds(v)}" for k, v in static_median.items()))
    blend_rows = [{"blend": b, "total": format_seconds(median(v)), "vs best static": f"{best / median(v):.2f}x"}
                  for b, v in sorted(blend_samples.items())]
    print(f"blend at alpha {thresholds.alpha:g}, beta {thresholds.beta:g}:")
    print(format_table(blend_rows, ["blend", "total", "vs best static"]))
    record = {"alphas": list(alphas), "betas": list(betas), "total_s": grid.tolist(),
              "transitions": transitions.tolist(), "static_total_s": static_median, "runs_per_point": reps,
              "statistic": "median of the runs per point (1 or 2: a map, not a measurement); the static "
                           f"baselines ran again every {STATIC_EVERY} points, their median is the reference",
              "static_samples_s": statics,
              "blend": {"alpha": thresholds.alpha, "beta": thresholds.beta,
                        "total_s": {str(b): median(v) for b, v in blend_samples.items()},
                        "samples_s": {str(b): v for b, v in blend_samples.items()}},
              "phases": [p.as_dict() for p in phases]}
    results.add("sweep", record)
    with results.figure("sweep", figsize=(8, 5.5)) as (fig, path):
        ax = fig.subplots()
        speed = best / grid
        im = ax.imshow(speed, origin="lower", cmap="RdYlGn", vmin=0.7, vmax=1.3, aspect="auto")
        ax.set_xticks(range(len(betas)), [f"{b:g}" for b in betas])
        ax.set_yticks(range(len(alphas)), [f"{a:g}" for a in alphas])
        ax.set_xlabel("beta (off above)")
        ax.set_ylabel("alpha (on below)")
        for i, j in points:
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}s\n{int(transitions[i, j])}t", ha="center", va="center", fontsize=7)
        fig.colorbar(im, ax=ax, label=f"speedup over the better static ({format_seconds(best)})")
        ax.set_title("adaptive total by alpha and beta (t: most transitions in a run); blank: alpha > beta",
                     fontsize=9)
    return record


def section_reuse(client: Any, phases: list, thresholds: Any, quick: bool, repetitions: int,
                  results: Results) -> dict:
    from asafe.app import stats
    from asafe.app import workload as wl

    local = [p for p in phases if p.placement == "local"]
    if not local:
        results.warn("reuse: the tuning set has no local phase; nothing to measure", kind="NOTE")
        return {}
    reuses = QUICK_REUSES if quick else REUSES
    print(f"\nreuse: {len(local)} local tuning phase(s) x reads {', '.join(map(str, reuses))}, compression on and "
          f"off, {repetitions} interleaved rounds")
    record: dict[str, Any] = {"reuses": list(reuses), "repetitions": repetitions, "phases": {}}
    gains: dict[str, dict[int, float]] = {}
    rows = []
    for base in local:
        for r in reuses:
            phase = base.scaled(vectors=r)
            expected = [wl.reference(phase)]
            samples: dict[str, list[float]] = {"static-on": [], "static-off": []}
            for variant in samples:  # warm-up apart (generation, compilation)
                wl.run_variant(client, [phase], variant, thresholds, expected)
            for order in stats.rotations(list(samples), repetitions):
                for variant in order:
                    run = wl.run_variant(client, [phase], variant, thresholds, expected)
                    if not run.correct:
                        results.warn(f"reuse {phase.name} x{r} {variant}: wrong result", kind="FAILED")
                    samples[variant].append(run.seconds)
            gain, ci, _ = stats.paired_ratio(samples["static-off"], samples["static-on"])
            gains.setdefault(base.name, {})[r] = gain
            record["phases"].setdefault(base.name, {})[str(r)] = {
                "off_over_on": gain, "ci95": list(ci), "samples_s": samples, "phase": phase.as_dict()}
            rows.append({"phase": base.name, "reads": r, "on": format_seconds(stats.median(samples["static-on"])),
                         "off": format_seconds(stats.median(samples["static-off"])),
                         "off / on": f"{gain:.3f} {_interval(ci)}"})
            print(f"  {base.name} reads {r:>2}: off / on {gain:.3f} {_interval(ci)}", flush=True)
    print(format_table(rows, ["phase", "reads", "on", "off", "off / on"]))
    threshold = reuse_rule(gains)
    record["rule"] = {"reuse": threshold, "what": reuse_rule.__doc__.split("\n\n")[1].strip()}
    print(f"  reuse_rule: compression on from {threshold:g} declared reads "
          f"(the defaults say {thresholds.reuse:g})")
    if threshold != thresholds.reuse:
        results.warn(f"reuse: the rule gives {threshold:g} on this run, the default is {thresholds.reuse:g}",
                     kind="NOTE")
    per_task = per_task_rule(gains)
    record["rule"]["per_task_reuse"] = per_task
    print(f"  per_task_rule: the per-task rule decides from {per_task:g} declared reads "
          f"(the defaults say {thresholds.per_task_reuse:g}; adaptive-sampling only)")
    results.add("reuse", record)
    return record


# --------------------------------------------------------------------------- calibration
def _cpu_time(fn: Any, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        times.append(time.thread_time() - t0)
    return float(np.median(times))


def calibrate(client: Any, phases: list, thresholds: Any) -> dict[str, Any]:
    """Measure conversion, production and transfer costs; derive alpha and beta (see the module docstring)."""
    from distributed import wait

    from asafe.app import workload as wl

    t_start = time.perf_counter()
    denseish = next((p for p in phases if p.placement == "local" and p.fill < 1.0), phases[0])
    shipped = next((p for p in phases if p.placement == "shipped"), phases[0])
    out: dict[str, Any] = {}
    for label, phase in (("denseish", denseish), ("shipped", shipped)):
        source = phase.source()
        source.matrix()
        lo, hi = wl.panel_bounds(phase.grid, phase.panels)[0]
        elements = (hi - lo) * phase.tile * phase.n
        X = wl.initial_vectors(phase.n, phase.vectors)
        wl.produce_panel(source, lo, hi, True)  # first use apart
        off = wl.produce_panel(source, lo, hi, False)
        on = wl.produce_panel(source, lo, hi, True)
        cost = {
            "produce_off": _cpu_time(lambda: wl.produce_panel(source, lo, hi, False)),
            "produce_on": _cpu_time(lambda: wl.produce_panel(source, lo, hi, True)),
            "multiply_off": _cpu_time(lambda: wl.multiply_panel(off, X)),
            "multiply_on": _cpu_time(lambda: wl.multiply_panel(on, X)),
        }
        out[label] = {"phase": phase.name, "elements": elements, "wire_bytes_off": off.nbytes,
                      "wire_bytes_on": on.nbytes,
                      **{f"{k}_ns_per_element": v / elements * 1e9 for k, v in cost.items()}}
    # transfer: one dense panel of the shipped phase from worker A to worker B
    a, b = sorted(client.scheduler_info()["workers"])[:2]
    phase = shipped
    source = phase.source()
    lo, hi = wl.panel_bounds(phase.grid, phase.panels)[0]
    seconds = []
    for k in range(3):
        panel = client.submit(wl.produce_panel, source, lo, hi, False, workers=[a], allow_other_workers=False,
                              pure=False)
        wait(panel)
        t0 = time.perf_counter()
        moved = client.submit(_identity_size, panel, workers=[b], allow_other_workers=False, pure=False)
        nbytes = moved.result()
        seconds.append(time.perf_counter() - t0)
        del panel, moved
    transfer = float(np.median(seconds))
    out["transfer"] = {"bytes": nbytes, "seconds": transfer, "ns_per_byte": transfer / nbytes * 1e9,
                       "note": "one dense panel moved between two worker processes, end to end (median of 3)"}
    d = out["denseish"]
    work = d["produce_off_ns_per_element"] + d["multiply_off_ns_per_element"]
    overhead = (d["produce_on_ns_per_element"] + d["multiply_on_ns_per_element"]) - work
    alpha = work / overhead if overhead > 0 else thresholds.alpha
    alpha = float(min(max(alpha, 0.05), 50.0))
    s = out["shipped"]
    predicted = ((s["produce_off_ns_per_element"] + s["multiply_off_ns_per_element"])
                 / (8 * out["transfer"]["ns_per_byte"]))
    out["derived"] = {"alpha": alpha, "beta": 4 * alpha, "work_ns_per_element": work,
                      "conversion_overhead_ns_per_element": overhead,
                      "predicted_shipped_ratio_off": predicted,
                      "rule": "alpha = (produce + multiply, off) / (extra cost of on) on a dense-ish panel; "
                              "beta = 4 alpha"}
    out["cost_s"] = time.perf_counter() - t_start
    return out


def _identity_size(panel: Any) -> int:
    return int(panel.nbytes)


def section_calibrate(client: Any, phases: list, thresholds: Any, expected: list, repetitions: int,
                      results: Results) -> dict:
    from asafe.app import workload as wl
    from asafe.app.stats import median, rotations

    print("\ncalibrate: conversion, production and transfer costs of this machine")
    cal = calibrate(client, phases, thresholds)
    for label in ("denseish", "shipped"):
        c = cal[label]
        print(f"  {label:<9} ({c['phase']}): produce off {c['produce_off_ns_per_element']:.2f} on "
              f"{c['produce_on_ns_per_element']:.2f} ns/element, multiply off {c['multiply_off_ns_per_element']:.2f}"
              f" on {c['multiply_on_ns_per_element']:.2f} ns/element; bytes off {c['wire_bytes_off']} on "
              f"{c['wire_bytes_on']}")
    t = cal["transfer"]
    print(f"  transfer: {t['bytes'] / 1e6:.1f} MB in {t['seconds'] * 1e3:.1f} ms ({t['ns_per_byte']:.2f} ns/byte)")
    d = cal["derived"]
    print(f"  derived: alpha = {d['alpha']:.3g}, beta = {d['beta']:.3g} (hand-set: alpha {thresholds.alpha:g}, "
          f"beta {thresholds.beta:g}); predicted ratio of a shipped phase with compression off "
          f"{d['predicted_shipped_ratio_off']:.3g}; calibration cost {cal['cost_s']:.1f} s")
    calibrated = replace(thresholds, alpha=d["alpha"], beta=d["beta"], how="calibrated")
    print(f"  calibrated against hand-set thresholds, {repetitions} interleaved rounds of the adaptive variant")
    runs: dict[str, list] = {"hand-set": [], "calibrated": []}
    for name in runs:  # warm-up apart
        wl.run_variant(client, phases, "adaptive", thresholds if name == "hand-set" else calibrated, expected)
    for order in rotations(list(runs), repetitions):
        for name in order:
            run = wl.run_variant(client, phases, "adaptive", thresholds if name == "hand-set" else calibrated,
                                 expected)
            if not run.correct:
                results.warn(f"calibrate: {name}: wrong result", kind="FAILED")
            runs[name].append(run)
    ms = {name: _fixed(name, [r.seconds for r in rs]) for name, rs in runs.items()}
    s = speedup(ms["hand-set"], ms["calibrated"])
    print(f"  {s}")
    record = {**cal, "comparison": {"measurements": ms, "speedup_calibrated_vs_hand_set": s,
                                    "transitions": {k: [len(r.transitions) for r in v] for k, v in runs.items()},
                                    "median_s": {k: median([r.seconds for r in v]) for k, v in runs.items()}}}
    results.add("calibrate", record)
    return record


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
                        help="phase set of the phases section: default, quick, heldout, heldout2 to heldout5, loaded, loaded2, "
                             "calibration, calibration2 "
                             "(default: default, quick with --quick)")
    parser.add_argument("--variants", default=None, metavar="LIST",
                        help="variants of the phases section, comma-separated from adaptive, adaptive-ready, "
                             "adaptive-arrivals, adaptive-dwell, adaptive-sampling, per-task, hybrid, static-on, static-off (default: adaptive,per-task,static-on,"
                             "static-off)")
    parser.add_argument("--tune-phases", default="calibration", metavar="SET",
                        help="phase set of the ratios and sweep sections (default: calibration)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected sections; print tables; write results.json and PNGs."""
    from asafe.app import demo
    from asafe.app import workload as wl

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
        phases = list(wl.phases_for(args.phases or ("quick" if args.quick else "default")))
        sweep_phases = list(wl.phases_for(args.tune_phases))
        variants = wl.check_variants(args.variants) if args.variants else wl.VARIANTS
    except ValueError as exc:
        print(f"phased: {exc}", file=sys.stderr)
        return 2
    thresholds = wl.DEFAULT_THRESHOLDS
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
                wl.run_variant(client, sweep_phases, variant, thresholds, sweep_expected)
            section_ratios(client, sweep_phases, thresholds, sweep_expected, results)
        if "phases" in sections:
            section_phases(client, phases, thresholds, expected, repetitions, results, variants=variants)
        if "sweep" in sections:
            section_sweep(client, sweep_phases, thresholds, sweep_expected, args.quick, results)
        if "reuse" in sections:
            section_reuse(client, sweep_phases, thresholds, args.quick, repetitions, results)
        if args.calibrate:
            section_calibrate(client, phases, thresholds, expected, repetitions, results)
    path = results.save()
    print(f"\nwrote {path} (and {len(results.figures)} figure(s)) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
