"""``asafe demo``: the phased Graph500 workload, adaptive against static compression.

The demo runs the four phases of :mod:`asafe.app.workload` on a Dask cluster -- an
embedded ``LocalCluster`` of worker processes by default, or an existing one
(``--scheduler-address``) -- under four variants:

``adaptive``
    asafe's runtime with ``Hysteresis(alpha, beta)`` on the compute/communication
    ratio switches compression while the run goes on (a fresh runtime per run;
    what the scheduler learned per key prefix, the output sizes its forecast
    plans with, stays with the scheduler as Dask's per-prefix durations do);
``per-task``
    no global mode: each panel is decided when it is produced by the per-task
    cost rule (:mod:`asafe.app.pertask`: its reuse, whether its consumer is on
    another worker, a sample of its tiles, calibrated costs, the worker's
    measured bandwidth), as StarPU's ``dmda`` decides per task;
``hybrid`` (``--variants``)
    the global mode as a prior, the per-task payoff as evidence: the payoff
    decides where one form is expected 1.25x cheaper, the mode on close calls;
``adaptive-sampling`` (``--variants``)
    the global mode first, with a second optimization: the per-task rule, which
    samples and decides the panels the mode leaves uncompressed while the
    scheduled producers declare a reuse at which the calibration phases
    disagreed (from 2 reads; at 16 and beyond compression is on anyway);
``adaptive-ready`` (``--variants``)
    adaptive without the next wave in the scheduled view (the design before it);
``adaptive-arrivals`` / ``adaptive-dwell`` (``--variants``)
    adaptive with a graph's arrival skipping the dwell where the scheduled view
    alone makes its toggle / with the dwell holding arrivals too, whatever
    ``asafe.controller.arrivals-skip-dwell`` says;
``static-on`` / ``static-off``
    compression always on / always off (no asafe installed: the strongest
    baselines);
``oracle``
    the better static setting of each phase, chosen after the fact from the
    medians; its time per round is the sum of those per-phase times (it is not
    a run: no controller could know the phases in advance).

Warm-up runs (numba compilation, matrix generation on the workers) are timed
and reported apart. Then the variants run interleaved, in orders balanced for
what one run leaves to the next (:func:`~asafe.app.stats.balanced_orders`), every
phase of every run is checked against scipy, and the demo prints a table of
medians with distribution-free 95% intervals and speedups with their absolute
base times, writes a JSON report and draws a PNG: the measured ratio over time
with the alpha and beta lines, compression on/off and the phase boundaries, and
the per-phase times of every variant.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from . import workload as wl
from .environment import environment
from .stats import describe, median, paired_ratio

__all__ = ["run_demo", "DemoError", "TARGETS", "plot_report", "build_report", "connect", "default_repetitions"]

#: The targets of the demo. Every speedup is the paired ratio: the median over
#: rounds of ``base_i / adaptive_i`` (both measured in round ``i``, seconds
#: apart), with its order-statistic interval.
TARGETS = {
    "adaptive_vs_best_static": 1.05,  # adaptive at least 5% faster in total than the better static setting
    "adaptive_vs_oracle": 1.10,  # within 10% of the oracle
    "max_transitions_per_phase": 2,  # no flapping
    "static_loss": 0.20,  # each static setting loses >= 20% in at least one phase
    "adaptive_vs_per_task": 1.0,  # at least as fast as the per-task cost rule
}


class DemoError(RuntimeError):
    """The demo could not run as asked (a clear message for the command line)."""


def default_repetitions(size: str) -> int:
    """Measured rounds: 3 for ``quick`` and ``test``; 6 for the default run, the fewest
    samples whose order-statistic interval of the median reaches 95% (``[min, max]``)."""
    return 6 if size == "default" else 3


# --------------------------------------------------------------------------- cluster
@contextlib.contextmanager
def connect(scheduler_address: str | None = None, workers: int = 2,
            threads_per_worker: int = 1) -> Iterator[tuple[Any, str, float]]:
    """``(client, description, start-up seconds)``: an embedded LocalCluster or an existing cluster.

    The embedded cluster has worker processes with ``NUMBA_NUM_THREADS`` set to
    their thread count (a worker uses the cores it was given).
    """
    import logging

    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    if scheduler_address:
        try:
            client = Client(scheduler_address, timeout="5s")
        except (OSError, TimeoutError) as exc:
            raise DemoError(f"cannot connect to the scheduler at {scheduler_address!r}: {exc}") from None
        with client:
            n = len(client.scheduler_info()["workers"])
            yield client, f"cluster at {scheduler_address} ({n} workers)", time.perf_counter() - t0
        return
    # distributed's own chatter (worker start/stop) would drown the demo's output
    quiet = [logging.getLogger(name) for name in ("distributed", "distributed.scheduler", "distributed.nanny",
                                                  "distributed.worker", "distributed.core")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.ERROR)
    try:
        # one numba thread per Dask thread: the workers use the cores they were given
        env = {"NUMBA_NUM_THREADS": str(threads_per_worker)}
        with LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True,
                          dashboard_address=None, env=env) as cluster, Client(cluster) as client:
            client.wait_for_workers(workers)
            yield (client, f"LocalCluster({workers} worker processes x {threads_per_worker} thread"
                   f"{'s' if threads_per_worker > 1 else ''})", time.perf_counter() - t0)
    finally:
        for lg, level in zip(quiet, levels):
            lg.setLevel(level)


# --------------------------------------------------------------------------- report
def _summaries(cmp: wl.Comparison) -> dict[str, Any]:
    variants = {}
    for v in (*cmp.variants, wl.ORACLE):
        totals = cmp.totals(v)
        entry = describe(totals) if totals else {"median_s": None, "ci95": [None, None]}
        entry["correct"] = cmp.correct(v)
        entry["per_phase_median_s"] = cmp.phase_medians(v) if totals else []
        variants[v] = entry
    variants[wl.ORACLE]["definition"] = (
        "not a run: for each phase the static setting with the lower per-phase median over the rounds "
        "is chosen after the fact; the oracle's total in round i is the sum over phases of round i's "
        "time of the chosen setting; median_s and ci95 are the median and interval of those per-round "
        "totals")
    variants[wl.ORACLE]["choice"] = cmp.oracle_choice()
    return variants


#: The variants compared with the others (``new_vs_base``), in this order.
_COMPARED = ("adaptive", "adaptive-sampling", "adaptive-ready", "adaptive-arrivals", "adaptive-dwell", "hybrid",
             "per-task")


def _speedups(cmp: wl.Comparison) -> dict[str, Any]:
    out = {}
    for new_name in (v for v in _COMPARED if v in cmp.variants):
        new = cmp.totals(new_name)
        for base_name in (*cmp.variants, wl.ORACLE):
            base = cmp.totals(base_name)
            if base_name == new_name or not base or not new or len(base) != len(new):
                continue
            if f"{base_name}_vs_{new_name}" in out:
                continue  # one direction of each pair
            ratio, ci, exact = paired_ratio(base, new)
            out[f"{new_name}_vs_{base_name}"] = {
                "base": base_name,
                "new": new_name,
                "base_median_s": median(base),
                "new_median_s": median(new),
                "estimator": f"paired ratio: median over rounds of base_i / {new_name}_i, order-statistic 95% CI",
                "paired_ratio": ratio,
                "paired_ci95": list(ci),
                "ci_exact": exact,
            }
    return out


def _targets(cmp: wl.Comparison, variants: dict[str, Any], speedups: dict[str, Any]) -> dict[str, Any]:
    best_name = min(("static-on", "static-off"), key=lambda v: variants[v]["median_s"])
    vs_best = speedups.get(f"adaptive_vs_{best_name}", {})
    vs_oracle = speedups.get(f"adaptive_vs_{wl.ORACLE}", {})
    speedup = vs_best.get("paired_ratio", math.nan)
    slowdown = 1.0 / vs_oracle["paired_ratio"] if vs_oracle.get("paired_ratio") else math.nan
    per_phase = cmp.transitions_per_phase()
    oracle_phase = cmp.phase_medians(wl.ORACLE)
    losses = {}
    for v in ("static-on", "static-off"):
        mine = cmp.phase_medians(v)
        rel = [m / o - 1.0 for m, o in zip(mine, oracle_phase)]
        worst = max(range(len(rel)), key=lambda i: rel[i])
        losses[v] = {"worst_phase": cmp.phases[worst].name, "loss": rel[worst], "per_phase_loss": rel,
                     "met": rel[worst] >= TARGETS["static_loss"]}
    return {
        "adaptive_vs_best_static": {
            "best_static": best_name, "speedup": speedup, "ci95": vs_best.get("paired_ci95"),
            "target": TARGETS["adaptive_vs_best_static"], "met": speedup >= TARGETS["adaptive_vs_best_static"]},
        "adaptive_vs_oracle": {
            "slowdown": slowdown,
            "ci95": [1.0 / x for x in reversed(vs_oracle["paired_ci95"])] if vs_oracle.get("paired_ci95") else None,
            "target": TARGETS["adaptive_vs_oracle"], "met": slowdown <= TARGETS["adaptive_vs_oracle"]},
        "transitions_per_phase": {
            "max_per_phase": per_phase, "target": TARGETS["max_transitions_per_phase"],
            "met": max(per_phase, default=0) <= TARGETS["max_transitions_per_phase"]},
        "static_losses": {"target": TARGETS["static_loss"], "variants": losses,
                          "met": all(x["met"] for x in losses.values())},
        **_per_task_target(speedups),
    }


def _per_task_target(speedups: dict[str, Any]) -> dict[str, Any]:
    vs = speedups.get("adaptive_vs_per-task")
    if not vs:
        return {}
    return {"adaptive_vs_per_task": {
        "speedup": vs["paired_ratio"], "ci95": vs["paired_ci95"], "target": TARGETS["adaptive_vs_per_task"],
        "met": vs["paired_ratio"] >= TARGETS["adaptive_vs_per_task"]}}


def _median_run(cmp: wl.Comparison, variant: str = "adaptive") -> wl.VariantRun | None:
    runs = sorted((r for r in cmp.runs if r.variant == variant), key=lambda r: r.seconds)
    return runs[(len(runs) - 1) // 2] if runs else None


def _decisions(cmp: wl.Comparison, variant: str) -> dict[str, Any] | None:
    """The decisions of ``variant``'s median run: ``[phase index, seconds since the phase's start, compress, why]``."""
    run = _median_run(cmp, variant)
    if run is None:
        return None
    out = []
    for d in run.decisions:
        i = run.phase_at(d["time"])
        if i is not None:
            out.append([i, d["time"] - run.phases[i].start, bool(d["compress"]), d["why"]])
    return {"repetition": run.repetition, "decisions": out}


def _json_float(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _json_float(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_float(v) for v in x]
    if hasattr(x, "item") and callable(x.item):  # numpy scalars
        return _json_float(x.item())
    return x


def _transitions_of(cmp: wl.Comparison, variant: str) -> list[dict[str, Any]]:
    """Every measured run's transitions of one installed variant, with their time since the phase's start."""
    transitions = []
    for run in cmp.runs:
        if run.variant != variant:
            continue
        starts = {p.phase: p.start for p in run.phases}
        for t in run.transitions:
            since = t["time"] - starts[t["phase"]] if t["phase"] in starts else None
            transitions.append({"repetition": run.repetition, "t_s": t["time"] - run.start,
                                "since_phase_start_s": since,
                                "time": t["time"], "optimization": t["optimization"], "from": t["from"],
                                "to": t["to"], "ratio": t["ratio"], "phase": t["phase"]})
    return transitions


def build_report(cmp: wl.Comparison, *, env: dict[str, Any], timing: dict[str, Any], size: str) -> dict[str, Any]:
    """The JSON report of a comparison (see the module docstring of :mod:`asafe.app.demo`)."""
    variants = _summaries(cmp)
    speedups = _speedups(cmp)
    choice = cmp.oracle_choice()
    phases = []
    shares = {v: cmp.compressed_share(v) for v in cmp.variants if v in wl.RULES}
    for i, phase in enumerate(cmp.phases):
        entry = {"name": phase.name, "description": phase.description, "spec": phase.as_dict(),
                 "oracle_choice": choice[i], "variants": {}}
        for v in (*cmp.variants, wl.ORACLE):
            samples = [s[i] for s in cmp.samples(v)]
            if samples:
                s = describe(samples)
                entry["variants"][v] = {"median_s": s["median_s"], "ci95": s["ci95"], "samples": samples,
                                        "unstable": s["unstable"]}
        entry["max_transitions"] = cmp.transitions_per_phase()[i]
        entry["compressed_share"] = {v: shares[v][i] for v in shares}
        phases.append(entry)
    transitions = _transitions_of(cmp, "adaptive")
    per_rep_transitions = [len(run.transitions) for run in cmp.runs if run.variant == "adaptive"]
    shown = _median_run(cmp)
    warnings = [f"{v}: unstable ({variants[v]['unstable_reason']})" for v in (*cmp.variants, wl.ORACLE)
                if variants[v].get("unstable")]
    warnings += [f"wrong result: {e}" for e in cmp.errors()]
    report = {
        "asafe_demo": 1,
        "size": size,
        "environment": env,
        "settings": {
            "thresholds": cmp.thresholds.as_dict(),
            "repetitions": len(cmp.totals(cmp.variants[0])),
            "order": "interleaved, balanced orders (asafe.app.stats.balanced_orders: every variant at every "
                     "position and right after every other equally often; a Williams design)",
            "check": f"every phase of every run against scipy (rtol={wl.RTOL}, atol={wl.ATOL})",
            "variants": list(cmp.variants),
            "static_variants": "no asafe installed; the setting is passed to every producer",
            "per_task_rule": "asafe.app.pertask.PerTask: per panel, compress when the expected seconds with "
                             "compression (sampled tiles, calibrated costs, the worker's measured bandwidth, "
                             "the panel's reuse and whether its consumer is on another worker) are below those "
                             "without; no asafe installed (hybrid: asafe installed, the payoff where clear, the mode "
                             "on close calls; adaptive-sampling: asafe installed, the mode first, the rule where "
                             "the mode's per-task-compression is on)",
        },
        "timing": {**timing, "warmup_s": cmp.warmup_seconds,
                   "note": "warm-up runs (numba compilation, matrix generation on the workers) are "
                           "not samples; phase times are end to end (submission to the result in the "
                           "client: production, transfers, scheduling, multiplies, gather)"},
        "phases": phases,
        "variants": variants,
        "speedups": speedups,
        "targets": _targets(cmp, variants, speedups),
        "transitions": transitions,
        "transitions_per_run": per_rep_transitions,
        "transitions_by_variant": {v: _transitions_of(cmp, v) for v in cmp.variants if v in wl.INSTALLED},
        "figure_run": None if shown is None else {
            "repetition": shown.repetition,
            "start": shown.start,
            "phases": [{"name": p.phase, "start_s": p.start - shown.start, "stop_s": p.stop - shown.start}
                       for p in shown.phases],
            "timeline": [[t - shown.start, r] for t, r in shown.timeline],
            "states": [[t - shown.start, s] for t, s in shown.states],
        },
        "rule_decisions": {v: _decisions(cmp, v) for v in cmp.variants if v in wl.RULES},
        "warnings": warnings,
    }
    return _json_float(report)


# --------------------------------------------------------------------------- figure
def plot_report(report: dict[str, Any], path: str | os.PathLike) -> Path:
    """Draw the PNG: ratio over time (alpha/beta lines, on/off shading, phases), per-phase times."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    th = report["settings"]["thresholds"]
    run = report.get("figure_run")
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(10, 7.5), gridspec_kw={"height_ratios": [3, 2]})
    if run:
        cap_hi, cap_lo = 1e4, 1e-4
        pts = [(t, r) for t, r in run["timeline"] if isinstance(r, (int, float)) or r == "inf"]
        ts = [t for t, _ in pts]
        rs = [cap_hi if r == "inf" else min(max(float(r), cap_lo), cap_hi) for _, r in pts]
        end = run["phases"][-1]["stop_s"] if run["phases"] else (ts[-1] if ts else 1.0)
        states = run["states"] + [[end, run["states"][-1][1] if run["states"] else False]]
        for (t0, s), (t1, _) in zip(states, states[1:]):
            if s:
                ax.axvspan(t0, t1, color="tab:green", alpha=0.12, lw=0)
        if ts:
            ax.step(ts, rs, where="post", color="tab:blue", lw=1.0, label="the mode's compute/communication")
        alpha, beta = float(th["alpha"]), float(th["beta"])  # "inf" in the JSON
        if math.isfinite(alpha):
            ax.axhline(alpha, color="tab:green", ls="--", lw=1.2, label=f"alpha = {alpha:g} (on below)")
        if math.isfinite(beta):
            ax.axhline(beta, color="tab:red", ls="--", lw=1.2, label=f"beta = {beta:g} (off above)")
        for p in run["phases"]:
            ax.axvline(p["start_s"], color="0.3", lw=0.8)
            ax.text(p["start_s"], cap_hi, " " + p["name"], rotation=0, va="top", ha="left", fontsize=8)
        # each switch, marked with its delay after the start of its phase
        starts = [p["start_s"] for p in run["phases"]]
        for (t0, was), (t1, now) in zip(run["states"], run["states"][1:]):
            if now == was:
                continue
            began = max((s for s in starts if s <= t1 + 1e-9), default=0.0)
            ax.axvline(t1, color="tab:green" if now else "tab:red", lw=0.9, ls=":")
            ax.text(t1, cap_lo * 3, f" {'on' if now else 'off'} +{(t1 - began) * 1000:.0f} ms",
                    rotation=90, va="bottom", ha="left", fontsize=7, color="tab:green" if now else "tab:red")
        # the per-task rules' decisions (their median run), placed by their time since
        # their phase's start on this run's phases: where the two kinds of decision differ
        for k, (variant, rule) in enumerate(sorted((report.get("rule_decisions") or {}).items())):
            if not rule:
                continue
            y = 10 ** (3.4 - 0.45 * k)
            for compress, color in ((True, "tab:green"), (False, "tab:red")):
                xs = [run["phases"][i]["start_s"] + since for i, since, c, _ in rule["decisions"]
                      if c is compress and i < len(run["phases"])]
                if xs:
                    ax.scatter(xs, [y] * len(xs), marker="|", s=30, color=color, lw=0.8)
            ax.text(end, y, f" {variant}", va="center", ha="left", fontsize=7)
        ax.set_yscale("log")
        ax.set_ylim(cap_lo, cap_hi * 3)
        ax.set_xlim(0, end)
        ax.set_xlabel("seconds since the start of the run")
        ax.set_ylabel("compute / communication (inf drawn at 1e4)")
        from matplotlib.patches import Patch

        handles, labels = ax.get_legend_handles_labels()
        handles.append(Patch(color="tab:green", alpha=0.12))
        labels.append("compression on")
        ax.legend(handles, labels, loc="lower right", fontsize=7)
        title = (f"adaptive run (repetition {run['repetition']}, the median one); each switch is marked with "
                 f"its delay after its phase's start")
        if report.get("rule_decisions"):
            title += ("\nticks at the top: each per-task rule's panel decisions in its median run "
                      "(green: compressed), by time since their phase's start")
        ax.set_title(title, fontsize=8)
    names = [p["name"] for p in report["phases"]]
    variants = [v for v in (*wl.ALL_VARIANTS, wl.ORACLE) if v in report["variants"]]
    colors = {"adaptive": "tab:blue", "adaptive-ready": "tab:olive", "adaptive-arrivals": "tab:pink",
              "adaptive-dwell": "tab:orange", "per-task": "tab:purple", "hybrid": "tab:cyan",
              "adaptive-sampling": "tab:brown", "static-on": "tab:green", "static-off": "tab:red", "oracle": "0.5"}
    width = 0.8 / len(variants)
    for k, v in enumerate(variants):
        meds, lo, hi = [], [], []
        for p in report["phases"]:
            d = p["variants"].get(v)
            m = d["median_s"] if d else 0.0
            meds.append(m)
            lo.append(m - (d["ci95"][0] if d else m))
            hi.append((d["ci95"][1] if d else m) - m)
        xs = [i + (k - (len(variants) - 1) / 2) * width for i in range(len(names))]
        bx.bar(xs, meds, width, yerr=[lo, hi], capsize=2, color=colors[v], label=v)
    bx.set_xticks(range(len(names)), names, fontsize=8)
    bx.set_ylabel("seconds (median, 95% CI)")
    bx.legend(fontsize=7, ncol=len(variants))
    totals = ", ".join(f"{v} {report['variants'][v]['median_s']:.2f} s" for v in variants
                       if report["variants"][v].get("median_s") is not None)
    bx.set_title(f"per-phase time; totals: {totals}", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- console
class _Display:
    """Progress bars per phase (rich) and transitions as they happen."""

    def __init__(self, console: Any, phases: Sequence[wl.Phase], live: bool) -> None:
        self.console = console
        self.phases = list(phases)
        self.live = live
        self.progress = None
        self.bars: list[Any] = []
        self.seen = 0
        self.label = ""

    def __enter__(self) -> "_Display":
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=self.console, transient=True)
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)

    def start_run(self, variant: str, rep: int, warmup: bool) -> None:
        self.seen = 0
        self.label = f"{variant} {'warm-up' if warmup else f'round {rep + 1}'}"
        if self.progress is not None:
            for bar in self.bars:
                self.progress.remove_task(bar)
            self.bars = [self.progress.add_task(f"{self.label:>20} {p.name:<15}", total=p.steps)
                         for p in self.phases]

    def step(self, i: int, step: int, steps: int, handle: Any) -> None:
        state = ""
        if handle is not None:
            info = handle.info("states", "mode", "history")
            from ..core.mode import ModeVector

            shares, signals = info["mode"]
            mode = ModeVector(shares, **signals)
            on = info["states"].get("compression", False)
            state = f" compression {'on ' if on else 'off'} ratio {mode.ratio:.3g}"
            history = info["history"]
            for t, name, old, new, tshares, _ in history[self.seen:]:
                ratio = ModeVector(tshares).ratio
                self.console.print(f"  [bold]{self.label}[/] {self.phases[i].name}: {name} "
                                   f"{'on' if old else 'off'} -> {'on' if new else 'off'} (ratio {ratio:.3g})")
            self.seen = len(history)
            if self.progress is None and step == steps:
                self.console.print(f"  {self.label} {self.phases[i].name}: mode {mode!r}")
        if self.progress is not None:
            self.progress.update(self.bars[i], completed=step,
                                 description=f"{self.label:>20} {self.phases[i].name:<15}{state}")

    def done(self, run: wl.VariantRun) -> None:
        times = " ".join(f"{p.seconds:6.2f}" for p in run.phases)
        ok = "correct" if run.correct else "[red]WRONG[/]"
        self.console.print(f"  {self.label:>20}: {times}  total {run.seconds:6.2f} s  {ok}"
                           + (f"  ({len(run.transitions)} transitions)" if run.variant in wl.INSTALLED else "")
                           + (f"  ({sum(d['compress'] for d in run.decisions)} of {len(run.decisions)} panels "
                              "compressed)" if run.decisions else ""))


def _print_summary(console: Any, report: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    v = report["variants"]
    sp = report["speedups"]
    names = [n for n in (*wl.ALL_VARIANTS, wl.ORACLE) if n in v]
    table = Table(title="Total time of the phases (median of the measured rounds)")
    for col in ("variant", "median", "95% CI", "vs static-on", "vs static-off", "correct"):
        table.add_column(col, justify="right" if col != "variant" else "left")
    for name in names:
        d = v[name]
        cells = []
        for base in ("static-on", "static-off"):
            if name == base:
                cells.append("(base)")
                continue
            if f"{name}_vs_{base}" in sp:
                s = sp[f"{name}_vs_{base}"]
                cells.append(f"{s['paired_ratio']:.2f}x [{s['paired_ci95'][0]:.2f}, {s['paired_ci95'][1]:.2f}]"
                             f" of {v[base]['median_s']:.2f} s")
            else:
                cells.append(f"{v[base]['median_s'] / d['median_s']:.2f}x of {v[base]['median_s']:.2f} s")
        table.add_row(name, f"{d['median_s']:.3f} s", f"[{d['ci95'][0]:.3f}, {d['ci95'][1]:.3f}]",
                      *cells, "yes" if d["correct"] else "[red]NO[/]")
    console.print(table)
    ran = [n for n in names if n != wl.ORACLE]
    ptable = Table(title="Per phase (median seconds; oracle = the better static setting; "
                         "per-task rules: share of panels compressed)")
    for col in ("phase", *ran, "oracle picks", "max transitions"):
        ptable.add_column(col, justify="right" if col != "phase" else "left")
    for p in report["phases"]:
        pv = p["variants"]
        cells = []
        for x in ran:
            share = p.get("compressed_share", {}).get(x)
            cells.append(f"{pv[x]['median_s']:.3f}" + (f" ({share:.0%})" if share is not None else ""))
        ptable.add_row(p["name"], *cells, p["oracle_choice"], str(p["max_transitions"]))
    console.print(ptable)
    tg = report["targets"]
    a = tg["adaptive_vs_best_static"]
    b = tg["adaptive_vs_oracle"]
    c = tg["transitions_per_phase"]
    d = tg["static_losses"]

    def mark(ok: bool) -> str:
        return "[green]met[/]" if ok else "[red]not met[/]"

    def interval(x: dict) -> str:
        return f" [{x['ci95'][0]:.3f}, {x['ci95'][1]:.3f}]" if x.get("ci95") else ""

    if "adaptive" in report["variants"]:
        console.print(f"targets: (paired ratios, 95% CI) adaptive {a['speedup']:.3f}x{interval(a)} the better "
                      f"static ({a['best_static']}), target >= {a['target']} -- {mark(a['met'])}")
        console.print(f"         adaptive / oracle {b['slowdown']:.3f}{interval(b)}, target <= {b['target']} -- "
                      f"{mark(b['met'])}")
        console.print(f"         transitions per phase (most in one run) {c['max_per_phase']}, target <= "
                      f"{c['target']} -- {mark(c['met'])}")
    else:
        console.print("targets: the adaptive variant's, and it did not run (the speedups above compare the others)")
    for name, x in d["variants"].items():
        console.print(f"         {name} loses {x['loss']:+.0%} in {x['worst_phase']} (target >= "
                      f"{d['target']:.0%}) -- {mark(x['met'])}")
    e = tg.get("adaptive_vs_per_task")
    if e:
        console.print(f"         adaptive {e['speedup']:.3f}x{interval(e)} the per-task rule, target >= "
                      f"{e['target']} -- {mark(e['met'])}")
    for w in report["warnings"]:
        console.print(f"[yellow]warning:[/] {escape(w)}")


# --------------------------------------------------------------------------- entry point
def run_demo(
    *,
    size: str = "default",
    workers: int = 2,
    threads_per_worker: int = 1,
    scheduler_address: str | None = None,
    repetitions: int | None = None,
    thresholds: wl.Thresholds | None = None,
    plot: str | os.PathLike | None = "asafe-demo.png",
    json_path: str | os.PathLike | None = "asafe-demo.json",
    console: Any = None,
    phases: Sequence[wl.Phase] | None = None,
    variants: Sequence[str] | str = wl.VARIANTS,
) -> dict[str, Any]:
    """Run the demo and return its report (also written to ``json_path``, drawn to ``plot``).

    Parameters
    ----------
    size : {"default", "quick", "test"}
        The phase sizes (:func:`asafe.app.workload.phases_for`).
    workers, threads_per_worker : int
        The embedded LocalCluster (ignored with ``scheduler_address``).
    scheduler_address : str, optional
        Run on this existing cluster instead (its workers need asafe installed).
    repetitions : int, optional
        Measured rounds (default :func:`default_repetitions`).
    thresholds : asafe.app.workload.Thresholds, optional
        alpha, beta, window, dwell (default :data:`asafe.app.workload.DEFAULT_THRESHOLDS`).
    plot, json_path : path or None
        Where the PNG and the JSON go (``None``: not written).
    console : rich.console.Console, optional
    phases : sequence of Phase, optional
        Instead of the named size.
    variants : sequence of str or str, optional
        The variants to run (default :data:`asafe.app.workload.VARIANTS`; ``hybrid``
        too with :data:`~asafe.app.workload.ALL_VARIANTS`); ``static-on`` and
        ``static-off`` are always needed (the oracle is made of them).
    """
    from rich.console import Console

    if console is None:
        console = Console()
        if not console.is_terminal:  # a log file: wide enough for the tables
            console = Console(width=130)
    if workers < 2 and scheduler_address is None:
        raise DemoError(f"the workload ships panels between workers: --workers must be >= 2, got {workers}")
    if threads_per_worker < 1:
        raise DemoError(f"--threads-per-worker must be >= 1, got {threads_per_worker}")
    if repetitions is None:
        repetitions = default_repetitions(size)
    if repetitions < 1:
        raise DemoError(f"--repetitions must be >= 1, got {repetitions}")
    phases = list(phases) if phases is not None else list(wl.phases_for(size))
    thresholds = thresholds or wl.DEFAULT_THRESHOLDS
    for target in (plot, json_path):
        if target is not None:
            parent = Path(target).resolve().parent
            if not parent.is_dir():
                raise DemoError(f"cannot write {target}: the folder {parent} does not exist")

    try:
        variants = wl.check_variants(variants)
    except ValueError as exc:
        raise DemoError(f"--variants: {exc}") from None
    console.print(f"[bold]asafe demo[/]: {len(phases)} phases x {len(variants)} variants ({', '.join(variants)}), "
                  f"{repetitions} interleaved rounds (size {size})")
    console.print(f"  adaptive: Hysteresis(alpha={thresholds.alpha:g}, beta={thresholds.beta:g}) on the "
                  f"measured compute/communication ratio, window {thresholds.window} measurements, "
                  f"dwell {thresholds.dwell:g} s and {thresholds.dwell_tasks} tasks, blend {thresholds.blend:g}")
    for line in thresholds.how.splitlines():
        console.print(f"    {line}", markup=False)
    for p in phases:
        console.print(f"  phase {p.name:<15} scale {p.scale:>2} tile {p.tile:>3} dense {p.dense_fraction:>4.0%} "
                      f"fill {p.fill:>4.0%} {p.placement:<7} {p.steps:>2} steps x {p.panels} panels, "
                      f"{p.vectors} vector{'s' if p.vectors > 1 else ''}: {p.description}", markup=False)

    timing: dict[str, Any] = {}
    with connect(scheduler_address, workers, threads_per_worker) as (client, where, startup):
        timing["cluster_start_s"] = startup
        names = sorted(client.scheduler_info()["workers"])
        if len(names) < 2:
            raise DemoError(f"the workload ships panels between workers: the cluster has {len(names)} worker(s)")
        console.print(f"  cluster: {where}, started in {startup:.1f} s", markup=False)
        t0 = time.perf_counter()
        expected = [wl.reference(p) for p in phases]
        timing["reference_s"] = time.perf_counter() - t0
        console.print(f"  scipy references computed in {timing['reference_s']:.1f} s; warm-up runs next "
                      "(numba compilation and matrix generation on the workers, not samples)")
        threads = client.nthreads()
        env = environment(cluster=where, scheduler="distributed", workers=len(names),
                          threads_per_worker=sorted(set(threads.values())),
                          worker_addresses=names)
        display = _Display(console, phases, live=console.is_terminal)
        with display:
            cmp = wl.compare(client, phases, repetitions=repetitions, thresholds=thresholds, workers=names,
                             expected=expected, on_run=display.start_run, on_step=display.step,
                             on_done=display.done, variants=variants)
    report = build_report(cmp, env=env, timing=timing, size=size)
    _print_summary(console, report)
    if json_path is not None:
        Path(json_path).write_text(json.dumps(report, indent=1))
        console.print(f"wrote {json_path}", markup=False)
    if plot is not None:
        plot_report(report, plot)
        console.print(f"wrote {plot}", markup=False)
    return report
