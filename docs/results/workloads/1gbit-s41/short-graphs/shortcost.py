"""Wall time of one of the suite's short workloads per variant, installed before each run as the suite does, interleaved.

Run in a namespace shaped to 1 Gbit/s (root):
    VARIANTS=dask,asafe,nowire SETTLE=0 unshare --net bash -c "ip link set lo up && tc qdisc add dev lo root tbf \
        rate 1gbit burst 512kb latency 50ms && exec python shortcost.py diff random 20"
Variants: dask; asafe (defaults); empty (a runtime with no optimizations); nosig (no psutil signals); nowire (the
defaults without wire-compression); on (the defaults, wire-compression forced to its 120 MB/s state before the
run); nofc, notc, nonw (an empty runtime without the forecast, the transfer correction, the next wave). The link
is taught first by two task rechunks (TEACH=0 skips it); SETTLE seconds pass between install and the run.
Event-loop watchdogs (stall.py) in this process (scheduler and client) and in each worker record the stacks
of stalls above 15 ms (30 ms on the workers)."""
import sys, os, time, statistics
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..")))
import asafe
from asafe import AdaptiveRuntime
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)
def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    variants = os.environ.get("VARIANTS", "dask,asafe,empty").split(",")
    spec = Spec(kind, 96, 0.5, 0)
    def inst(client, v):
        if v == "dask": return None
        if v == "asafe": return asafe.install(client)
        if v == "empty": return asafe.install(client, AdaptiveRuntime([]))
        if v == "on":
            h = asafe.install(client); h.set_state("wire-compression", 120); return h
        if v == "nowire":
            from asafe.core.runtime import load_optimizations
            return asafe.install(client, AdaptiveRuntime([o for o in load_optimizations() if o.name != "wire-compression"]))
        if v == "nosig": return asafe.install(client, AdaptiveRuntime(signals=False))
        if v == "nofc": return asafe.install(client, AdaptiveRuntime([]), expected_transfers=False)
        if v == "notc": return asafe.install(client, AdaptiveRuntime([]), transfer_correction=False)
        if v == "nonw": return asafe.install(client, AdaptiveRuntime([]), next_wave=False)
    res = {v: [] for v in variants}
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here); import stall
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        w = WORKLOADS[name]; inputs = w.prepare(client, spec)
        dog = stall.Watchdog(client.loop.asyncio_loop)
        def wstart(dask_worker=None):
            import sys; sys.path.insert(0, here); import stall
            dask_worker._s41dog = stall.Watchdog(dask_worker.loop.asyncio_loop, thresh=0.03); return True
        def wtake(dask_worker=None, arm=None):
            d = dask_worker._s41dog; out = list(d.stalls); d.stalls = []
            if arm is not None: d.armed = arm
            return out
        client.run(wstart)
        wstalls = {v: [] for v in variants}
        wcpu = {}
        stalls = {v: [] for v in variants}
        if os.environ.get("TEACH", "1") == "1":  # the link measured first, as in the suite (its earlier workloads)
            tw = WORKLOADS["rechunk-tasks"]; ti = tw.prepare(client, spec)
            for i in range(2):
                h = asafe.install(client); o = client.persist(tw.run(client, ti, spec)); wait(o); h.uninstall()
                k = _keys_of(o if isinstance(o, list) else [o]); del o; _wait_forgotten(client, k)
            del ti
        for r in range(rounds + 1):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                h = inst(client, v)
                time.sleep(float(os.environ.get("SETTLE", "0")))
                dog.stalls = []; dog.armed = True; client.run(wtake, arm=True)
                cpu0 = client.run(lambda: __import__("time").process_time())
                t = time.perf_counter(); out = client.persist(w.run(client, inputs, spec)); wait(out); wall = time.perf_counter() - t
                cpu1 = client.run(lambda: __import__("time").process_time())
                wcpu.setdefault(v, []).append(sum(cpu1[a] - cpu0[a] for a in cpu1))
                dog.armed = False; stalls[v].extend(dog.stalls)
                for addr, got in client.run(wtake, arm=False).items():
                    wstalls[v].extend((lag, f"[worker {addr}] wall {wall:.3f}\n" + st) for lag, st in got)
                if h: h.uninstall()
                keys = _keys_of(out if isinstance(out, list) else [out]); del out; _wait_forgotten(client, keys)
                if r: res[v].append(wall)
        for v in variants:
            print(f"== {v}: {len(stalls[v])} stalls, workers {len(wstalls[v])}")
            for lag, st in wstalls[v][:8]:
                print("-- worker", lag, "ms"); print(st)
            for lag, st in stalls[v][:12]:
                print("--", lag, "ms"); print(st)
        d = res["dask"]
        for v in variants:
            print(f"{v}: worker cpu per run median {statistics.median(wcpu[v][1:])*1000:.1f} ms")
        for v in variants:
            ratios = sorted(a / b for a, b in zip(res[v], d))
            print(f"{name}/{kind} {v:6s} median {statistics.median(res[v])*1000:6.1f} ms  ratio-to-dask median {statistics.median(ratios):.3f}  q1-q3 {ratios[len(ratios)//4]:.3f}-{ratios[3*len(ratios)//4]:.3f}  {[round(x*1000) for x in sorted(res[v])]}")

if __name__ == '__main__':
    main()
