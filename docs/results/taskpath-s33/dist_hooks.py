"""Distribution of the transition hook's thread cpu per call (one workload, R graphs): median, mean, the top 1% share; gc collections during hooks."""
import sys, time, statistics, gc
sys.path.insert(0, ".")
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)
if __name__ == "__main__":
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = Spec(kind, 96, 0.5, 0)
    gcs = []
    in_hook = [False]
    def cb(phase, info):
        if in_hook[0]:
            if phase == "start": gcs.append([info["generation"], time.thread_time()])
            else: gcs[-1][1] = time.thread_time() - gcs[-1][1]
    gc.callbacks.append(cb)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        w = WORKLOADS[name]; inputs = w.prepare(client, spec)
        xs = []
        for r in range(rounds + 1):
            handle = asafe.install(client)
            plugin = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
            f = plugin.transition
            def wrapper(*a, _f=f, **k):
                in_hook[0] = True
                t = time.thread_time()
                try: return _f(*a, **k)
                finally:
                    d = time.thread_time() - t; in_hook[0] = False
                    if r: xs.append(d)
            plugin.transition = wrapper
            built = w.run(client, inputs, spec)
            out = built if w.family == "futures" else client.persist(built)
            wait(out)
            handle.uninstall()
            keys = _keys_of(out if isinstance(out, list) else [out]); del out, built
            _wait_forgotten(client, keys)
        xs.sort(); n = len(xs); tot = sum(xs)
        top = xs[int(n * 0.99):]
        print(f"{name}: calls {n}, median {1e6*statistics.median(xs):.1f} us, mean {1e6*tot/n:.1f} us, p90 {1e6*xs[int(n*.9)]:.1f}, p99 {1e6*xs[int(n*.99)]:.1f}, top 1% share {sum(top)/tot:.2f}, top 5% share {sum(xs[int(n*.95):])/tot:.2f}")
        by = {}
        for g, d in gcs: by.setdefault(g, []).append(d)
        print("gc in hooks:", {g: (len(v), round(1e3 * sum(v) / rounds, 2)) for g, v in sorted(by.items())}, "(count, ms per graph)")
