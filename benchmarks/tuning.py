"""The tuning sections of the phased suite: where the settings of the adaptive runtime come from.

:data:`asafe.app.variants.DEFAULT_THRESHOLDS` is chosen on the calibration phases
(:mod:`benchmarks.phase_sets`), never on the phases it is evaluated on. The
evidence is measured here and the settings follow from it by rules written down
before they were applied:

* ``ratios`` (:func:`section_ratios`): every phase with compression pinned on
  and off and asafe observing (a :class:`Pinned` domain switches nothing,
  :func:`observe_ratios`); :func:`thresholds_rule` makes alpha and beta of the
  ratios' percentiles (:func:`ratio_percentiles`);
* ``sweep`` (:func:`section_sweep`): the adaptive total on an alpha x beta grid
  and for a few blends, the static settings run again beside it;
* ``reuse`` (:func:`section_reuse`): the local phases read 1 to 16 times,
  compression pinned on and off; :func:`reuse_rule` and :func:`per_task_rule`
  make the reuse thresholds of it;
* ``--calibrate`` (:func:`section_calibrate`): alpha and beta derived from this
  machine's measured costs (:func:`calibrate`), compared with the hand-set ones.

``python -m benchmarks phased --help`` says how to run each (:mod:`benchmarks.phased`,
which exports the rules too).
"""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from asafe import AdaptiveRuntime, EfficiencyDomain, ModeVector, Optimization, install
from asafe.app import stats
from asafe.app import workload as wl
from asafe.app.runner import PhaseRun, run_workload
from asafe.app.stats import median, rotations
from asafe.app.variants import DEFAULT_THRESHOLDS, Thresholds, run_variant
from asafe.app.workload import Phase

from .harness import Measurement, Results, format_seconds, format_table, speedup

__all__ = ["ratio_percentiles", "thresholds_rule", "reuse_rule", "per_task_rule", "format_interval", "fixed_rounds",
           "Pinned", "observe_ratios", "section_ratios", "section_sweep", "section_reuse", "calibrate",
           "section_calibrate"]

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


def format_interval(ci: Sequence[float]) -> str:
    """A 95% interval as printed beside its ratio: ``[0.912, 1.104]``."""
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _fmt_ratio(v: float | None) -> str:
    if v is None:
        return "-"
    return "inf" if math.isinf(v) else f"{v:.3g}"


# --------------------------------------------------------------------------- ratios
class Pinned(EfficiencyDomain):
    """An efficiency domain that keeps the optimization's state: observes the mode, switches nothing."""

    def decide(self, mode: Any, state: bool) -> bool:
        return state

    def __repr__(self) -> str:
        return "Pinned()"


def observe_ratios(
    client: Any,
    phases: Sequence[Phase],
    compress: bool,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    expected: Sequence[np.ndarray] | None = None,
    workers: Sequence[str] | None = None,
) -> tuple[list[PhaseRun], list[list[float]]]:
    """Run every phase with compression pinned and asafe observing; return the runs and each phase's ratios.

    The runtime has the settings of ``thresholds`` (window, blend) and a
    :class:`Pinned` domain: the ratios are those the adaptive runtime would see
    in that state. Used to choose alpha and beta.
    """
    runtime = AdaptiveRuntime([Optimization("compression", Pinned(), initial=bool(compress))],
                              window=thresholds.window, blend=thresholds.blend, signals=False)
    handle = install(client, runtime)
    try:
        runs = run_workload(client, phases, bool(compress), workers=workers, expected=expected)
        timeline = handle.info("timeline")["timeline"]
    finally:
        handle.uninstall()
    ratios = [[ModeVector(shares).ratio for when, shares, _ in timeline if run.start <= when <= run.stop]
              for run in runs]
    return runs, ratios


def section_ratios(client: Any, phases: list, thresholds: Any, expected: list, results: Results) -> dict:
    """The ``ratios`` section: each phase's ratio percentiles with compression pinned, and the rule's alpha and beta."""
    record: dict[str, Any] = {}
    rows = []
    for compress in (True, False):
        runs, ratios = observe_ratios(client, phases, compress, thresholds, expected)
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



def fixed_rounds(name: str, samples: list[float], rel_ci: float = 0.05, **kwargs: Any) -> Measurement:
    """A measurement of a fixed number of interleaved rounds (the target is checked, not pursued)."""
    reached = len(samples) > 0 and stats.ci_within(samples, rel_ci)
    return Measurement.from_samples(name, samples, reached_target=reached, rel_ci=rel_ci,
                                    stop_reason="fixed number of interleaved rounds", **kwargs)



# --------------------------------------------------------------------------- sweep and reuse
def section_sweep(client: Any, phases: list, thresholds: Any, expected: list, quick: bool,
                  results: Results) -> dict:
    """The ``sweep`` section: the adaptive total over the alpha x beta grid and the blends, the statics beside."""
    alphas, betas = (QUICK_ALPHAS, QUICK_BETAS) if quick else (ALPHAS, BETAS)
    reps = 1 if quick else 2
    print(f"\nsweep: alpha x beta on the tuning phases, {reps} run(s) per point, the static settings again "
          f"every {STATIC_EVERY} points")
    for variant in ("adaptive", "static-on", "static-off"):  # warm-up of this phase set
        run_variant(client, phases, variant, thresholds, expected)
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
                    statics[static].append(run_variant(client, phases, static, thresholds, expected).seconds)
            th = replace(thresholds, alpha=alphas[i], beta=betas[j], how="sweep")
            run = run_variant(client, phases, "adaptive", th, expected)
            if not run.correct:
                results.warn(f"sweep alpha={alphas[i]} beta={betas[j]}: wrong result", kind="FAILED")
                continue
            samples.setdefault((i, j), []).append(run.seconds)
            transitions[i, j] = max(0 if np.isnan(transitions[i, j]) else transitions[i, j], len(run.transitions))
    blend_samples: dict[float, list[float]] = {}
    for rep in range(reps):  # the blend at the chosen alpha and beta, the baselines beside
        for static in statics:
            statics[static].append(run_variant(client, phases, static, thresholds, expected).seconds)
        for blend in (BLENDS if rep % 2 == 0 else BLENDS[::-1]):
            run = run_variant(client, phases, "adaptive", replace(thresholds, blend=blend, how="sweep"), expected)
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
    """The ``reuse`` section: the local tuning phases at each reuse, compression on and off, and the rules' thresholds."""
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
                run_variant(client, [phase], variant, thresholds, expected)
            for order in stats.rotations(list(samples), repetitions):
                for variant in order:
                    run = run_variant(client, [phase], variant, thresholds, expected)
                    if not run.correct:
                        results.warn(f"reuse {phase.name} x{r} {variant}: wrong result", kind="FAILED")
                    samples[variant].append(run.seconds)
            gain, ci, _ = stats.paired_ratio(samples["static-off"], samples["static-on"])
            gains.setdefault(base.name, {})[r] = gain
            record["phases"].setdefault(base.name, {})[str(r)] = {
                "off_over_on": gain, "ci95": list(ci), "samples_s": samples, "phase": phase.as_dict()}
            rows.append({"phase": base.name, "reads": r, "on": format_seconds(stats.median(samples["static-on"])),
                         "off": format_seconds(stats.median(samples["static-off"])),
                         "off / on": f"{gain:.3f} {format_interval(ci)}"})
            print(f"  {base.name} reads {r:>2}: off / on {gain:.3f} {format_interval(ci)}", flush=True)
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
    """Measure conversion, production and transfer costs; derive alpha and beta (``--calibrate`` of :mod:`benchmarks.phased`)."""
    from distributed import wait

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
    a, b = sorted(client.nthreads())[:2]
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
    """``--calibrate``: alpha and beta from this machine's costs, then run against the hand-set ones."""
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
        run_variant(client, phases, "adaptive", thresholds if name == "hand-set" else calibrated, expected)
    for order in rotations(list(runs), repetitions):
        for name in order:
            run = run_variant(client, phases, "adaptive", thresholds if name == "hand-set" else calibrated,
                                 expected)
            if not run.correct:
                results.warn(f"calibrate: {name}: wrong result", kind="FAILED")
            runs[name].append(run)
    ms = {name: fixed_rounds(name, [r.seconds for r in rs]) for name, rs in runs.items()}
    s = speedup(ms["hand-set"], ms["calibrated"])
    print(f"  {s}")
    record = {**cal, "comparison": {"measurements": ms, "speedup_calibrated_vs_hand_set": s,
                                    "transitions": {k: [len(r.transitions) for r in v] for k, v in runs.items()},
                                    "median_s": {k: median([r.seconds for r in v]) for k, v in runs.items()}}}
    results.add("calibrate", record)
    return record
