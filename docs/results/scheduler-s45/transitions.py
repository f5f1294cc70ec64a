"""The scheduler thread's cpu in asafe's transition hook, per kind of transition (session 45, issues 29 and 31).

    PYTHONPATH=. python docs/results/scheduler-s45/transitions.py WORKLOAD KIND ROUNDS
    PYTHONPATH=. python docs/results/scheduler-s45/transitions.py scheduler:fan-in - ROUNDS

A LocalCluster (the scheduler and the client in this process, 2 worker processes of one thread), the workloads
suite's WORKLOAD on its KIND of data (96 MiB, as the suite) or the scheduler suite's fan-in (2,000 leaves summed
by one task), ROUNDS graphs, asafe installed fresh before each graph as the workloads suite does. The plugin's transition hook (the compiled per-task path) is wrapped with the thread's
cpu clock; the evaluations it starts are timed apart and taken out of it. Beside each call a Python no-op with
the same arguments is timed the same way: the floor of a call on that thread (the timer's two reads and the
call's own cost with caches as they are there). Prints, per (start, finish), the calls per graph and the median,
90th percentile and mean per call, and ms per graph."""
import os
import statistics
import sys
import time

import cloudpickle
from distributed import Client, LocalCluster, wait

import asafe
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _keys_of, _wait_forgotten
from benchmarks._workloads_defs import WORKLOADS, Spec

cloudpickle.register_pickle_by_value(wl_module)


def graph_runner(client, name, kind):
    """A function that runs one graph: a workloads-suite WORKLOAD on data KIND (96 MiB inputs, made here once),
    or ``scheduler:GRAPH`` of the scheduler suite (``fan-in``: 2,000 leaves summed by one task; KIND ignored).

    Each call waits 0.3 s idle, runs the graph, waits for it and waits until its keys are forgotten; it returns the
    graph's wall seconds, from its submission until its outputs are in memory (as the workloads suite times it).
    """
    if name.startswith("scheduler:"):
        from benchmarks.scheduler import build_graph

        graph = build_graph(name.split(":", 1)[1], 2001, fan_in=2000, graphs=10)

        def run_scheduler_graph():
            time.sleep(0.3)
            began = time.perf_counter()
            futures = graph.run(client)
            seconds = time.perf_counter() - began
            graph.check(client, futures)
            keys = [f.key for f in futures] if isinstance(futures, list) else [futures.key]
            del futures
            _wait_forgotten(client, keys)
            return seconds

        return run_scheduler_graph
    spec = Spec(kind, 96, 0.5, 0)
    workload = WORKLOADS[name]
    inputs = workload.prepare(client, spec)

    def run_workload_graph():
        time.sleep(0.3)
        began = time.perf_counter()
        outputs = client.persist(workload.run(client, inputs, spec))
        wait(outputs)
        seconds = time.perf_counter() - began
        keys = _keys_of(outputs if isinstance(outputs, list) else [outputs])
        del outputs
        _wait_forgotten(client, keys)
        return seconds

    return run_workload_graph


def _noop(key, start, finish, *args, **kwargs):
    return None


def _wrap(plugin, per_pair, evaluations):
    hook = plugin.transition
    evaluate = plugin.runtime.evaluate

    def timed_evaluate(*args, **kwargs):
        began = time.thread_time()
        try:
            return evaluate(*args, **kwargs)
        finally:
            evaluations[0] += 1
            evaluations[1] += time.thread_time() - began

    def timed(key, start, finish, *args, **kwargs):
        began = time.thread_time()
        _noop(key, start, finish, *args, **kwargs)
        per_pair.setdefault(("(no-op)", finish), []).append(time.thread_time() - began)
        spent_evaluating = evaluations[1]
        began = time.thread_time()
        try:
            return hook(key, start, finish, *args, **kwargs)
        finally:
            took = time.thread_time() - began - (evaluations[1] - spent_evaluating)
            per_pair.setdefault((start, finish), []).append(took)

    plugin.runtime.evaluate = timed_evaluate
    plugin.transition = timed


def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    per_pair, evaluations = {}, [0, 0.0]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        run_graph = graph_runner(client, name, kind)
        for _ in range(rounds):
            handle = asafe.install(client)
            plugin = cluster.scheduler.plugins["asafe"]
            assert plugin.compiled, "the compiled per-task path is not built"
            _wrap(plugin, per_pair, evaluations)
            run_graph()
            handle.uninstall()
    print(f"{name}/{kind}, {rounds} graphs, asafe installed before each; load average {os.getloadavg()[0]:.2f}")
    print(f"evaluations from the hook: {evaluations[0] / rounds:.1f} a graph, "
          f"{evaluations[1] / max(evaluations[0], 1) * 1e6:.0f} us each (out of the rows below)")
    total = 0.0
    for (start, finish), took in sorted(per_pair.items(), key=lambda item: -sum(item[1])):
        took = sorted(took)
        if start != "(no-op)":
            total += sum(took)
        print(f"  {start:>11s} -> {finish:<10s} {len(took) / rounds:6.1f} a graph  median {took[len(took) // 2] * 1e6:6.1f} us"
              f"  p90 {took[int(0.9 * (len(took) - 1))] * 1e6:6.1f}  mean {statistics.mean(took) * 1e6:6.1f}"
              f"  {sum(took) / rounds * 1e3:6.3f} ms a graph")
    print(f"  the hook, every transition: {total / rounds * 1e3:.3f} ms a graph (the no-op rows not counted)")


if __name__ == "__main__":
    main()
