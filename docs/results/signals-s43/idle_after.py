"""The scheduler process's cpu per second while idle after a graph: within the 30 s in which asafe's plugin keeps
sampling the system signals, and after them; plain Dask and asafe installed, alternating (session 43).

PYTHONPATH=TREE TREE=TREE python idle_after.py [SECONDS]   (the scheduler in a process of its own, 2 workers)"""
import os, sys, time
sys.path.insert(0, os.environ["TREE"])
import asafe
from benchmarks.scheduler import SchedulerCluster

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0


def idle_cpu(cluster, seconds):
    cpu0, t0 = cluster.scheduler_cpu(), time.time()
    time.sleep(seconds)
    return (cluster.scheduler_cpu() - cpu0) / (time.time() - t0)


if __name__ == "__main__":
    with SchedulerCluster(2) as cl:
        c = cl.client
        for r in range(2):
            for variant in ("dask", "asafe"):
                h = asafe.install(c) if variant == "asafe" else None
                assert c.submit(lambda x: x + 1, 1, pure=False).result() == 2  # one graph: the scheduler was active
                t_graph = time.time()
                recent = idle_cpu(cl, secs)  # within 30 s of the latest evaluation
                time.sleep(max(0.0, t_graph + 31.0 - time.time()))
                later = idle_cpu(cl, secs)  # past them
                if h:
                    h.uninstall()
                print(r, variant, f"idle after a graph {recent*1000:.1f} ms/s, 31 s on {later*1000:.1f} ms/s", flush=True)
