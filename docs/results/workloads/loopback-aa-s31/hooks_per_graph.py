"""asafe's scheduler hooks (thread cpu) per graph of suite workloads, with parts of the plugin switched off by config."""
import sys, time, statistics
import dask
import asafe
from distributed import Client, LocalCluster, wait
sys.path.insert(0, ".")  # run from the repository root
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)
CONFIGS = {"default": {}, "no-wave": {"asafe.distributed.next-wave": False},
           "no-forecast": {"asafe.distributed.expected-transfers": False},
           "neither": {"asafe.distributed.next-wave": False, "asafe.distributed.expected-transfers": False}}
if __name__ == "__main__":
    names, kind, rounds = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
    spec = Spec(kind, 96, 0.5, 0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        for name in names:
            w = WORKLOADS[name]; inputs = w.prepare(client, spec)
            res = {c: [] for c in CONFIGS}
            for r in range(rounds):
                order = list(CONFIGS) if r % 2 == 0 else list(CONFIGS)[::-1]
                for c in order:
                    with dask.config.set(CONFIGS[c]):
                        handle = asafe.install(client)
                    plugin = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
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
                    res[c].append((acc[0], acc[1]))
                    handle.uninstall()
                    keys = _keys_of(out if isinstance(out, list) else [out]); del out, built
                    _wait_forgotten(client, keys)
            for c, xs in res.items():
                print(f"{name:14s} {c:12s} hooks ms/graph median {1000*statistics.median(x[0] for x in xs):6.2f}  "
                      f"[{1000*min(x[0] for x in xs):.2f}-{1000*max(x[0] for x in xs):.2f}]  calls {statistics.median(x[1] for x in xs):.0f}", flush=True)
            del inputs
