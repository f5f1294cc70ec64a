"""What the wire chooses per kind of frame on the diff workload (static codec or a link-speed state)."""
import sys
sys.path.insert(0, "/work/main")
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten, _install, _uninstall
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)

def peek():
    from asafe.schedulers import wire
    return {"stats": {k: v for k, v in wire.stats().items() if k in ("samples", "skipped_frames", "compressed_frames", "skipped_bytes")},
            "choices": {str(k[:6]): v for k, v in wire._choices.items()}}

if __name__ == "__main__":
    name, kind, variants, rounds = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])
    spec = Spec(kind, 96, 0.5, 0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        w = WORKLOADS[name]; inputs = w.prepare(client, spec)
        for i in range(rounds):
          for variant in variants:
            h = _install(client, variant)
            import time; t = time.perf_counter()
            out = client.persist(w.run(client, inputs, spec)); wait(out)
            print("== round", i, variant, round(time.perf_counter() - t, 3))
            for addr, v in client.run(peek).items():
                print(addr, v)
            _uninstall(client, h)
            keys = _keys_of(out if isinstance(out, list) else [out]); del out; _wait_forgotten(client, keys)
