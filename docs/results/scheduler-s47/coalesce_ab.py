"""Futures submitted one by one: plain Dask, asafe evaluating every arrival, asafe coalescing them (session 47).

    PYTHONPATH=. python docs/results/scheduler-s47/coalesce_ab.py N ROUNDS

One LocalCluster (the scheduler in this process, 2 worker processes of one thread). Each round submits N trivial
futures one after another (``client.submit(inc, i)`` in a loop, as ``../scheduler-s46/submit_loop_ab.py``) and waits
for them, once per variant, the variants' order rotated round by round: ``dask`` (nothing installed), ``at-once``
(asafe installed with ``asafe.distributed.coalesce-arrivals: 0``, every arrival evaluated at once, as before
session 47) and ``coalesce`` (asafe's default, 1). Measured per loop: its wall seconds and the cpu seconds of the
scheduler's event-loop thread (which this LocalCluster's client shares: alike in every variant), and asafe's
arrival counters. Prints the paired ratios (variant / dask, coalesce / at-once) with their 95% order-statistic
intervals.
"""
import os
import statistics
import sys
import time

import dask
from distributed import Client, LocalCluster, wait

import asafe
from asafe.app.stats import paired_ratio_ci
from benchmarks.scheduler import inc

VARIANTS = ("dask", "at-once", "coalesce")


def _loop_cpu(dask_scheduler):
    return time.thread_time()


def _arrivals(dask_scheduler):
    return dict(dask_scheduler.plugins["asafe"].arrivals)


def one_loop(client, n, variant):
    handle = None
    if variant != "dask":
        with dask.config.set({"asafe.distributed.coalesce-arrivals": 0 if variant == "at-once" else 1}):
            handle = asafe.install(client)
    try:
        cpu0 = client.run_on_scheduler(_loop_cpu)
        began = time.perf_counter()
        futures = [client.submit(inc, i, pure=False) for i in range(n)]
        wait(futures)
        wall = time.perf_counter() - began
        cpu = client.run_on_scheduler(_loop_cpu) - cpu0
        assert sum(client.gather(futures)) == n * (n + 1) // 2
        del futures
        arrivals = client.run_on_scheduler(_arrivals) if handle is not None else None
    finally:
        if handle is not None:
            handle.uninstall()
    time.sleep(0.5)
    return wall, cpu, arrivals


def _ratio(base, new):
    r = paired_ratio_ci(base, new)
    return f"{r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}] ({r.coverage:.1%})"


def main():
    n, rounds = int(sys.argv[1]), int(sys.argv[2])
    runs = {v: [] for v in VARIANTS}
    load = [os.getloadavg()[0]]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        wait(client.map(inc, range(100), pure=False))
        for r in range(rounds):
            order = VARIANTS[r % 3:] + VARIANTS[:r % 3]
            if r % 2:
                order = order[::-1]
            for variant in order:
                runs[variant].append(one_loop(client, n, variant))
    load.append(os.getloadavg()[0])
    print(f"{n} futures submitted one by one, {rounds} rounds; load average {load[0]:.2f} at the start, "
          f"{load[1]:.2f} at the end")
    for v in ("at-once", "coalesce"):
        counts = [a[2] for a in runs[v]]
        print(f"  {v}: arrivals per loop (median) " + ", ".join(
            f"{k} {statistics.median(c[k] for c in counts):.0f}" for k in counts[0]))
    for i, what in enumerate(("wall", "loop-thread cpu")):
        medians = ", ".join(f"{v} {statistics.median(x[i] for x in runs[v]):.3f} s" for v in VARIANTS)
        print(f"  {what}: medians {medians}")
        for v in ("at-once", "coalesce"):
            print(f"    {v} / dask: {_ratio([x[i] for x in runs[v]], [x[i] for x in runs['dask']])}")
        print(f"    coalesce / at-once: "
              f"{_ratio([x[i] for x in runs['coalesce']], [x[i] for x in runs['at-once']])}")


if __name__ == "__main__":
    main()
