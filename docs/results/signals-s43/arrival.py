"""The scheduler thread's cpu in asafe's hooks per graph, for graphs that arrive after an idle gap (session 43).

python arrival.py WORKLOAD KIND GRAPHS GAP   (TREE=path: the asafe tree to import; loopback, 2 worker processes;
VARIANT=dask: plain Dask, nothing installed, the graphs' wall time only)

asafe is installed once, as a user would; each graph is persisted, waited for and released, then the client is
idle for GAP seconds (an interactive session's pace). update_graph (the arrival: its plan and its evaluation) and
every evaluation are wrapped with thread-cpu timers, and so are the periodic sampler's psutil samples (in the gap
before a graph and during it, counted with that graph); the first graph (the installation's first) is not counted.
Prints the medians per graph and the graphs' wall-time median."""
import os, statistics, sys, time
sys.path.insert(0, os.environ["TREE"])
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)


def _timed(acc, label, f, after=None):
    """``f`` with its calls and thread cpu added to ``acc[label]``; ``after()`` called after each call."""
    def timed(*a, **k):
        t = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            c = acc.setdefault(label, [0, 0.0])
            c[0] += 1
            c[1] += time.thread_time() - t
            if after is not None:
                after()
    return timed


def main():
    name, kind, graphs, gap = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    spec = Spec(kind, 96, 0.5, 0)
    per, walls = {}, []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        w = WORKLOADS[name]
        inputs = w.prepare(client, spec)
        acc = {}
        variant = os.environ.get("VARIANT", "asafe")
        if variant == "asafe":
            asafe.install(client)
            p = cluster.scheduler.plugins["asafe"]
            p.update_graph = _timed(acc, "update_graph", p.update_graph)
            p.runtime.evaluate = _timed(acc, "evaluate", p.runtime.evaluate)
            system = p.runtime.system_signals
            if hasattr(system, "sample"):  # the periodic sampler's samples (this session's tree)
                system.sample = _timed(acc, "sampler", system.sample)
        for g in range(graphs + 1):
            acc.clear()  # the gap's samples count with the graph that follows it
            time.sleep(gap)
            start = time.perf_counter()
            out = client.persist(w.run(client, inputs, spec))
            wait(out)
            wall = time.perf_counter() - start
            counts = {k: tuple(v) for k, v in acc.items()}  # read before the release's evaluations
            keys = _keys_of(out if isinstance(out, list) else [out])
            del out
            _wait_forgotten(client, keys)
            if g:
                walls.append(wall)
                for k, (n, s) in counts.items():
                    per.setdefault(k, []).append((n, s))
    tree = os.environ["TREE"]
    print(f"{name}/{kind}, {graphs} graphs after {gap:g} s idle each, {variant}, tree {tree}")
    for k in [k for k in ("update_graph", "evaluate", "sampler") if k in per]:
        v = per.get(k, [(0, 0.0)])
        print(f"  {k:<13s} {statistics.median(n for n, _ in v):4.0f} calls  {statistics.median(s for _, s in v)*1e3:7.3f} ms"
              f"  (quartiles {statistics.quantiles([s*1e3 for _, s in v], n=4)[0]:.3f}-"
              f"{statistics.quantiles([s*1e3 for _, s in v], n=4)[2]:.3f})")
    print(f"  wall median {statistics.median(walls)*1e3:.1f} ms")


if __name__ == "__main__":
    main()
