"""Thread cpu of update_graph's parts (fan-in / many-small), via a proxy of the compiled path and wrappers."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from distributed import Client, LocalCluster
from benchmarks.scheduler import build_graph, _wait_released
class Proxy:
    def __init__(self, path, acc): self.p, self.acc = path, acc
    def _t(self, name, f, *a):
        t = time.thread_time()
        try: return f(*a)
        finally:
            v = self.acc.setdefault(name, [0.0, 0]); v[0] += time.thread_time() - t - 1.1e-6; v[1] += 1
    def submitted(self, new): return self._t("submitted", self.p.submitted, new)
    def enter(self, key): return self._t("enter", self.p.enter, key)
    def join_wave(self, ts): return self._t("join_wave", self.p.join_wave, ts)
if __name__ == "__main__":
    g = build_graph(sys.argv[1], 4000, fan_in=2000, graphs=100)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        for r in range(3):
            h = asafe.install(c)
            p = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
            acc = {}
            p._path = Proxy(p._path, acc)
            for obj, name, label in ((p, "update_graph", "update_graph"), (p.p2p, "submitted", "p2p.submitted"), (p.runtime, "evaluate", "evaluate")):
                f = getattr(obj, name)
                def w(*a, _f=f, _l=label, **k):
                    t = time.thread_time()
                    try: return _f(*a, **k)
                    finally:
                        v = acc.setdefault(_l, [0.0, 0]); v[0] += time.thread_time() - t - 1.1e-6; v[1] += 1
                setattr(obj, name, w)
            kept = g.run(c); del kept; _wait_released(c)
            ug = acc["update_graph"][0]
            if r: print(" | ".join(f"{k}: {v[0]*1000:.2f} ms/{v[1]}" for k, v in acc.items()), f"| rest of update_graph: {1000*(ug - sum(acc[k][0] for k in ('submitted','enter','join_wave','p2p.submitted') if k in acc) - (acc['evaluate'][0] if 'evaluate' in acc else 0)):.2f} ms (evaluate incl. event path)")
            h.uninstall()
