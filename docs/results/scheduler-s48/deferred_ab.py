"""Is asafe's hook work on a short graph's critical path? Inline against deferred, one cluster (session 48, issue 29).

    PYTHONPATH=. python docs/results/scheduler-s48/deferred_ab.py WORKLOAD KIND ROUNDS
    PIN=1 PYTHONPATH=. python docs/results/scheduler-s48/deferred_ab.py WORKLOAD KIND ROUNDS   # the scheduler's own cpu

An experiment, not a change. A LocalCluster (the scheduler and the client in this process, 2 worker processes of
one thread), the workloads suite's WORKLOAD on its KIND of data (96 MiB inputs), asafe installed once. The
variants of the same installation, rotated graph by graph (each round runs every variant, in a rotated order; 0.3 s
idle before each graph, each timed from submission until its outputs are in memory, then forgotten):

- ``inline``: asafe as it is (the compiled transition hook; a task's finish and the event path's evaluations run
  inside the scheduler's transition, before its messages to the workers are sent);
- ``deferred``: the same work moved out of the transition: a finish (``_finish``) is queued, and the event path's
  evaluation only marked due; both run two event-loop hops later (after the messages the transition produced
  went out), finishes first, in order; a graph's arrival and a task's discard drain the queue first. The
  queued finish runs the Python ``_finish`` (slower than the compiled one: its cost is off the path or not);
- ``deferred-eval``: only the event path's evaluation deferred so (the same code either way; the compiled hook
  then calls the Python ``_maybe_evaluate`` patched on the instance at every transition, a call's cost more);
- ``off``: the transition and update_graph hooks replaced by no-ops on the instance (asafe's scheduler work gone,
  its worker plugin still installed): the floor of the hooks;
- ``absent``: the plugin taken out of ``scheduler.plugins`` (Dask calls none of its hooks) and marked detached, so
  that its periodic callbacks (the signals' sampler, the P2P ticker) return at once; the worker plugin stays;
- ``bare``: ``absent``, and the worker plugin's transition hook returns at once on every worker
  (``record_sizes`` off); what stays of asafe is its wire serializers (passing frames through while
  wire compression is off), its state handlers and the workers' periodic resync and host reports.

- ``eval200``: asafe as it is with the event path's evaluations at most every 200 ms (``evaluate_interval``;
  50 ms otherwise), added in session 49;
- ``noforecast``: asafe as it is with the transfer forecast's plans off (``expected_transfers``; a finish still
  feeds the forecast what it learns), added in session 49.

``VARIANTS=inline,off,absent`` (an environment variable) runs a subset.

Prints the median of paired ratios (inline's time over the variant's: above 1 the variant is faster) with the
order-statistic 95% interval. With PIN=1 this process (the scheduler and the client) runs on cpu 0 and both worker
processes on cpu 1, so that the scheduler's thread has a core of its own, as on a cluster's scheduler host
(unpinned, the scheduler and two computing workers share the machine's 2 cores)."""
import asyncio
import os
import sys

import cloudpickle
from distributed import Client, LocalCluster

import asafe
from asafe.app.stats import paired_ratio_ci
from benchmarks import workloads as wl_module

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scheduler-s45"))
from transitions import graph_runner  # noqa: E402  (session 45's script: the workloads graph, timed)

cloudpickle.register_pickle_by_value(wl_module)

VARIANTS = ("inline", "deferred", "deferred-eval", "off", "absent", "bare", "eval200", "noforecast")


def pin(cpu, dask_worker=None):
    """Every thread of this process (and those it starts later) on ``cpu`` alone."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), {cpu})
        except OSError:  # a thread that ended meanwhile
            pass
    return sorted(os.sched_getaffinity(0))


def worker_hook(dask_worker=None, on=True):
    """On a worker: asafe's worker plugin's transition hook on or off (``record_sizes``)."""
    dask_worker.plugins["asafe"].record_sizes = on


def set_variant(dask_scheduler=None, variant="inline"):
    """On the scheduler's event loop: put the installed plugin in ``variant`` (patches on the instance)."""
    from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin as Plugin

    absent = dask_scheduler.__dict__.pop("_asafe_absent", None)  # the plugin "absent" took out, if it did
    if absent is not None:
        dask_scheduler.plugins["asafe"] = absent
        absent._attached = True
    plugin = dask_scheduler.plugins["asafe"]
    deferral = plugin.__dict__.get("_experiment")
    if deferral is not None:
        deferral.drain()  # nothing queued crosses into the next variant
    for name in ("_finish", "_maybe_evaluate", "_discard", "update_graph"):
        plugin.__dict__.pop(name, None)
    # the compiled path's hook (an attribute of the instance), kept per installation
    plugin.transition = plugin.__dict__.setdefault("_compiled_transition", plugin.transition)
    settings = plugin.__dict__.setdefault("_settings", (plugin.evaluate_interval, plugin.expected_transfers))
    plugin.evaluate_interval = 0.2 if variant == "eval200" else settings[0]
    plugin.expected_transfers = settings[1] and variant != "noforecast"
    if variant in ("absent", "bare"):
        dask_scheduler._asafe_absent = dask_scheduler.plugins.pop("asafe")  # Dask calls none of its hooks
        plugin._attached = False  # its periodic callbacks (signals, P2P ticks) return at once
    elif variant == "off":
        plugin.transition = lambda *args, **kwargs: None
        plugin.update_graph = lambda *args, **kwargs: None
    elif variant.startswith("deferred"):
        if deferral is None:
            deferral = plugin.__dict__["_experiment"] = Deferral(plugin, Plugin, asyncio.get_running_loop())
        plugin._maybe_evaluate = deferral.maybe_evaluate
        if variant == "deferred":
            plugin._finish = deferral.finish
            plugin._discard = deferral.discard
            plugin.update_graph = deferral.update_graph
    return variant


class Deferral:
    def __init__(self, plugin, cls, loop):
        self.plugin, self.cls, self.loop = plugin, cls, loop
        self.queue = []
        self.evaluation_due = False
        self.pending = False
        self.drains = 0

    def _soon(self):
        if not self.pending:
            self.pending = True
            self.loop.call_soon(self._hop)

    def _hop(self):
        self.loop.call_soon(self.drain)  # behind the callbacks the transition's sends queued

    def drain(self):
        self.pending = False
        queue, self.queue = self.queue, []
        plugin, cls = self.plugin, self.cls
        for key, entry, scheduled, kwargs in queue:
            cls._finish(plugin, key, entry, scheduled, kwargs)
        if self.evaluation_due:
            self.evaluation_due = False
            plugin.runtime.evaluate()
        self.drains += 1

    def finish(self, key, entry, scheduled, kwargs):
        self.queue.append((key, entry, scheduled, kwargs))
        self._soon()

    def maybe_evaluate(self, now=None):
        plugin = self.plugin
        if now is None:
            import time
            now = time.monotonic()
        if now >= plugin._next_evaluation:
            plugin._next_evaluation = now + plugin.evaluate_interval
            self.evaluation_due = True
            self._soon()

    def discard(self, key, entry):
        self.drain()
        self.cls._discard(self.plugin, key, entry)

    def update_graph(self, scheduler, **kwargs):
        self.drain()
        self.cls.update_graph(self.plugin, scheduler, **kwargs)


def main():
    name, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        if os.environ.get("PIN"):  # the scheduler (and the client) on cpu 0, both workers on cpu 1
            pin(0)
            client.run(pin, 1)
        run = graph_runner(client, name, kind)
        run()  # a warm-up graph, nothing installed
        handle = asafe.install(client)
        run()
        variants = tuple(os.environ.get("VARIANTS", ",".join(VARIANTS)).split(","))
        unknown = set(variants) - set(VARIANTS)
        if unknown or variants[0] != "inline":
            raise SystemExit(f"VARIANTS must start with inline and name only {VARIANTS}, got {variants}")
        seconds = {v: [] for v in variants}
        for r in range(rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            if r % 2:
                order = order[::-1]
            for variant in order:
                client.run_on_scheduler(set_variant, variant=variant)
                if "bare" in variants:
                    client.run(worker_hook, on=variant != "bare")
                seconds[variant].append(run())
        client.run_on_scheduler(set_variant, variant="inline")
        drains = client.run_on_scheduler(
            lambda dask_scheduler: getattr(dask_scheduler.plugins["asafe"].__dict__.get("_experiment"), "drains", 0))
        info = handle.info("plugin")["plugin"]
        handle.uninstall()
        pinned = "the scheduler on cpu 0, the workers on cpu 1" if os.environ.get("PIN") else "not pinned"
        print(f"{name}/{kind}: {rounds} rounds, variants rotated, {pinned}; load average {os.getloadavg()[0]:.2f}; "
              f"deferred drains {drains}; plugin errors {info.get('error_counts')}")
        for variant in variants:
            med = sorted(seconds[variant])[rounds // 2]
            print(f"  {variant:9s} median {med * 1e3:.1f} ms")
        for variant in variants[1:]:
            r = paired_ratio_ci(seconds["inline"], seconds[variant])
            print(f"  inline / {variant}: {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}], {r.n} pairs")


if __name__ == "__main__":
    main()
