"""asafe's update_graph hook and evaluations, thread cpu per graph, on the suite's short workloads (install per run, as the suite).

Run in a namespace shaped to 1 Gbit/s (see run_ugcost.sh): python ugcost.py WORKLOAD KIND ROUNDS. The link is taught
first by two task rechunks, as the suite's earlier workloads do."""
import sys, os, time, statistics
sys.path.insert(0, os.environ.get("TREE", os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))))
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)

def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = Spec(kind, 96, 0.5, 0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        w = WORKLOADS[name]; inputs = w.prepare(client, spec)
        tw = WORKLOADS["rechunk-tasks"]; ti = tw.prepare(client, spec)
        for i in range(2):
            h = asafe.install(client); o = client.persist(tw.run(client, ti, spec)); wait(o); h.uninstall()
            k = _keys_of(o if isinstance(o, list) else [o]); del o; _wait_forgotten(client, k)
        del ti
        per = []
        for r in range(rounds):
            h = asafe.install(client)
            plugin = cluster.scheduler.plugins["asafe"]
            acc = {"ug": 0.0, "ev": 0.0, "nev": 0, "tasks": 0}
            f = plugin.update_graph
            def ug(*a, _f=f, **k):
                t = time.thread_time()
                try: return _f(*a, **k)
                finally: acc["ug"] += time.thread_time() - t; acc["tasks"] += len(k.get("keys", ()) or ())
            plugin.update_graph = ug
            rt = plugin.runtime; g = rt.evaluate
            def ev(*a, _g=g, **k):
                t = time.thread_time()
                try: return _g(*a, **k)
                finally: acc["ev"] += time.thread_time() - t; acc["nev"] += 1
            rt.evaluate = ev
            t = time.perf_counter(); out = client.persist(w.run(client, inputs, spec)); wait(out); wall = time.perf_counter() - t
            h.uninstall()
            keys = _keys_of(out if isinstance(out, list) else [out]); del out; _wait_forgotten(client, keys)
            per.append((wall, acc["ug"], acc["ev"], acc["nev"], acc["tasks"]))
        med = lambda i: statistics.median(p[i] for p in per)
        print(f"{name}/{kind}: wall {med(0)*1000:.1f} ms; update_graph hook {med(1)*1000:.2f} ms (incl. evaluations inside it); "
              f"evaluate {med(2)*1000:.2f} ms in {med(3)} calls; keys {med(4)}")
if __name__ == "__main__":
    main()
