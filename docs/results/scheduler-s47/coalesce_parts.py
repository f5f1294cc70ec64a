"""Futures submitted one by one: what asafe's scheduler hooks cost a future, every arrival at once or coalesced.

    PYTHONPATH=. python docs/results/scheduler-s47/coalesce_parts.py N ROUNDS

As ``../scheduler-s46/submit_loop.py`` (a LocalCluster, the scheduler and the client in this process, 2 worker
processes of one thread; N trivial futures submitted in a loop, then gathered), asafe installed before each loop
with ``asafe.distributed.coalesce-arrivals`` 0 (``at-once``, as before session 47) or 1 (``coalesce``, the
default), alternated for ROUNDS rounds. The plugin's ``update_graph`` hook (its evaluation included), its
transition hook (the compiled per-task path; the evaluations it starts included) and every evaluation of the
domains are timed with the scheduler thread's cpu clock, and so is the whole event-loop thread (which the client
shares). Prints, per variant, the medians over rounds of each part per future.
"""
import os
import statistics
import sys
import time

import dask
from distributed import Client, LocalCluster, wait

import asafe
from benchmarks.scheduler import inc

PARTS = ("update_graph", "transition", "evaluate", "loop thread")


def _timed(method, took):
    """``method`` with the calling thread's cpu seconds of each call added to ``took[0]``."""
    def timed(*args, **kwargs):
        began = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            took[0] += time.thread_time() - began

    return timed


def _loop_cpu(dask_scheduler):
    return time.thread_time()


def one_loop(cluster, client, n, coalesce):
    with dask.config.set({"asafe.distributed.coalesce-arrivals": coalesce}):
        handle = asafe.install(client)
    totals = {part: [0.0] for part in PARTS}
    try:
        plugin = cluster.scheduler.plugins["asafe"]
        plugin.update_graph = _timed(plugin.update_graph, totals["update_graph"])
        plugin.transition = _timed(plugin.transition, totals["transition"])
        plugin.runtime.evaluate = _timed(plugin.runtime.evaluate, totals["evaluate"])
        began = client.run_on_scheduler(_loop_cpu)
        futures = [client.submit(inc, i, pure=False) for i in range(n)]
        wait(futures)
        totals["loop thread"][0] = client.run_on_scheduler(_loop_cpu) - began
        assert sum(client.gather(futures)) == n * (n + 1) // 2
        arrivals = dict(plugin.arrivals)
        del futures
    finally:
        handle.uninstall()
    time.sleep(0.5)
    return {part: total[0] / n for part, total in totals.items()}, arrivals


def main():
    n, rounds = int(sys.argv[1]), int(sys.argv[2])
    runs = {0: [], 1: []}
    load = [os.getloadavg()[0]]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        wait(client.map(inc, range(100), pure=False))  # the workers warm
        for r in range(rounds):
            for coalesce in ((0, 1) if r % 2 == 0 else (1, 0)):
                runs[coalesce].append(one_loop(cluster, client, n, coalesce))
    load.append(os.getloadavg()[0])
    print(f"{n} futures submitted one by one, {rounds} rounds of each; load average {load[0]:.2f} at the start, "
          f"{load[1]:.2f} at the end")
    for coalesce, name in ((0, "at-once"), (1, "coalesce")):
        parts = ", ".join(f"{part} {statistics.median(r[0][part] for r in runs[coalesce]) * 1e6:.0f} us"
                          for part in PARTS)
        counts = runs[coalesce][-1][1]
        print(f"  {name}: per future (median of rounds) {parts}; arrivals of the last round {counts}")


if __name__ == "__main__":
    main()
