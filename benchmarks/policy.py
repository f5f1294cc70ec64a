"""Work stealing: a phased workload where stealing helps in one phase and hurts in the other, under four policies.

``python -m benchmarks policy [--rounds N] [--phases P] [--workers W] [--quick] [--link 1gbit]``
runs, on one ``LocalCluster`` of worker processes (one thread each), ``P``
pairs of phases:

* a *compute* phase: ``8`` tasks per worker thread of uneven, unpredictable
  duration (:func:`spin`: seeded draws from 20 ms to 400 ms, asleep so that
  the 2-core machine's cpus stay the scheduler's), each reading a 1 KiB
  input made on the first worker. Every task lands there (its data is
  there); stealing moves the queued ones to the idle workers, which pays:
  their inputs are small;
* a *transfer* phase: ``8`` tasks per worker thread, each reading a
  ``--mb`` MiB input made on the first worker and running 20 ms. Every task
  lands on the first worker again, and Dask, which has never seen the key
  prefix (each phase has its own), estimates each at 500 ms
  (``distributed.scheduler.unknown-task-duration``): where stealing acts on
  that estimate it moves tasks and their inputs across the link to save
  compute that is not there. Whether it does is measured: each run records
  the steal requests of each phase (in short runs here, none in the transfer
  phases: Dask learns the prefix's 20 ms from the first tasks, and its cost
  model then keeps them where their inputs are).

The variants, interleaved round by round in a rotating order:

``dask``
    Dask's default: stealing on throughout.
``static-off``
    Stealing stopped (``WorkStealing.stop()``) for the whole run.
``adaptive``
    asafe installed with ``work-stealing`` alone (the Work stealing guide's
    domain, default controller settings), initially on.
``oracle``
    The driver, which knows each phase before it submits it, stops stealing
    before a transfer phase and starts it before a compute phase (inside the
    timed run).

Each phase makes its inputs first (``client.persist``, restricted to the
first worker, waited for, inside the timed phase), then submits its tasks as
one graph, so that they all land on the first worker at once (submitted
together with their makers, each task would run as soon as its input is made,
one at a time, and leave nothing to steal). The target
printed is the issue's: adaptive at least 1.10x the better static setting
(``dask`` or ``static-off``, the one with the smaller median), on paired
per-round ratios (:func:`asafe.app.stats.paired_ratio`), met only when the
whole 95% interval clears it. Behind ``--link 1gbit`` a transfer costs what it
costs on a real network; on the plain loopback the transfer phase costs
stealing little and the suite measures mostly the compute phase. Results:
``OUT/policy/policy.json`` with the environment, the load average at the
start and the end, every run's seconds, phase seconds, steals and (adaptive)
transitions.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import string
import time
from pathlib import Path
from typing import Any

import numpy as np

from asafe.app import stats

from . import harness

__all__ = ["VARIANTS", "make_input", "phase_plan", "run_phases", "spin", "summarize", "targets", "main"]

#: The variants, in the order of the first round.
VARIANTS = ("dask", "static-off", "adaptive", "oracle")
#: Seconds a transfer-phase task runs.
TRANSFER_TASK_S = 0.02


def make_input(nbytes: int, seed: int) -> np.ndarray:
    """An input of ``nbytes`` bytes (float64), filled from ``seed`` (cheap to make: a constant array)."""
    return np.full(max(1, nbytes // 8), float(seed))


def spin(data: np.ndarray, seconds: float) -> float:
    """A task: wait ``seconds`` (compute the cpus need not do on a shared machine), return a checksum of its input."""
    time.sleep(seconds)
    return float(data[0]) + float(data.size)


def phase_plan(phases: int, total_threads: int, mb: float, seed: int = 0) -> list[dict[str, Any]]:
    """The phases of one run: kind, task durations and input bytes (the same in every variant and round).

    >>> plan = phase_plan(1, 2, 8.0)
    >>> [(p["kind"], len(p["durations"]), p["nbytes"]) for p in plan]
    [('compute', 16, 1024), ('transfer', 16, 8388608)]
    >>> min(plan[0]["durations"]) >= 0.02 and max(plan[0]["durations"]) <= 0.4
    True
    """
    rng = random.Random(seed)
    count = 8 * total_threads
    plan = []
    for _ in range(phases):
        plan.append({"kind": "compute", "durations": [round(0.02 + 0.38 * rng.random() ** 2, 4) for _ in range(count)],
                     "nbytes": 1024})
        plan.append({"kind": "transfer", "durations": [TRANSFER_TASK_S] * count, "nbytes": int(mb * 2**20)})
    return plan


def _prefix() -> str:
    """A key prefix Dask has never seen (letters that are not hex digits, so key_split keeps them)."""
    return "p" + "".join(random.choice(string.ascii_lowercase[6:]) for _ in range(10))


def _stealing_runs(dask_scheduler: Any = None) -> bool:
    return "stealing" in dask_scheduler.periodic_callbacks


def _steals(dask_scheduler: Any = None) -> int:
    """The steal requests the scheduler has made so far (every level)."""
    ext = dask_scheduler.extensions.get("stealing")
    counts = getattr(ext, "metrics", {}).get("request_count_total", {}) if ext is not None else {}
    return int(sum(counts.values()))


async def _set_stealing(on: bool, dask_scheduler: Any = None) -> bool:
    ext = dask_scheduler.extensions["stealing"]
    await (ext.start() if on else ext.stop())
    return "stealing" in dask_scheduler.periodic_callbacks


def run_phases(client: Any, plan: list[dict[str, Any]], first: str, oracle: bool = False) -> dict[str, Any]:
    """Run the phased workload once; its seconds, each phase's seconds and steal requests, and the checksums.

    Every input is made on worker ``first``. ``oracle``: stealing is stopped
    before each transfer phase and started before each compute phase.
    """
    import dask
    from dask import delayed
    from distributed import wait

    seconds, sums, phase_steals = [], [], []
    steals_before = client.run_on_scheduler(_steals)
    steals_then = steals_before
    began = time.perf_counter()
    for index, phase in enumerate(plan):
        start = time.perf_counter()
        if oracle:
            client.run_on_scheduler(_set_stealing, phase["kind"] == "compute")
        prefix = _prefix()
        with dask.annotate(workers=[first]):
            made = [delayed(make_input, pure=False)(phase["nbytes"], 1000 * index + i)
                    for i in range(len(phase["durations"]))]
        # the inputs first, all of them, so that every task lands on the first worker at once (made in the
        # graph of the tasks, each task would run as soon as its input is made, one by one)
        inputs = client.persist(made, optimize_graph=False)
        wait(inputs)
        tasks = [delayed(spin)(x, d, dask_key_name=f"{prefix}-{i}")
                 for i, (x, d) in enumerate(zip(inputs, phase["durations"]))]
        sums.extend(client.gather(client.compute(tasks, optimize_graph=False)))
        del inputs
        seconds.append(time.perf_counter() - start)
        steals_now = client.run_on_scheduler(_steals)
        phase_steals.append(steals_now - steals_then)
        steals_then = steals_now
    return {"seconds": time.perf_counter() - began, "phase_seconds": seconds,
            "steals": steals_then - steals_before, "phase_steals": phase_steals, "checksums": sums}


def _runtime() -> Any:
    import asafe
    from asafe.schedulers import stealing

    return asafe.AdaptiveRuntime([asafe.Optimization(stealing.NAME, stealing.domain(), initial=True)])


def run_variant(client: Any, variant: str, plan: list, first: str) -> dict[str, Any]:
    """Set ``variant`` up on the cluster, run the workload once, undo the set-up (stealing on again)."""
    handle = None
    if variant == "static-off":
        client.run_on_scheduler(_set_stealing, False)
    elif variant == "adaptive":
        import asafe

        handle = asafe.install(client, _runtime())
    try:
        result = run_phases(client, plan, first, oracle=variant == "oracle")
        if handle is not None:
            result["transitions"] = [[t.time, t.new] for t in handle.history if t.optimization == "work-stealing"]
            result["fallbacks"] = handle.fallbacks
        return result
    finally:
        if handle is not None:
            handle.uninstall()
        client.run_on_scheduler(_set_stealing, True)


#: Each variant's median and its paired ratio to Dask's default (shared with the other phased suites).
summarize = harness.summarize_variants


def targets(rounds: dict[str, list[float]], target: float = 1.10) -> list[dict[str, Any]]:
    """The issue's target on paired per-round ratios: adaptive at least ``target`` x the better static setting.

    The oracle's ratio is reported beside it (no target: it bounds what a
    switch of this policy can give here).

    >>> rows = targets({"dask": [3.0, 3.1, 3.0], "static-off": [2.0, 2.2, 2.1],
    ...                 "adaptive": [1.5, 1.6, 1.5], "oracle": [1.5, 1.5, 1.5]})
    >>> [(r["against"], r["target"], r["verdict"]) for r in rows]
    [('static-off', 1.1, 'not shown'), ('oracle', None, 'reported')]
    """
    better = min(("dask", "static-off"), key=lambda v: stats.median(rounds[v]))
    rows = []
    for against, wanted in ((better, target), ("oracle", None)):
        if against not in rounds:
            continue
        ratio, (low, high), exact = stats.paired_ratio(rounds[against], rounds["adaptive"])
        if wanted is None:
            verdict = "reported"
        else:
            verdict = stats.verdict((low, high), wanted) if exact else "not shown"  # no 95% interval: no verdict
        rows.append({"against": against, "target": wanted, "ratio": ratio, "ci95": [low, high], "exact": exact,
                     "verdict": verdict})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks policy", description=__doc__.splitlines()[0])
    harness.add_common_arguments(parser)
    parser.add_argument("--rounds", type=harness.positive_int, default=6,
                        help="interleaved rounds of every variant (default: %(default)s)")
    parser.add_argument("--phases", type=harness.positive_int, default=2,
                        help="pairs of a compute and a transfer phase per run (default: %(default)s)")
    parser.add_argument("--workers", type=harness.positive_int, default=2,
                        help="worker processes of one thread each (default: %(default)s)")
    parser.add_argument("--mb", type=harness.positive_float, default=32.0,
                        help="MiB of each transfer-phase input (default: %(default)s)")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    phases = 1 if args.quick else args.phases
    mb = min(args.mb, 4.0) if args.quick else args.mb
    plan = phase_plan(phases, args.workers, mb)

    from distributed import Client, LocalCluster

    from asafe.app import environment

    results: dict[str, Any] = {
        "environment": environment.environment(), "load_average_start": os.getloadavg(),
        "settings": {"rounds": rounds, "phases": phases, "workers": args.workers, "mb": mb, "quick": args.quick,
                     "tasks_per_phase": 8 * args.workers, "transfer_task_s": TRANSFER_TASK_S,
                     "plan": [{"kind": p["kind"], "nbytes": p["nbytes"], "total_s": round(sum(p["durations"]), 3)}
                              for p in plan]},
        "runs": {variant: [] for variant in VARIANTS},
    }
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        client.wait_for_workers(args.workers)
        first = sorted(client.nthreads())[0]
        results["settings"]["first_worker"] = first
        if not client.run_on_scheduler(_stealing_runs):
            print("the scheduler runs no work stealing (distributed.scheduler.work-stealing: False?): "
                  "nothing to compare", flush=True)
            return 2
        run_phases(client, phase_plan(1, args.workers, min(mb, 4.0), seed=1), first)  # warm: imports, the makers
        for r in range(rounds):
            order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
            for variant in order:
                run = run_variant(client, variant, plan, first)
                results["runs"][variant].append(run)
                phase_text = " ".join(f"{s:.2f}" for s in run["phase_seconds"])
                extra = f", {len(run['transitions'])} transitions" if "transitions" in run else ""
                print(f"round {r + 1}/{rounds} {variant:10s} {run['seconds']:.3f} s  phases [{phase_text}]  "
                      f"steals {run['phase_steals']}{extra}", flush=True)
    seconds = {v: [run["seconds"] for run in runs] for v, runs in results["runs"].items()}
    summary = results["summary"] = summarize(seconds)
    reference = results["runs"]["dask"][0]["checksums"]
    results["checksums_agree"] = all(run["checksums"] == reference for runs in results["runs"].values() for run in runs)
    results["load_average_end"] = os.getloadavg()
    for variant, s in summary.items():
        low, high = s["ci95"]
        print(f"{variant:10s} median {s['median_s']:.3f} s, dask / it {s['speedup']:.3f} [{low:.3f}, {high:.3f}] "
              f"({s['n']} rounds{'' if s['exact'] else ', too few for a 95% interval'})")
    results["targets"] = targets(seconds)
    for row in results["targets"]:
        low, high = row["ci95"]
        wanted = f"target >= {row['target']:.3g}" if row["target"] is not None else "no target"
        print(f"adaptive vs {row['against']:10s} {row['ratio']:.3f} [{low:.3f}, {high:.3f}] ({wanted}): "
              f"{row['verdict']}")
    out = Path(args.out) / "policy"
    out.mkdir(parents=True, exist_ok=True)
    (out / "policy.json").write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"results: {out / 'policy.json'}")
    return 0 if results["checksums_agree"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
