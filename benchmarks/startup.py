"""What asafe adds to starting a cluster: a worker (Nanny) and a LocalCluster, with and without its preload.

``python -m benchmarks startup [--rounds N] [--quick]`` times, interleaved in
alternating order, round after round:

``nanny``
    A ``Nanny`` (one worker process, one thread) joining a running scheduler
    that has asafe's preload, started with ``--preload asafe.preload`` and
    without it: seconds from the call until the worker is running, as a user
    adding a worker to a cluster waits for it. What the preload adds is the
    worker plugin's setup, its modules' import in the new process and its
    first message to the scheduler.
``cluster``
    A ``LocalCluster`` of 2 worker processes and a ``Client``, with asafe's
    preload on the scheduler and every worker (``distributed.scheduler.preload``
    and ``distributed.worker.preload``) and without: seconds until both
    workers have joined, as ``asafe demo`` or a test suite waits for them.

For each, the per-round difference (with minus without), its median and the
order-statistic interval of that median (95% from 6 rounds; fewer rounds give
less, and say so). Nothing else should run on the machine meanwhile: the
differences are a tenth of a second among starts of about one second.
Results: ``OUT/startup/startup.json``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from asafe.app import stats

from . import harness

__all__ = ["PRELOAD", "nanny_start", "cluster_start", "summarize", "main"]

#: The preload a cluster names to run asafe on every scheduler and worker.
PRELOAD = "asafe.preload"


def nanny_start(rounds: int) -> list[tuple[float, float]]:
    """Per round, the seconds a Nanny takes to start without and with the preload (alternating first)."""

    async def run() -> list[tuple[float, float]]:
        from distributed import Nanny, Scheduler

        async def one(address: str, preload: bool) -> float:
            began = time.perf_counter()
            async with Nanny(address, preload=[PRELOAD] if preload else [], dashboard_address=None, nthreads=1):
                return time.perf_counter() - began

        out = []
        async with Scheduler(port=0, dashboard_address=None, preload=[PRELOAD]) as scheduler:
            await one(scheduler.address, True)  # warm: the file system cache, distributed's spawn path
            for r in range(rounds):
                order = (False, True) if r % 2 == 0 else (True, False)
                seconds = {preload: await one(scheduler.address, preload) for preload in order}
                out.append((seconds[False], seconds[True]))
        return out

    return asyncio.run(run())


def cluster_start(rounds: int) -> list[tuple[float, float]]:
    """Per round, the seconds a 2-worker LocalCluster takes until both workers joined, without and with the preload."""
    import dask
    from distributed import Client, LocalCluster

    def one(preload: bool) -> float:
        names = [PRELOAD] if preload else []
        config = {"distributed.scheduler.preload": names, "distributed.worker.preload": names}
        began = time.perf_counter()
        with dask.config.set(config), \
                LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            client.wait_for_workers(2)
            return time.perf_counter() - began

    one(True)  # warm
    out = []
    for r in range(rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        seconds = {preload: one(preload) for preload in order}
        out.append((seconds[False], seconds[True]))
    return out


def summarize(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    """The median of the per-round differences (with - without), its interval, and the medians of each.

    >>> s = summarize([(1.0, 1.1), (0.9, 1.1), (1.0, 1.05)])
    >>> round(s["added_s"], 3), s["exact"], s["n"]
    (0.1, False, 3)
    """
    added = [on - off for off, on in pairs]
    ci = stats.median_ci(added)
    return {"added_s": stats.median(added), "ci95": [ci.low, ci.high], "coverage": ci.coverage, "exact": ci.exact,
            "n": len(added), "without_s": stats.median([off for off, _ in pairs]),
            "with_s": stats.median([on for _, on in pairs]), "pairs": [list(p) for p in pairs]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks startup", description=__doc__.splitlines()[0])
    harness.add_common_arguments(parser)
    parser.add_argument("--rounds", type=harness.positive_int, default=8,
                        help="interleaved rounds of each (default: %(default)s)")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    from asafe.app import environment

    results: dict[str, Any] = {"environment": environment.environment(), "load_average_start": os.getloadavg()}
    for name, measure in (("nanny", nanny_start), ("cluster", cluster_start)):
        summary = results[name] = summarize(measure(rounds))
        low, high = summary["ci95"]
        print(f"{name:8s} without {summary['without_s']:.3f} s, with {summary['with_s']:.3f} s: "
              f"+{summary['added_s']:.3f} s [{low:+.3f}, {high:+.3f}] "
              f"({stats.format_coverage(summary['coverage'])} interval, {summary['n']} rounds)", flush=True)
    results["load_average_end"] = os.getloadavg()
    out = Path(args.out) / "startup"
    out.mkdir(parents=True, exist_ok=True)
    (out / "startup.json").write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"results: {out / 'startup.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
