"""The workloads suite's futures graph (16 blocks of half-zero floats, then its tree of pairwise sums, submitted
one by one), asafe installed before each of 4 samples as the suite does: the arrivals' counters (session 47).

    PYTHONPATH=. python docs/results/scheduler-s47/futures_arrivals.py
"""
import numpy as np
from distributed import Client, LocalCluster, wait

import asafe
from benchmarks._workloads_defs import _run_futures


def block(i):
    rng = np.random.default_rng(i)
    x = rng.random((870, 870))
    x[::2] = 0.0
    return x


if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        blocks = client.map(block, range(16))
        wait(blocks)
        inputs = {f"block-{i}": b for i, b in enumerate(blocks)}
        for sample in range(4):
            handle = asafe.install(client)
            out = _run_futures(client, inputs, None)
            wait(out)
            print(sample, handle.info("plugin")["plugin"]["arrivals"])
            del out
            handle.uninstall()
