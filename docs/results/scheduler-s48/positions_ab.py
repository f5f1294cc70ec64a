"""asafe's cost by a graph's position after the installation, against plain Dask on one cluster (session 48, issue 29).

    PYTHONPATH=. python docs/results/scheduler-s48/positions_ab.py WORKLOAD KIND ROUNDS [GRAPHS]
    PIN=1 PYTHONPATH=. python docs/results/scheduler-s48/positions_ab.py WORKLOAD KIND ROUNDS [GRAPHS]
    ONLY=scheduler PIN=1 PYTHONPATH=. python docs/results/scheduler-s48/positions_ab.py WORKLOAD KIND ROUNDS [GRAPHS]

One LocalCluster (the scheduler and the client in this process, 2 worker processes of one thread), the workloads
suite's WORKLOAD on its KIND of data (96 MiB inputs). A round is two blocks in alternating order: a plain block
(nothing installed) and an asafe block (``asafe.install`` at its start, ``uninstall`` at its end), each GRAPHS
(default 8) timed graphs; asafe's first graph is the installation's first. Each graph: 0.3 s idle, timed from
submission until its outputs are in memory, then forgotten (session 45's ``graph_runner``). Graphs are paired by
position (plain's i-th with asafe's i-th). Prints, per position and pooled over positions 2 on, the median of
paired ratios (plain's time over asafe's: below 1 asafe is slower) with its order-statistic 95% interval. PIN=1:
the scheduler's process on cpu 0 and both workers on cpu 1, as in ``deferred_ab.py``. ONLY=scheduler: the asafe
block registers asafe's scheduler plugin alone (a runtime from configuration; no worker plugin, nothing of
``asafe.install``'s client side), to tell the scheduler's part of the cost from the workers'."""
import os
import sys

import cloudpickle
from distributed import Client, LocalCluster

import asafe
from asafe.app.stats import paired_ratio_ci
from benchmarks import workloads as wl_module

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scheduler-s45"))
from transitions import graph_runner  # noqa: E402  (session 45's script: the workloads graph, timed)
from deferred_ab import pin  # noqa: E402  (this folder's script)

cloudpickle.register_pickle_by_value(wl_module)


def install_scheduler_only(client):
    """asafe's scheduler plugin alone: no worker plugin, nothing enabled in this process (``ONLY=scheduler``)."""
    from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin

    client.register_plugin(AdaptiveSchedulerPlugin(asafe.AdaptiveRuntime()))

    class Handle:
        def uninstall(self):
            client.unregister_scheduler_plugin("asafe")

    return Handle()


def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    graphs = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        pinned = bool(os.environ.get("PIN"))
        only = os.environ.get("ONLY", "")
        if only not in ("", "scheduler"):
            raise SystemExit(f"ONLY must be 'scheduler' or unset, got {only!r}")
        if pinned:  # the scheduler (and the client) on cpu 0, both workers on cpu 1
            pin(0)
            client.run(pin, 1)
        run = graph_runner(client, name, kind)
        run()  # a warm-up graph
        plain = [[] for _ in range(graphs)]
        adaptive = [[] for _ in range(graphs)]
        for r in range(rounds):
            for block in (("plain", "asafe") if r % 2 == 0 else ("asafe", "plain")):
                if block == "plain":
                    handle = None
                elif only == "scheduler":
                    handle = install_scheduler_only(client)
                else:
                    handle = asafe.install(client)
                times = [run() for _ in range(graphs)]
                if handle is not None:
                    handle.uninstall()
                for i, seconds in enumerate(times):
                    (adaptive if block == "asafe" else plain)[i].append(seconds)
        print(f"{name}/{kind}: {rounds} rounds (a plain and an asafe block of {graphs} graphs each, alternated); "
              f"{'the scheduler on cpu 0, the workers on cpu 1' if pinned else 'not pinned'}; "
              f"{'the scheduler plugin alone; ' if only else ''}"
              f"load average {os.getloadavg()[0]:.2f}")
        for i in range(graphs):
            r = paired_ratio_ci(plain[i], adaptive[i])
            print(f"  graph {i + 1}: plain Dask / asafe {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}] "
                  f"(medians {sorted(plain[i])[rounds // 2] * 1e3:.1f} / {sorted(adaptive[i])[rounds // 2] * 1e3:.1f} ms)")
        later_plain = [t for i in range(1, graphs) for t in plain[i]]
        later_adaptive = [t for i in range(1, graphs) for t in adaptive[i]]
        r = paired_ratio_ci(later_plain, later_adaptive)
        print(f"  graphs 2-{graphs} pooled: plain Dask / asafe {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}], "
              f"{r.n} pairs")


if __name__ == "__main__":
    main()
