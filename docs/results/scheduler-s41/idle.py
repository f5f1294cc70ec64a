"""The scheduler process's cpu per second while idle and while a slow trickle of tasks runs: plain Dask vs asafe installed."""
import sys, os, time
sys.path.insert(0, os.environ.get("TREE", os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))))
import asafe
from benchmarks.scheduler import SchedulerCluster
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 10
with SchedulerCluster(2) as cl:
    c = cl.client
    for r in range(3):
        for variant in ("dask", "asafe"):
            h = asafe.install(c) if variant == "asafe" else None
            time.sleep(1.0)
            cpu0 = cl.scheduler_cpu(); t0 = time.time(); time.sleep(secs); idle = (cl.scheduler_cpu() - cpu0) / (time.time() - t0)
            # a trickle: one task every 20 ms
            cpu0 = cl.scheduler_cpu(); t0 = time.time(); n = 0
            while time.time() - t0 < secs:
                c.submit(lambda x: x + 1, n, pure=False).result(); n += 1; time.sleep(0.02)
            busy = (cl.scheduler_cpu() - cpu0) / (time.time() - t0)
            if h: h.uninstall()
            print(r, variant, f"idle {idle*1000:.1f} ms/s  trickle {busy*1000:.1f} ms/s ({n} tasks, {busy*(time.time()-t0)/n*1e6:.0f} us/task)", flush=True)
