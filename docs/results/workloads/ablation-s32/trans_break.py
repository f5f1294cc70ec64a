"""Scheduler plugin transition cost by (start, finish), thread cpu, suite workloads."""
import sys, time
import asafe
from distributed import Client, LocalCluster, wait
sys.path.insert(0, ".")
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)
if __name__ == "__main__":
    names, kind, rounds = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
    spec = Spec(kind, 96, 0.5, 0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        for name in names:
            w = WORKLOADS[name]; inputs = w.prepare(client, spec)
            acc = {}
            sched_cpu = []
            for r in range(rounds):
                handle = asafe.install(client)
                plugin = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
                f = plugin.transition
                def wrapper(key, start, finish, *a, _f=f, **k):
                    t = time.thread_time()
                    try: return _f(key, start, finish, *a, **k)
                    finally:
                        d = acc.setdefault((start, finish), [0, 0.0]); d[0] += 1; d[1] += time.thread_time() - t
                plugin.transition = wrapper
                built = w.run(client, inputs, spec)
                out = built if w.family == "futures" else client.persist(built)
                wait(out)
                handle.uninstall()
                keys = _keys_of(out if isinstance(out, list) else [out]); del out, built
                _wait_forgotten(client, keys)
            tot = sum(v[1] for v in acc.values())
            for k, v in sorted(acc.items(), key=lambda kv: -kv[1][1]):
                print(f"{name:10s} {k[0]:>10s}->{k[1]:<10s} calls/graph {v[0]/rounds:7.1f}  us/call {1e6*v[1]/v[0]-2.2:6.1f}  ms/graph {1e3*v[1]/rounds:6.2f}  share {v[1]/tot:.2f}")
            del inputs
