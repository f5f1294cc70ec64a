"""The scheduler's cpu per task with no plugin, with a plugin that does nothing, and with asafe (session 44).

python plugin_floor.py GRAPH ROUNDS   (GRAPH: a graph of benchmarks.scheduler, e.g. fan-in; TASKS=, FAN_IN=;
TREE=path: the asafe tree to import)

What Dask itself spends calling one more scheduler plugin at each transition (it builds the transition's
keyword arguments and calls the plugin's ``transition`` for every task at every step) is a floor under any
plugin's cost, asafe's included. The variants run in balanced orders on the scheduler suite's cluster (a
scheduler process, 2 worker processes): ``dask`` (no plugin), ``noop`` (``SchedulerPlugin`` itself, whose
hooks are Python methods that do nothing, registered with ``client.register_plugin``), ``asafe``
(``asafe.install(client)``). Each sample: the scheduler process's cpu (user + system) from the graph's
submission until the scheduler holds no task. Prints the medians and the paired ratios against ``dask``
with their order-statistic 95% intervals (benchmarks.stats)."""
import os, statistics, sys, time
sys.path.insert(0, os.environ.get("TREE", os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))))
import asafe
from distributed.diagnostics.plugin import SchedulerPlugin
from asafe.app import stats
from benchmarks.scheduler import SchedulerCluster, build_graph, _wait_released

FLOOR = "asafe-floor-noop"


class Noop(SchedulerPlugin):
    """A scheduler plugin with Dask's default hooks, which do nothing."""
    name = FLOOR


def _install(client, variant):
    if variant == "asafe":
        return asafe.install(client)
    if variant == "noop":
        client.register_plugin(Noop(), name=FLOOR)
        return FLOOR
    return None


def _uninstall(client, handle):
    if handle == FLOOR:
        client.unregister_scheduler_plugin(FLOOR)
    elif handle is not None:
        handle.uninstall()


def _plugins(dask_scheduler=None):
    return sorted(dask_scheduler.plugins)


def main():
    name, rounds = sys.argv[1], int(sys.argv[2])
    variants = os.environ.get("VARIANTS", "dask,noop,asafe").split(",")
    graph = build_graph(name, int(os.environ.get("TASKS", 4000)), fan_in=int(os.environ.get("FAN_IN", 2000)),
                        graphs=int(os.environ.get("GRAPHS", 300)))
    cpu = {v: [] for v in variants}
    with SchedulerCluster(2) as cluster:
        client = cluster.client
        print(f"{name}: {graph.tasks} tasks; the scheduler's plugins with no variant installed: "
              f"{client.run_on_scheduler(_plugins)}; load {os.getloadavg()[0]:.2f}", flush=True)
        for r, order in enumerate(stats.balanced_orders(variants, rounds + 1)):
            for variant in order:
                handle = _install(client, variant)
                time.sleep(0.3)
                before = cluster.scheduler_cpu()
                kept = graph.run(client)
                graph.check(client, kept)
                del kept
                _wait_released(client)
                used = cluster.scheduler_cpu() - before
                _uninstall(client, handle)
                if r:  # the first round warms each variant up
                    cpu[variant].append(used)
            print(f"round {r}: " + ", ".join(f"{v} {cpu[v][-1] * 1e3:.0f} ms" for v in variants if r and cpu[v]),
                  flush=True)
    print(f"{name}, {rounds} rounds, scheduler cpu per task (median), load {os.getloadavg()[0]:.2f} at the end")
    for v in variants:
        line = f"  {v:>6s} {statistics.median(cpu[v]) / graph.tasks * 1e6:8.1f} us/task"
        if v != variants[0]:
            r = stats.paired_ratio_ci(cpu[v], cpu[variants[0]])
            line += f"   paired ratio to {variants[0]} {r.ratio:.3f} [{r.low:.3f}, {r.high:.3f}]"
        print(line)
    if "noop" in variants and "asafe" in variants:
        r = stats.paired_ratio_ci(cpu["asafe"], cpu["noop"])
        print(f"  asafe / noop paired {r.ratio:.3f} [{r.low:.3f}, {r.high:.3f}]")


if __name__ == "__main__":
    main()
