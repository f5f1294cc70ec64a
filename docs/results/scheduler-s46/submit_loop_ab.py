"""Futures submitted one by one, plain Dask against asafe installed, alternated (session 46).

    PYTHONPATH=. python docs/results/scheduler-s46/submit_loop_ab.py N ROUNDS

One LocalCluster (the scheduler in this process, 2 worker processes of one thread). Each round submits N trivial
futures one after another (``client.submit(inc, i)`` in a loop) and waits for them, once with nothing installed and
once with asafe installed before the loop and uninstalled after it, in the order dask, asafe, asafe, dask, ...
Measured per loop: its wall seconds and the cpu seconds of the scheduler's event-loop thread (which this
LocalCluster's client shares: the same in both variants). Prints the paired ratios asafe / dask, median and range.
"""
import os
import statistics
import sys
import time

from distributed import Client, LocalCluster, wait

import asafe
from benchmarks.scheduler import inc


def _loop_cpu(dask_scheduler):
    return time.thread_time()


def one_loop(client, n, install):
    handle = asafe.install(client) if install else None
    try:
        cpu0 = client.run_on_scheduler(_loop_cpu)
        began = time.perf_counter()
        futures = [client.submit(inc, i, pure=False) for i in range(n)]
        wait(futures)
        wall = time.perf_counter() - began
        cpu = client.run_on_scheduler(_loop_cpu) - cpu0
        assert sum(client.gather(futures)) == n * (n + 1) // 2
        del futures
    finally:
        if handle is not None:
            handle.uninstall()
    time.sleep(0.5)
    return wall, cpu


def main():
    n, rounds = int(sys.argv[1]), int(sys.argv[2])
    runs = {"dask": [], "asafe": []}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        wait(client.map(inc, range(100), pure=False))
        for r in range(rounds):
            order = ("dask", "asafe") if r % 2 == 0 else ("asafe", "dask")
            for variant in order:
                runs[variant].append(one_loop(client, n, variant == "asafe"))
    print(f"{n} futures submitted one by one, {rounds} rounds; load average {os.getloadavg()[0]:.2f}")
    for i, what in enumerate(("wall", "loop-thread cpu")):
        ratios = sorted(a[i] / d[i] for a, d in zip(runs["asafe"], runs["dask"]))
        print(f"  {what}: dask median {statistics.median(d[i] for d in runs['dask']):.3f} s, asafe median "
              f"{statistics.median(a[i] for a in runs['asafe']):.3f} s; asafe / dask per round: median "
              f"{statistics.median(ratios):.3f}, range {ratios[0]:.3f}-{ratios[-1]:.3f}")


if __name__ == "__main__":
    main()
