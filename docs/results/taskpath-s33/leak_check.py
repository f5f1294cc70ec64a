"""Does the compiled per-task path leak? tracemalloc on the scheduler's process over graphs with the path installed."""
import sys, gc, tracemalloc
sys.path.insert(0, ".")
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)
if __name__ == "__main__":
    spec = Spec("smooth", 96, 0.5, 0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        variant = sys.argv[1]
        plugin = None
        if variant != "dask":
            handle = asafe.install(client)
            plugin = cluster.scheduler.plugins["asafe"]
            if variant == "python":
                plugin.__dict__.pop("transition"); plugin._path = None
            print(variant, "compiled", plugin.compiled)
        ws = {n: WORKLOADS[n] for n in ("diff", "stencil", "futures", "rechunk-tasks")}
        inputs = {n: w.prepare(client, spec) for n, w in ws.items()}
        def rounds(k):
            for _ in range(k):
                for n, w in ws.items():
                    built = w.run(client, inputs[n], spec)
                    out = built if w.family == "futures" else client.persist(built)
                    wait(out)
                    keys = _keys_of(out if isinstance(out, list) else [out]); del out, built
                    _wait_forgotten(client, keys)
        rounds(3)
        tracemalloc.start(5)
        gc.collect(); first = tracemalloc.take_snapshot(); size0 = tracemalloc.get_traced_memory()[0]
        rounds(6)
        gc.collect(); second = tracemalloc.take_snapshot(); size1 = tracemalloc.get_traced_memory()[0]
        rounds(6)
        gc.collect(); third = tracemalloc.take_snapshot(); size2 = tracemalloc.get_traced_memory()[0]
        print(f"traced: {size0/1e6:.2f} MB -> {size1/1e6:.2f} MB (6 rounds) -> {size2/1e6:.2f} MB (6 more)")
        for stat in third.compare_to(second, "lineno")[:3]:
            print(stat)
        if plugin is not None:
            print("errors", dict(plugin.error_counts), "scheduled", len(plugin._scheduled))
