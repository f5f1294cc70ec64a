"""The ``overhead`` suite: what asafe's tracking costs the schedulers it watches.

``python -m benchmarks overhead [--quick] [--section NAME ...] [--floor] [--python-hooks] [--clock wall|cpu]``

Headline (sections ``threads`` and ``sync``)
    ``dask.compute`` of one graph of 20,000 trivial tasks, built once and reused:
    10,000 ``inc(i)`` leaves, a binary tree of 9,999 ``add`` tasks reducing them,
    and one final ``inc``. Two variants are measured side by side, interleaved, on
    the same graph (rules 5 and 7 of ``docs/benchmarking.rst``: whole ``dask.compute``
    call, graph handling included):

    * ``plain``: ``dask.compute(total, scheduler=S)``;
    * ``adaptive``: ``with asafe.adaptive(rt, scheduler=S): dask.compute(total)``,
      ``rt`` an :class:`asafe.AdaptiveRuntime` with the default settings and one
      optimization (``compression``, ``Hysteresis(0.5, 2.0)``), created once, the
      context entered per call (as a user running one computation pays it).

    Each result is checked against the closed form (rule 1); the adaptive result
    also has to show that the tracker saw every task (an overhead of zero from a
    tracker that is not wired in would be a lie). ``--floor`` adds a third variant,
    ``noop-callbacks``: Dask with a :class:`dask.callbacks.Callback` whose four hooks
    do nothing, i.e. the cost of Dask's callback mechanism alone. ``adaptive`` runs
    the per-task hooks that a user gets by default: compiled (``asafe.schedulers._hotpath``)
    where it was built, recorded as ``hooks`` in the parameters;
    ``--python-hooks`` adds ``adaptive-python``, the same with the pure-Python
    hooks (``asafe.local.compiled-hooks: false``), measured in the same rounds.

    Reported: medians with 95% CIs, the ratio ``adaptive / plain`` with its
    bootstrap interval and a Mann-Whitney test, the per-task overhead, and the
    verdict against the target (at most 5% slower): *met* when the whole interval
    is <= 1.05, *exceeded* when it is all above, *inconclusive* otherwise. The
    per-round (paired) ratio is printed too: on a shared machine it is tighter.

    The clock is wall time (``--clock wall``, the headline: what a user waits).
    ``--clock cpu`` times the process's CPU time instead (all threads): the cost,
    far less disturbed by other tenants of a shared machine; for the threaded
    scheduler it also counts worker threads, so it is cost, not latency.

Diagnostics (section ``profile``, not run by default)
    cProfile of one plain and one adaptive 20k-task run per scheduler; prints the
    own time of asafe's functions (``asafe/schedulers/local.py``, ``tracker.py``,
    ``runtime.py``, ...). cProfile inflates the cost of small Python functions, so
    those are upper bounds to locate the time, not timings.

Sections are a registry (:data:`SECTIONS`, filled with :func:`section`); the
command line runs those named with ``--section`` (default: every section marked
``default=True``). Output: a console table per section, ``<out>/overhead/results.json``
and ``<out>/overhead/overhead.png`` (samples per variant, box + strip, median CI).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import add
from pathlib import Path
from typing import Any

from . import harness
from .harness import Measurement, Results, format_seconds, format_table, measure, speedup, summary_table

__all__ = ["SECTIONS", "Section", "Context", "section", "build_graph", "expected_total", "main"]

#: The target of the foundation issue: adaptive at most 5% slower than plain Dask.
TARGET_SLOWDOWN = 1.05


# --------------------------------------------------------------------------- registry
@dataclass
class Context:
    """What a section gets: parsed options, the results to add to, shared settings."""

    args: argparse.Namespace
    results: Results
    n_tasks: int
    max_seconds: float
    rel_ci: float
    min_samples: int
    figures: dict[str, dict[str, Measurement]] = field(default_factory=dict)  # title -> measurements


@dataclass(frozen=True)
class Section:
    """A named measurement of the suite."""

    name: str
    help: str
    run: Callable[[Context], None]
    default: bool = True


#: Every section of the suite, in run order (name -> Section).
SECTIONS: dict[str, Section] = {}


def section(name: str, help: str, *, default: bool = True) -> Callable[[Callable[[Context], None]], Callable[[Context], None]]:
    """Register ``fn(ctx)`` as the section ``name`` (``--section name`` picks it)."""

    def register(fn: Callable[[Context], None]) -> Callable[[Context], None]:
        if name in SECTIONS:
            raise ValueError(f"overhead section {name!r} is registered twice")
        SECTIONS[name] = Section(name, help, fn, default)
        return fn

    return register


# --------------------------------------------------------------------------- the workload
def inc(x: int) -> int:
    """A trivial task."""
    return x + 1


def build_graph(n_tasks: int = 20_000) -> tuple[Any, int]:
    """One Dask collection of exactly ``n_tasks`` trivial tasks, and its task count.

    ``L = n_tasks // 2`` leaves ``inc(i)``, a binary tree of ``L - 1`` ``add``
    tasks reducing them, and a final task: ``inc(root)`` (even ``n_tasks``) or
    ``add(root, inc(L))`` (odd, one more leaf). Tasks are converted to Dask's task
    spec once here, so each ``dask.compute`` does not convert the graph again.
    """
    if not isinstance(n_tasks, int) or n_tasks < 4:
        raise ValueError(f"n_tasks must be an int >= 4, got {n_tasks!r}")
    from dask.delayed import Delayed

    leaves = n_tasks // 2
    graph: dict[Any, Any] = {("inc", i): (inc, i) for i in range(leaves)}
    level = [("inc", i) for i in range(leaves)]
    depth = 0
    while len(level) > 1:
        nxt = []
        for j in range(0, len(level) - 1, 2):
            key = ("add", depth, j // 2)
            graph[key] = (add, level[j], level[j + 1])
            nxt.append(key)
        if len(level) % 2:
            nxt.append(level[-1])
        level, depth = nxt, depth + 1
    final = "overhead-total"
    if n_tasks % 2:
        graph[("inc", leaves)] = (inc, leaves)
        graph[final] = (add, level[0], ("inc", leaves))
    else:
        graph[final] = (inc, level[0])
    try:  # private in dask, but it is what dask.delayed produces; fall back to tuples
        from dask._task_spec import convert_legacy_graph

        graph = convert_legacy_graph(graph)
    except Exception:
        pass
    return Delayed(final, graph), len(graph)


def expected_total(n_tasks: int) -> int:
    """The value of :func:`build_graph`'s result, in closed form (the reference)."""
    leaves = n_tasks // 2
    tree = leaves * (leaves + 1) // 2  # sum of inc(i) for i < leaves
    return tree + (leaves + 1 if n_tasks % 2 else 1)


def _runtime() -> Any:
    import asafe

    return asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))])


def _runtime_settings(rt: Any) -> dict[str, Any]:
    tracker = rt.tracker
    return {
        "optimizations": {name: repr(opt) for name, opt in rt.optimizations.items()},
        "window": tracker.window, "blend": tracker.blend, "default_duration_s": tracker.default_duration,
        "interval_s": rt.interval, "dwell_s": rt.dwell, "dwell_tasks": rt.dwell_tasks,
        "default_type": rt.default_type, "signals": getattr(rt, "_signals", None) is not None,
        "chosen": "asafe defaults (asafe.yaml); not tuned for this benchmark",
    }


def _default_hooks(rt: Any) -> str:
    """Which per-task hooks the ``adaptive`` variant runs: what a user gets by default."""
    from asafe.schedulers.local import _TrackingCallback

    return "compiled (asafe.schedulers._hotpath)" if _TrackingCallback(rt).compiled else "python"


def warn_without_compiled_hooks(results: Results) -> None:
    """Warn when the imported asafe has no compiled hooks: ``adaptive`` then measures the Python ones.

    Running from a checkout imports the checkout's ``asafe`` folder, which holds
    the compiled module only after ``pip install -e .`` (a plain ``pip install .``
    builds it into site-packages).
    """
    import asafe
    from asafe.schedulers import local

    if not local.compiled_hooks_built():
        results.warn(f"asafe imported from {Path(asafe.__file__).parent} has no compiled hooks (asafe.schedulers._hotpath "
                     "is not built there): 'adaptive' measures the pure-Python hooks; build them in place with "
                     "pip install -e .", kind="HOOKS")


def _noop_callback() -> Any:
    from dask.callbacks import Callback

    def nothing(*args: Any) -> None:
        return None

    return Callback(start=nothing, start_state=nothing, pretask=nothing, posttask=nothing, finish=nothing)


def _variants(scheduler: str, total: Any, n_tasks: int, floor: bool,
              python_hooks: bool = False) -> tuple[dict[str, Callable[[], Any]], Callable[[str, Any], None], Any]:
    """The variants of one scheduler section, their check, and the runtime."""
    import asafe
    import dask

    rt = _runtime()
    expected = expected_total(n_tasks)

    def plain() -> tuple[int, int]:
        return dask.compute(total, scheduler=scheduler)[0], 0

    def adaptive() -> tuple[int, int]:
        before = rt.tracker.finished
        with asafe.adaptive(rt, scheduler=scheduler):
            value = dask.compute(total)[0]
        return value, rt.tracker.finished - before

    variants: dict[str, Callable[[], Any]] = {"plain": plain, "adaptive": adaptive}
    if python_hooks:
        def adaptive_python() -> tuple[int, int]:
            with dask.config.set({"asafe.local.compiled-hooks": False}):
                return adaptive()

        variants["adaptive-python"] = adaptive_python
    if floor:
        callback = _noop_callback()

        def noop_callbacks() -> tuple[int, int]:
            with callback:
                return dask.compute(total, scheduler=scheduler)[0], 0

        variants["noop-callbacks"] = noop_callbacks

    def check(name: str, result: tuple[int, int]) -> None:
        value, tracked = result
        if value != expected:
            raise AssertionError(f"{name}: dask.compute returned {value!r}, expected {expected}")
        if name.startswith("adaptive") and tracked != n_tasks:
            raise AssertionError(f"{name}: the tracker saw {tracked} finished tasks, expected {n_tasks}")

    return variants, check, rt


# --------------------------------------------------------------------------- reporting
def verdict(slowdown_ci: tuple[float, float], target: float = TARGET_SLOWDOWN) -> str:
    """``met`` if the whole interval is <= target, ``exceeded`` if all above, else inconclusive."""
    low, high = slowdown_ci
    if high <= target:
        return "met"
    if low > target:
        return "exceeded"
    return "inconclusive (the interval contains the target)"


def _scheduler_section(ctx: Context, scheduler: str, title: str) -> None:
    import dask

    total, n_tasks = build_graph(ctx.n_tasks)
    variants, check, rt = _variants(scheduler, total, n_tasks, ctx.args.floor, ctx.args.python_hooks)
    print(f"\n== {title}: dask.compute of {n_tasks:,} trivial tasks, scheduler={scheduler!r}, "
          f"{ctx.args.clock} clock ==", flush=True)
    started = time.perf_counter()
    timer = time.process_time if ctx.args.clock == "cpu" else time.perf_counter
    measurements = measure(variants, check=check, rel_ci=ctx.rel_ci, min_samples=ctx.min_samples,
                           max_samples=200, max_seconds=ctx.max_seconds, warmup=1, timer=timer)
    wall = time.perf_counter() - started
    print(summary_table(measurements))
    parameters = {
        "scheduler": scheduler, "n_tasks": n_tasks, "graph": "L inc leaves + binary add tree + final inc",
        "num_workers": dask.config.get("num_workers", None) or os.cpu_count(),
        "runtime": _runtime_settings(rt), "wall_s": wall, "hooks": _default_hooks(rt),
        "measured": "whole dask.compute call (graph optimization, ordering, scheduling, tasks); "
                    "first call of each variant is the warm-up, reported apart",
        "clock": "wall: time.perf_counter" if ctx.args.clock == "wall" else "cpu: time.process_time (all threads)",
    }
    record: dict[str, Any] = {"parameters": parameters, "measurements": measurements}
    plain, adaptive = measurements["plain"], measurements["adaptive"]
    if plain.ok and adaptive.ok:
        s = speedup(plain, adaptive)
        slow, (lo, hi) = s.slowdown, s.slowdown_ci95
        per_task = (adaptive.median - plain.median) / n_tasks
        result = verdict((lo, hi))
        record["comparison"] = s
        record["overhead"] = {
            "slowdown": slow, "slowdown_ci95": [lo, hi], "overhead_pct": 100 * (slow - 1),
            "overhead_pct_ci95": [100 * (lo - 1), 100 * (hi - 1)], "per_task_s": per_task,
            "target_slowdown": TARGET_SLOWDOWN, "verdict": result,
        }
        print(f"adaptive / plain = {slow:.3f} [{lo:.3f}, {hi:.3f}]  ->  overhead {100 * (slow - 1):+.1f}% "
              f"[{100 * (lo - 1):+.1f}%, {100 * (hi - 1):+.1f}%], {format_seconds(per_task)} per task")
        print(f"  base: plain {format_seconds(plain.median)} [{format_seconds(plain.ci95[0])}, "
              f"{format_seconds(plain.ci95[1])}]; Mann-Whitney p={s.p_value:.3g}; "
              f"{'significant' if s.significant else 'not significant'}")
        if s.paired_ratio is not None:
            p_lo, p_hi = 1 / s.paired_ci95[1], 1 / s.paired_ci95[0]
            record["overhead"]["paired_slowdown"] = 1 / s.paired_ratio
            record["overhead"]["paired_slowdown_ci95"] = [p_lo, p_hi]
            print(f"  paired (per-round) adaptive / plain = {1 / s.paired_ratio:.3f} [{p_lo:.3f}, {p_hi:.3f}]")
        print(f"  target <= {100 * (TARGET_SLOWDOWN - 1):.0f}% slower: {result} (on the ratio of medians)")
        if result != "met":
            ctx.results.warn(f"{title}: overhead target not shown to be met ({result})", kind="TARGET")
        for name, field, what in (("noop-callbacks", "floor", "Dask's callback mechanism alone"),
                                  ("adaptive-python", "python_hooks", "the pure-Python hooks")):
            other = measurements.get(name)
            if other is not None and other.ok:
                record[field] = speedup(plain, other)
                print(f"  {name} / plain = {record[field].slowdown:.3f} [{record[field].slowdown_ci95[0]:.3f}, "
                      f"{record[field].slowdown_ci95[1]:.3f}] ({what})")
    ctx.results.add(scheduler, record)
    ctx.figures[title] = measurements


@section("threads", "threaded scheduler: 20k trivial tasks with and without asafe.adaptive")
def threads(ctx: Context) -> None:
    """The headline: tracking overhead on Dask's threaded scheduler."""
    _scheduler_section(ctx, "threads", "threaded scheduler")


@section("sync", "synchronous scheduler: the same graph, with and without asafe.adaptive")
def sync(ctx: Context) -> None:
    """The same on the synchronous scheduler (no thread pool: the overhead is least hidden)."""
    _scheduler_section(ctx, "sync", "synchronous scheduler")


@section("profile", "cProfile of one plain and one adaptive run per scheduler: asafe's own time", default=False)
def profile(ctx: Context) -> None:
    """Where asafe's time goes (diagnostic: cProfile inflates small functions)."""
    total, n_tasks = build_graph(ctx.n_tasks)
    record = {}
    for scheduler in ("threads", "sync"):
        variants, check, _ = _variants(scheduler, total, n_tasks, floor=False)
        record[scheduler] = {}
        for name in ("plain", "adaptive"):
            check(name, variants[name]())  # warm-up, checked
            profiler = cProfile.Profile()
            profiler.enable()
            result = variants[name]()
            profiler.disable()
            check(name, result)
            record[scheduler][name] = _profile_summary(profiler, n_tasks)
        p, a = record[scheduler]["plain"], record[scheduler]["adaptive"]
        print(f"\n== profile, scheduler={scheduler!r}: plain {p['total_s']:.3f} s, adaptive {a['total_s']:.3f} s "
              f"under cProfile; asafe's own time {a['asafe_s']:.3f} s = {1e6 * a['asafe_per_task_s']:.2f} us/task ==")
        print(format_table(a["by_file"], ["file", "own_s", "us_per_task"]))
        print(format_table(a["top"][:12], ["function", "calls", "own_s", "cum_s"]))
        path = ctx.results.dir / f"profile-{scheduler}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(a.pop("text"), encoding="utf-8")
        p.pop("text")
        print(f"  full profile: {path}")
    ctx.results.add("profile", record)


def _profile_summary(profiler: cProfile.Profile, n_tasks: int) -> dict[str, Any]:
    stats = pstats.Stats(profiler)
    by_file: dict[str, float] = {}
    top = []
    for (filename, line, func), (cc, nc, tt, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        norm = filename.replace(os.sep, "/")
        if "/asafe/" not in norm or "/benchmarks/" in norm:
            continue
        short = norm[norm.rindex("/asafe/") + 1:]
        by_file[short] = by_file.get(short, 0.0) + tt
        top.append({"function": f"{short}:{line}({func})", "calls": nc, "own_s": tt, "cum_s": ct})
    top.sort(key=lambda r: -r["own_s"])
    asafe_s = sum(by_file.values())
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(40)
    return {
        "total_s": stats.total_tt,  # type: ignore[attr-defined]
        "asafe_s": asafe_s, "asafe_per_task_s": asafe_s / n_tasks,
        "by_file": [{"file": f, "own_s": t, "us_per_task": 1e6 * t / n_tasks}
                    for f, t in sorted(by_file.items(), key=lambda kv: -kv[1])],
        "top": top[:25], "text": text.getvalue(),
    }


# --------------------------------------------------------------------------- a Dask cluster
# The measurements live in benchmarks/cluster.py (also runnable alone as
# ``python -m benchmarks cluster``); these sections run them on one LocalCluster
# of 2 worker processes x 1 thread so the overhead suite reports every scheduler.
@section("cluster", "LocalCluster: 10k small tasks with and without asafe's plugins")
def cluster_overhead(ctx: Context) -> None:
    """Per-task cost of the scheduler and worker plugins, side by side."""
    from . import cluster

    n_tasks = 2_000 if ctx.args.quick else 10_000
    started = time.perf_counter()
    with cluster.local_cluster() as (local, client):
        ctx.results.add("cluster_start_s", time.perf_counter() - started)
        record = cluster.plugin_overhead(client, n_tasks, cluster=local, rel_ci=ctx.rel_ci,
                                         min_samples=3 if ctx.args.quick else ctx.min_samples,
                                         max_seconds=ctx.max_seconds)
    ctx.results.add("cluster", record)
    ctx.figures["LocalCluster, 2 workers"] = record["measurements"]
    print(f"\n== LocalCluster (2 worker processes x 1 thread): {n_tasks:,} small tasks ==")
    print(summary_table(record["measurements"]))
    print(f"asafe / plain = {record['slowdown']:.3f} [{record['slowdown_ci95'][0]:.3f}, "
          f"{record['slowdown_ci95'][1]:.3f}]: {record['verdict']}; "
          f"{format_seconds(record['per_task_overhead_s'])} per task")


@section("propagation", "LocalCluster: delay from the scheduler's decision to every worker (median, p99)")
def propagation(ctx: Context) -> None:
    """State propagation delay, one sample per (transition, worker); target p99 < 100 ms."""
    from . import cluster

    with cluster.local_cluster() as (_, client):
        record = cluster.propagation_delay(client, 50 if ctx.args.quick else 200)
    ctx.results.add("propagation", record)
    print(f"\n== state propagation on a LocalCluster (2 workers) ==\n"
          f"median {format_seconds(record['median_s'])}, p95 {format_seconds(record['p95_s'])}, "
          f"p99 {format_seconds(record['p99_s'])}, max {format_seconds(record['max_s'])} over "
          f"{record['measurement'].n} deliveries (target p99 < 100 ms); lost {record['lost']}")


# --------------------------------------------------------------------------- command line
def _parser() -> argparse.ArgumentParser:
    lines = [f"  {s.name:<9} {s.help}{'' if s.default else '  (only when named)'}" for s in SECTIONS.values()]
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks overhead",
        description="Cost of asafe's tracking on Dask's schedulers (target: at most 5% slower).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="sections:\n" + "\n".join(lines),
    )
    harness.add_common_arguments(parser, max_seconds=120.0)
    parser.add_argument("--section", action="append", choices=list(SECTIONS), metavar="NAME",
                        help="run this section (repeatable; default: every default section)")
    parser.add_argument("--tasks", type=int, default=None, metavar="N",
                        help="tasks in the graph (default: 20000; 4000 with --quick)")
    parser.add_argument("--min-samples", type=int, default=7, metavar="N",
                        help="fewest samples per variant (default: %(default)s)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="wall: time.perf_counter, end-to-end latency (default, the headline); cpu: "
                             "time.process_time of the whole process, the CPU cost of all threads, much less "
                             "sensitive to other tenants of a shared machine")
    parser.add_argument("--floor", action="store_true",
                        help="also measure Dask with no-op callbacks (the callback mechanism's own cost)")
    parser.add_argument("--python-hooks", action="store_true",
                        help="also measure asafe with its pure-Python per-task hooks (adaptive-python)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected sections, print tables, write results.json and overhead.png."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    n_tasks = args.tasks or (4_000 if args.quick else 20_000)
    max_seconds = min(args.max_seconds, 15.0) if args.quick else args.max_seconds
    names = args.section or [s.name for s in SECTIONS.values() if s.default]
    results = Results("overhead", args.out)
    results.set_environment(suite_options={"sections": names, "n_tasks": n_tasks, "quick": args.quick,
                                           "max_seconds": max_seconds, "rel_ci": args.rel_ci,
                                           "min_samples": args.min_samples, "floor": args.floor,
                                           "python_hooks": args.python_hooks,
                                           "clock": args.clock})
    ctx = Context(args, results, n_tasks, max_seconds, args.rel_ci, args.min_samples)
    print(f"overhead suite: sections {', '.join(names)}; {n_tasks:,} tasks; budget {max_seconds:g} s "
          f"per section; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} on "
          f"{os.cpu_count()} cpus (shared machines are noisy: trust the side-by-side ratios)")
    if args.quick:
        results.warn("--quick: a smoke run with a small graph and budget, not a result to report", kind="QUICK")
    warn_without_compiled_hooks(results)
    for name in names:
        SECTIONS[name].run(ctx)
    if ctx.figures:
        _draw(results, ctx.figures)
    path = results.save()
    print(f"\nwrote {path}" + "".join(f"\nwrote {f}" for f in results.figures))
    return 0


def _draw(results: Results, figures: dict[str, dict[str, Measurement]]) -> None:
    with results.figure("overhead", figsize=(5 * len(figures), 4.5)) as (fig, _):
        axes = fig.subplots(1, len(figures), squeeze=False)[0]
        for ax, (title, measurements) in zip(axes, figures.items()):
            medians = [m.median for m in measurements.values() if m.ok]
            scale, unit = (1.0, "s") if medians and max(medians) >= 1.0 else (1e-3, "ms")
            harness.plot_samples(ax, measurements, scale=scale, unit=unit, title=title)
        fig.suptitle("asafe tracking overhead: dask.compute per call (box, samples, median 95% CI)")


if __name__ == "__main__":
    sys.exit(main())
