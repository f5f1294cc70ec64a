"""The scheduler's cpu spent by asafe.install (the call, and each 0.5 s after it) and by uninstall."""
import sys, os, time
sys.path.insert(0, os.environ.get("TREE", os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))))
import asafe
from benchmarks.scheduler import SchedulerCluster
with SchedulerCluster(2) as cl:
    c = cl.client
    for r in range(4):
        time.sleep(1.0)
        cpu0 = cl.scheduler_cpu(); t0 = time.perf_counter(); h = asafe.install(c); dt = time.perf_counter() - t0
        steps = [cl.scheduler_cpu() - cpu0]
        for i in range(4):
            time.sleep(0.5); steps.append(cl.scheduler_cpu() - cpu0)
        cpu0 = cl.scheduler_cpu(); h.uninstall(); u = [cl.scheduler_cpu() - cpu0]
        for i in range(2):
            time.sleep(0.5); u.append(cl.scheduler_cpu() - cpu0)
        print(r, f"install call {dt*1000:.0f} ms wall; scheduler cpu cumulative after call, +0.5..2 s: {[round(x*1000) for x in steps]} ms; uninstall {[round(x*1000) for x in u]} ms", flush=True)
