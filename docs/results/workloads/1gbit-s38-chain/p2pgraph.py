import collections, dask, dask.array as da
from distributed import Client, LocalCluster, wait
import asafe

def patch(dask_scheduler):
    plugin = dask_scheduler.plugins["asafe"]
    orig = plugin.update_graph
    log = dask_scheduler.asafe_log = []
    def update_graph(scheduler, **kw):
        orig(scheduler, **kw)
        c = collections.Counter((e.prefix, e.task_type, e.ready) for e in plugin._scheduled.values())
        mode = plugin.runtime.mode if hasattr(plugin.runtime, "mode") else None
        log.append((sorted(c.items()), repr(mode)[:300], plugin.forecast.planned, plugin.p2p.pending))
    plugin.update_graph = update_graph

def read(dask_scheduler):
    return dask_scheduler.asafe_log

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        R = 2048
        x = client.persist(da.random.RandomState(0).randint(0, 1000, size=(R, 2 * R), chunks=(R // 8, 2 * R))); wait(x)
        for i in range(2):
            h = asafe.install(client)
            client.run_on_scheduler(patch)
            with dask.config.set({"array.rechunk.method": "p2p"}):
                y = x.rechunk((R, 2 * R // 8))
            client.compute(y.sum()).result()
            for row in client.run_on_scheduler(read):
                for r in row: print("   ", r)
            print("history", [(t.name, t.old, t.new) if hasattr(t, "name") else t for t in h.history][:5])
            h.uninstall()
