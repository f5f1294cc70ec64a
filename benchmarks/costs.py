"""What asafe costs where it does not compress: every asafe function's CPU time on a real cluster, profiled.

``python -m benchmarks costs [--link 1gbit] [--quick]`` runs ordinary dask.array
work (a rechunk by tasks and one by P2P, of random float64: nothing to
compress) on a ``LocalCluster`` of 2 worker processes, with asafe installed by
``asafe.install(client)`` and its defaults, and profiles every thread of the
scheduler's process and of each worker process with `yappi
<https://github.com/sumerc/yappi>`_ (CPU clock). For each process it reports the
CPU seconds spent inside asafe's entry points -- the scheduler plugin's hooks
(``transition``, ``update_graph``), its timer, the worker plugin's
``transition``, the wire codec's ``dumps``/``loads`` wrappers and sample, the
sizes noted in ``sizeof`` -- per task, per transfer (a message that carried
data between workers) and as a share of the process's CPU time.

Entry points only: a function that asafe's code calls from another asafe
function is inside its caller's time, so nothing is counted twice. The
profiler's own overhead inflates every function a little, asafe's and Dask's
alike; the shares are the honest figure, the per-task seconds an upper bound.
Results: ``OUT/costs/costs-<link>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from . import harness

__all__ = ["ENTRY_POINTS", "main", "profile_run"]

#: asafe's functions that Dask calls (qualified names as yappi reports them).
ENTRY_POINTS = {
    # (the runtime's evaluate is not one: the plugin's hooks call it, and their time holds it)
    "scheduler": ("AdaptiveSchedulerPlugin.transition", "AdaptiveSchedulerPlugin.update_graph",
                  "AdaptiveSchedulerPlugin._tick", "AdaptiveSchedulerPlugin.hello",
                  "AdaptiveSchedulerPlugin.remove_worker", "AdaptiveSchedulerPlugin._probe_link"),
    "worker": ("AdaptiveWorkerPlugin.transition", "AdaptiveWorkerPlugin.receive", "AdaptiveWorkerPlugin._resync",
               "wire_dumps", "wire_loads", "_sizeof_tile", "_sizeof_matrix", "note"),
}


def _start_profiler() -> None:
    import yappi

    yappi.clear_stats()
    yappi.set_clock_type("cpu")
    yappi.start(builtins=False, profile_threads=True)


def _stop_profiler(names: tuple[str, ...]) -> dict[str, Any]:
    """CPU seconds of asafe's entry points, and of the whole process, since :func:`_start_profiler`."""
    import yappi

    yappi.stop()
    out: dict[str, dict[str, float]] = {}
    for stat in yappi.get_func_stats():
        if f"{os.sep}asafe{os.sep}" not in stat.module and "compression" not in stat.module:
            continue
        name = stat.name
        if name in names or name.endswith(tuple("." + n for n in names)):
            entry = out.setdefault(name, {"calls": 0, "seconds": 0.0})
            entry["calls"] += stat.ncall
            entry["seconds"] += stat.ttot
    total = sum(t.ttot for t in yappi.get_thread_stats())
    yappi.clear_stats()
    return {"entry_points": out, "process_cpu_s": total}


def _start_on_worker(dask_worker: Any = None) -> None:
    _start_profiler()


def _stop_on_worker(dask_worker: Any = None) -> dict[str, Any]:
    result = _stop_profiler(ENTRY_POINTS["worker"])
    result["transfers_in"] = len(dask_worker.transfer_incoming_log) if dask_worker is not None else 0
    return result


def _workload(client: Any, method: str, size: int) -> float:
    import dask
    import dask.array as da

    x = client.persist(da.random.RandomState(7).standard_normal((size, size), chunks=(size, size // 16)))
    client.wait_for_workers(2)
    with dask.config.set({"array.rechunk.method": method}):
        y = x.rechunk((size // 16, size)).persist()
        total = float(y.sum().compute())
    expected = float(x.sum().compute())
    if abs(total - expected) > 1e-6 * max(1.0, abs(expected)):
        raise AssertionError(f"the {method} rechunk's sum {total} differs from the input's {expected}")
    del y
    return total


def profile_run(method: str, size: int, rounds: int) -> dict[str, Any]:
    """One cluster, asafe installed with its defaults, ``rounds`` rechunks by ``method``, profiled."""
    import asafe
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2)
        handle = asafe.install(client)
        _workload(client, method, size)  # warm: imports, numba, the link probe
        tasks_before = handle.finished
        client.run(_start_on_worker)
        _start_profiler()  # this process holds the scheduler (and the client)
        started = time.perf_counter()
        for _ in range(rounds):
            _workload(client, method, size)
        wall = time.perf_counter() - started
        scheduler = _stop_profiler(ENTRY_POINTS["scheduler"])
        workers = client.run(_stop_on_worker)
        tasks = handle.finished - tasks_before
        plugin = handle.info("plugin")["plugin"]
        states = [(t.optimization, t.old, t.new) for t in handle.history]
        handle.uninstall()
    return {"method": method, "size": size, "rounds": rounds, "wall_s": wall, "tasks": tasks,
            "transfers": plugin["transfers"]["count"], "p2p_bytes": plugin["p2p"]["measured_bytes"],
            "scheduler": scheduler, "workers": workers, "transitions": states}


def _summary(run: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    tasks = max(run["tasks"], 1)
    for where, found in [("scheduler", run["scheduler"]), *run["workers"].items()]:
        seconds = sum(e["seconds"] for e in found["entry_points"].values())
        rows.append({
            "method": run["method"], "process": where if where == "scheduler" else "worker " + where[-5:],
            "asafe CPU s": f"{seconds:.4f}", "process CPU s": f"{found['process_cpu_s']:.2f}",
            "share": f"{seconds / max(found['process_cpu_s'], 1e-9):.2%}",
            "per task": harness.format_seconds(seconds / tasks),
            "largest": max(found["entry_points"].items(), key=lambda kv: kv[1]["seconds"], default=("-", {}))[0],
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks costs", description=__doc__.splitlines()[0])
    harness.add_common_arguments(parser, max_seconds=600.0)
    parser.add_argument("--size", type=int, default=4096, help="rows = columns of the float64 array")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        import yappi  # noqa: F401
    except ImportError:
        parser.exit(2, "python -m benchmarks costs needs yappi (pip install yappi)\n")
    if args.quick:
        args.size, args.rounds = 1024, 1
    from asafe.app import environment, link

    results = {"environment": environment.environment(), "link": link.describe(measure=False),
               "load_average_start": os.getloadavg(), "runs": []}
    rows = []
    for method in ("tasks", "p2p"):
        run = profile_run(method, args.size, args.rounds)
        results["runs"].append(run)
        rows += _summary(run)
        print(f"{method}: {run['tasks']} tasks, {run['transfers']} transfers, {run['p2p_bytes'] / 1e6:.0f} MB by "
              f"P2P, {run['wall_s']:.1f} s; transitions {run['transitions']}", flush=True)
    from asafe.app.console import format_table

    print(format_table(rows, list(rows[0]) if rows else []))
    results["load_average_end"] = os.getloadavg()
    out = Path(args.out) / "costs"
    out.mkdir(parents=True, exist_ok=True)
    name = f"costs-{(link.current().rate if link.current() else 'loopback')}.json"
    (out / name).write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"results: {out / name}")
    return 0
