"""The same two listings from the process of a LocalCluster's scheduler, whose descendants are its workers (session 52).

    PYTHONPATH=. python docs/results/signals-s52/tree.py [WORKERS ...]

For each WORKERS (default 2 and 8), a LocalCluster of that many worker processes (each with its nanny), then 20
calls of each listing, alternated, from this process (the scheduler's and the client's, as on a LocalCluster):
the kernel's lists read every thread of every process in the tree, psutil's scan every process on the host.
"""
import os
import sys
import time

import psutil
from distributed import LocalCluster

from asafe.core import _procfs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from children import median_seconds  # noqa: E402  (this folder's other script)


def main():
    for n in [int(a) for a in sys.argv[1:]] or [2, 8]:
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0"):
            time.sleep(1.0)
            scan = sorted(p.pid for p in psutil.Process().children(recursive=True))
            assert scan == _procfs.children_pids(psutil)
            threads = sum(len(os.listdir(f"/proc/{pid}/task")) for pid in [os.getpid(), *scan])
            a = median_seconds(lambda: psutil.Process().children(recursive=True))
            b = median_seconds(lambda: _procfs.children_pids(psutil))
            print(f"{n} workers: {len(scan)} descendants, {threads} threads in the tree, {len(psutil.pids())} "
                  f"processes on the host: psutil's scan {a * 1e3:.3f} ms, the kernel's lists {b * 1e3:.3f} ms; "
                  f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
