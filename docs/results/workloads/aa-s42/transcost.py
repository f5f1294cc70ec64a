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


def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = Spec(kind, 96, 0.5, 0)
    per = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        w = WORKLOADS[name]
        inputs = w.prepare(client, spec)
        once = os.environ.get("ONCE") == "1"
        h = None
        acc = {}
        for r in range(rounds + 1):
            acc.clear()
            if once and h is not None:
                out = client.persist(w.run(client, inputs, spec))
                wait(out)
                keys = _keys_of(out if isinstance(out, list) else [out])
                del out
                _wait_forgotten(client, keys)
                for k, (n, s) in acc.items():
                    per.setdefault(k, []).append((n, s))
                continue
            h = asafe.install(client)
            p = cluster.scheduler.plugins["asafe"]
            tr = p.transition

            def transition(key, start, finish, *a, _tr=tr, **k):
                t = time.thread_time()
                _tr(key, start, finish, *a, **k)
                d = time.thread_time() - t
                c = acc.setdefault((start, finish), [0, 0.0])
                c[0] += 1
                c[1] += d
            p.transition = transition
            ev = p.runtime.evaluate

            def evaluate(*a, _ev=ev, **k):
                t = time.thread_time()
                try:
                    return _ev(*a, **k)
                finally:
                    c = acc.setdefault(("evaluate", ""), [0, 0.0])
                    c[0] += 1
                    c[1] += time.thread_time() - t
            p.runtime.evaluate = evaluate
            ug = type(p).update_graph

            def update_graph(*a, _ug=ug, _p=p, **k):
                t = time.thread_time()
                try:
                    return _ug(_p, *a, **k)
                finally:
                    c = acc.setdefault(("update_graph", ""), [0, 0.0])
                    c[0] += 1
                    c[1] += time.thread_time() - t
            p.update_graph = update_graph
            for owner, meth, label in ((p, "_charge_transfers", "charge"), (p.forecast, "_bandwidth_now", "bw_now")):
                f0 = getattr(owner, meth)

                def timed(*a, _f=f0, _label=label, **k):
                    t = time.thread_time()
                    try:
                        return _f(*a, **k)
                    finally:
                        c = acc.setdefault((_label, ""), [0, 0.0])
                        c[0] += 1
                        c[1] += time.thread_time() - t
                setattr(owner, meth, timed)
            out = client.persist(w.run(client, inputs, spec))
            wait(out)
            if not once:
                h.uninstall()
            keys = _keys_of(out if isinstance(out, list) else [out])
            del out
            _wait_forgotten(client, keys)
            if r and not once:
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
