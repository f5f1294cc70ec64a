"""asafe's scheduler hooks, thread cpu per task (unprofiled; only the entry points wrapped), per graph kind.
usage: hook_cost3.py N kind[,kind...] [repeats]"""
import sys, time, os
import dask.array as da
from distributed import Client, LocalCluster
import asafe
sys.path.insert(0, os.path.dirname(__file__))
import itertools
_tok = itertools.count()
def inc(x): return x + 1
def run(client, which, n):
    t = next(_tok)
    if which == "map":
        fs = client.map(inc, range(n), key=[f"inc-{t}-{i}" for i in range(n)]); client.gather(fs); del fs
    elif which == "prefixes":
        fs = client.map(inc, range(n), key=[f"p{i%500}-{t}-{i}" for i in range(n)]); client.gather(fs); del fs
    elif which == "small":
        for g in range(n // 10):
            fs = client.map(inc, range(10), key=[f"s{g}-{t}-{i}" for i in range(10)]); client.gather(fs)
    elif which == "fanin":
        leaves = client.map(inc, range(n), key=[f"leaf-{t}-{i}" for i in range(n)])
        total = client.submit(lambda *xs: sum(xs), *leaves, key=f"fan-total-{t}"); total.result(); del leaves, total
    elif which == "array":
        da.arange(10 * (n // 2) + t, chunks=10).sum(split_every=8).compute()

if __name__ == "__main__":
    n = int(sys.argv[1]); kinds = sys.argv[2].split(","); repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        handle = asafe.install(client)
        plugin = [p for p in cluster.scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
        acc = {}
        def wrap(name):
            f = getattr(plugin, name)
            def w(*a, **k):
                t = time.thread_time()
                try: return f(*a, **k)
                finally:
                    d = acc.setdefault(name, [0, 0.0]); d[0] += 1; d[1] += time.thread_time() - t
            setattr(plugin, name, w)
        for name in ("transition", "update_graph", "_tick"):
            wrap(name)
        for kind in kinds:
            run(client, kind, 2000)
            per = []
            for r in range(repeats):
                acc.clear()
                run(client, kind, n)
                per.append(1e6 * sum(v[1] for v in acc.values()) / n)
            tr = acc.get("transition", [0, 0])
            print(f"{kind:9s} n={n} asafe hooks us/task: " + " ".join(f"{p:.1f}" for p in per)
                  + f"  (transition calls/task {tr[0]/n:.2f}, us/call {1e6*tr[1]/max(tr[0],1):.2f}; update_graph {1e6*acc.get('update_graph',[0,0])[1]/n:.1f} us/task)", flush=True)
        handle.uninstall()
