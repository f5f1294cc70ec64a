"""What an evaluation costs where it runs, against the same calls run again at once and in a warm loop (session 46).

    PYTHONPATH=. python docs/results/scheduler-s46/cold.py many-small GRAPHS
    PYTHONPATH=. python docs/results/scheduler-s46/cold.py reduce ROUNDS

A LocalCluster (the scheduler and the client in this process, 2 worker processes of one thread), asafe installed
once; ``many-small``: the scheduler suite's small graphs (10 tasks, one after another), ``reduce``: the workloads
suite's reduction on floats of which half are exactly zero (96 MiB), as ``scheduler-s45/transitions.py`` runs it.
Every evaluation the plugin makes (a graph's arrival, the 50 ms interval) is timed with the scheduler thread's cpu
clock, and so are three of its parts: reading the signal sources, the tracker's mode (its feed drains the batch of
finishes first) and each optimization's decision. Each part, where it runs, is called twice more at once after its
first call (the second and third calls' results are dropped; these parts change no state but the feed's drain,
which has nothing left to drain by then). After the graphs, on the scheduler's thread with the cluster idle, the
same calls run 300 times in a row (warm). Prints the medians per call.

The first call where it runs against the calls right after it is what the caches cost that call: the code and data
it touches were last used a graph or an interval ago, and Dask's own work on the thread ran in between.
"""
import os
import statistics
import sys
import time

from distributed import Client, LocalCluster

import asafe

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scheduler-s45"))


def main():
    name, rounds = sys.argv[1], int(sys.argv[2])
    calls, evaluations = {}, []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        if name == "many-small":
            from benchmarks.scheduler import build_graph

            graph = build_graph("many-small", 10, graphs=rounds)

            def run():
                graph.check(client, graph.run(client))
        else:
            from transitions import graph_runner

            one = graph_runner(client, name, "zeros")

            def run():
                for _ in range(rounds):
                    one()
        handle = asafe.install(client)
        runtime = cluster.scheduler.plugins["asafe"].runtime
        parts = {"signal sources": (runtime, "_read_sources"), "tracker.mode": (runtime.tracker, "mode"),
                 "one decision": (runtime, "_decide")}
        for label, (owner, attr) in parts.items():
            _time_thrice(owner, attr, label, calls)
        evaluate = runtime.evaluate

        def timed_evaluate(*args, **kwargs):
            began = time.thread_time()
            try:
                return evaluate(*args, **kwargs)
            finally:
                evaluations.append(time.thread_time() - began)

        runtime.evaluate = timed_evaluate
        run()
        runtime.evaluate = evaluate
        for owner, attr in parts.values():
            owner.__dict__.pop(attr, None)
        warm = client.run_on_scheduler(_warm_loop)
        handle.uninstall()
    print(f"{name}, {rounds} {'graphs' if name == 'many-small' else 'rounds'}, asafe installed once; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"  evaluate where it runs: {len(evaluations)} calls, median {statistics.median(evaluations) * 1e6:6.1f} us;"
          f" warm loop {warm['evaluate'] * 1e6:6.1f} us")
    for label, thrice in calls.items():
        first, second, third = (statistics.median(call[i] for call in thrice) * 1e6 for i in range(3))
        print(f"  {label:15s} {len(thrice):5d} calls: first {first:6.1f} us, second {second:6.1f}, third {third:6.1f};"
              f" warm loop {warm[label] * 1e6:6.1f} us")
    print(f"  the clock's two reads: {warm['clock'] * 1e6:.1f} us")


def _time_thrice(owner, attr, label, calls):
    method = getattr(owner, attr)

    def timed(*args, **kwargs):
        t0 = time.thread_time()
        result = method(*args, **kwargs)
        t1 = time.thread_time()
        method(*args, **kwargs)
        t2 = time.thread_time()
        method(*args, **kwargs)
        t3 = time.thread_time()
        calls.setdefault(label, []).append((t1 - t0, t2 - t1, t3 - t2))
        return result

    setattr(owner, attr, timed)


def _warm_loop(dask_scheduler):
    runtime = dask_scheduler.plugins["asafe"].runtime
    name, optimization = next(iter(runtime.optimizations.items()))
    state, mode = runtime.states[name], runtime.mode
    work = {"evaluate": runtime.evaluate, "signal sources": runtime._read_sources,
            "tracker.mode": runtime.tracker.mode,
            "one decision": lambda: runtime._decide(optimization, mode, state, time.time()),
            "clock": lambda: None}
    out = {}
    for label, call in work.items():
        took = []
        for _ in range(300):
            began = time.thread_time()
            call()
            took.append(time.thread_time() - began)
        out[label] = statistics.median(took)
    return out


if __name__ == "__main__":
    main()
