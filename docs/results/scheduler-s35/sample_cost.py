import sys, os, time
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from distributed import Client, LocalCluster
def probe(dask_scheduler=None):
    p = [p for p in dask_scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
    s = p.runtime._signals; out = {}
    hs = [d for d in p._detach_signals]
    def t(label, f, n=200):
        ts = []
        for _ in range(n):
            a = time.thread_time(); f(); ts.append(time.thread_time() - a)
        ts.sort(); out[label] = (round(ts[n // 2] * 1e6, 1), round(sum(ts) / n * 1e6, 1))
    def samp(): s._next = 0.0; s.read()
    t("system sample", samp)
    import psutil
    t("cpu_percent()", lambda: psutil.cpu_percent(interval=None))
    t("virtual_memory()", psutil.virtual_memory)
    t("_own_cores", s._own_cores)
    t("_own_pids", s._own_pids)
    pr = psutil.Process()
    t("Process.cpu_percent", lambda: pr.cpu_percent(interval=None))
    def kids(): s._children_at = -1e9; s._own_pids()
    t("children scan", kids, 20)
    out["pids"] = len(s._own_pids())
    return out
if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        h = asafe.install(c)
        for k, v in c.run_on_scheduler(probe).items(): print(f"{k:24s} {v}")
        h.uninstall()
