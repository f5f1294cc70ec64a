"""Thread cpu of the asafe scheduler plugin's hooks per graph on the scheduler suite's graphs (LocalCluster, 2 worker processes)."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from distributed import Client, LocalCluster
from benchmarks.scheduler import build_graph, _wait_released
HOOKS = ("update_graph", "transition", "_tick", "remove_worker", "add_worker")
if __name__ == "__main__":
    gname, rounds = sys.argv[1], int(sys.argv[2])
    g = build_graph(gname, 4000, fan_in=2000, graphs=int(os.environ.get("GRAPHS", 300)))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        res = []
        for r in range(rounds + 1):
            h = asafe.install(c)
            plugin = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
            per = {}
            for hn in HOOKS:
                f = getattr(plugin, hn)
                def wrapper(*a, _f=f, _n=hn, **k):
                    t = time.thread_time()
                    try: return _f(*a, **k)
                    finally:
                        d = time.thread_time() - t; v = per.setdefault(_n, [0.0, 0]); v[0] += d; v[1] += 1
                setattr(plugin, hn, wrapper)
            kept = g.run(c); del kept; _wait_released(c)
            h.uninstall()
            if r: res.append({n: (v[0] - 2.2e-6 * v[1], v[1]) for n, v in per.items()})
        for hn in HOOKS:
            v = sorted(p.get(hn, (0, 0))[0] for p in res); n = res[-1].get(hn, (0, 0))[1]
            if n: print(f"  {hn:14s} ms/run median {1000*statistics.median(v):7.2f}  calls {n}  us/call {1e6*statistics.median(v)/n:.2f}")
        print(f"{gname}: hooks ms/run median {1000*statistics.median(sum(x for x, _ in p.values()) for p in res):.2f} ({g.tasks} tasks)")
