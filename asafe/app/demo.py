"""``asafe demo``: the phased Graph500 workload, adaptive against static compression.

The demo runs the four phases of :mod:`asafe.app.workload` on a Dask cluster -- an
embedded ``LocalCluster`` of worker processes by default, or an existing one
(``--scheduler-address``) -- under four variants (:mod:`asafe.app.variants`):

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
phase of every run is checked against scipy (:mod:`asafe.app.comparison`), and
the demo prints a table of medians with their distribution-free intervals, each
with the coverage it reaches over that many rounds (95% needs 6 rounds; 3 give
75%), speedups with their absolute base times, and every target's verdict from
its interval (:func:`~asafe.app.stats.verdict`: met, not shown, not met;
:mod:`asafe.app.console`), writes a JSON report and draws a PNG: the measured
ratio over time with the alpha and beta lines, compression on/off and the
phase boundaries, and the per-phase times of every variant. The figure needs
matplotlib and the live console rich, both in ``pip install "asafe[demo]"``;
without them the demo still runs, prints plain text and says that the figure
was not drawn.

The output starts with a few lines: what runs, on which link, how many rounds;
how the thresholds were chosen and what each phase is are printed with
``--verbose`` (``verbose=True``). The machine's load average is read at the
start, before every run and at the end (:class:`LoadWatch`); when it exceeded
:data:`BUSY_FACTOR` times the cores during the run, the summary opens with a
warning that the timings are unreliable, and the JSON says so.

The variants made for evaluations (``hybrid``, ``adaptive-sampling``,
``adaptive-ready``, ``adaptive-arrivals``, ``adaptive-dwell``) run from a
checkout: ``python -m benchmarks demo`` is this demo with them too (its
``known`` and ``compared`` are the ``phased`` suite's).
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .comparison import Comparison, compare
from .console import Display, make_console, print_summary
from .environment import environment
from .stats import (combine_verdicts, describe, format_coverage, median, median_ci_ranks, paired_ratio_ci,
                    verdict)
from .variants import (COMPARED, DEFAULT_THRESHOLDS, KNOWN_VARIANTS, ORACLE, VARIANTS, Thresholds, Variant,
                       VariantRun, check_variants)
from .workload import ATOL, RTOL, Phase, phases_for, reference

__all__ = ["run_demo", "DemoError", "TARGETS", "plot_report", "build_report", "connect", "default_repetitions",
           "BUSY_FACTOR", "LoadWatch", "busy_warning"]

#: The targets of the demo. Every speedup is the paired ratio: the median over
#: rounds of ``base_i / adaptive_i`` (both measured in round ``i``, seconds
#: apart), with its order-statistic interval; a target is met only when that
#: interval lies wholly on its side (:func:`asafe.app.stats.verdict`).
TARGETS = {
    "adaptive_vs_best_static": 1.05,  # adaptive at least 5% faster in total than the better static setting
    "adaptive_vs_oracle": 1.10,  # within 10% of the oracle (adaptive / oracle <= 1.10)
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
    their thread count (a worker uses the cores it was given). In host 0 of a
    multi-host topology (:mod:`asafe.app.hosts`, ``python -m benchmarks demo
    --hosts N``) and without ``scheduler_address``, the topology's cluster: a
    worker in each other host (``workers`` and ``threads_per_worker`` are then
    the topology's).
    """
    import logging

    from distributed import Client, LocalCluster

    from . import hosts

    t0 = time.perf_counter()
    topology = None if scheduler_address else hosts.current()
    if topology is not None:
        with hosts.connect() as client:
            yield (client, f"{topology['n_workers']} workers, one in each host but the scheduler's "
                   f"(a topology of {topology['n_hosts']} hosts)", time.perf_counter() - t0)
        return
    if scheduler_address:
        try:
            client = Client(scheduler_address, timeout="5s")
        except (OSError, TimeoutError) as exc:
            raise DemoError(f"cannot connect to the scheduler at {scheduler_address!r}: {exc}") from None
        with client:
            n = len(client.nthreads())
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


# --------------------------------------------------------------------------- load
#: The machine was *busy* when its 1-minute load average, read before every run
#: and at the end, exceeded this many times its logical cores. The demo's own
#: workers (one runnable thread each, 2 on 2 cores by default) account for up to
#: about the core count; half as much again means other work competed for the
#: cores long enough to lift a one-minute average, and the timings are unreliable.
BUSY_FACTOR = 1.5


def _loadavg() -> list[float] | None:
    try:
        return [float(x) for x in os.getloadavg()]
    except (AttributeError, OSError):  # not on Windows; unreadable /proc/loadavg
        return None


def busy_warning(loads: Sequence[float], cores: int, factor: float = BUSY_FACTOR) -> str | None:
    """The warning to print when a load average in ``loads`` exceeded ``factor * cores``; else ``None``.

    Examples
    --------
    >>> busy_warning([1.2, 4.8, 2.9], cores=2)
    'busy machine: load average up to 4.8 on 2 cores during the run (over 1.5 x cores = 3); timings are unreliable'
    >>> busy_warning([1.2, 2.9], cores=2) is None
    True
    """
    if cores < 1:
        raise ValueError(f"cores must be >= 1, got {cores!r}")
    if factor <= 0:
        raise ValueError(f"factor must be > 0, got {factor!r}")
    loads = list(loads)
    threshold = factor * cores
    if not loads or max(loads) <= threshold:
        return None
    return (f"busy machine: load average up to {max(loads):.1f} on {cores} core{'s' if cores != 1 else ''} "
            f"during the run (over {factor:g} x cores = {threshold:g}); timings are unreliable")


class LoadWatch:
    """The machine's load average at the start, before every run (:meth:`sample`) and at the end (:meth:`stop`).

    :meth:`report` says whether it was busy during the run (:func:`busy_warning`):
    the readings before every run and at the end count, the one at the start
    (the minute before the demo) is recorded beside them. Where
    ``os.getloadavg`` is not available, nothing is read and nothing is warned.

    Examples
    --------
    >>> watch = LoadWatch(cores=2)
    >>> watch.sample("static-on round 1")
    >>> watch.stop()
    >>> r = watch.report()
    >>> r["cores"], r["threshold"], len(r["samples"]) == (1 if r["available"] else 0)
    (2, 3.0, True)
    """

    def __init__(self, cores: int | None = None, factor: float = BUSY_FACTOR) -> None:
        self.cores = int(cores or os.cpu_count() or 1)
        self.factor = factor
        self._t0 = time.monotonic()
        self.start = _loadavg()
        self.samples: list[dict[str, Any]] = []
        self.end: list[float] | None = None

    def sample(self, at: str) -> None:
        """Read the load average now (before the run named ``at``)."""
        load = _loadavg()
        if load is not None:
            self.samples.append({"t_s": time.monotonic() - self._t0, "at": at, "load1": load[0]})

    def stop(self) -> None:
        """Read the load average at the end of the run."""
        self.end = _loadavg()

    def report(self) -> dict[str, Any]:
        """The readings, the threshold and its reason, whether the machine was busy, and the warning."""
        during = [s["load1"] for s in self.samples] + ([self.end[0]] if self.end else [])
        warning = busy_warning(during, self.cores, self.factor)
        return {
            "what": "os.getloadavg() of the machine that runs the demo's client (and its embedded cluster): "
                    "1-, 5- and 15-minute averages at the start and the end, the 1-minute one before every run",
            "available": self.start is not None,
            "cores": self.cores,
            "factor": self.factor,
            "threshold": self.factor * self.cores,
            "rule": f"busy when the 1-minute load average before a run or at the end exceeded {self.factor:g} x "
                    "the logical cores: the demo's own workers (one runnable thread each) account for up to about "
                    "the core count, so a load well above it means other work competed for the cores",
            "start": self.start,
            "end": self.end,
            "samples": list(self.samples),
            "max_during_run": max(during) if during else None,
            "busy": warning is not None,
            "warning": warning,
        }


# --------------------------------------------------------------------------- report
def _summaries(cmp: Comparison) -> dict[str, Any]:
    variants = {}
    for v in (*cmp.variants, ORACLE):
        totals = cmp.totals(v)
        entry = describe(totals) if totals else {"median_s": None, "ci95": [None, None]}
        entry["correct"] = cmp.correct(v)
        entry["per_phase_median_s"] = cmp.phase_medians(v) if totals else []
        variants[v] = entry
    variants[ORACLE]["definition"] = (
        "not a run: for each phase the static setting with the lower per-phase median over the rounds "
        "is chosen after the fact; the oracle's total in round i is the sum over phases of round i's "
        "time of the chosen setting; median_s and ci95 are the median and interval of those per-round "
        "totals")
    variants[ORACLE]["choice"] = cmp.oracle_choice()
    return variants


def _speedups(cmp: Comparison, compared: Sequence[str] = COMPARED) -> dict[str, Any]:
    """Every pair's paired ratio, once per pair: ``new_vs_base``, ``new`` the first of the pair in ``compared``.

    Variants that ran and are neither static nor in ``compared`` come after those of ``compared``, in the
    order they ran; the static settings and the oracle are bases only.
    """
    static = {v for v in cmp.variants if cmp.specs[v].compress in (True, False)}
    news = [v for v in compared if v in cmp.variants]
    news += [v for v in cmp.variants if v not in news and v not in static]
    out = {}
    for new_name in news:
        new = cmp.totals(new_name)
        for base_name in (*cmp.variants, ORACLE):
            base = cmp.totals(base_name)
            if base_name == new_name or not base or not new or len(base) != len(new):
                continue
            if f"{base_name}_vs_{new_name}" in out:
                continue  # one direction of each pair
            r = paired_ratio_ci(base, new)
            out[f"{new_name}_vs_{base_name}"] = {
                "base": base_name,
                "new": new_name,
                "base_median_s": median(base),
                "new_median_s": median(new),
                "estimator": f"paired ratio: median over rounds of base_i / {new_name}_i, with its order-statistic "
                             "interval (95% asked for; ci_coverage: what it reaches over these rounds)",
                "paired_ratio": r.ratio,
                "paired_ci95": list(r.ci),
                "ci_coverage": r.coverage,
                "ci_exact": r.exact,
            }
    return out


def _ratio_target(ratio: float | None, ci: Sequence[float] | None, coverage: float | None, name: str,
                  direction: str, key: str) -> dict[str, Any]:
    """One target on a paired ratio: the value, its interval and coverage, the target and the verdict."""
    target = TARGETS[name]
    return {key: math.nan if ratio is None else ratio, "ci95": None if ci is None else list(ci),
            "ci_coverage": coverage, "target": target, "direction": direction,
            "verdict": verdict(ci, target, direction)}


def _static_losses(cmp: Comparison) -> dict[str, Any]:
    """Each static setting's loss against the oracle per phase: paired per round, with its interval and verdict.

    The loss in a phase is the median over rounds of ``static_i / oracle_i - 1``
    (its interval the paired ratio's, shifted by 1); the target (each static
    setting loses >= ``TARGETS["static_loss"]`` in at least one phase) is met for
    a setting when one phase's interval clears it, not met when every phase's
    lies below it. The phase shown is the one with the largest loss among
    those with the best verdict (met, then not shown, then not met).
    """
    target = TARGETS["static_loss"]
    oracle = cmp.samples(ORACLE)
    out = {}
    for v in ("static-on", "static-off"):
        mine = cmp.samples(v)[:len(oracle)]
        per_phase = []
        for i in range(len(cmp.phases)):
            r = paired_ratio_ci([s[i] for s in mine], [s[i] for s in oracle])
            ci = (r.low - 1.0, r.high - 1.0)
            per_phase.append({"loss": r.ratio - 1.0, "ci95": list(ci), "ci_coverage": r.coverage,
                              "verdict": verdict(ci, target, ">=")})
        rank = {"met": 2, "not shown": 1, "not met": 0}
        shown = max(range(len(per_phase)), key=lambda i: (rank[per_phase[i]["verdict"]], per_phase[i]["loss"]))
        out[v] = {"worst_phase": cmp.phases[shown].name, **per_phase[shown],
                  "per_phase_loss": [x["loss"] for x in per_phase], "per_phase": per_phase,
                  "verdict": combine_verdicts([x["verdict"] for x in per_phase], "any")}
    return {"target": target, "direction": ">=", "variants": out,
            "verdict": combine_verdicts([x["verdict"] for x in out.values()], "all")}


def _targets(cmp: Comparison, variants: dict[str, Any], speedups: dict[str, Any]) -> dict[str, Any]:
    """Every target of :data:`TARGETS` with its value, interval, coverage and verdict (:func:`~asafe.app.stats.verdict`)."""
    best_name = min(("static-on", "static-off"), key=lambda v: variants[v]["median_s"])
    vs_best = speedups.get(f"adaptive_vs_{best_name}", {})
    vs_oracle = speedups.get(f"adaptive_vs_{ORACLE}", {})
    oracle_ci = vs_oracle.get("paired_ci95")
    per_phase = cmp.transitions_per_phase()
    most = max(per_phase, default=0)
    return {
        "adaptive_vs_best_static": {
            "best_static": best_name,
            **_ratio_target(vs_best.get("paired_ratio"), vs_best.get("paired_ci95"), vs_best.get("ci_coverage"),
                            "adaptive_vs_best_static", ">=", "speedup")},
        "adaptive_vs_oracle": _ratio_target(
            1.0 / vs_oracle["paired_ratio"] if vs_oracle.get("paired_ratio") else None,
            [1.0 / x for x in reversed(oracle_ci)] if oracle_ci else None, vs_oracle.get("ci_coverage"),
            "adaptive_vs_oracle", "<=", "slowdown"),
        "transitions_per_phase": {
            "max_per_phase": per_phase, "target": TARGETS["max_transitions_per_phase"], "direction": "<=",
            "note": "a count over every measured run (the most in one run), not an estimate: no interval",
            "verdict": "met" if most <= TARGETS["max_transitions_per_phase"] else "not met"},
        "static_losses": _static_losses(cmp),
        **_per_task_target(speedups),
    }


def _per_task_target(speedups: dict[str, Any]) -> dict[str, Any]:
    vs = speedups.get("adaptive_vs_per-task")
    if not vs:
        return {}
    return {"adaptive_vs_per_task": _ratio_target(vs["paired_ratio"], vs["paired_ci95"], vs["ci_coverage"],
                                                  "adaptive_vs_per_task", ">=", "speedup")}


def _median_run(cmp: Comparison, variant: str = "adaptive") -> VariantRun | None:
    runs = sorted((r for r in cmp.runs if r.variant == variant), key=lambda r: r.seconds)
    return runs[(len(runs) - 1) // 2] if runs else None


def _decisions(cmp: Comparison, variant: str) -> dict[str, Any] | None:
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


def _transitions_of(cmp: Comparison, variant: str) -> list[dict[str, Any]]:
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


def build_report(cmp: Comparison, *, env: dict[str, Any], timing: dict[str, Any], size: str,
                 compared: Sequence[str] = COMPARED, load: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report of a comparison (see the module docstring of :mod:`asafe.app.demo`).

    ``compared``: the variants compared with the others, in this order (:data:`~asafe.app.variants.COMPARED`).
    ``load``: :meth:`LoadWatch.report` of the run; its warning, if any, comes first in ``warnings``.
    """
    variants = _summaries(cmp)
    speedups = _speedups(cmp, compared)
    choice = cmp.oracle_choice()
    phases = []
    rules = [v for v in cmp.variants if cmp.specs[v].rule]
    shares = {v: cmp.compressed_share(v) for v in rules}
    for i, phase in enumerate(cmp.phases):
        entry = {"name": phase.name, "description": phase.description, "spec": phase.as_dict(),
                 "oracle_choice": choice[i], "variants": {}}
        for v in (*cmp.variants, ORACLE):
            samples = [s[i] for s in cmp.samples(v)]
            if samples:
                s = describe(samples)
                entry["variants"][v] = {"median_s": s["median_s"], "ci95": s["ci95"],
                                        "ci_coverage": s["ci_coverage"], "samples": samples,
                                        "unstable": s["unstable"]}
        entry["max_transitions"] = cmp.transitions_per_phase()[i]
        entry["compressed_share"] = {v: shares[v][i] for v in shares}
        phases.append(entry)
    transitions = _transitions_of(cmp, "adaptive")
    per_rep_transitions = [len(run.transitions) for run in cmp.runs if run.variant == "adaptive"]
    shown = _median_run(cmp)
    warnings = [f"{v}: unstable ({variants[v]['unstable_reason']})" for v in (*cmp.variants, ORACLE)
                if variants[v].get("unstable")]
    warnings += [f"wrong result: {e}" for e in cmp.errors()]
    if load and load.get("warning"):
        warnings.insert(0, load["warning"])
    rounds = len(cmp.totals(cmp.variants[0]))
    report = {
        "asafe_demo": 1,
        "size": size,
        "environment": env,
        "settings": {
            "thresholds": cmp.thresholds.as_dict(),
            "repetitions": rounds,
            "intervals": f"order statistics of the median (95% asked for); over {rounds} round"
                         f"{'s' if rounds != 1 else ''} they cover {median_ci_ranks(rounds)[2]:.4g} (ci_coverage "
                         "beside each ci95); a target is met only when its interval lies wholly on its side, not "
                         "shown when the interval straddles it (asafe.app.stats.verdict)",
            "order": "interleaved, balanced orders (asafe.app.stats.balanced_orders: every variant at every "
                     "position and right after every other equally often; a Williams design)",
            "check": f"every phase of every run against scipy (rtol={RTOL}, atol={ATOL})",
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
        "transitions_by_variant": {v: _transitions_of(cmp, v) for v in cmp.variants if cmp.specs[v].installed},
        "figure_run": None if shown is None else {
            "repetition": shown.repetition,
            "start": shown.start,
            "phases": [{"name": p.phase, "start_s": p.start - shown.start, "stop_s": p.stop - shown.start}
                       for p in shown.phases],
            "timeline": [[t - shown.start, r] for t, r in shown.timeline],
            "states": [[t - shown.start, s] for t, s in shown.states],
        },
        "rule_decisions": {v: _decisions(cmp, v) for v in rules},
        "load": load,
        "warnings": warnings,
    }
    return _json_float(report)


# --------------------------------------------------------------------------- figure
def plot_report(report: dict[str, Any], path: str | os.PathLike,
                known: Mapping[str, Variant] = KNOWN_VARIANTS) -> Path:
    """Draw the PNG: ratio over time (alpha/beta lines, on/off shading, phases), per-phase times.

    The variants are drawn in the order of ``known`` and in their colors (the others after them);
    needs matplotlib (``pip install "asafe[demo]"``).
    """
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
    variants = [v for v in (*known, ORACLE) if v in report["variants"]]
    variants += [v for v in report["variants"] if v not in variants]
    colors = {ORACLE: "0.5", **{name: spec.color for name, spec in known.items()}}
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
        bx.bar(xs, meds, width, yerr=[lo, hi], capsize=2, color=colors.get(v), label=v)
    bx.set_xticks(range(len(names)), names, fontsize=8)
    coverage = next((d.get("ci_coverage") for p in report["phases"] for d in p["variants"].values()
                     if d.get("ci_coverage") is not None), None)
    bx.set_ylabel("seconds (median, interval" + (f" covering {format_coverage(coverage)})" if coverage is not None
                                                  else ")"))
    bx.legend(fontsize=7, ncol=len(variants))
    totals = ", ".join(f"{v} {report['variants'][v]['median_s']:.2f} s" for v in variants
                       if report["variants"][v].get("median_s") is not None)
    bx.set_title(f"per-phase time; totals: {totals}", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- entry point
def run_demo(
    *,
    size: str = "default",
    workers: int = 2,
    threads_per_worker: int = 1,
    scheduler_address: str | None = None,
    repetitions: int | None = None,
    thresholds: Thresholds | None = None,
    plot: str | os.PathLike | None = "asafe-demo.png",
    json_path: str | os.PathLike | None = "asafe-demo.json",
    console: Any = None,
    phases: Sequence[Phase] | None = None,
    variants: Sequence[str] | str = VARIANTS,
    known: Mapping[str, Variant] = KNOWN_VARIANTS,
    compared: Sequence[str] = COMPARED,
    verbose: bool = False,
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
    thresholds : asafe.app.variants.Thresholds, optional
        alpha, beta, window, dwell (default :data:`asafe.app.variants.DEFAULT_THRESHOLDS`).
    plot, json_path : path or None
        Where the PNG and the JSON go (``None``: not written). Without matplotlib
        the figure is not drawn, and one line says so.
    console : rich.console.Console or asafe.app.console.PlainConsole, optional
        Default :func:`asafe.app.console.make_console` (plain text without rich).
    phases : sequence of Phase, optional
        Instead of the named size.
    variants : sequence of str or str, optional
        The variants to run, names of ``known`` (default
        :data:`asafe.app.variants.VARIANTS`); ``static-on`` and ``static-off`` are
        always needed (the oracle is made of them).
    known : mapping of str to Variant, optional
        The variants that may be asked for (default the package's,
        :data:`asafe.app.variants.KNOWN_VARIANTS`), in the order the tables and
        the figure show them.
    compared : sequence of str, optional
        The variants compared with the others, in this order (``new_vs_base``;
        default :data:`asafe.app.variants.COMPARED`).
    verbose : bool, optional
        Also print how the thresholds were chosen, what each phase is and how
        long the scipy references took (default: a few lines on what runs, on
        which link, how many rounds).
    """
    if console is None:
        console = make_console()
    if workers < 2 and scheduler_address is None:
        raise DemoError(f"the workload ships panels between workers: --workers must be >= 2, got {workers}")
    if threads_per_worker < 1:
        raise DemoError(f"--threads-per-worker must be >= 1, got {threads_per_worker}")
    if repetitions is None:
        repetitions = default_repetitions(size)
    if repetitions < 1:
        raise DemoError(f"--repetitions must be >= 1, got {repetitions}")
    phases = list(phases) if phases is not None else list(phases_for(size))
    thresholds = thresholds or DEFAULT_THRESHOLDS
    for target in (plot, json_path):
        if target is not None:
            parent = Path(target).resolve().parent
            if not parent.is_dir():
                raise DemoError(f"cannot write {target}: the folder {parent} does not exist")

    try:
        variants = check_variants(variants, known)
    except ValueError as exc:
        raise DemoError(f"--variants: {exc}") from None
    console.print(f"[bold]asafe demo[/]: {len(phases)} phases x {len(variants)} variants ({', '.join(variants)}), "
                  f"{repetitions} interleaved rounds (size {size})")
    console.print(f"  phases: {', '.join(p.name for p in phases)} (after a warm-up run of each variant)",
                  markup=False)
    from . import hosts

    topology = None if scheduler_address else hosts.current()
    if scheduler_address:
        console.print(f"  link: the network of the cluster at {scheduler_address} (not shaped by asafe)", markup=False)
    elif topology is not None:
        console.print(f"  links: {topology['n_hosts']} hosts (network namespaces on a bridge), each link "
                      f"{topology.get('rate') or 'unshaped'}; scheduler and client in host 0", markup=False)
    else:
        from .link import summary as link_summary

        console.print(f"  {link_summary()}", markup=False)
    if verbose:
        console.print(f"  adaptive: Hysteresis(alpha={thresholds.alpha:g}, beta={thresholds.beta:g}) on the "
                      f"measured compute/communication ratio, window {thresholds.window} measurements, "
                      f"dwell {thresholds.dwell:g} s and {thresholds.dwell_tasks} tasks, blend {thresholds.blend:g}")
        for line in thresholds.how.splitlines():
            console.print(f"    {line}", markup=False)
        for p in phases:
            console.print(f"  phase {p.name:<15} scale {p.scale:>2} tile {p.tile:>3} dense {p.dense_fraction:>4.0%} "
                          f"fill {p.fill:>4.0%} {p.placement:<7} {p.steps:>2} steps x {p.panels} panels, "
                          f"{p.vectors} vector{'s' if p.vectors > 1 else ''}: {p.description}", markup=False)
    else:
        console.print(f"  adaptive: Hysteresis(alpha={thresholds.alpha:g}, beta={thresholds.beta:g}) on the "
                      "compute/communication ratio (--verbose: how, and the phases)")

    timing: dict[str, Any] = {}
    watch = LoadWatch()
    with connect(scheduler_address, workers, threads_per_worker) as (client, where, startup):
        timing["cluster_start_s"] = startup
        names = sorted(client.nthreads())
        if len(names) < 2:
            raise DemoError(f"the workload ships panels between workers: the cluster has {len(names)} worker(s)")
        console.print(f"  cluster: {where}, started in {startup:.1f} s", markup=False)
        t0 = time.perf_counter()
        expected = [reference(p) for p in phases]
        timing["reference_s"] = time.perf_counter() - t0
        if verbose:
            console.print(f"  scipy references computed in {timing['reference_s']:.1f} s; warm-up runs next "
                          "(numba compilation and matrix generation on the workers, not samples)")
        threads = client.nthreads()
        env = environment(cluster=where, scheduler="distributed", workers=len(names),
                          threads_per_worker=sorted(set(threads.values())),
                          worker_addresses=names)
        display = Display(console, phases, live=console.is_terminal,
                          installed=[v for v in variants if known[v].installed])

        def on_run(variant: str, rep: int, warmup: bool) -> None:
            watch.sample(f"{variant} {'warm-up' if warmup else f'round {rep + 1}'}")
            display.start_run(variant, rep, warmup)

        with display:
            cmp = compare(client, phases, repetitions=repetitions, thresholds=thresholds, workers=names,
                          expected=expected, on_run=on_run, on_step=display.step,
                          on_done=display.done, variants=variants, known=known)
        watch.stop()
    report = build_report(cmp, env=env, timing=timing, size=size, compared=compared, load=watch.report())
    print_summary(console, report, order=list(known))
    if json_path is not None:
        Path(json_path).write_text(json.dumps(report, indent=1))
        console.print(f"wrote {json_path}", markup=False)
    if plot is not None:
        if importlib.util.find_spec("matplotlib") is None:
            console.print(f'{plot} not drawn: the figure needs matplotlib (pip install "asafe[demo]")', markup=False)
        else:
            plot_report(report, plot, known)
            console.print(f"wrote {plot}", markup=False)
    return report
