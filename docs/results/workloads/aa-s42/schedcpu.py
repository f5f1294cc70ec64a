"""The scheduler's event-loop thread cpu per short graph, asafe installed right before (as the suite) or settled.

python schedcpu.py WORKLOAD KIND ROUNDS   (VARIANTS=dask,asafe,settled; SETTLE seconds for 'settled', default 0.5)
Runs on the loopback (no shaping). Per variant: median of the loop thread's cpu from just before the graph's
submission to its end (read in the thread with run_on_scheduler), the part inside asafe's update_graph and
transition hooks, and the wall time."""
import os, statistics, sys, time
sys.path.insert(0, os.environ.get("TREE", os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))))
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)


def loop_cpu(dask_scheduler=None):
    return time.thread_time()


def wrap_hooks(dask_scheduler=None):
    p = dask_scheduler.plugins["asafe"]
    acc = dask_scheduler._s42 = [0.0, 0]
    for name in ("update_graph", "transition"):
        f = getattr(p, name)

        def hook(*a, _f=f, **k):
            t = time.thread_time()
            try:
                return _f(*a, **k)
            finally:
                acc[0] += time.thread_time() - t
                acc[1] += 1
        setattr(p, name, hook)
    return True


def hooks(dask_scheduler=None):
    return list(getattr(dask_scheduler, "_s42", [0.0, 0]))


GC = {"n": [0, 0, 0], "t": [0.0, 0.0, 0.0], "_start": None}


def _gc_callback(phase, info):
    if phase == "start":
        GC["_start"] = time.perf_counter()
    elif GC["_start"] is not None:
        g = info["generation"]
        GC["n"][g] += 1
        GC["t"][g] += time.perf_counter() - GC["_start"]
        GC["_start"] = None


def gc_snapshot():
    return list(GC["n"]), list(GC["t"])


def main():
    import gc
    gc.callbacks.append(_gc_callback)
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    variants = os.environ.get("VARIANTS", "dask,asafe,settled").split(",")
    settle = float(os.environ.get("SETTLE", "0.5"))
    spec = Spec(kind, 96, 0.5, 0)
    res = {v: [] for v in variants}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        w = WORKLOADS[name]
        inputs = w.prepare(client, spec)
        for r in range(rounds + 1):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                h = None if v == "dask" else asafe.install(client)
                if h is not None and os.environ.get("WRAP", "1") == "1":
                    client.run_on_scheduler(wrap_hooks)
                if v == "settled":
                    time.sleep(settle)
                g0 = gc_snapshot()
                c0 = client.run_on_scheduler(loop_cpu)
                t = time.perf_counter()
                out = client.persist(w.run(client, inputs, spec))
                wait(out)
                wall = time.perf_counter() - t
                c1 = client.run_on_scheduler(loop_cpu)
                g1 = gc_snapshot()
                hk = client.run_on_scheduler(hooks) if h is not None else [0.0, 0]
                if h is not None:
                    h.uninstall()
                keys = _keys_of(out if isinstance(out, list) else [out])
                del out
                _wait_forgotten(client, keys)
                if os.environ.get("COLLECT") == "1":
                    gc.collect()
                if r:
                    res[v].append((c1 - c0, hk[0], wall, [b - a for a, b in zip(g0[0], g1[0])],
                                   sum(g1[1]) - sum(g0[1])))
    print(f"{name}/{kind}, {rounds} rounds, load {open('/proc/loadavg').read().split()[0]}")
    base = [x[0] for x in res["dask"]]
    for v in variants:
        cpu = [x[0] for x in res[v]]
        ratio = statistics.median(a / b for a, b in zip(cpu, base))
        print(f"  {v:8s} loop cpu {statistics.median(cpu)*1e3:7.2f} ms (paired ratio {ratio:.3f}), "
              f"in asafe's hooks {statistics.median(x[1] for x in res[v])*1e3:6.2f} ms, "
              f"wall {statistics.median(x[2] for x in res[v])*1e3:7.1f} ms; gc per run: "
              f"{[round(statistics.mean(x[3][g] for x in res[v]), 2) for g in range(3)]} collections by generation, "
              f"{statistics.mean(x[4] for x in res[v])*1e3:.2f} ms (mean)")


if __name__ == "__main__":
    main()
