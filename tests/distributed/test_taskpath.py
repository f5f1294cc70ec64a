"""The compiled per-task path (asafe/schedulers/_taskpath.c) against the Python hook, side by side.

Two scheduler plugins are attached to one real scheduler, one running the
compiled ``transition`` and one the Python method (its reference), each with
its own runtime, tracker and forecast. The scheduler calls both, in the same
order, with the same task states; a third plugin, called after both, compares
what they counted after every transition: the scheduled entries, the event
batch's tallies, the planned transfers, the declared reuse, the runnable
count, the measured transfers, the failures and fallbacks. At the end the two
trackers are read and compared. Evaluations run only at graph arrivals (a huge
``evaluate_interval``), which both make at the same transition, so the two
trackers take their events in the same batches.

The graphs cover the paths: the next wave of misaligned arithmetic, reductions,
futures that depend on futures, an erring task, a cancelled graph, annotated
tasks (a typed function, a declared reuse), a P2P rechunk, and twins attached
while a graph runs (tasks that finish without an entry).
"""
from __future__ import annotations

import contextlib

import time

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import wait

import asafe
from asafe.core.tracker import EventBatch
from asafe.schedulers.forecast import PrefixMemory
from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin


def _state(plugin):
    """What a plugin counted, as plain data (reads nothing that drains its event batch)."""
    events = plugin._events
    forecast = plugin.forecast
    reuse = plugin.reuse
    return {
        "scheduled": {key: (e.task_type, e.prefix, e.reuse, e.ready) for key, e in plugin._scheduled.items()},
        "tallies": {k: list(v) for k, v in events._tallies.items()},
        "unscheduled": {k: list(v) for k, v in events._unscheduled.items()},
        "priors": dict(events._priors),
        "runs": (list(events._run_types), list(events._run_seconds), list(events._run_counts)),
        "planned": (forecast.planned, forecast._items, sorted(map(str, forecast._outputs))),
        "learned": (dict(forecast.output_bytes), dict(forecast.shipped), dict(forecast.crossed_bytes)),
        "reuse": (reuse._sum, reuse._count, reuse._recent_sum, reuse._recent_count, list(reuse._recent)),
        "runnable": plugin.runnable.count,
        "transfers": dict(plugin.transfer_stats),
        "errors": dict(plugin.error_counts),
        "fallbacks": dict(plugin.fallbacks),
        "p2p": (plugin.p2p.pending, plugin.p2p.planned_bytes, plugin.p2p.measured_bytes),
    }


class _Checker:
    """Compares the twins after each transition (a plugin called after both)."""

    name = "asafe-twin-checker"

    def __init__(self, compiled, reference):
        self.compiled, self.reference = compiled, reference
        self.checks = 0
        self.differences = []

    def transition(self, key, start, finish, *args, **kwargs):
        self.checks += 1
        a, b = _state(self.compiled), _state(self.reference)
        if a != b and len(self.differences) < 5:
            diff = {part: (a[part], b[part]) for part in a if a[part] != b[part]}
            self.differences.append((key, start, finish, diff))

    def update_graph(self, scheduler, **kwargs):
        self.transition("update_graph", None, None)


def _attach(plugin, scheduler, compiled):
    # What start() does that counting needs, without the handlers, the push or the
    # worker plugin (the twins must not replace each other, nor an installation)
    plugin.scheduler = scheduler
    plugin._events = EventBatch(plugin.tracker)
    memory = PrefixMemory()  # each twin learns on its own, from a link an earlier installation measured
    memory.bandwidth = memory.capacity = 2.5e8  # read until the twin measures a transfer of its own
    plugin.forecast.share(memory)
    plugin.link.memory = memory
    plugin._detach_signals = [plugin.forecast.attach()]
    plugin._count_runnable = True  # exercise the runnable count too
    plugin._probe_soon = lambda: None  # no link probe: each twin's would end at its own moment
    plugin._attached = True
    if compiled:
        plugin._compile_path()


def _twins():
    plugins = []
    for _ in range(2):
        runtime = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))],
                                        signals=False)
        plugins.append(AdaptiveSchedulerPlugin(runtime, evaluate_interval=1e9))
    return plugins


class _Lockstep:
    def __init__(self, cluster, client):
        self.scheduler = cluster.scheduler
        self.client = client
        self.compiled, self.reference = _twins()
        self.checker = _Checker(self.compiled, self.reference)

    async def _start(self):
        _attach(self.compiled, self.scheduler, compiled=True)
        _attach(self.reference, self.scheduler, compiled=False)
        for name, plugin in (("asafe-twin-compiled", self.compiled), ("asafe-twin-reference", self.reference),
                             (self.checker.name, self.checker)):
            self.scheduler.add_plugin(plugin, name=name)

    async def _stop(self):
        for name in ("asafe-twin-compiled", "asafe-twin-reference", self.checker.name):
            self.scheduler.remove_plugin(name=name)
        self.ends = [(p.tracker.scheduled_work(), p.tracker.measured_work(), p.tracker.finished) for p in
                     (self.compiled, self.reference)]
        self.compiled.detach()
        self.reference.detach()

    def __enter__(self):
        self.client.sync(self._start)
        assert self.compiled.compiled and not self.reference.compiled
        return self

    def __exit__(self, *exc):
        self.client.sync(self._stop)

    def check(self, least_checks=50):
        assert self.checker.differences == []
        assert self.checker.checks >= least_checks
        assert self.ends[0] == self.ends[1]
        assert self.ends[0][2] > 0  # the trackers learned something
        assert [(e.hook, e.error) for e in self.compiled.plugin_errors] == [
            (e.hook, e.error) for e in self.reference.plugin_errors]


def _misaligned(client):
    x = da.random.RandomState(0).random((600, 600), chunks=150)
    y = (x[1:, 1:] - x[:-1, :-1]).rechunk(110)  # misaligned chunks: a next wave of waiting tasks
    z = (y + y.T).sum(axis=0)
    client.compute([z, x.mean()], sync=True)
    # inputs in memory, in chunks of unequal sizes: each consumer's largest dependency is known
    uneven = client.persist(da.random.RandomState(2).random((600, 600), chunks=((50, 150, 400), (600,))))
    wait(uneven)
    shifted = uneven[:-1] + uneven[1:].rechunk(((100, 100, 399), (600,)))
    return float(shifted.sum().compute())


def _inc(x, delay=0.0):
    time.sleep(delay)
    return x + 1


def _inc_after(x, gate):
    from distributed import Event

    Event(gate).wait(30)  # set by the test once its next graph is submitted
    return x + 1


def _add(x, y):
    return x + y


def _boom(x):
    raise ValueError("a task that errs")


@asafe.typed("communication")
def _send(x):
    return x


def test_compiled_path_counts_as_the_python_hook(cluster, client, taskpath):
    with _Lockstep(cluster, client) as twins:
        _misaligned(client)
        first = client.map(_inc, range(40))
        second = client.map(_inc, first)
        total = client.submit(sum, second)
        assert total.result() == sum(range(2, 42))
        bad = client.submit(_boom, first[0])
        wait(bad)
        assert bad.status == "error"
        del first, second, total, bad
        # a graph touching tasks of earlier graphs that still wait: one counted (the next wave), one not
        a1, a2 = client.submit(_inc, 1, delay=0.4), client.submit(_inc, 2, delay=0.4)
        counted = client.submit(_add, a1, a2)
        uncounted = client.submit(_inc, counted)
        assert client.submit(_add, counted, uncounted).result() == 11
        del a1, a2, counted, uncounted
    twins.check()


def test_compiled_path_on_annotated_and_cancelled_tasks(cluster, client, taskpath):
    with _Lockstep(cluster, client) as twins:
        with asafe.reuse(8):
            a = da.ones((400, 400), chunks=100) * 2
        with dask.annotate(asafe_type="communication"):
            b = a.map_blocks(np.negative)
        c = client.submit(_send, 3)
        assert float((a + b).sum().compute()) == 0.0
        assert c.result() == 3
        slow = client.map(_inc, range(20), delay=0.05)
        chained = client.map(_inc, slow)
        time.sleep(0.1)
        client.cancel(chained + slow)
        del slow, chained
        # a consumer pinned to the other worker, cancelled before it runs: its input is released with the
        # transfer planned to that worker still in the forecast
        first, second = sorted(client.nthreads())
        made = client.submit(_inc, 1, workers=[first])
        wait(made)
        waited = client.submit(_inc, 2, delay=0.5, workers=[first])
        pinned = client.submit(_add, made, waited, workers=[second], allow_other_workers=False)
        time.sleep(0.1)
        client.cancel([pinned, waited])
        del made, waited, pinned
        time.sleep(0.2)
    twins.check()


def test_compiled_path_attached_while_a_graph_runs(cluster, client, taskpath):
    running = client.map(_inc, range(30), delay=0.05, pure=False)
    with _Lockstep(cluster, client) as twins:
        wait(running)  # tasks that were processing when the twins attached finish without an entry
        more = client.map(_inc, running)
        wait(more)
        del running, more
    twins.check(least_checks=30)


def test_compiled_path_on_a_p2p_rechunk(cluster, client, taskpath):
    with _Lockstep(cluster, client) as twins:
        x = da.random.RandomState(1).random((800, 800), chunks=(800, 40))
        with dask.config.set({"array.rechunk.method": "p2p"}):
            y = x.rechunk((40, 800))
        assert float(y.sum().compute()) == pytest.approx(float(x.sum().compute()))
    twins.check()


class _FailingBatch(EventBatch):
    """An event batch whose finishes of one prefix raise (a part failing inside the hook)."""

    __slots__ = ()

    def finish(self, task_type, prefix, duration):
        if "boom_finish" in prefix:
            raise RuntimeError("a part of the hook failed")
        super().finish(task_type, prefix, duration)


def _boom_finish(x):
    return x


def test_compiled_path_fails_as_the_python_hook(cluster, client, taskpath):
    with _Lockstep(cluster, client) as twins:
        for plugin in (twins.compiled, twins.reference):
            plugin._events = _FailingBatch(plugin.tracker)
        futures = client.map(_boom_finish, range(6))
        assert client.gather(client.map(_inc, futures)) == list(range(1, 7))
        del futures
    twins.check(least_checks=20)
    for plugin in (twins.compiled, twins.reference):
        assert plugin.error_counts == {"transition": 6}
        assert plugin.plugin_errors[-1].hook == "transition"
        assert plugin.plugin_errors[-1].error == "RuntimeError: a part of the hook failed"


def test_a_subclass_keeps_the_python_path(cluster, taskpath):
    class Mine(AdaptiveSchedulerPlugin):
        pass

    plugin = Mine(evaluate_interval=1e9)
    _attach(plugin, cluster.scheduler, compiled=True)
    assert not plugin.compiled  # it may override the methods the compiled path would bypass
    plugin.detach()


def test_the_compiled_path_lets_the_plugin_go(cluster, taskpath):
    import gc
    import weakref

    plugin = _twins()[0]
    _attach(plugin, cluster.scheduler, compiled=True)
    assert plugin.compiled  # the plugin holds the path, the path the plugin: a cycle the collector can see
    gone = weakref.ref(plugin)
    del plugin
    gc.collect()
    assert gone() is None


def test_without_the_compiled_module_the_hook_runs_in_python():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['asafe.schedulers._taskpath'] = None  # as if no C compiler was found at install\n"
        "import asafe\n"
        "from distributed import Client, LocalCluster\n"
        "from asafe.schedulers import scheduler_plugin\n"
        "assert scheduler_plugin._taskpath is None\n"
        "with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, "
        "Client(cluster) as client:\n"
        "    asafe.install(client)\n"
        "    assert client.submit(sum, [1, 2]).result() == 3\n"
        "    plugin = cluster.scheduler.plugins['asafe']\n"
        "    print('compiled', plugin.compiled, 'errors', dict(plugin.error_counts))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "compiled False errors {}" in result.stdout


def test_an_installation_runs_and_reports_the_compiled_path(client, taskpath):
    handle = asafe.install(client)
    try:
        assert client.submit(_inc, 1).result() == 2
        assert handle.info("plugin")["plugin"]["compiled"] is True
    finally:
        handle.uninstall()


def test_a_method_patched_on_the_plugin_runs_instead_of_its_twin(cluster, client, taskpath):
    plugin = _twins()[0]
    ready, evaluations, waves = [], [], []
    plugin._became_ready = lambda ts: ready.append(ts.key)
    plugin._maybe_evaluate = lambda now=None: evaluations.append(now)
    plugin._join_wave = lambda ts: waves.append(ts.key)
    with _compiled_alone(cluster, client, plugin):
        import uuid

        from distributed import Event

        gate = Event(f"asafe-test-gate-{uuid.uuid4().hex}", client=client)  # set once the second graph is in
        first = client.map(_inc_after, range(4), gate=gate.name)
        second = client.map(_inc, first)  # arrives waiting on running tasks: update_graph's next wave
        gate.set()
        assert client.gather(second) == [2, 3, 4, 5]
        del first, second
    assert ready and evaluations and all(isinstance(now, float) for now in evaluations)
    assert waves  # update_graph's next wave goes through the patch too


def test_a_patched_arrive_runs_instead_of_its_twin(cluster, client, taskpath):
    """update_graph's part per task: a patch on the instance replaces TaskPath.arrive, as it replaces _arrive."""
    plugin = _twins()[0]
    arrivals = []

    def arrive(tasks):
        arrivals.append(len(tasks))
        return False  # nothing new: update_graph evaluates nothing

    plugin._arrive = arrive
    with _compiled_alone(cluster, client, plugin):
        assert client.gather(client.map(_inc, range(4))) == [1, 2, 3, 4]
        assert arrivals == [4] and plugin.forecast.planned == 0.0
        assert plugin.runtime.tracker.finished == 4  # the event path counted them as they became ready


@contextlib.contextmanager
def _compiled_alone(cluster, client, plugin, name="asafe-twin-patched"):
    """One twin attached, compiled, beside nothing but the cluster (no checker, no Python twin)."""
    async def start():
        _attach(plugin, cluster.scheduler, compiled=True)
        cluster.scheduler.add_plugin(plugin, name=name)

    async def stop():
        cluster.scheduler.remove_plugin(name=name)
        plugin.detach()

    client.sync(start)
    try:
        assert plugin.compiled
        yield plugin
    finally:
        client.sync(stop)
