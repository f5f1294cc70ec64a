"""perf record (cpu-clock) of the scheduler process over N fan-in runs with VARIANT (dask or asafe)."""
import sys, time, subprocess, signal
sys.path.insert(0, "/work/main")
import asafe
from benchmarks.scheduler import SchedulerCluster, build_graph, _wait_released
variant, runs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
g = build_graph("fan-in", 4000, fan_in=2000, graphs=100)
with SchedulerCluster(2) as cl:
    c = cl.client
    for warm in range(2):
        h = asafe.install(c) if variant == "asafe" else None
        kept = g.run(c); del kept; _wait_released(c)
        if h: h.uninstall()
    h = asafe.install(c) if variant == "asafe" else None
    time.sleep(0.5)
    p = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "2000", "-g", "-p", str(cl.scheduler.pid), "-o", out], stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    cpu0 = cl.scheduler_cpu()
    for r in range(runs):
        kept = g.run(c); del kept; _wait_released(c)
    cpu = cl.scheduler_cpu() - cpu0
    p.send_signal(signal.SIGINT); p.wait()
    if h: h.uninstall()
    print(variant, "cpu per run", cpu / runs)
