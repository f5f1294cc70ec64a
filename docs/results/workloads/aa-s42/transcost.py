"""Thread cpu of asafe's scheduler hooks per graph by kind of transition (install per run, as the suite); loopback.

python transcost.py WORKLOAD KIND ROUNDS   (ONCE=1: installed once before the first round and kept, as a user would;
the hooks are wrapped once then, and each round's share is read apart)"""
import os, statistics, sys, time
sys.path.insert(0, os.environ.get("TREE", os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))))
import asafe
from distributed import Client, LocalCluster, wait
from benchmarks._workloads_defs import WORKLOADS, Spec
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
import cloudpickle
cloudpickle.register_pickle_by_value(wl_module)


def _timed(acc, label, f):
    """``f`` with its thread cpu and calls added to ``acc[label]``."""
    def timed(*a, **k):
        t = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            c = acc.setdefault(label, [0, 0.0])
            c[0] += 1
            c[1] += time.thread_time() - t
    return timed


def _wrap(p, acc):
    """Time the scheduler plugin ``p``'s hooks into ``acc``: transitions by kind, the arrival, the evaluations,
    the transfer charge and the forecast's bandwidth fallback."""
    tr = p.transition

    def transition(key, start, finish, *a, **k):
        t = time.thread_time()
        tr(key, start, finish, *a, **k)
        d = time.thread_time() - t
        c = acc.setdefault((start, finish), [0, 0.0])
        c[0] += 1
        c[1] += d
    p.transition = transition
    p.update_graph = _timed(acc, ("update_graph", ""), p.update_graph)
    p.runtime.evaluate = _timed(acc, ("evaluate", ""), p.runtime.evaluate)
    p._charge_transfers = _timed(acc, ("charge", ""), p._charge_transfers)
    p.forecast._bandwidth_now = _timed(acc, ("bw_now", ""), p.forecast._bandwidth_now)


def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = Spec(kind, 96, 0.5, 0)
    per = {}
    once = os.environ.get("ONCE") == "1"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        w = WORKLOADS[name]
        inputs = w.prepare(client, spec)
        h = None
        acc = {}
        for r in range(rounds + 1):
            acc.clear()
            if h is None or not once:
                h = asafe.install(client)
                _wrap(cluster.scheduler.plugins["asafe"], acc)
            out = client.persist(w.run(client, inputs, spec))
            wait(out)
            if not once:
                h.uninstall()  # before the outputs are forgotten: their transitions are not counted
            keys = _keys_of(out if isinstance(out, list) else [out])
            del out
            _wait_forgotten(client, keys)
            if r:
                for k, (n, s) in acc.items():
                    per.setdefault(k, []).append((n, s))
    print(f"{name}/{kind}, {rounds} rounds (median per graph; {'installed once' if once else 'installed before each run'})")
    total = 0.0
    for k, v in sorted(per.items(), key=lambda kv: -statistics.median(s for _, s in kv[1])):
        n = statistics.median(x for x, _ in v)
        s = statistics.median(x for _, x in v)
        total += s if k[0] not in ("evaluate", "charge", "bw_now") else 0.0
        print(f"  {k[0]:>12s} -> {k[1]:<10s} {n:6.0f} calls {s*1e3:7.3f} ms  {s/max(n,1)*1e6:7.2f} us each")
    print(f"  total (transitions + update_graph) {total*1e3:.3f} ms")


if __name__ == "__main__":
    main()
