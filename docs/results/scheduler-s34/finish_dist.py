"""Per-call thread cpu of processing->memory transitions (compiled hook) on fan-in: percentiles and the largest."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from distributed import Client, LocalCluster
from benchmarks.scheduler import build_graph, _wait_released
if __name__ == "__main__":
    g = build_graph(sys.argv[1], 4000, fan_in=2000, graphs=100)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        for r in range(3):
            h = asafe.install(c)
            p = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
            f = p.transition; xs = []; ev = []
            fe = p.runtime.evaluate
            def evw(*a, _f=fe, **k):
                t = time.thread_time()
                try: return _f(*a, **k)
                finally: ev.append(time.thread_time() - t)
            p.runtime.evaluate = evw
            def w(key, start, finish, *a, _f=f, **k):
                t = time.thread_time()
                try: return _f(key, start, finish, *a, **k)
                finally:
                    if start == "processing" and finish == "memory": xs.append((time.thread_time() - t, str(key)[:30], len(k.get("startstops") or ())))
            p.transition = w
            kept = g.run(c); del kept; _wait_released(c); h.uninstall()
            v = sorted(x[0] for x in xs); n = len(v)
            print(f"run {r}: n {n} median {1e6*v[n//2]:.1f} us p90 {1e6*v[int(n*.9)]:.1f} p99 {1e6*v[int(n*.99)]:.1f} sum {1e3*sum(v):.1f} ms; top-5 sum {1e3*sum(v[-5:]):.1f} ms; evaluations {len(ev)} sum {1e3*sum(ev):.1f} ms")
            print("   largest:", [(round(1e6*t), k, s) for t, k, s in sorted(xs)[-4:]])
