"""What a scheduler process keeps of each installation: asafe installed, a graph run, asafe uninstalled, N times.

python docs/results/leak-s41/retained.py VARIANT CYCLES   (VARIANT: dask or asafe; TREE=path picks the tree)

A LocalCluster (its scheduler in this process, 2 worker processes); every cycle computes a task rechunk of
96 MiB of random floats and its sum (fresh keys), with asafe installed and uninstalled around it for
``asafe``. After cycles 10 and CYCLES: the process's Python objects and traced bytes after a full
collection, and the asafe scheduler plugins, runtimes and trackers still alive.
"""
import gc
import os
import sys
import time
import tracemalloc

sys.path.insert(0, os.environ.get("TREE", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))))


def census():
    gc.collect()
    from asafe.core.runtime import AdaptiveRuntime
    from asafe.core.tracker import ModeTracker
    from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin

    objects = gc.get_objects()
    alive = {t.__name__: sum(1 for o in objects if isinstance(o, t))
             for t in (AdaptiveSchedulerPlugin, AdaptiveRuntime, ModeTracker)}
    return len(objects), tracemalloc.get_traced_memory()[0], alive


def main():
    variant, cycles = sys.argv[1], int(sys.argv[2])
    import asafe
    import dask.array as da
    from distributed import Client, LocalCluster

    print("asafe from", os.path.dirname(asafe.__file__))
    tracemalloc.start()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        marks = {}
        for i in range(1, cycles + 1):
            x = da.random.random((6144, 2048), chunks=(512, 512))  # 96 MiB, 48 chunks
            handle = asafe.install(client) if variant == "asafe" else None
            total = client.compute(x.rechunk((6144, 128)).sum()).result()
            if handle is not None:
                handle.info("mode")  # the handle's reads go through the asafe_info handler too
                handle.uninstall()
            del x, handle
            if i in (10, cycles):
                time.sleep(0.5)
                marks[i] = census()
                print(f"{variant} after {i} cycles: {marks[i][0]} objects, {marks[i][1] / 2**20:.1f} MiB traced, "
                      f"alive {marks[i][2]}", flush=True)
        (o1, b1, _), (o2, b2, _) = marks[10], marks[cycles]
        n = cycles - 10
        print(f"{variant}: per cycle from 10 to {cycles}: {(o2 - o1) / n:.0f} objects, {(b2 - b1) / n / 1024:.1f} KiB "
              f"(sum {total:.1f})")


if __name__ == "__main__":
    main()
