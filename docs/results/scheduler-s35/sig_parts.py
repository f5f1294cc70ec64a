"""Thread cpu of the signal sampling (SystemSignals samples, hosts' combine, children scans) per run of a graph."""
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
            rt = p.runtime; acc = {}; s = rt._signals
            wrap(s, "_own_cores", acc, "own_cores"); wrap(s, "_own_pids", acc, "own_pids")
            hs = [p.host_signals]
            for x in hs: wrap(x, "_combine", acc, "hosts._combine")
            wrap(rt, "evaluate", acc, "evaluate")
            t0 = time.perf_counter()
            kept = g.run(c); del kept; _wait_released(c)
            wall = time.perf_counter() - t0
            if r: print(f"wall {wall:.2f}s | " + " | ".join(f"{k}: {v[0]*1000:.2f} ms/{v[1]}" for k, v in sorted(acc.items())))
            h.uninstall()
