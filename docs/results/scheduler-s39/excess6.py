"""Scheduler cpu per run (SchedulerCluster), variants interleaved: plain Dask, asafe, asafe with no-op hooks,
asafe with its scheduler plugin taken out of scheduler.plugins (no dispatch), asafe's worker plugin alone."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from benchmarks.scheduler import SchedulerCluster, build_graph, _wait_released

def alter(dask_scheduler=None, how=""):
    p = dask_scheduler.plugins.get("asafe")
    if how == "noop":
        p.transition = lambda *a, **k: None; p.update_graph = lambda *a, **k: None
    elif how == "detached":
        dask_scheduler._asafe_parked = dask_scheduler.plugins.pop("asafe")
    return True

def restore(dask_scheduler=None):
    parked = getattr(dask_scheduler, "_asafe_parked", None)
    if parked is not None:
        dask_scheduler.plugins["asafe"] = parked; dask_scheduler._asafe_parked = None
    return True

if __name__ == "__main__":
    gname, rounds = sys.argv[1], int(sys.argv[2])
    variants = os.environ.get("VARIANTS", "dask,asafe,noop,detached").split(",")
    g = build_graph(gname, int(os.environ.get("TASKS", 4000)), fan_in=2000, graphs=int(os.environ.get("GRAPHS", 300)))
    with SchedulerCluster(2) as cl:
        c = cl.client
        res = {v: [] for v in variants}
        for r in range(rounds + 1):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for variant in order:
                h = asafe.install(c) if variant != "dask" else None
                if variant in ("noop", "detached"): c.run_on_scheduler(alter, how=variant)
                time.sleep(0.3)
                cpu0 = cl.scheduler_cpu(); kept = g.run(c); del kept; _wait_released(c); cpu = cl.scheduler_cpu() - cpu0
                if variant == "detached": c.run_on_scheduler(restore)
                if h: h.uninstall()
                if r: res[variant].append(cpu)
        d = statistics.median(res["dask"])
        for v in variants:
            m = statistics.median(res[v])
            ratios = sorted(x / y for x, y in zip(res[v], res["dask"]))
            print(f"{gname} {v:10s} cpu/run median {m*1000:.0f} ms ({m/d-1:+.1%}); paired ratio median {statistics.median(ratios):.3f} range {ratios[0]:.3f}-{ratios[-1]:.3f}  {[round(x*1000) for x in res[v]]}")
