"""Cost of one evaluation's parts with nothing to drain, on a live scheduler (many-small graphs ran first)."""
import sys, os
sys.path.insert(0, os.environ.get("TREE", "/work/main"))
import asafe
from distributed import Client, LocalCluster
from benchmarks.scheduler import build_graph, _wait_released

def probe(dask_scheduler=None):
    import timeit
    p = [p for p in dask_scheduler.plugins.values() if type(p).__name__ == "AdaptiveSchedulerPlugin"][0]
    rt = p.runtime; tr = rt.tracker
    out = {}
    n = 2000
    def t(label, f):
        f()
        best = min(timeit.repeat(f, number=n, repeat=5)) / n
        out[label] = round(best * 1e6, 2)
    t("evaluate", rt.evaluate)
    t("evaluate(arrival)", lambda: rt.evaluate(arrival=True))
    t("signals.read", rt._signals.read)
    t("_read_sources", rt._read_sources)
    sig = dict(rt._signals.read()); sig.update(rt._read_sources())
    t("tracker.mode(**sig)", lambda: tr.mode(**sig))
    t("tracker._feed", tr._feed)
    m = tr.mode(**sig)
    opt = list(rt.optimizations.values())
    t("decide x all", lambda: [rt._decide(o, m, rt._states[o.name], 0.0) for o in opt])
    from asafe.core.mode import ModeVector
    sh = m.shares
    t("ModeVector(shares, **sig)", lambda: ModeVector(sh, **sig))
    for name, src in rt._signal_sources.items():
        t(f"source {name}", src)
    out["n_signals"] = len(sig); out["feeds"] = len(tr._feeds); out["plan_sources"] = len(tr._plan_sources)
    out["opts"] = [o.name for o in opt]
    return out

if __name__ == "__main__":
    g = build_graph("many-small", 4000, fan_in=2000, graphs=50)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        h = asafe.install(c)
        kept = g.run(c); del kept; _wait_released(c)
        for k, v in c.run_on_scheduler(probe).items(): print(f"{k:32s} {v}")
        h.uninstall()
