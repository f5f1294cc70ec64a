"""fan-in / many-small: thread cpu of the parts of the runtime's evaluations (wrapped), per run."""
import sys, os, time
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from distributed import Client, LocalCluster
from benchmarks.scheduler import build_graph, _wait_released
def wrap(obj, name, acc, label):
    f = getattr(obj, name)
    def w(*a, **k):
        t = time.thread_time()
        try: return f(*a, **k)
        finally:
            v = acc.setdefault(label, [0.0, 0]); v[0] += time.thread_time() - t - 1.1e-6; v[1] += 1
    setattr(obj, name, w)
if __name__ == "__main__":
    g = build_graph(sys.argv[1], 4000, fan_in=2000, graphs=100)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        for r in range(3):
            h = asafe.install(c)
            p = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
            rt = p.runtime; acc = {}
            wrap(rt, "evaluate", acc, "evaluate"); wrap(rt.tracker, "mode", acc, " tracker.mode")
            wrap(rt.tracker, "_feed", acc, "  tracker._feed")
            wrap(rt, "_read_sources", acc, " _read_sources"); wrap(rt, "_decide", acc, " _decide")
            if rt._signals is not None: wrap(rt._signals, "read", acc, " signals.read")
            wrap(p, "_charge_transfers", acc, "_charge_transfers"); wrap(p, "_settle", acc, "_settle")
            kept = g.run(c); del kept; _wait_released(c)
            if r: print(" | ".join(f"{k}: {v[0]*1000:.2f} ms/{v[1]} = {v[0]/v[1]*1e6:.0f} us" for k, v in sorted(acc.items(), key=lambda kv: kv[0].strip())))
            h.uninstall()
