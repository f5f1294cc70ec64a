"""Thread cpu of the scheduler plugin's transition hook per (start, finish), and update_graph's parts, on many-small."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from distributed import Client, LocalCluster
from benchmarks.scheduler import build_graph, _wait_released
if __name__ == "__main__":
    gname, rounds = sys.argv[1], int(sys.argv[2])
    g = build_graph(gname, 4000, fan_in=2000, graphs=int(os.environ.get("GRAPHS", 100)))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        tot = {}
        for r in range(rounds + 1):
            h = asafe.install(c)
            p = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
            per = {}
            def wrap(obj, name, label=None):
                f = getattr(obj, name)
                def w(*a, **k):
                    lab = label or f"{name} {a[1]}->{a[2]}"
                    t = time.thread_time()
                    try: return f(*a, **k)
                    finally:
                        v = per.setdefault(lab, [0.0, 0]); v[0] += time.thread_time() - t - 1.1e-6; v[1] += 1
                setattr(obj, name, w)
            wrap(p, "transition"); wrap(p, "update_graph", "update_graph"); wrap(p.runtime, "evaluate", " evaluate")
            wrap(p, "_charge_transfers", " _charge_transfers"); wrap(p, "_settle", " _settle")
            kept = g.run(c); del kept; _wait_released(c)
            h.uninstall()
            if r:
                for k, v in per.items():
                    a = tot.setdefault(k, [[], 0]); a[0].append(v[0]); a[1] = v[1]
        for k, (v, n) in sorted(tot.items(), key=lambda kv: -statistics.median(kv[1][0])):
            print(f"  {k:34s} ms/run {1000*statistics.median(v):7.2f}  calls {n:6d}  us/call {1e6*statistics.median(v)/n:6.2f}")
