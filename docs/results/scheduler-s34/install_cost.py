"""The scheduler's cpu in the 2 s after asafe.install returns (nothing submitted), against 2 s idle, SchedulerCluster."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from benchmarks.scheduler import SchedulerCluster
if __name__ == "__main__":
    with SchedulerCluster(2) as cl:
        c = cl.client
        for r in range(5):
            c0 = cl.scheduler_cpu(); time.sleep(2.0); idle = cl.scheduler_cpu() - c0
            c0 = cl.scheduler_cpu(); t0 = time.perf_counter(); h = asafe.install(c); t1 = time.perf_counter(); c1 = cl.scheduler_cpu()
            time.sleep(2.0 - (t1 - t0)); after = cl.scheduler_cpu() - c1
            c2 = cl.scheduler_cpu(); h.uninstall(); c3 = cl.scheduler_cpu()
            print(f"idle 2 s {1000*idle:.0f} ms | install call {1000*(c1-c0):.0f} ms ({1000*(t1-t0):.0f} ms wall) | the rest of 2 s after it {1000*after:.0f} ms | uninstall {1000*(c3-c2):.0f} ms")
            time.sleep(1.0)
