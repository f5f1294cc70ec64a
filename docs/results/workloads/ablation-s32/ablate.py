"""Where asafe's wall-time cost is: plain Dask, asafe, asafe with its scheduler hooks made no-ops (both:
``nosched``; the arrival's alone: ``noarrive``; the transitions' alone: ``notrans``), with its worker plugin's
transition off (``noworker``; ``neither``); balanced rounds, the suite's own sample (_run_once), same cluster.
Session 32's; the two single-hook variants added in session 44 (docs/results/workloads/1gbit-s44/).

python ablate.py WORKLOADS KIND ROUNDS VARIANTS OUT.json   (from the repository root)"""
import sys, json, statistics
sys.path.insert(0, ".")
import asafe
from distributed import Client, LocalCluster
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _run_once, _holders, _keys_of
from asafe.app import stats
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)

def _noop(*a, **k):
    return None

def _worker_hook_off(dask_worker=None):
    for p in dask_worker.plugins.values():
        if type(p).__name__ == "AdaptiveWorkerPlugin":
            p.record_sizes = False

def install(client, cluster, variant):
    if variant == "dask":
        return None
    handle = asafe.install(client)
    for p in cluster.scheduler.plugins.values():
        if type(p).__name__ == "AdaptiveSchedulerPlugin":
            if variant in ("nosched", "neither", "notrans"):
                p.transition = _noop
            if variant in ("nosched", "neither", "noarrive"):
                p.update_graph = _noop
    if variant in ("noworker", "neither"):
        client.run(_worker_hook_off)
    return handle

if __name__ == "__main__":
    names, kind, rounds = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
    variants = sys.argv[4].split(",") if len(sys.argv) > 4 else ["dask", "asafe", "nosched", "noworker"]
    spec = Spec(kind, 96, 0.5, 0)
    out = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        for name in names:
            w = WORKLOADS[name]; inputs = w.prepare(client, spec)
            placement = {k: h[0] for k, h in client.run_on_scheduler(_holders, keys=_keys_of(list(inputs.values()))).items() if h}
            for v in variants:  # warm-up
                _run_once(client, w, spec, inputs, placement, "asafe" if v != "dask" else "dask", install(client, cluster, v))
            secs = {v: [] for v in variants}
            for order in stats.balanced_orders(variants, rounds):
                for v in order:
                    rec = _run_once(client, w, spec, inputs, placement, "asafe" if v != "dask" else "dask", install(client, cluster, v))
                    assert "error" not in rec, rec.get("error")
                    secs[v].append(rec["seconds"])
            out[name] = secs
            base = secs[variants[0]]
            for v in variants:
                ratios = sorted(b / s for b, s in zip(base, secs[v]))
                lo, hi = ratios[len(ratios)//10], ratios[-1 - len(ratios)//10]
                print(f"{name:10s} {kind:7s} {v:9s} median {statistics.median(secs[v]):.4f} s  speedup vs {variants[0]} median {statistics.median(ratios):.3f}  [{lo:.3f}, {hi:.3f}] (10-90%)  gmean {statistics.geometric_mean(ratios):.3f}", flush=True)
            del inputs
    json.dump({"variants": variants, "kind": kind, "rounds": rounds, "secs": out}, open(sys.argv[5] if len(sys.argv) > 5 else "ablate.json", "w"))
