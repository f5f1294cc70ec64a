"""Thread cpu of the scheduler plugin's hooks per graph (update_graph, transition, _tick), default config,
median of R graphs per workload; run from a tree's root: PYTHONPATH=<tree> python hooks_cpu.py diff,stencil smooth 8"""
import sys, time, statistics
sys.path.insert(0, ".")
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)
import dask, os
from asafe.schedulers import scheduler_plugin as sp
VARIANT = os.environ.get("VARIANT", "default")
CONFIG = {"noforecast": {"asafe.distributed.expected-transfers": False}}
class _NoEvents:
    def add(self, *a, **k): pass
    def finish(self, *a, **k): pass
    def flush(self): pass
    def close(self): pass
def patch(plugin):
    if VARIANT == "notype":
        sp.resolve_type = lambda a, t, d: d
    if VARIANT == "noeval":
        plugin.runtime.evaluate = lambda *a, **k: []
    if VARIANT == "noevents":
        plugin._events = _NoEvents()
if __name__ == "__main__":
    names, kind, rounds = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
    spec = Spec(kind, 96, 0.5, 0)
    print("# tree", asafe.__file__, VARIANT)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        for name in names:
            w = WORKLOADS[name]; inputs = w.prepare(client, spec)
            xs = []
            for r in range(rounds + 1):
                with dask.config.set(CONFIG.get(VARIANT, {})):
                    handle = asafe.install(client)
                plugin = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
                patch(plugin)
                acc = [0.0, 0]
                for hn in ("update_graph", "transition", "_tick"):
                    f = getattr(plugin, hn)
                    def wrapper(*a, _f=f, **k):
                        t = time.thread_time()
                        try: return _f(*a, **k)
                        finally: acc[0] += time.thread_time() - t; acc[1] += 1
                    setattr(plugin, hn, wrapper)
                built = w.run(client, inputs, spec)
                out = built if w.family == "futures" else client.persist(built)
                wait(out)
                if r: xs.append(acc[0] - 2.2e-6 * acc[1])
                handle.uninstall()
                keys = _keys_of(out if isinstance(out, list) else [out]); del out, built
                _wait_forgotten(client, keys)
            xs.sort()
            print(f"{name:14s} hooks ms/graph median {1000*statistics.median(xs):6.2f} q1-q3 [{1000*xs[len(xs)//4]:.2f}-{1000*xs[-1-len(xs)//4]:.2f}] calls {acc[1]}", flush=True)
            del inputs
