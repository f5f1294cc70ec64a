"""The compiled transition hook's thread cpu by (start, finish) on the scheduler suite's fan-in graph."""
import sys, os, time
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from distributed import Client, LocalCluster
from benchmarks.scheduler import build_graph, _wait_released
if __name__ == "__main__":
    g = build_graph(sys.argv[1], 4000, fan_in=2000, graphs=100); rounds = 3
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        acc = {}
        for r in range(rounds + 1):
            h = asafe.install(c)
            p = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
            f = p.transition
            def w(key, start, finish, *a, _f=f, _r=r, **k):
                t = time.thread_time()
                try: return _f(key, start, finish, *a, **k)
                finally:
                    if _r:
                        d = acc.setdefault((start, finish), [0, 0.0]); d[0] += 1; d[1] += time.thread_time() - t
            p.transition = w
            kept = g.run(c); del kept; _wait_released(c); h.uninstall()
        tot = sum(v[1] for v in acc.values())
        for k, v in sorted(acc.items(), key=lambda kv: -kv[1][1]):
            print(f"{k[0]:>10s}->{k[1]:<10s} calls/run {v[0]/rounds:7.1f}  us/call {1e6*v[1]/v[0]-2.2:6.2f}  ms/run {1e3*(v[1]-2.2e-6*v[0])/rounds:6.2f}  share {v[1]/tot:.2f}")
