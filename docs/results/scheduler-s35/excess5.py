"""Scheduler cpu per run (SchedulerCluster), variants interleaved: plain Dask, asafe, and asafe with parts turned off."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from benchmarks.scheduler import SchedulerCluster, build_graph, _wait_released

def disable(dask_scheduler=None, what=()):
    p = [p for p in dask_scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
    if "trans" in what: p.transition = lambda *a, **k: None
    if "update" in what: p.update_graph = lambda *a, **k: None
    if "tick" in what: p._ticker.stop()
    if "probe" in what: p._probe_soon = lambda: None
    if "eval" in what: p.runtime.evaluate = lambda *a, **k: []

if __name__ == "__main__":
    gname, rounds = sys.argv[1], int(sys.argv[2])
    variants = os.environ.get("VARIANTS", "dask,asafe,no-trans+update").split(",")
    g = build_graph(gname, 4000, fan_in=2000, graphs=int(os.environ.get("GRAPHS", 300)))
    with SchedulerCluster(2) as cl:
        c = cl.client
        res = {v: [] for v in variants}
        for r in range(rounds + 1):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for variant in order:
                h = asafe.install(c) if not variant.startswith("dask") else None
                if variant.startswith("no-"): c.run_on_scheduler(disable, what=tuple(variant[3:].split("+")))
                time.sleep(0.3)
                cpu0 = cl.scheduler_cpu(); kept = g.run(c); del kept; _wait_released(c); cpu = cl.scheduler_cpu() - cpu0
                if h: h.uninstall()
                if r: res[variant].append(cpu)
        d = statistics.median(res["dask"])
        for v in variants:
            m = statistics.median(res[v]); print(f"{gname} {v:18s} cpu/run median {m*1000:.0f} ms ({m/d-1:+.1%})  {[round(x*1000) for x in res[v]]}")
