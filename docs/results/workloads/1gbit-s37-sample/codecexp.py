"""The workloads suite's task rechunk of int ids behind a shaped link, with every sample's candidates logged in the workers.

Variants: asafe (its defaults), a link-speed state (120), a codec (zstd). From the repository's root, as root:

    PYTHONPATH=docs/results/workloads/1gbit-s37-sample unshare --net bash -c 'ip link set lo up && tc qdisc add dev lo root \
        tbf rate 1gbit burst 512kb latency 50ms && exec python docs/results/workloads/1gbit-s37-sample/codecexp.py asafe,120,zstd 3'
"""
import sys, time, json, os
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[4]))  # the repository
import numpy as np, dask, dask.array as da
from distributed import LocalCluster, Client, wait
import asafe
from benchmarks._workloads_data import kind_array
from benchmarks._workloads_cluster import _wire_counters, _reset_wire
import samplelog

def link_info(dask_scheduler):
    p = dask_scheduler.plugins.get("asafe")
    if p is None: return None
    l = p.link
    return {"measured": l.measured, "capacity": l.capacity, "signal": l.signal()}

def r_sorted(L):
    return L['rows']

def main():
    variants = sys.argv[1].split(",")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, Client(cluster) as client:
        rows, cols = 2496, 4992
        x = kind_array("ints", (rows, cols), (rows // 8, cols), 123, 0.5).persist(); wait(x)
        client.run(samplelog.install)
        res = {v: [] for v in variants}
        for r in range(rounds):
            for v in (variants if r % 2 == 0 else variants[::-1]):
                name, _, filt = v.partition(":")
                cfg = {"asafe.wire.filters": filt.split("+")} if filt else {}
                with dask.config.set(cfg):
                    client.run(lambda c=cfg: dask.config.set(c) and None)
                    if name == "dask":
                        h = None
                    elif name == "asafe":
                        h = asafe.install(client)
                    else:
                        st = int(name) if name.isdigit() else name
                        h = asafe.install(client, asafe.AdaptiveRuntime([asafe.Optimization("wire-compression", asafe.Fixed(st), initial=st)]))
                    client.run(_reset_wire)
                    y = x.rechunk((rows, cols // 8), method="tasks").persist()
                    t = time.perf_counter(); wait(y); sec = time.perf_counter() - t
                    tot, per = _wire_counters(client)
                    li = client.run_on_scheduler(link_info)
                    del y
                    if h is not None: h.uninstall() if hasattr(h, "uninstall") else asafe.uninstall(client)
                    client.run(lambda: dask.config.refresh() and None)
                lb = tot.get("compressed_logical_bytes", 0); wb = tot.get("compressed_wire_bytes", 0)
                res[v].append(sec)
                for w, logs in client.run(samplelog.take).items():
                    for L in logs:
                        print('   sample', w[-5:], L['kind'][0], L['nbytes'], L['warm'], L['choice'], ' '.join(f"{r[0]}:{(r[1]+(r[2] or 0))/r[4]*1e9:.2f}({r[1]/r[4]*1e9:.2f}+{(r[2] or 0)/r[4]*1e9:.2f},r{r[4]/r[3]:.2f})" for r in r_sorted(L)))
                print(f"r{r} {v:22} {sec:.3f}s frames {tot.get('compressed_frames',0):.0f} ratio {lb/max(wb,1):.3f} "
                      f"cs {tot.get('compress_seconds',0):.3f} ds {tot.get('decompress_seconds',0):.3f} state {[p.get('state') for p in per.values()]} link {li}", flush=True)
        for v, s in res.items():
            print(v, "median", np.median(s[1:]))
if __name__ == "__main__":
    main()
