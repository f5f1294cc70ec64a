"""asafe installed once against plain Dask on one cluster, in blocks (session 48, issue 29).

    PYTHONPATH=. python docs/results/scheduler-s48/blocks_ab.py WORKLOAD KIND ROUNDS

One LocalCluster (the scheduler and the client in this process, 2 worker processes of one thread), the workloads
suite's WORKLOAD on its KIND of data (96 MiB inputs). Session 45's ``installed_once.py`` alternated two clusters,
and the two clusters differed by up to 5% between its halves (its control: 1.053x and 0.955x). Here every variant
runs on the same cluster. A round is two blocks in alternating order: a plain block (nothing installed) and an
asafe block (``asafe.install`` at its start, ``uninstall`` at its end). Each block runs one untimed graph (after
an install: the installation's first graph, which a user pays once) and then four timed graphs; in the asafe
block the four alternate the installation as it is (``inline``) with its scheduler hooks replaced by no-ops
(``off``: transition and update_graph; the worker plugin, the state push and the periodic sampling stay), in the
order inline, off, off, inline. Each graph: 0.3 s idle, timed from submission until its outputs are in memory,
then forgotten (session 45's ``graph_runner``). Paired by position: plain's i-th graph with the asafe block's
i-th. Prints medians of paired ratios (plain's time over the variant's: below 1 the variant is slower) with
order-statistic 95% intervals."""
import os
import sys

import cloudpickle
from distributed import Client, LocalCluster

import asafe
from asafe.app.stats import paired_ratio_ci
from benchmarks import workloads as wl_module

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scheduler-s45"))
from transitions import graph_runner  # noqa: E402  (session 45's script: the workloads graph, timed)
from deferred_ab import set_variant  # noqa: E402  (this folder's script: "inline" and "off" as there)

cloudpickle.register_pickle_by_value(wl_module)

ASAFE_ORDER = ("inline", "off", "off", "inline")


def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        run = graph_runner(client, name, kind)
        run()  # a warm-up graph
        pairs = {"inline": ([], []), "off": ([], [])}
        for r in range(rounds):
            blocks = ("plain", "asafe") if r % 2 == 0 else ("asafe", "plain")
            timed = {}
            for block in blocks:
                if block == "plain":
                    run()
                    timed["plain"] = [run() for _ in ASAFE_ORDER]
                else:
                    handle = asafe.install(client)
                    run()  # the installation's first graph
                    times = []
                    for variant in ASAFE_ORDER:
                        client.run_on_scheduler(set_variant, variant=variant)
                        times.append(run())
                    client.run_on_scheduler(set_variant, variant="inline")
                    handle.uninstall()
                    timed["asafe"] = times
            for plain, variant, seconds in zip(timed["plain"], ASAFE_ORDER, timed["asafe"]):
                pairs[variant][0].append(plain)
                pairs[variant][1].append(seconds)
        print(f"{name}/{kind}: {rounds} rounds (a plain and an asafe block each, alternated); "
              f"load average {os.getloadavg()[0]:.2f}")
        for variant, (plain, adaptive) in pairs.items():
            r = paired_ratio_ci(plain, adaptive)
            print(f"  plain Dask / asafe {variant:6s}: {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}], {r.n} pairs "
                  f"(medians {sorted(plain)[len(plain) // 2] * 1e3:.1f} / {sorted(adaptive)[len(adaptive) // 2] * 1e3:.1f} ms)")
        r = paired_ratio_ci(pairs["off"][1], pairs["inline"][1])
        print(f"  asafe off / asafe inline: {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}], {r.n} pairs")


if __name__ == "__main__":
    main()
