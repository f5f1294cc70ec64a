"""cProfile of the runtime's evaluations on the scheduler over three 2,001-task fan-in runs (the suite's SchedulerCluster)."""
import sys, os, time, cProfile, pstats, io
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")))
import asafe
from benchmarks.scheduler import SchedulerCluster, build_graph, _wait_released
def wrap(dask_scheduler=None):
    p = dask_scheduler.plugins["asafe"]
    prof = cProfile.Profile(); st = {"n": 0, "t": 0.0}
    rt = p.runtime; f = rt.evaluate
    def ev(*a, **k):
        t = time.thread_time(); st["n"] += 1
        prof.enable()
        try: return f(*a, **k)
        finally:
            prof.disable(); st["t"] += time.thread_time() - t
    rt.evaluate = ev
    dask_scheduler._s41 = (prof, st)
    return True
def dump(dask_scheduler=None):
    prof, st = dask_scheduler._s41
    s = io.StringIO(); pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(35)
    return st, s.getvalue()
g = build_graph("fan-in", 4000, fan_in=2000)
with SchedulerCluster(2) as cl:
    c = cl.client
    h = asafe.install(c); c.run_on_scheduler(wrap)
    for r in range(3):
        kept = g.run(c); del kept; _wait_released(c)
    st, text = c.run_on_scheduler(dump)
    print(st); print(text)
    h.uninstall()
