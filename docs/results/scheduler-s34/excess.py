"""SchedulerCluster (scheduler in its own process): the scheduler's cpu per run, plain Dask vs asafe alternating,
and asafe's hooks' thread cpu in the same runs (wrapped on the scheduler)."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from benchmarks.scheduler import SchedulerCluster, build_graph, _wait_released

def wrap(dask_scheduler=None):
    import time
    p = [p for p in dask_scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
    acc = p.__dict__.setdefault("_acc", {})
    for hn in ("update_graph", "transition"):
        f = getattr(p, hn)
        def w(*a, _f=f, _n=hn, **k):
            t = time.thread_time()
            try: return _f(*a, **k)
            finally:
                v = acc.setdefault(_n, [0.0, 0]); v[0] += time.thread_time() - t; v[1] += 1
        setattr(p, hn, w)
    if os.environ.get("NOTICK"): p._ticker.stop()
def read(dask_scheduler=None):
    p = [p for p in dask_scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
    return {k: (v[0] - 2.2e-6 * v[1], v[1]) for k, v in p._acc.items()}

if __name__ == "__main__":
    gname, rounds = sys.argv[1], int(sys.argv[2])
    g = build_graph(gname, 4000, fan_in=2000, graphs=int(os.environ.get("GRAPHS", 300)))
    with SchedulerCluster(2) as cl:
        c = cl.client
        res = {"dask": [], "asafe": []}; hooks = []
        for r in range(rounds + 1):
            for variant in (("dask", "asafe") if r % 2 else ("asafe", "dask")):
                h = asafe.install(c) if variant == "asafe" else None
                if h: c.run_on_scheduler(wrap)
                time.sleep(0.3)
                cpu0 = cl.scheduler_cpu(); kept = g.run(c); del kept; _wait_released(c); cpu = cl.scheduler_cpu() - cpu0
                if h: hk = c.run_on_scheduler(read); h.uninstall()
                if r:
                    res[variant].append(cpu)
                    if h: hooks.append(sum(x for x, _ in hk.values()))
        d, a = statistics.median(res["dask"]), statistics.median(res["asafe"])
        print(f"{gname}: scheduler cpu/run dask {d*1000:.0f} ms, asafe {a*1000:.0f} ms, excess {1000*(a-d):.0f} ms ({a/d-1:+.1%}); hooks median {1000*statistics.median(hooks):.1f} ms ({statistics.median(hooks)/d:.1%} of dask)")
        print("  dask", [round(x*1000) for x in res["dask"]], "asafe", [round(x*1000) for x in res["asafe"]], "hooks", [round(x*1000,1) for x in hooks])
