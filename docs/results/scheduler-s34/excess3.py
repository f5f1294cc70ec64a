"""Scheduler cpu per run (SchedulerCluster), three variants interleaved: plain Dask, asafe, asafe with its two hooks no-ops."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from benchmarks.scheduler import SchedulerCluster, build_graph, _wait_released

def nohooks(dask_scheduler=None):
    p = [p for p in dask_scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
    p.transition = lambda *a, **k: None
    p.update_graph = lambda *a, **k: None
    if os.environ.get("NOTICK"): p._ticker.stop()

if __name__ == "__main__":
    gname, rounds = sys.argv[1], int(sys.argv[2])
    variants = os.environ.get("VARIANTS", "dask,asafe,nohooks").split(",")
    g = build_graph(gname, 4000, fan_in=2000, graphs=int(os.environ.get("GRAPHS", 300)))
    with SchedulerCluster(2) as cl:
        c = cl.client
        res = {v: [] for v in variants}
        for r in range(rounds + 1):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for variant in order:
                h = asafe.install(c) if variant != "dask" else None
                if variant == "nohooks": c.run_on_scheduler(nohooks)
                time.sleep(0.3)
                cpu0 = cl.scheduler_cpu(); kept = g.run(c); del kept; _wait_released(c); cpu = cl.scheduler_cpu() - cpu0
                if h: h.uninstall()
                if r: res[variant].append(cpu)
        d = statistics.median(res["dask"])
        for v in variants:
            m = statistics.median(res[v]); print(f"{gname} {v:8s} cpu/run median {m*1000:.0f} ms ({m/d-1:+.1%})  {[round(x*1000) for x in res[v]]}")
