"""Futures submitted one by one in a loop: each ``client.submit`` is a graph's arrival on the scheduler (session 46).

    PYTHONPATH=. python docs/results/scheduler-s46/submit_loop.py N

A LocalCluster (the scheduler and the client in this process, 2 worker processes of one thread), asafe installed
once, N trivial futures submitted one after another without waiting (``client.submit(inc, i)`` in a loop), then
gathered. The plugin's ``update_graph`` hook and the evaluations it and the transition hook start are timed with
the scheduler thread's cpu clock. Prints the arrivals, the evaluations and what each costs.
"""
import os
import statistics
import sys
import time

from distributed import Client, LocalCluster, wait

import asafe
from benchmarks.scheduler import inc


def main():
    n = int(sys.argv[1])
    arrivals, evaluations = [], []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        wait(client.map(inc, range(100), pure=False))  # the workers warm
        handle = asafe.install(client)
        plugin = cluster.scheduler.plugins["asafe"]
        plugin.update_graph = _timed(plugin.update_graph, arrivals)
        plugin.runtime.evaluate = _timed(plugin.runtime.evaluate, evaluations)
        began = time.perf_counter()
        futures = [client.submit(inc, i, pure=False) for i in range(n)]
        wait(futures)
        seconds = time.perf_counter() - began
        assert sum(client.gather(futures)) == n * (n + 1) // 2
        handle.uninstall()
    print(f"{n} futures submitted one by one in {seconds:.2f} s; load average {os.getloadavg()[0]:.2f}")
    print(f"  update_graph calls: {len(arrivals)}, median {statistics.median(arrivals) * 1e6:.0f} us, "
          f"total {sum(arrivals) * 1e3:.0f} ms (their evaluations included)")
    print(f"  evaluations: {len(evaluations)}, median {statistics.median(evaluations) * 1e6:.0f} us, "
          f"total {sum(evaluations) * 1e3:.0f} ms")


def _timed(method, took):
    """``method`` with the calling thread's cpu seconds of each call appended to ``took``."""
    def timed(*args, **kwargs):
        began = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            took.append(time.thread_time() - began)

    return timed


if __name__ == "__main__":
    main()
