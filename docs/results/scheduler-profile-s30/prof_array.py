"""yappi over the scheduler process (this one) during an array reduction graph: asafe's functions by total cpu."""
import sys, time
sys.path.insert(0, "/work/main")
import yappi, dask.array as da, numpy as np
from distributed import Client, LocalCluster
import asafe

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, Client(cluster) as client:
        x = da.ones((4000, 4000), chunks=(40, 40))  # 10k chunks
        y = (x + 1).sum()
        y.compute()
        h = asafe.install(client)
        y = (x + 2).sum(); y.compute()
        yappi.set_clock_type("cpu"); yappi.start()
        t = time.perf_counter()
        for k in range(3):
            (x + 3 + k).sum().compute()
        el = time.perf_counter() - t
        yappi.stop()
        stats = yappi.get_func_stats()
        total = sum(s.tsub for s in stats)
        ours = [s for s in stats if "/asafe/" in s.module]
        print(f"wall {el:.2f} s; profiled cpu (all threads of this process) {total:.2f} s; asafe own {sum(s.tsub for s in ours):.2f} s")
        for s in sorted(ours, key=lambda s: -s.ttot)[:35]:
            print(f"{s.ttot:7.3f} {s.tsub:7.3f} {s.ncall:8d}  {s.module.split('/asafe/')[-1]}:{s.lineno} {s.name}")
        h.uninstall()
