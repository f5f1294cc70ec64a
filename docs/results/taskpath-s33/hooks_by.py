"""Thread cpu of the scheduler plugin's hooks per graph, in all and by hook (update_graph, transition, _tick),
default config, median of R graphs per workload (each a fresh installation, after one warm graph), less the
clock's own 2.2 us a call. Run from a tree's root: PYTHONPATH=<tree> python hooks_by.py diff,stencil smooth 6"""
import sys, time, statistics
sys.path.insert(0, ".")
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)
if __name__ == "__main__":
    names, kind, rounds = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
    spec = Spec(kind, 96, 0.5, 0)
    print("# tree", asafe.__file__)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        for name in names:
            w = WORKLOADS[name]; inputs = w.prepare(client, spec)
            xs = []; parts = []
            for r in range(rounds + 1):
                handle = asafe.install(client)
                plugin = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
                acc = [0.0, 0]; per = {}
                for hn in ("update_graph", "transition", "_tick"):
                    f = getattr(plugin, hn)
                    def wrapper(*a, _f=f, _n=hn, **k):
                        t = time.thread_time()
                        try: return _f(*a, **k)
                        finally: d = time.thread_time() - t; acc[0] += d; acc[1] += 1; per.setdefault(_n, [0.0, 0]); per[_n][0] += d; per[_n][1] += 1
                    setattr(plugin, hn, wrapper)
                built = w.run(client, inputs, spec)
                out = built if w.family == "futures" else client.persist(built)
                wait(out)
                if r: xs.append(acc[0] - 2.2e-6 * acc[1]); parts.append({n: v[0] - 2.2e-6 * v[1] for n, v in per.items()})
                handle.uninstall()
                keys = _keys_of(out if isinstance(out, list) else [out]); del out, built
                _wait_forgotten(client, keys)
            xs.sort()
            for hn in ("update_graph", "transition", "_tick"):
                v = sorted(p.get(hn, 0.0) for p in parts); print(f"   {hn:14s} ms/graph median {1000*statistics.median(v):6.2f}")
            print(f"{name:14s} hooks ms/graph median {1000*statistics.median(xs):6.2f} q1-q3 [{1000*xs[len(xs)//4]:.2f}-{1000*xs[-1-len(xs)//4]:.2f}] calls {acc[1]}", flush=True)
            del inputs
