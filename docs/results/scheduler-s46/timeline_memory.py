"""What asafe's own code holds on the scheduler after 4,000 futures submitted one by one (session 46).

    PYTHONPATH=. python docs/results/scheduler-s46/timeline_memory.py

A LocalCluster (the scheduler in this process, 2 worker processes), asafe installed once, tracemalloc started, 4,000
trivial futures over 1,000 key prefixes submitted one by one (4,000 arrivals, each evaluated). A snapshot filtered to
asafe's files is taken half a second after the loop and after the futures finished; prints the total and the
largest allocation sites (the runtime's timeline of modes: one entry per evaluation, at most
``asafe.controller.history-size``).
"""
import sys
import time
import tracemalloc

from distributed import Client, LocalCluster, wait

import asafe
from benchmarks.scheduler import inc


def snapshot():
    traces = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, "*asafe*")])
    stats = traces.statistics("lineno")
    return sum(s.size for s in stats), [(str(s.traceback[0]), s.size, s.count) for s in stats[:8]]


def main():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        handle = asafe.install(client)
        tracemalloc.start(1)
        futures = [client.submit(inc, i, key=f"p{i % 1000}-{i}") for i in range(4000)]
        time.sleep(0.5)
        total, _ = snapshot()
        print(f"held by asafe's code 0.5 s after the loop: {total / 1024:.0f} KiB")
        wait(futures)
        total, top = snapshot()
        print(f"after the futures finished: {total / 1024:.0f} KiB; evaluations in the timeline: "
              f"{len(cluster.scheduler.plugins['asafe'].runtime.timeline)}")
        for site in top:
            print(" ", site)
        handle.uninstall()
    sys.exit(0)


if __name__ == "__main__":
    main()
