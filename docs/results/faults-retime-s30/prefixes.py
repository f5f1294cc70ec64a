"""client.map of n tasks over p key prefixes on a 2-worker LocalCluster: plain Dask vs asafe installed (the fault suite's large run)."""
import sys, time, os
sys.path.insert(0, "/work/main")
import dask
from distributed import Client, LocalCluster
import asafe

def _inc(x):
    return x + 1

def run(client, n, p, tag):
    keys = [f"g{i % p}-{tag}-{i}" for i in range(n)]
    t = time.perf_counter()
    futures = client.map(_inc, range(n), key=keys)
    results = client.gather(futures)
    el = time.perf_counter() - t
    del futures
    assert results[-1] == n
    return el

if __name__ == "__main__":
    n, p, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, Client(cluster) as client:
        run(client, 2000, 100, "warm")
        for r in range(rounds):
            plain = run(client, n, p, f"d{r}")
            with dask.config.set({"asafe.tracker.max-groups": 64}):
                h = asafe.install(client, asafe.AdaptiveRuntime(window=128))
            a = run(client, n, p, f"a{r}")
            h.uninstall()
            print(f"n={n} prefixes={p} round {r}: dask {plain:.2f} s  asafe {a:.2f} s  ratio {a/plain:.2f}  load {os.getloadavg()[0]:.2f}", flush=True)
