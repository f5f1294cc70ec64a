"""The first graph after each installation, as the workloads suite runs it (session 43).

python first_arrival.py WORKLOAD KIND ROUNDS   (TREE=path: the asafe tree to import; loopback, 2 worker processes;
VARIANT=dask: plain Dask, the graphs' wall time only)

Each round installs asafe (a fresh runtime), makes the suite's checks (the workers' wire state, the codec counters
reset, the cpu read), then times one graph from its submission to its end, and uninstalls. update_graph and every
evaluation are wrapped with thread-cpu timers from the installation on; the external_cpu that the arrival's
evaluation read is recorded. Prints medians over the rounds (the first round, the cluster's first graph, left out)."""
import os, statistics, sys, time
sys.path.insert(0, os.environ["TREE"])
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import (_check_state, _cpu_seconds, _install, _keys_of, _reset_wire, _uninstall,
                                           _wait_forgotten)
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)
from arrival import _timed  # beside this script


def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    variant = os.environ.get("VARIANT", "asafe")
    spec = Spec(kind, 96, 0.5, 0)
    arrival, evaluations, walls, external = [], [], [], []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        w = WORKLOADS[name]
        inputs = w.prepare(client, spec)
        for r in range(rounds + 1):
            handle = _install(client, variant)
            acc, read = {}, []
            if handle is not None:
                p = cluster.scheduler.plugins["asafe"]
                rt = p.runtime
                p.update_graph = _timed(acc, "update_graph", p.update_graph)
                rt.evaluate = _timed(acc, "evaluate", rt.evaluate,
                                     after=lambda: read or read.append(rt.mode.signals.get("external_cpu")))
            _check_state(client, variant)
            client.run(_reset_wire)
            client.run(_cpu_seconds)
            start = time.perf_counter()
            out = client.persist(w.run(client, inputs, spec))
            wait(out)
            wall = time.perf_counter() - start
            counts = {k: tuple(v) for k, v in acc.items()}
            _uninstall(client, handle)
            keys = _keys_of(out if isinstance(out, list) else [out])
            del out
            _wait_forgotten(client, keys)
            if r:
                walls.append(wall)
                if counts:
                    arrival.append(counts["update_graph"][1])
                    evaluations.append(counts["evaluate"][1])
                    external.append(read[0] if read else float("nan"))
    print(f"{name}/{kind}, {rounds} rounds, the first graph after each installation, {variant}, tree {os.environ['TREE']}")
    if arrival:
        q = lambda xs: statistics.quantiles([x * 1e3 for x in xs], n=4)
        print(f"  update_graph  {statistics.median(arrival)*1e3:7.3f} ms (quartiles {q(arrival)[0]:.3f}-{q(arrival)[2]:.3f});"
              f" every evaluation {statistics.median(evaluations)*1e3:7.3f} ms")
        print(f"  external_cpu read at the arrival: median {statistics.median(external):.3f}, "
              f"max {max(external):.3f}, above 0.5 in {sum(x > 0.5 for x in external)} of {len(external)}")
    print(f"  wall median {statistics.median(walls)*1e3:.1f} ms")


if __name__ == "__main__":
    main()
