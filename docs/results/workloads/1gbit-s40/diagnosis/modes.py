"""At every evaluation of map-overlap's asafe runs: the tracker's measured and scheduled work by type, the forecast's
plan, and the window's groups. Run inside a shaped namespace (see run_overlap_modes.sh)."""
import sys, collections, json, time
sys.path.insert(0, "/work/main")
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)

def audit(dask_scheduler=None):
    plugin = dask_scheduler.plugins["asafe"]; tr = plugin.tracker
    recs = plugin.audit_records = []; t0 = time.time()
    def source():
        f = plugin.forecast
        by = collections.defaultdict(lambda: [0, 0.0, 0.0])
        for out in f._outputs.values():
            if out.active:
                for e in out.edges.values():
                    b = by[out.prefix]; b[0] += 1; b[1] += e[1]; b[2] = max(b[2], out.nbytes or 0)
        groups = {k: [v[0], round(v[1], 4), v[2]] for k, v in by.items()}
        groups["shipped"] = {k: round(v, 3) for k, v in f.shipped.items()}
        groups["bytes"] = {k: round(v) for k, v in f.output_bytes.items()}
        recs.append({"t": round(time.time() - t0, 3), "measured": {k: round(v, 5) for k, v in tr.measured_work().items()},
                     "scheduled": {k: round(v, 5) for k, v in tr.scheduled_work().items()},
                     "planned": round(plugin.forecast.planned, 6), "tasks": tr.scheduled_tasks(), "window_measurements": tr._ring_total, "link": plugin.link(),
                     "state": plugin.runtime.state("wire-compression"), "groups": groups, "mode": {k: (round(v,4) if isinstance(v,float) else v) for k,v in plugin.runtime.mode.as_dict().items()} if hasattr(plugin.runtime.mode,"as_dict") else str(plugin.runtime.mode), "why": str(plugin.runtime.explain("wire-compression"))})
        return float("nan")
    plugin.runtime.add_signal("audit", source)
    return True

def records(dask_scheduler=None):
    return dask_scheduler.plugins["asafe"].audit_records

if __name__ == "__main__":
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = Spec(kind, 96, 0.5, 0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        w = WORKLOADS[name]; inputs = w.prepare(client, spec)
        # teach the link: a task rechunk first, as the suite does
        r = WORKLOADS["rechunk-tasks"]; ri = r.prepare(client, spec)
        for i in range(2):
            h = asafe.install(client); o = client.persist(r.run(client, ri, spec)); wait(o); h.uninstall()
            k = _keys_of(o if isinstance(o, list) else [o]); del o; _wait_forgotten(client, k)
        for i in range(rounds):
            h = asafe.install(client); client.run_on_scheduler(audit)
            t = time.perf_counter(); out = client.persist(w.run(client, inputs, spec)); wait(out); wall = time.perf_counter() - t
            recs = client.run_on_scheduler(records)
            hist = [(t.old, t.new, round(t.mode.ratio, 3)) for t in h.history if t.optimization == "wire-compression"]
            print(f"== round {i} {wall:.3f} s transitions {hist}")
            for rec in recs:
                print(json.dumps(rec))
            h.uninstall()
            keys = _keys_of(out if isinstance(out, list) else [out]); del out; _wait_forgotten(client, keys)
