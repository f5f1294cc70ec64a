"""The scheduler suite's fan-in (2,001 tasks) in a loop on a LocalCluster, for a profiler to attach to (session 44).

PYTHONPATH=. WAIT=3 python fanin_loop.py asafe|dask ROUNDS   (prints its pid, waits WAIT seconds, runs ROUNDS graphs)
then, in another shell: perf record -F 499 --call-graph dwarf,16384 -p PID -o perf.data -- sleep 20
and perf report -i perf.data --children --sort sym -g none (the scheduler and the client share this process)."""
import os, sys, time
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks.scheduler import build_graph, _wait_released

def main():
    g = build_graph("fan-in", 4000, fan_in=2000)
    variant = sys.argv[1]; rounds = int(sys.argv[2])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        kept = g.run(c); del kept; _wait_released(c)
        h = asafe.install(c) if variant == "asafe" else None
        print("pid", os.getpid(), flush=True)
        time.sleep(float(os.environ.get("WAIT", "0")))
        t = time.thread_time(); w = time.perf_counter()
        for _ in range(rounds):
            kept = g.run(c); del kept; _wait_released(c)
        print(variant, f"wall {(time.perf_counter()-w)/rounds*1e3:.0f} ms/run", flush=True)
        if h: h.uninstall()

if __name__ == "__main__":
    main()
