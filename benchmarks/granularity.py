"""Granularity: the per-task rule beside the global mode as the same matrices are cut into more, smaller panels.

``python -m benchmarks granularity [--panels LIST] [--repetitions N] [--quick] [--out DIR]``

Issue 34, item 2. A per-task rule (:class:`asafe.app.pertask.PerTask`) pays
for every decision it makes: a row sample of the panel, the calibrated costs
and the worker's bandwidth, a fraction of a millisecond per panel. A global
mode decides once for all the panels of a phase. The finer the panels, the
more decisions the rule makes for the same work, and the less each one is
worth. This suite measures where that cost outweighs what it decides, instead
of arguing it.

The work is fixed: two phases of the demo's workload (:mod:`asafe.app.workload`)
on the same matrices, ``2**12`` square cut into 32 x 32 tiles (a grid of 128 tile
rows), three power-iteration steps each:

``gran-shipped-sparse``
    the Graph500 graph, panels made on one worker and multiplied on the other
    (compression pays: a shipped sparse panel shrinks from 8 bytes per element
    to a few per non-zero);
``gran-local-denseish``
    30%-full blocks everywhere, made and used once on the same worker
    (compression does not pay: with one read the cost model keeps every tile
    dense, so the inspection pass is pure cost; a small loss, a few percent of
    the phase, as in the demo's ``local-denseish``).

Only the panel count changes (:attr:`asafe.app.workload.Phase.panels`): each
point of the sweep is those two phases with ``panels=P``, so a panel holds
``128 / P`` tile rows (``128 * 128 / P`` tiles). Default ``P``: 4, 8, 16, 32, 64,
128 (32 tile rows per panel down to one); ``--panels`` takes another
comma-separated list (each between 1 and the grid's tile rows).

At every point the phased suite's machinery runs (:func:`asafe.app.comparison.compare`):
``adaptive`` (the global mode), ``per-task`` (the per-task rule), ``static-on``
and ``static-off``, one warm-up each (timed apart, never a sample), then
``--repetitions`` rounds (default 6; 1 with ``--quick``) in balanced orders
(:func:`asafe.app.stats.balanced_orders`), every phase of every run checked
against scipy. Reported per panel count:

* each variant's median total seconds (and the ``oracle``'s: per phase the
  better static setting, chosen after the fact);
* the paired ratio per-task time / adaptive time (above 1: the global mode is
  faster) with its 95% order-statistic interval (:func:`asafe.app.stats.paired_ratio`)
  and the verdict against the issue's target (:func:`asafe.app.stats.verdict`):
  at least 1.0 at every panel count, and above 1 at the finest (the whole
  interval above 1);
* the per-task rule's decision cost: the seconds its rules spent in their
  estimates (timed inside :class:`~asafe.app.pertask.PerTask`, ``estimate_s`` of
  every logged decision, summed over the run's decisions -- panels x steps x
  phases -- on both workers, so worker seconds, not wall seconds), beside the
  per-task run's total; and the share of panels it compressed per phase.

Results: ``OUT/granularity/granularity.json``, with the environment and the
load average at the start and the end, and ``granularity.png`` (:func:`plot`).
Exit status 1 if any run returned a wrong result.

Duration on the 2-core development machine (shared, load average 3 to 4 when
timed): a run of the two phases takes 1 to 2 s per variant at 4 panels and 7 to
8 s at 128 panels, where 768 small tasks per run dominate; the 128-panel point
alone took 73 s with one round (a warm-up and a round of each variant: 8 runs).
The full sweep (6 points x 4 variants x 7 runs) is estimated at about 10
minutes, half of it at 64 and 128 panels. ``--quick`` (a ``2**10`` matrix, 4 and
32 panels, one round) took 28 s including the cluster's start.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from asafe.app import stats
from asafe.app import workload as wl
from asafe.app.variants import DEFAULT_THRESHOLDS, ORACLE, VARIANTS

from . import harness

__all__ = ["PHASES", "QUICK_PHASES", "PANELS", "QUICK_PANELS", "TARGET", "parse_panels", "sweep_point",
           "decision_cost", "target_rows", "plot", "main"]

#: The two phases, one where compression pays and one where it does not; ``panels`` is set per point.
PHASES: tuple[wl.Phase, ...] = (
    wl.Phase("gran-shipped-sparse", scale=12, tile=32, dense_fraction=0.0, placement="shipped", steps=3,
             vectors=1, description="Graph500 panels made on one worker and multiplied on the other"),
    wl.Phase("gran-local-denseish", scale=12, tile=32, dense_fraction=1.0, fill=0.3, placement="local", steps=3,
             vectors=1, description="30%-full blocks everywhere, made and used once on the same worker"),
)
#: ``--quick``: the same phases on a ``2**10`` matrix (a grid of 32 tile rows), two steps.
QUICK_PHASES: tuple[wl.Phase, ...] = tuple(p.scaled(scale=10, steps=2) for p in PHASES)
#: Panels per matrix of the sweep (32 tile rows per panel down to 1).
PANELS = (4, 8, 16, 32, 64, 128)
QUICK_PANELS = (4, 32)
#: The issue's target: per-task time / adaptive time at least this at every panel count.
TARGET = 1.0


def parse_panels(text: str, grid: int) -> tuple[int, ...]:
    """The panel counts of ``--panels``: whole numbers from 1 to ``grid`` (tile rows), distinct, in ascending order.

    >>> parse_panels("16, 4,128", grid=128)
    (4, 16, 128)
    >>> parse_panels("4,256", grid=128)
    Traceback (most recent call last):
    ...
    ValueError: --panels: 256 is more panels than the matrix has tile rows (128): a panel holds at least one tile row
    >>> parse_panels("4,four", grid=128)
    Traceback (most recent call last):
    ...
    ValueError: --panels: 'four' is not a whole number (a comma-separated list such as 4,16,64)
    """
    items = [item.strip() for item in str(text).split(",")]
    if not any(items):
        raise ValueError("--panels: no panel count given (a comma-separated list such as 4,16,64)")
    out = []
    for item in items:
        try:
            value = int(item)
        except ValueError:
            raise ValueError(f"--panels: {item!r} is not a whole number (a comma-separated list such as 4,16,64)") \
                from None
        if value < 1:
            raise ValueError(f"--panels: {value} is not a panel count >= 1")
        if value > grid:
            raise ValueError(f"--panels: {value} is more panels than the matrix has tile rows ({grid}): "
                             "a panel holds at least one tile row")
        if value in out:
            raise ValueError(f"--panels: {value} is given twice")
        out.append(value)
    return tuple(sorted(out))


def sweep_point(phases: Sequence[wl.Phase], panels: int) -> list[wl.Phase]:
    """The phases of one point of the sweep: the same matrices, ``panels`` row panels each.

    >>> [(p.name, p.panels, p.grid // p.panels) for p in sweep_point(PHASES, 32)]
    [('gran-shipped-sparse', 32, 4), ('gran-local-denseish', 32, 4)]
    """
    return [p.scaled(panels=int(panels)) for p in phases]


def decision_cost(runs: Sequence[Any]) -> dict[str, Any] | None:
    """The per-task rule's decision cost over its measured runs (``VariantRun``-like: ``decisions``, ``seconds``).

    Per run: the decisions made and the seconds spent in their estimates
    (``estimate_s``, summed over both workers); the medians over the runs, the
    mean per decision, and the median share of the run's wall seconds. ``None``
    without a run.

    >>> from types import SimpleNamespace as R
    >>> runs = [R(seconds=2.0, decisions=[{"estimate_s": 0.001}] * 100),
    ...         R(seconds=4.0, decisions=[{"estimate_s": 0.002}] * 100)]
    >>> c = decision_cost(runs)
    >>> c["decisions_per_run"], round(c["estimate_s_per_run"], 3), round(c["ms_per_decision"], 3)
    (100, 0.15, 1.5)
    >>> round(c["share_of_run"], 3)
    0.05
    """
    runs = list(runs)
    if not runs:
        return None
    spent = [sum(d.get("estimate_s") or 0.0 for d in r.decisions) for r in runs]
    made = [len(r.decisions) for r in runs]
    total = sum(made)
    return {"decisions_per_run": int(stats.median(made)), "estimate_s_per_run": stats.median(spent),
            "ms_per_decision": 1000.0 * sum(spent) / total if total else None,
            "share_of_run": stats.median([s / r.seconds for s, r in zip(spent, runs) if r.seconds > 0]),
            "per_run": [{"decisions": m, "estimate_s": s, "run_s": r.seconds} for m, s, r in zip(made, spent, runs)],
            "what": "seconds inside PerTask's estimate (row sample, calibrated costs, bandwidth) summed over the "
                    "run's decisions on both workers: worker seconds, beside the run's wall seconds"}


def target_rows(points: Sequence[dict[str, Any]], target: float = TARGET) -> dict[str, Any]:
    """The issue's verdicts from the points' paired ratios (per-task / adaptive).

    At every panel count the ratio should be at least ``target``
    (:func:`asafe.app.stats.verdict`); at the finest (the most panels) the whole
    interval should lie above 1 (``faster_at_finest``). An interval that does
    not reach 95% (``exact`` false: fewer than 6 rounds) shows nothing.

    >>> pts = [{"panels": 4, "per_task_vs_adaptive": {"ci95": [0.97, 1.04]}},
    ...        {"panels": 128, "per_task_vs_adaptive": {"ci95": [1.1, 1.3]}}]
    >>> t = target_rows(pts)
    >>> t["verdicts"], t["all"], t["faster_at_finest"]
    ({4: 'not shown', 128: 'met'}, 'not shown', 'met')
    >>> pts[1]["per_task_vs_adaptive"]["exact"] = False   # one round: no 95% interval
    >>> target_rows(pts)["faster_at_finest"]
    'not shown'
    """
    verdicts = {p["panels"]: stats.verdict(_shown(p), target) for p in points}
    out: dict[str, Any] = {"target": f"per-task / adaptive >= {target:g} at every panel count, > 1 at the finest",
                           "verdicts": verdicts,
                           "all": stats.combine_verdicts(list(verdicts.values())) if verdicts else "not shown"}
    if points:
        finest = max(points, key=lambda p: p["panels"])
        out["finest_panels"] = finest["panels"]
        interval = _shown(finest)
        if interval is None:
            out["faster_at_finest"] = "not shown"
        else:
            low, high = interval
            out["faster_at_finest"] = "met" if low > 1.0 else "not met" if high <= 1.0 else "not shown"
    return out


def _shown(point: dict[str, Any]) -> Any:
    """A point's interval where it reaches 95% (``exact``, true where not said), else ``None``: nothing shown."""
    paired = point["per_task_vs_adaptive"]
    return paired["ci95"] if paired.get("exact", True) else None


def _point_report(cmp: Any, panels: int, grid: int) -> dict[str, Any]:
    names = (*cmp.variants, ORACLE)
    totals = {v: cmp.totals(v) for v in names}
    paired = stats.paired_ratio_ci(totals["per-task"], totals["adaptive"])  # paired_ratio with its coverage
    ratio, ci, exact, cov = paired.ratio, paired.ci, paired.exact, paired.coverage
    measured = [r for r in cmp.runs if r.variant == "per-task"]
    return {
        "panels": panels, "tile_rows_per_panel": grid / panels,
        "tiles_per_panel": grid * grid / panels,
        "median_s": {v: stats.median(x) for v, x in totals.items()},
        "seconds": totals,
        "per_phase_median_s": {v: cmp.phase_medians(v) for v in names},
        "per_task_vs_adaptive": {"ratio": ratio, "ci95": list(ci), "exact": exact, "coverage": cov,
                                 "verdict": stats.verdict(ci if exact else None, TARGET)},
        "decision_cost": decision_cost(measured),
        "compressed_share": cmp.compressed_share("per-task"),
        "correct": {v: cmp.correct(v) for v in names}, "errors": cmp.errors(),
        "warmup_s": cmp.warmup_seconds, "transitions_per_phase": cmp.transitions_per_phase(),
    }


def _print_point(point: dict[str, Any]) -> None:
    med, pt, cost = point["median_s"], point["per_task_vs_adaptive"], point["decision_cost"]
    low, high = pt["ci95"]
    print(f"  {point['panels']:4d} panels ({point['tile_rows_per_panel']:g} tile rows each): "
          + ", ".join(f"{v} {s:.3f} s" for v, s in med.items()), flush=True)
    print(f"       per-task / adaptive {pt['ratio']:.3f} [{low:.3f}, {high:.3f}] "
          f"({stats.format_coverage(pt['coverage'])}{'' if pt['exact'] else ', too few rounds for 95%'}; "
          f">= {TARGET:g}: {pt['verdict']})", flush=True)
    if cost:
        print(f"       per-task estimates: {cost['decisions_per_run']} per run x {cost['ms_per_decision']:.3f} ms = "
              f"{cost['estimate_s_per_run']:.3f} worker-s per run, beside its {med['per-task']:.3f} s "
              f"({cost['share_of_run']:.1%}); compressed per phase "
              + " ".join("-" if x is None else f"{x:.0%}" for x in point["compressed_share"]), flush=True)


def plot(results: dict[str, Any], path: Path) -> Path:
    """Draw the sweep: each variant's median against the panel count, and per-task / adaptive with its interval.

    Agg canvas, no pyplot state (as :meth:`benchmarks.harness.Results.figure`).
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    points = results["points"]
    panels = [p["panels"] for p in points]
    fig = Figure(figsize=(11, 4.5), layout="constrained")
    times, ratio = fig.subplots(1, 2)
    for variant in (*results["settings"]["variants"], ORACLE):
        times.plot(panels, [p["median_s"][variant] for p in points], marker="o",
                   linestyle="--" if variant == ORACLE else "-", label=variant)
    costs = [p["decision_cost"]["estimate_s_per_run"] if p["decision_cost"] else float("nan") for p in points]
    times.plot(panels, costs, marker="x", color="black", linestyle=":", label="per-task estimates (worker-s)")
    times.set(xscale="log", yscale="log", xlabel="panels per matrix", ylabel="seconds per run (median)",
              title="the same matrices, finer panels")
    times.set_xticks(panels, [str(x) for x in panels])
    times.xaxis.set_minor_locator(NullLocator())
    times.legend(fontsize=8)
    mid = [p["per_task_vs_adaptive"]["ratio"] for p in points]
    low = [m - p["per_task_vs_adaptive"]["ci95"][0] for m, p in zip(mid, points)]
    high = [p["per_task_vs_adaptive"]["ci95"][1] - m for m, p in zip(mid, points)]
    ratio.errorbar(panels, mid, yerr=[low, high], marker="o", capsize=4, label="per-task / adaptive (95% CI)")
    ratio.axhline(TARGET, color="grey", linestyle="--", label=f"target >= {TARGET:g}")
    ratio.set(xscale="log", xlabel="panels per matrix", ylabel="per-task time / adaptive time",
              title="above 1: the global mode is faster")
    ratio.set_xticks(panels, [str(x) for x in panels])
    ratio.xaxis.set_minor_locator(NullLocator())
    ratio.legend(fontsize=8)
    fig.savefig(path, dpi=120)
    return path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks granularity", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.add_common_arguments(parser)
    parser.add_argument("--panels", default=None, metavar="LIST",
                        help=f"panels per matrix, comma-separated (default: {','.join(map(str, PANELS))}; "
                             f"--quick: {','.join(map(str, QUICK_PANELS))})")
    parser.add_argument("--repetitions", type=harness.positive_int, default=None, metavar="N",
                        help="interleaved rounds per panel count (default 6, 1 with --quick)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweep; print each point; write granularity.json."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    phases = QUICK_PHASES if args.quick else PHASES
    grid = phases[0].grid
    try:
        panels = parse_panels(args.panels, grid) if args.panels is not None else (
            QUICK_PANELS if args.quick else PANELS)
    except ValueError as exc:
        print(f"granularity: {exc}", file=sys.stderr)
        return 2
    repetitions = args.repetitions or (1 if args.quick else 6)

    from asafe.app import demo, environment
    from asafe.app.comparison import compare

    results: dict[str, Any] = {
        "environment": environment.environment(), "load_average_start": os.getloadavg(),
        "settings": {"panels": list(panels), "repetitions": repetitions, "quick": args.quick, "grid": grid,
                     "variants": list(VARIANTS), "phases": [p.as_dict() for p in phases],
                     "thresholds": DEFAULT_THRESHOLDS.as_dict(), "workers": 2, "threads_per_worker": 1},
        "points": [],
    }
    if args.quick:
        results["warning"] = "--quick: a small matrix and one round, a smoke run, not a result to report"
    print(f"granularity: panels {', '.join(map(str, panels))} of a {phases[0].n} x {phases[0].n} matrix "
          f"({grid} tile rows of {phases[0].tile}), {repetitions} round(s); load average "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cpus", flush=True)
    began = time.perf_counter()
    with demo.connect(None, 2, 1) as (client, where, startup):
        print(f"cluster: {where}, started in {startup:.1f} s", flush=True)
        results["cluster_start_s"] = startup
        expected = [wl.reference(p) for p in phases]  # the matrices do not depend on the panel count
        for count in panels:
            cmp = compare(client, sweep_point(phases, count), repetitions=repetitions,
                          thresholds=DEFAULT_THRESHOLDS, expected=expected, variants=VARIANTS)
            point = _point_report(cmp, count, grid)
            results["points"].append(point)
            _print_point(point)
            for error in point["errors"]:
                print(f"  FAILED: {error}", flush=True)
    results["targets"] = target_rows(results["points"])
    results["correct"] = all(all(p["correct"].values()) for p in results["points"])
    results["seconds"] = time.perf_counter() - began
    results["load_average_end"] = os.getloadavg()
    t = results["targets"]
    print(f"targets: per-task / adaptive >= {TARGET:g} at every panel count: {t['all']} "
          f"({', '.join(f'{k}: {v}' for k, v in t['verdicts'].items())}); faster at the finest "
          f"({t.get('finest_panels')} panels): {t.get('faster_at_finest')}", flush=True)
    out = Path(args.out) / "granularity"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "granularity.json"
    results["figure"] = str(out / "granularity.png")
    path.write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
    plot(results, out / "granularity.png")
    print(f"results: {path} and granularity.png ({results['seconds']:.0f} s; "
          f"{'all correct' if results['correct'] else 'WRONG results'})")
    return 0 if results["correct"] else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
