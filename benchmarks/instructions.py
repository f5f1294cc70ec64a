"""Instructions per compute of asafe's tracking, counted by cachegrind: the overhead suite's workload, without the noise.

The ``overhead`` suite times ``dask.compute`` of 20,000 trivial tasks with and
without :func:`asafe.adaptive`; on shared machines its intervals are a few
percent wide. The number of instructions executed is deterministic to a few
parts in ten thousand, so this suite counts them: for every variant it runs
the same workload (:func:`benchmarks.overhead.build_graph`) in a child Python
under ``valgrind --tool=cachegrind``, once with one compute and once with
three. Half the difference is one compute in steady state: start-up, imports
and the first compute's warm-up cancel out.

Counts are not exactly repeatable: object addresses (and so the layout of
dicts and sets keyed by them), garbage collections and the number of
evaluations (on a clock) differ between runs, by about 0.3% of a compute
(string hashes are fixed with ``PYTHONHASHSEED=0``). So every count is taken
``--repeat`` times, the variants interleaved, and the suite reports the median
per compute with the range over repeats, and the median and range of the
per-repeat differences to ``plain``.

Variants: ``plain`` (Dask alone), ``adaptive`` (the compiled hooks, what a user
gets) and ``adaptive-python`` (``asafe.local.compiled-hooks`` false).

Valgrind runs the program about ``--slowdown`` (default 50) times slower, so the
runtime's two intervals are scaled by that factor in the child (the controller's
evaluation interval and the psutil sampling interval, through ``DASK_ASAFE__...``
variables): the number of evaluations and of psutil samples per compute then
stays about what it is in a native run.

What a count leaves out: instructions are not time. Cache misses, branch
mispredictions and the hand-offs of the GIL between the scheduler's thread and
its workers are not in them, and on the threaded scheduler valgrind runs one
thread at a time. They are the reproducible part of the cost; the ``overhead``
suite measures the rest.

Needs ``valgrind`` on the PATH (not a Python package: ``apt install valgrind``).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .harness import Results, add_common_arguments
from .overhead import warn_without_compiled_hooks

__all__ = ["VARIANTS", "child_command", "count_instructions", "main", "per_compute", "scaled_intervals"]

#: What each variant runs inside the child, given ``total`` (the collection) and ``rt`` (a runtime).
VARIANTS: dict[str, str] = {
    "plain": "dask.compute(total, scheduler=scheduler)",
    "adaptive": textwrap.dedent("""\
        with asafe.adaptive(rt, scheduler=scheduler):
            dask.compute(total)"""),
    "adaptive-python": textwrap.dedent("""\
        with dask.config.set({"asafe.local.compiled-hooks": False}), asafe.adaptive(rt, scheduler=scheduler):
            dask.compute(total)"""),
}

_CHILD = """\
import sys
scheduler, computes, n_tasks, asafe_root, checkout = sys.argv[1:6]
computes, n_tasks = int(computes), int(n_tasks)
sys.path.insert(0, asafe_root)  # the parent's asafe, installed or in a checkout
sys.path.append(checkout)  # the workload (benchmarks.overhead)
import dask
import asafe
from benchmarks.overhead import _runtime, build_graph, expected_total
total, _ = build_graph(n_tasks)
rt = _runtime()
for _ in range(computes):
{body}
assert dask.compute(total, scheduler="sync")[0] == expected_total(n_tasks)
"""

_SUMMARY = re.compile(r"^summary:\s+(\d+)", re.MULTILINE)
_SCHEDULERS = ("threads", "sync")


def scaled_intervals(slowdown: float) -> dict[str, str]:
    """The ``DASK_ASAFE__...`` variables that stretch asafe's intervals by ``slowdown``.

    >>> scaled_intervals(50.0)["DASK_ASAFE__CONTROLLER__INTERVAL"]
    '0.5s'
    """
    import dask
    from dask.utils import parse_timedelta

    import asafe  # noqa: F401  (registers asafe.yaml's defaults)

    if not slowdown >= 1.0:
        raise ValueError(f"slowdown must be >= 1, got {slowdown!r}")
    keys = {"DASK_ASAFE__CONTROLLER__INTERVAL": "asafe.controller.interval",
            "DASK_ASAFE__SIGNALS__INTERVAL": "asafe.signals.interval"}
    return {env: f"{parse_timedelta(dask.config.get(key)) * slowdown:g}s" for env, key in keys.items()}


def count_instructions(variant: str, scheduler: str, computes: int, n_tasks: int, env: dict[str, str]) -> int:
    """Instructions executed by a child Python that runs ``variant`` ``computes`` times (all threads)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {sorted(VARIANTS)}")
    if scheduler not in _SCHEDULERS:
        raise ValueError(f"scheduler must be one of {list(_SCHEDULERS)}, got {scheduler!r}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cachegrind.out"
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                   *child_command(variant, scheduler, computes, n_tasks)]
        done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{variant} on {scheduler} failed under valgrind:\n{done.stderr[-3000:]}")
        return _summary(out.read_text())


def child_command(variant: str, scheduler: str, computes: int, n_tasks: int) -> list[str]:
    """The Python command a count runs: ``computes`` of the variant, then a check of the result.

    The child imports the same ``asafe`` as this process (an installed one, with
    its compiled hooks, is not shadowed by the checkout's source folder) and the
    workload from this checkout; run it from a folder with no ``asafe`` in it.
    """
    import asafe

    code = _CHILD.format(body=textwrap.indent(VARIANTS[variant], "    "))
    asafe_root = Path(asafe.__file__).resolve().parent.parent
    return [sys.executable, "-c", code, scheduler, str(computes), str(n_tasks), str(asafe_root), str(_checkout())]


def _summary(cachegrind_out: str) -> int:
    """The total instruction count of a cachegrind output file (its ``summary:`` line)."""
    match = _SUMMARY.search(cachegrind_out)
    if match is None:
        raise ValueError("no 'summary:' line in the cachegrind output")
    return int(match.group(1))


def per_compute(one: int, three: int) -> int:
    """Instructions of one compute in steady state, from runs of one and three computes.

    >>> per_compute(1_000, 1_600)
    300
    """
    if three < one:
        raise ValueError(f"three computes counted fewer instructions ({three}) than one ({one})")
    return (three - one) // 2


def _checkout() -> Path:
    """The folder holding ``benchmarks/``, where the child finds the workload."""
    return Path(__file__).resolve().parent.parent


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks instructions", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--scheduler", action="append", choices=_SCHEDULERS,
                        help="scheduler to count on; repeat for several (default: threads and sync)")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                        help="variant to count; repeat for several (default: all; plain is always counted)")
    parser.add_argument("--tasks", type=int, default=None, help="tasks in the graph (default: 20000; 4000 with --quick)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="counts of every variant, interleaved (default: %(default)s; 1 with --quick)")
    parser.add_argument("--slowdown", type=float, default=50.0,
                        help="valgrind's slowdown, by which asafe's intervals are stretched (default: %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Count every variant on every scheduler; print the table; write results.json."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not on the PATH (install it, e.g. apt install valgrind)", file=sys.stderr)
        return 2
    n_tasks = args.tasks or (4_000 if args.quick else 20_000)
    if n_tasks < 4:
        print(f"instructions: --tasks must be >= 4, got {n_tasks}", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print(f"instructions: --repeat must be >= 1, got {args.repeat}", file=sys.stderr)
        return 2
    if args.quick:
        args.repeat = 1
    schedulers = args.scheduler or list(_SCHEDULERS)
    variants = ["plain"] + [v for v in (args.variant or VARIANTS) if v != "plain"]
    intervals = scaled_intervals(args.slowdown)
    env = {**os.environ, **intervals, "PYTHONHASHSEED": "0"}  # string hashes fixed
    results = Results("instructions", args.out)
    results.set_environment(suite_options={"schedulers": schedulers, "variants": variants, "n_tasks": n_tasks,
                                           "slowdown": args.slowdown, "repeat": args.repeat,
                                           "quick": args.quick},
                            intervals=intervals)
    if args.quick:
        results.warn("--quick: a smoke run with a small graph, not a result to report", kind="QUICK")
    warn_without_compiled_hooks(results)
    print(f"instructions suite: {n_tasks:,} tasks; intervals scaled by {args.slowdown:g} under valgrind")
    for scheduler in schedulers:
        results.add(scheduler, _count_section(scheduler, variants, n_tasks, env, args.repeat))
    path = results.save()
    print(f"\nwrote {path}")
    return 0


def _count_section(scheduler: str, variants: list[str], n_tasks: int, env: dict[str, str],
                   repeat: int) -> dict[str, Any]:
    print(f"\n== {scheduler}: instructions per dask.compute of {n_tasks:,} trivial tasks, {repeat} repeats ==")
    estimates: dict[str, list[int]] = {variant: [] for variant in variants}
    raw: dict[str, list[tuple[int, int]]] = {variant: [] for variant in variants}
    for _ in range(repeat):  # interleaved: a drift of the machine touches every variant alike
        for variant in variants:
            one = count_instructions(variant, scheduler, 1, n_tasks, env)
            three = count_instructions(variant, scheduler, 3, n_tasks, env)
            raw[variant].append((one, three))
            estimates[variant].append(per_compute(one, three))
    print(f"{'variant':<16} {'per compute':>12} {'range':>22} {'over plain':>11} {'range':>18} {'per task':>9}")
    counts: dict[str, Any] = {}
    plain = statistics.median(estimates["plain"])
    for variant in variants:
        record = counts[variant] = {"one_and_three_computes": raw[variant], "per_compute": estimates[variant],
                                    "per_compute_median": statistics.median(estimates[variant])}
        line = f"{variant:<16} {record['per_compute_median'] / 1e6:>11,.1f}M {_range(estimates[variant], 1e6, 'M'):>22}"
        if variant != "plain":
            extra = [e - p for e, p in zip(estimates[variant], estimates["plain"])]
            record["extra_per_compute"] = extra
            record["over_plain_median"] = statistics.median(extra) / plain
            record["over_plain_range"] = [min(extra) / plain, max(extra) / plain]
            record["extra_per_task_median"] = statistics.median(extra) / n_tasks
            line += (f" {record['over_plain_median']:>+10.2%} [{record['over_plain_range'][0]:+.2%}, "
                     f"{record['over_plain_range'][1]:+.2%}] {record['extra_per_task_median']:>+9,.0f}")
        print(line)
    return counts


def _range(values: Sequence[float], scale: float, unit: str) -> str:
    return f"[{min(values) / scale:,.1f}{unit}, {max(values) / scale:,.1f}{unit}]"
