"""The same finish code run one task at a time or in batches (session 45): how much of its cost is the call's place.

    PYTHONPATH=. python docs/results/scheduler-s45/batching.py WORKLOAD KIND ROUNDS
    PYTHONPATH=. python docs/results/scheduler-s45/batching.py scheduler:fan-in - ROUNDS

A LocalCluster as in transitions.py; asafe installed fresh before each graph, on its Python per-task path (the
compiled path calls the same Python for a finish's parts it does not inline; the Python path lets the finish be
replaced on the instance). Two variants alternate, graph by graph:

* ``inline``: the plugin's ``_finish`` as it runs, timed per call with the thread's cpu clock;
* ``batched``: each finish is queued and the queue is run every 20 ms on the event loop (and before every
  evaluation); the batch is timed and divided by its size.

The batched variant is an experiment and not asafe's behaviour: it moves a task's finish after the transitions
that follow it (its dependencies' release, its dependents' start), which the forecast and the tracker must see in
order. It measures only what the same statements cost when they run back to back instead of between Dask's own
work on the scheduler's thread."""
import os
import statistics
import sys
import time

import cloudpickle
from distributed import Client, LocalCluster
from tornado.ioloop import PeriodicCallback

import asafe
from benchmarks import workloads as wl_module
from transitions import graph_runner  # this folder's script (sys.path[0] when run as a script)

cloudpickle.register_pickle_by_value(wl_module)


def _python_path(plugin):
    plugin.__dict__.pop("transition", None)  # the compiled hook set on the instance: the class's Python one runs
    plugin._path = None


def _inline(plugin, per_task):
    finish = plugin._finish

    def timed(*args):
        began = time.thread_time()
        finish(*args)
        per_task.append(time.thread_time() - began)

    plugin._finish = timed
    return None


def _batched(plugin, per_task, sizes, loop):
    finish, evaluate, queue = plugin._finish, plugin.runtime.evaluate, []

    def run_queue():
        if not queue:
            return
        batch = queue[:]
        queue.clear()
        began = time.thread_time()
        for args in batch:
            finish(*args)
        per_task.append((time.thread_time() - began) / len(batch))
        sizes.append(len(batch))

    def evaluate_after_queue(*args, **kwargs):
        run_queue()
        return evaluate(*args, **kwargs)

    plugin._finish = lambda *args: queue.append(args)
    plugin.runtime.evaluate = evaluate_after_queue
    ticker = PeriodicCallback(run_queue, 20)
    loop.add_callback(ticker.start)
    return ticker


def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    inline, batched, sizes = [], [], []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        run_graph = graph_runner(client, name, kind)
        loop = cluster.scheduler.loop
        for graph in range(2 * rounds):
            handle = asafe.install(client)
            plugin = cluster.scheduler.plugins["asafe"]
            _python_path(plugin)
            ticker = _inline(plugin, inline) if graph % 2 == 0 else _batched(plugin, batched, sizes, loop)
            run_graph()
            if ticker is not None:
                loop.add_callback(ticker.stop)
                time.sleep(0.05)
            handle.uninstall()
    weighted = sum(t * n for t, n in zip(batched, sizes)) / sum(sizes)
    print(f"{name}/{kind}, {rounds} graphs a variant, alternating; load average {os.getloadavg()[0]:.2f}")
    print(f"  inline:  a finish {statistics.median(inline) * 1e6:.1f} us (median), {statistics.mean(inline) * 1e6:.1f} us (mean)")
    print(f"  batched: a finish {weighted * 1e6:.1f} us (mean over tasks), batches of {statistics.median(sizes):.0f} "
          f"(median; mean {statistics.mean(sizes):.1f})")


if __name__ == "__main__":
    main()
