"""Thread cpu of the scheduler plugin's hooks per small graph (benchmarks.cluster.tree_graph of 10 tasks), by hook,
and of runtime.evaluate inside them; 300 graphs after 20 warm ones."""
import sys, time, itertools
sys.path.insert(0, ".")
import asafe
from distributed import Client, LocalCluster
from benchmarks.cluster import tree_graph
tok = itertools.count()
if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        handle = asafe.install(client)
        plugin = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
        acc = {}
        def wrap(obj, attr, label):
            f = getattr(obj, attr)
            def w(*a, _f=f, **k):
                t = time.thread_time()
                try: return _f(*a, **k)
                finally:
                    d = acc.setdefault(label, [0, 0.0]); d[0] += 1; d[1] += time.thread_time() - t
            setattr(obj, attr, w)
        for a in ("update_graph", "transition"):
            wrap(plugin, a, a)
        wrap(plugin.runtime, "evaluate", "runtime.evaluate (inside)")
        wrap(plugin.forecast, "submitted", "forecast.submitted (inside)")
        wrap(plugin.p2p, "submitted", "p2p.submitted (inside)")
        for i in range(20 + n):
            if i == 20: acc.clear()
            c, e = tree_graph(10, f"t{next(tok)}")
            assert client.compute(c).result() == e
        for k, (calls, secs) in acc.items():
            print(f"{k:30s} calls/graph {calls/n:6.2f}  us/call {1e6*secs/calls:7.1f}  us/graph {1e6*secs/n:7.1f}")
        handle.uninstall()
