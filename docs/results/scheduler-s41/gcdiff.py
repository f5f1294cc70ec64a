"""Scheduler cpu per run and the scheduler's gc collections and gc seconds per run, plain Dask and asafe interleaved."""
import sys, os, time, statistics, gc
sys.path.insert(0, os.environ.get("TREE", os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))))
import asafe
from benchmarks.scheduler import SchedulerCluster, build_graph, _wait_released

def gc_hook(dask_scheduler=None):
    import time
    st = {"t0": 0.0, "n": [0, 0, 0], "s": [0.0, 0.0, 0.0]}
    def cb(phase, info):
        if phase == "start":
            st["t0"] = time.thread_time()
        else:
            g = info["generation"]; st["n"][g] += 1; st["s"][g] += time.thread_time() - st["t0"]
    gc.callbacks.append(cb)
    dask_scheduler._gcstat = st
    return gc.get_threshold()

def gc_read(dask_scheduler=None):
    st = dask_scheduler._gcstat
    out = (list(st["n"]), list(st["s"]))
    st["n"] = [0, 0, 0]; st["s"] = [0.0, 0.0, 0.0]
    return out

gname, rounds = sys.argv[1], int(sys.argv[2])
g = build_graph(gname, int(os.environ.get("TASKS", 4000)), fan_in=2000, graphs=int(os.environ.get("GRAPHS", 300)))
with SchedulerCluster(2) as cl:
    c = cl.client
    print("threshold", c.run_on_scheduler(gc_hook))
    res = {"dask": [], "asafe": []}
    for r in range(rounds + 1):
        for variant in (("dask", "asafe") if r % 2 else ("asafe", "dask")):
            h = asafe.install(c) if variant == "asafe" else None
            time.sleep(0.3); c.run_on_scheduler(gc_read)
            cpu0 = cl.scheduler_cpu(); kept = g.run(c); del kept; _wait_released(c); cpu = cl.scheduler_cpu() - cpu0
            n, s = c.run_on_scheduler(gc_read)
            if h: h.uninstall()
            if r: res[variant].append((cpu, n, s))
            print(r, variant, f"cpu {cpu*1000:.0f} ms gc n={n} s={[round(x*1000,1) for x in s]} ms", flush=True)
    for v in res:
        print(v, "median cpu", statistics.median(x[0] for x in res[v]) * 1000, "median gc ms", statistics.median(sum(x[2]) for x in res[v]) * 1000,
              "gc n", [statistics.median(x[1][i] for x in res[v]) for i in range(3)])
