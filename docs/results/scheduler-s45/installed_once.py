"""Short graphs with asafe installed once, as a user installs it, against plain Dask (session 45, issue 29).

    PYTHONPATH=. python docs/results/scheduler-s45/installed_once.py WORKLOAD KIND ROUNDS
    CONTROL=1 PYTHONPATH=. python docs/results/scheduler-s45/installed_once.py WORKLOAD KIND ROUNDS   # nothing installed

The workloads suite installs asafe afresh before every graph (so that no variant inherits another's state); a user
installs it once and runs many graphs. This script runs two LocalClusters side by side (2 worker processes of one
thread each, the workloads suite's inputs on both), asafe installed once on one of them, and alternates the
workload's graph between the two (ABBA by round, 0.3 s idle before each graph; each timed from its submission until
its outputs are in memory, as the workloads suite times it, then forgotten).
Halfway the roles swap (asafe uninstalled from the first cluster, installed once on the other), so that whatever
differs between the two clusters weighs on both sides alike. Prints the median of the paired ratios (plain Dask's
time over asafe's: below 1, asafe is slower) with its order-statistic 95% interval, per half and pooled. With
CONTROL=1 nothing is installed: the same design timing plain Dask against itself."""
import os
import sys

import cloudpickle
from distributed import Client, LocalCluster

import asafe
from asafe.app.stats import paired_ratio_ci
from benchmarks import workloads as wl_module
from transitions import graph_runner  # this folder's script (sys.path[0] when run as a script)

cloudpickle.register_pickle_by_value(wl_module)


def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    clusters = [LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
                for _ in range(2)]
    clients = [Client(cluster) for cluster in clusters]
    try:
        runs = [graph_runner(client, name, kind) for client in clients]
        for run in runs:  # a warm-up graph on each, nothing installed
            run()
        halves = []
        control = bool(os.environ.get("CONTROL"))
        for with_asafe in (1, 0):
            handle = None if control else asafe.install(clients[with_asafe])
            plain, adaptive = [], []
            for r in range(rounds):
                order = (0, 1) if r % 2 == 0 else (1, 0)
                seconds = {which: runs[which]() for which in order}
                plain.append(seconds[1 - with_asafe])
                adaptive.append(seconds[with_asafe])
            if handle is not None:
                handle.uninstall()
            halves.append((plain, adaptive))
        what = "nothing installed (CONTROL)" if control else "asafe installed once on cluster 1 then on cluster 0"
        print(f"{name}/{kind}: {rounds} rounds a half, {what}; "
              f"load average {os.getloadavg()[0]:.2f}")
        for i, (plain, adaptive) in enumerate(halves):
            r = paired_ratio_ci(plain, adaptive)
            print(f"  half {i + 1}: plain Dask / asafe {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}] "
                  f"(median plain {sorted(plain)[len(plain) // 2] * 1e3:.1f} ms)")
        plain = halves[0][0] + halves[1][0]
        adaptive = halves[0][1] + halves[1][1]
        r = paired_ratio_ci(plain, adaptive)
        print(f"  pooled: plain Dask / asafe {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}], {r.n} pairs")
    finally:
        for client in clients:
            client.close()
        for cluster in clusters:
            cluster.close()


if __name__ == "__main__":
    main()
