"""Measurements of asafe on a Dask cluster (the ``overhead`` suite calls these).

``python -m benchmarks cluster [--quick] [--section NAME ...]`` runs them on a
``LocalCluster`` of 2 worker processes x 1 thread and writes
``<out>/cluster/results.json``. Every function takes a connected ``Client`` (and,
where it times the scheduler's hooks, the ``LocalCluster`` whose scheduler runs in
this process), so a suite can run them on a cluster it already has.

:func:`plugin_overhead`
    The cost of the plugins per task: one graph of ``n_tasks`` trivial tasks
    (``n_tasks // 2`` leaves and a binary ``add`` tree, as the ``overhead`` suite's
    graph), computed with and without asafe installed, interleaved (A B, B A, ...),
    a fresh graph (new keys) per sample so that no result is served from memory.
    Installing and uninstalling happen between samples, never inside one. Every
    result is checked against the closed form; the asafe samples also check that
    the scheduler's tracker saw every task. Reports medians with CIs, the slowdown
    ``asafe / plain`` with its bootstrap interval, the overhead per task, and the
    time spent inside the scheduler plugin's hooks per task (measured on a separate
    run with a timing wrapper around the hook).
:func:`hook_microbenchmark`
    The scheduler plugin's hooks alone (no cluster, stand-in task states): seconds
    per task for the five transitions of a task, with the default runtime.
:func:`propagation_delay`
    Seconds from the scheduler's decision (``Transition.time``) to the moment each
    worker's plugin applied the new states (both ``time.time()`` on one host),
    over ``n_transitions`` forced toggles: median, p95, p99, max.
:func:`transfer_bytes_saved`
    A transfer phase at Graph500 scale 14: row panels produced on one worker and
    multiplied on the other (:mod:`asafe.compression.distributed`), with
    compression off, on, and adaptive (asafe's default runtime). Reports the bytes
    that crossed between workers (as the workers counted them) and their
    uncompressed equivalent, the end-to-end time, and checks every ``y`` against
    scipy. Run on the link in force: the loopback interface as it is (which moves
    data at memory speed, so producing a panel costs about as much as moving it
    and the phase is not transfer-bound by asafe's ratio), or, with ``--link
    1gbit``, a real loopback shaped to 1 Gbit/s in a private network namespace
    (:mod:`asafe.app.link`), where it is. ``--emulated-link BYTES_PER_S`` adds a
    run on a sleep-emulated link (:class:`Carried`) for comparison.

Warm-up (cluster start, first graph, numba compilation) is measured apart and
never mixed into the samples (rule 2).
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Iterator, Sequence
from operator import add
from typing import Any

import numpy as np

from asafe.app import stats

from . import harness
from .harness import Measurement, Results, format_seconds, speedup, summary_table

__all__ = [
    "local_cluster",
    "tree_graph",
    "plugin_overhead",
    "hook_time",
    "hook_microbenchmark",
    "propagation_delay",
    "transfer_bytes_saved",
    "Carried",
    "main",
]

#: The target of the cluster issue: the plugins cost at most 5% per task.
TARGET_SLOWDOWN = 1.05


@contextlib.contextmanager
def local_cluster(n_workers: int = 2, threads_per_worker: int = 1, **kwargs: Any) -> Iterator[tuple[Any, Any]]:
    """``(cluster, client)``: a LocalCluster of worker processes, closed on exit."""
    from distributed import Client, LocalCluster

    options = dict(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True,
                   dashboard_address=":0")
    options.update(kwargs)
    with LocalCluster(**options) as cluster, Client(cluster) as client:
        client.wait_for_workers(n_workers)
        yield cluster, client


def inc(x: int) -> int:
    """A trivial task."""
    return x + 1


def tree_graph(n_tasks: int, token: str) -> tuple[Any, int]:
    """``n_tasks`` trivial tasks (leaves ``inc(i)`` and an ``add`` tree), keys named by ``token``.

    Returns the collection and the value it computes (the reference).

    Examples
    --------
    >>> import dask
    >>> total, expected = tree_graph(10, "doc")
    >>> dask.compute(total, scheduler="sync")[0] == expected
    True
    """
    from dask.delayed import Delayed

    if n_tasks < 4:
        raise ValueError(f"n_tasks must be >= 4, got {n_tasks!r}")
    leaves = n_tasks // 2
    graph: dict[Any, Any] = {(f"inc-{token}", i): (inc, i) for i in range(leaves)}
    level = [(f"inc-{token}", i) for i in range(leaves)]
    depth = 0
    while len(level) > 1:
        nxt = []
        for j in range(0, len(level) - 1, 2):
            key = (f"add-{token}", depth, j // 2)
            graph[key] = (add, level[j], level[j + 1])
            nxt.append(key)
        if len(level) % 2:
            nxt.append(level[-1])
        level, depth = nxt, depth + 1
    final = f"total-{token}"
    graph[final] = (inc, level[0])
    expected = leaves * (leaves + 1) // 2 + 1
    return Delayed(final, graph), expected


def _stop(samples: dict[str, list[float]], rel_ci: float, min_samples: int, max_samples: int,
          elapsed: float, max_seconds: float):
    return stats.stop_decision(samples, rel_ci=rel_ci, min_samples=min_samples, max_samples=max_samples,
                               elapsed=elapsed, max_seconds=max_seconds)


def plugin_overhead(
    client: Any,
    n_tasks: int = 10_000,
    *,
    cluster: Any = None,
    rel_ci: float = 0.05,
    min_samples: int = 7,
    max_samples: int = 40,
    max_seconds: float = 120.0,
) -> dict[str, Any]:
    """Per-task cost of asafe's plugins: the same kind of graph with and without them.

    Parameters
    ----------
    client : distributed.Client
    n_tasks : int
        Tasks per graph (10,000 in the issue).
    cluster : LocalCluster, optional
        Its scheduler must run in this process; adds the time spent inside the
        scheduler plugin's ``transition`` hook per task.
    rel_ci, min_samples, max_samples, max_seconds
        The stop rule (see :func:`asafe.app.stats.stop_decision`).

    Returns
    -------
    dict
        ``measurements`` (``plain``, ``asafe``), ``speedup`` (asafe vs plain),
        ``slowdown`` and its interval, ``per_task_overhead_s``, ``verdict``,
        ``hook_s_per_task``, ``warmup_s``, settings.
    """
    import asafe

    counter = iter(range(1 << 62))
    runtime = asafe.AdaptiveRuntime()  # the defaults: what a user gets
    settings = _runtime_settings(runtime)

    def run(name: str) -> tuple[float, int]:
        total, expected = tree_graph(n_tasks, f"{name}-{next(counter)}")
        start = time.perf_counter()
        future = client.compute(total)
        value = future.result()
        seconds = time.perf_counter() - start
        if value != expected:
            raise AssertionError(f"{name}: wrong result {value} != {expected}")
        del future
        return seconds, value

    handle: Any = None

    def set_variant(name: str) -> None:
        nonlocal handle
        if name == "asafe" and handle is None:
            handle = asafe.install(client, runtime)
        elif name == "plain" and handle is not None:
            handle.uninstall()
            handle = None

    warmup: dict[str, list[float]] = {"plain": [], "asafe": []}
    for name in ("plain", "asafe"):  # first graphs: imports, connections, first touch
        set_variant(name)
        warmup[name].append(run(name)[0])
    samples: dict[str, list[float]] = {"plain": [], "asafe": []}
    order = ["plain", "asafe"]
    started = time.perf_counter()
    decision = None
    while True:
        for name in order:
            set_variant(name)
            before = handle.finished if name == "asafe" else 0
            seconds, _ = run(name)
            if name == "asafe":
                seen = harness.wait_finished(handle, before + n_tasks, timeout=10.0)
                if seen < before + n_tasks:
                    raise AssertionError(f"the scheduler's tracker saw {seen - before} of {n_tasks} tasks")
            samples[name].append(seconds)
        order.reverse()  # A B, B A, ...: drift spreads over both
        decision = _stop(samples, rel_ci, min_samples, max_samples, time.perf_counter() - started, max_seconds)
        if decision.stop:
            break
    set_variant("plain")
    measurements = {
        name: Measurement.from_samples(name, s, reached_target=decision.reached, stop_reason=decision.reason,
                                       rel_ci=rel_ci, warmup_times=warmup[name], checks=len(s) + 1)
        for name, s in samples.items()
    }
    comparison = speedup(measurements["plain"], measurements["asafe"])
    low, high = comparison.slowdown_ci95
    verdict = "met" if high <= TARGET_SLOWDOWN else "exceeded" if low > TARGET_SLOWDOWN else "inconclusive"
    out = {
        "n_tasks": n_tasks,
        "measurements": measurements,
        "speedup": comparison,
        "slowdown": comparison.slowdown,
        "slowdown_ci95": comparison.slowdown_ci95,
        "per_task_overhead_s": (measurements["asafe"].median - measurements["plain"].median) / n_tasks,
        "target_slowdown": TARGET_SLOWDOWN,
        "verdict": verdict,
        "runtime": settings,
        "workload": f"{n_tasks} trivial tasks ({n_tasks // 2} inc leaves, an add tree), client.compute + result",
    }
    if cluster is not None:
        out["hook_s_per_task"] = hook_time(client, cluster, n_tasks, runtime)
    return out


def hook_time(client: Any, cluster: Any, n_tasks: int, runtime: Any = None) -> float:
    """Seconds spent inside the scheduler plugin's ``transition`` hook, per task.

    Runs one graph with a timing wrapper around the hook (the scheduler of
    ``cluster`` must run in this process). The wrapper's own clock reads are
    included, so this is an upper bound.
    """
    import asafe

    handle = asafe.install(client, runtime if runtime is not None else asafe.AdaptiveRuntime())
    try:
        plugin = cluster.scheduler.plugins["asafe"]
        hook = plugin.transition
        spent = [0.0]
        clock = time.perf_counter

        def timed(*args: Any, **kwargs: Any) -> None:
            start = clock()
            hook(*args, **kwargs)
            spent[0] += clock() - start

        plugin.transition = timed
        total, expected = tree_graph(n_tasks, f"hook-{time.time_ns()}")
        assert client.compute(total).result() == expected
        del plugin.transition
        return spent[0] / n_tasks
    finally:
        handle.uninstall()


class _Worker:
    """A stand-in for a scheduler's WorkerState (hashable, with an address)."""

    def __init__(self, address: str) -> None:
        self.address = address


def hook_microbenchmark(n_tasks: int = 20_000, **measure_options: Any) -> dict[str, Any]:
    """The scheduler plugin's hooks alone, per task, without a cluster.

    Each task goes through the five transitions the scheduler reports for a task
    with one dependency on the same worker (``released -> waiting -> processing ->
    memory -> released -> forgotten``); task states are light stand-ins with the
    attributes the plugin reads. Measured with :func:`benchmarks.harness.measure`
    (interleaving is moot with one variant; the stop rule and warm-up apply).
    """
    from types import SimpleNamespace

    import asafe
    from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin
    from dask._task_spec import Task

    worker = _Worker("tcp://stand-in:1")
    tasks = {}
    for i in range(n_tasks):
        dependency = SimpleNamespace(who_has={worker}, metadata=None, nbytes=28)
        tasks[("inc", i)] = SimpleNamespace(
            annotations=None, run_spec=Task(("inc", i), inc, i), prefix=SimpleNamespace(name="inc"),
            processing_on=worker, dependencies=[dependency], metadata=None, state="processing",
        )
    scheduler = SimpleNamespace(tasks=tasks, workers={worker.address: worker}, plugins={}, handlers={},
                                stream_comms={}, bandwidth=1e8)
    startstops = [{"action": "compute", "start": 0.0, "stop": 1e-4}]
    keys = list(tasks)

    def run() -> int:
        runtime = asafe.AdaptiveRuntime()
        plugin = AdaptiveSchedulerPlugin(runtime)
        plugin.scheduler, plugin._attached = scheduler, True
        hook = plugin.transition
        for key in keys:
            hook(key, "released", "waiting", stimulus_id="bench")
            hook(key, "waiting", "processing", stimulus_id="bench")
            hook(key, "processing", "memory", stimulus_id="bench", startstops=startstops, nbytes=28,
                 worker=worker.address, metadata={}, typename="int")
            hook(key, "memory", "released", stimulus_id="bench")
            hook(key, "released", "forgotten", stimulus_id="bench")
        return runtime.tracker.finished

    def check(name: str, finished: int) -> None:
        if finished != n_tasks:
            raise AssertionError(f"the tracker saw {finished} of {n_tasks} tasks")

    options = {"max_seconds": 20.0, "min_samples": 7}
    options.update(measure_options)
    measured = harness.measure({"hooks": run}, check=check, **options)["hooks"]
    return {"measurement": measured, "n_tasks": n_tasks, "per_task_s": measured.median / n_tasks,
            "transitions_per_task": 5}


def propagation_delay(client: Any, n_transitions: int = 200, interval: float = 0.01) -> dict[str, Any]:
    """Seconds from the scheduler's decision to each worker applying it, beside a plain Dask message's.

    ``n_transitions`` toggles of one optimization are forced through the handle
    (``set_state``), ``interval`` seconds apart; each is recorded by the runtime
    as a transition (its ``time``) and pushed; every worker plugin records when it
    applied each version. One sample per (transition, worker).

    The baseline (``baseline_*``): between two toggles the scheduler sends every
    worker a message of its own on the same batched stream (the path of Dask's
    ``compute-task`` and of the push), timed the same way, to a handler that only
    records when it ran. A push cannot reach a worker sooner than the stream
    delivers it there, so the baseline says how much of the push's latency is
    the cluster's (its event loops, its stream) and how much asafe's.
    """
    import asafe

    from asafe.core.runtime import Optimization

    runtime = asafe.AdaptiveRuntime([Optimization("compression", asafe.Hysteresis(0.5, 2.0))], signals=False)
    client.run(_listen_baseline)
    handle = asafe.install(client, runtime)
    try:
        for i in range(n_transitions):
            handle.set_state("compression", i % 2 == 0)
            time.sleep(interval / 2)
            client.run_on_scheduler(_send_baseline, index=i)
            time.sleep(interval / 2)
        deadline = time.time() + 10
        while True:
            receipts = client.run(_receipts)
            baseline = client.run(_baseline_receipts)
            pushed = [sum(1 for version, _, _ in r if version >= 1) for r in receipts.values()]
            if (all(n >= n_transitions for n in pushed) and all(len(b) >= n_transitions for b in baseline.values())) \
                    or time.time() > deadline:
                break
            time.sleep(0.05)
    finally:
        handle.uninstall()
        client.run(_stop_baseline)
    delays = []
    per_worker = {}
    lost = superseded = 0
    for address, received in receipts.items():
        worker_delays = [arrived - sent for version, sent, arrived in received if version >= 1]
        per_worker[address] = {"n": len(worker_delays), "median_s": float(np.median(worker_delays)) if worker_delays else math.nan}
        delays += worker_delays
        # A version the worker never applied is superseded when it applied a later one first (its resync's
        # hello reply overtook pushes still queued on the stream: it had the newer states), lost otherwise.
        never = max(n_transitions - max((version for version, _, _ in received), default=0), 0)
        lost += never
        superseded += n_transitions - len(worker_delays) - never
    plain = [arrived - sent for received in baseline.values() for _, sent, arrived in received]
    measurement = Measurement.from_samples("propagation", delays, stop_reason=f"{n_transitions} forced transitions")
    reference = Measurement.from_samples("stream message", plain, stop_reason=f"{n_transitions} messages")
    return {
        "measurement": measurement,
        "n_transitions": n_transitions,
        "interval_s": interval,
        "median_s": measurement.median,
        "p95_s": measurement.p95,
        "p99_s": measurement.p99,
        "max_s": measurement.max,
        "lost": lost,
        "superseded": superseded,
        "per_worker": per_worker,
        "baseline": reference,
        "baseline_median_s": reference.median,
        "baseline_p95_s": reference.p95,
        "baseline_p99_s": reference.p99,
        "baseline_max_s": reference.max,
        "baseline_lost": n_transitions * len(baseline) - len(plain),
        "target_p99_s": 0.1,
        "clock": "time.time() on one host: decision on the scheduler, arrival on the worker",
    }


def _receipts(dask_worker: Any) -> list:
    plugin = dask_worker.plugins.get("asafe")
    return list(plugin.receipts) if plugin is not None else []


#: The stream op of propagation_delay's baseline message, and where each worker records it.
_BASELINE_OP = "asafe-bench-stream-baseline"


def _listen_baseline(dask_worker: Any) -> None:
    received: list = []
    dask_worker._asafe_bench_baseline = received

    def handler(index: int = 0, sent: float = 0.0, **kwargs: Any) -> None:
        received.append((index, sent, time.time()))

    dask_worker.stream_handlers[_BASELINE_OP] = handler


def _send_baseline(dask_scheduler: Any, index: int) -> None:
    message = {"op": _BASELINE_OP, "index": index, "sent": time.time()}
    for comm in list(dask_scheduler.stream_comms.values()):
        comm.send(message)


def _baseline_receipts(dask_worker: Any) -> list:
    return list(getattr(dask_worker, "_asafe_bench_baseline", ()))


def _stop_baseline(dask_worker: Any) -> None:
    # a no-op handler stays: a late message must not close the stream
    dask_worker.stream_handlers[_BASELINE_OP] = lambda **kwargs: None


class Carried:
    """A value on an emulated network link: it arrives ``nbytes / bandwidth`` seconds late.

    Unpickling it (on the receiving worker, inside the transfer the worker
    measures) sleeps for the time the value's wire bytes take at ``bandwidth``
    bytes per second. A loopback interface moves data at memory speed; this gives
    a LocalCluster the link of a real cluster (1 Gbit/s is 125e6 bytes per second).
    The carrier reports the value's ``logical_nbytes`` and ``nbytes``.
    """

    def __init__(self, value: Any, bandwidth: float) -> None:
        self.value = value
        self.bandwidth = float(bandwidth)

    @property
    def nbytes(self) -> int:
        return int(getattr(self.value, "nbytes", 0))

    @property
    def logical_nbytes(self) -> int:
        return int(getattr(self.value, "logical_nbytes", self.nbytes))

    def __sizeof__(self) -> int:
        from dask.sizeof import sizeof

        return int(sizeof(self.value))

    def __reduce__(self):
        return (_arrive, (self.value, self.bandwidth))


def _register_carried() -> None:
    from asafe.schedulers import sizes

    sizes.register(Carried, sizeof=False)  # its __sizeof__ sizes the value, which notes its own sizes


_register_carried()


def _arrive(value: Any, bandwidth: float) -> Carried:
    carried = Carried(value, bandwidth)
    time.sleep(carried.nbytes / bandwidth)
    return carried


def _depart(panel: Any, bandwidth: float) -> Carried:
    return Carried(panel, bandwidth)


def _multiply_carried(carried: Carried, x: np.ndarray) -> np.ndarray:
    from asafe.compression.distributed import multiply_panel

    return multiply_panel(carried.value, x)


def _linked_matvec(client: Any, source: Any, x: np.ndarray, panels: int, producer: str, consumer: str,
                   bandwidth: float) -> np.ndarray:
    """The matvec graph of :mod:`asafe.compression.distributed` with panels on an emulated link."""
    import dask
    from dask.base import tokenize
    from dask.delayed import delayed

    from asafe.compression import distributed as dmv
    from asafe.core.types import COMPUTE, typed

    depart = typed(COMPUTE)(_depart)
    multiply = typed(COMPUTE)(_multiply_carried)
    bounds = dmv.panel_bounds(source.grid[0], panels)
    token = tokenize(repr(source), x, bounds, bandwidth, time.time_ns())
    x_node = delayed(x, name=f"bench-x-{token}")
    with dask.annotate(workers=[producer], allow_other_workers=False):
        shipped = [
            delayed(depart, pure=True)(
                delayed(dmv.produce_panel, pure=True)(source, lo, hi, dask_key_name=(f"bench-panel-{token}", i)),
                bandwidth, dask_key_name=(f"bench-depart-{token}", i))
            for i, (lo, hi) in enumerate(bounds)
        ]
    with dask.annotate(workers=[consumer], allow_other_workers=False):
        parts = [delayed(multiply, pure=True)(p, x_node, dask_key_name=(f"bench-multiply-{token}", i))
                 for i, p in enumerate(shipped)]
    y = delayed(dmv.assemble, pure=True)(*parts, dask_key_name=f"bench-matvec-{token}")
    future = client.compute(y)
    try:
        return future.result()
    finally:
        future.release()


def transfer_bytes_saved(
    client: Any,
    scale: int = 14,
    tile: int = 128,
    dense_fraction: float = 0.05,
    panels: int = 32,
    seed: int = 0,
    link: float | None = None,
) -> dict[str, Any]:
    """Bytes moved between workers by a transfer-bound matvec, compression off / on / adaptive.

    Row panels of the Graph500 mixed matrix are produced on one worker (dense
    blocks, compressed by the tile producer when ``asafe.is_on("compression")``)
    and multiplied on the other, so every panel crosses between workers once.
    asafe is installed in every variant (its plugins count the bytes); the
    optimization is pinned off, pinned on, or left to the default hysteresis.

    Parameters
    ----------
    link : float, optional
        Emulated link bandwidth in bytes per second (see :class:`Carried`);
        default: the loopback interface as it is.
    """
    import asafe

    from asafe.compression import distributed as dmv
    from asafe.compression import graph500
    from asafe.core.runtime import Optimization

    class Pinned(asafe.EfficiencyDomain):
        """Keeps the optimization in its initial state."""

        def decide(self, mode: Any, state: bool) -> bool:
            return state

    source = dmv.Graph500Source(scale=scale, tile=tile, dense_fraction=dense_fraction, seed=seed)
    S = graph500.mixed_matrix(scale, tile, dense_fraction, seed=seed)
    x = np.random.default_rng(seed).random(S.shape[1])
    reference = S @ x
    producer, consumer = sorted(client.nthreads())

    def run() -> np.ndarray:
        if link is None:
            return dmv.matvec(client, source, x, panels=panels, producers=[producer], consumers=[consumer])
        return _linked_matvec(client, source, x, panels, producer, consumer, link)

    variants = {
        "off": asafe.AdaptiveRuntime([Optimization("compression", Pinned(), initial=False)]),
        "on": asafe.AdaptiveRuntime([Optimization("compression", Pinned(), initial=True)]),
        "adaptive": asafe.AdaptiveRuntime(),
    }
    out: dict[str, Any] = {"scale": scale, "tile": tile, "dense_fraction": dense_fraction, "panels": panels,
                           "link_bytes_per_s": link if link is not None else "not emulated: the link in force (environment.link)",
                           "matrix": {"n": S.shape[0], "nnz": int(S.nnz)}}
    # warm-up apart: the matrix generated on both workers, numba kernels compiled
    warm = time.perf_counter()
    np.testing.assert_allclose(run(), reference, rtol=1e-10, atol=1e-8)
    out["warmup_s"] = time.perf_counter() - warm
    for name, runtime in variants.items():
        handle = asafe.install(client, runtime)
        try:
            start = time.perf_counter()
            y = run()
            seconds = time.perf_counter() - start
            np.testing.assert_allclose(y, reference, rtol=1e-10, atol=1e-8)  # rule 1
            info = handle.info("plugin", "states", "tracker")
            transfers = info["plugin"]["transfers"]
            out[name] = {
                "seconds": seconds,
                "wire_bytes": transfers["wire_bytes"],
                "logical_bytes": transfers["logical_bytes"],
                "transfers": transfers["count"],
                "transfer_seconds": transfers["seconds"],
                "corrected_transfer_seconds": transfers["corrected_seconds"],
                "measured_work_s": info["tracker"]["measured"],
                "final_states": info["states"],
                "history": [t.as_dict() for t in handle.history],
            }
        finally:
            handle.uninstall()
    if out["off"]["wire_bytes"]:
        out["bytes_saved"] = out["off"]["wire_bytes"] - out["on"]["wire_bytes"]
        out["wire_ratio_on_vs_off"] = out["on"]["wire_bytes"] / out["off"]["wire_bytes"]
        out["wire_ratio_adaptive_vs_off"] = out["adaptive"]["wire_bytes"] / out["off"]["wire_bytes"]
    out["reference"] = "scipy CSR S @ x, rtol 1e-10"
    out["single_run"] = "one timed run per variant: times are indicative only (no CI)"
    return out


def _runtime_settings(rt: Any) -> dict[str, Any]:
    tracker = rt.tracker
    return {
        "optimizations": {name: repr(opt) for name, opt in rt.optimizations.items()},
        "window": tracker.window, "blend": tracker.blend, "dwell_s": rt.dwell, "dwell_tasks": rt.dwell_tasks,
        "interval_s": rt.interval, "chosen": "asafe defaults (asafe.yaml); not tuned for this benchmark",
    }


SECTIONS = ("hooks", "overhead", "propagation", "transfers")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks cluster``: run the sections, print, write results.json."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks cluster", description=__doc__.splitlines()[0])
    harness.add_common_arguments(parser, max_seconds=120.0)
    parser.add_argument("--section", action="append", choices=SECTIONS,
                        help="run only these sections (repeatable; default: all)")
    parser.add_argument("--tasks", type=int, default=None, help="tasks per graph of the overhead section")
    parser.add_argument("--scale", type=int, default=None, help="Graph500 scale of the transfers section")
    parser.add_argument("--emulated-link", type=float, default=None, metavar="BYTES_PER_S",
                        help="also run the transfers on a sleep-emulated link of this many bytes/s "
                             "(125e6 is 1 Gbit/s); a real shaped link is --link RATE (default: none)")
    args = parser.parse_args(argv)
    sections = args.section or list(SECTIONS)
    n_tasks = args.tasks or (2_000 if args.quick else 10_000)
    scale = args.scale or (11 if args.quick else 14)
    results = Results("cluster", args.out)
    started = time.perf_counter()
    if "hooks" in sections:
        r = hook_microbenchmark(5_000 if args.quick else 20_000, rel_ci=args.rel_ci,
                                max_seconds=min(args.max_seconds, 10.0 if args.quick else 30.0))
        results.add("hook_microbenchmark", r)
        print(f"scheduler plugin hooks alone: {format_seconds(r['per_task_s'])} per task "
              f"(5 transitions; median of {r['measurement'].n} samples of {r['n_tasks']} tasks)")
    if set(sections) - {"hooks"}:
        with local_cluster() as (cluster, client):
            results.set_environment(cluster="LocalCluster, 2 worker processes x 1 thread", scheduler="distributed",
                                    cluster_start_s=time.perf_counter() - started)
            if "overhead" in sections:
                r = plugin_overhead(client, n_tasks, cluster=cluster, rel_ci=args.rel_ci,
                                    max_seconds=args.max_seconds if not args.quick else min(args.max_seconds, 20.0),
                                    min_samples=3 if args.quick else 7)
                results.add("plugin_overhead", r)
                print(summary_table(r["measurements"]))
                print(r["speedup"])
                print(f"slowdown {r['slowdown']:.3f} [{r['slowdown_ci95'][0]:.3f}, {r['slowdown_ci95'][1]:.3f}] "
                      f"(target <= {TARGET_SLOWDOWN}: {r['verdict']}); per task "
                      f"{format_seconds(r['per_task_overhead_s'])}; inside the scheduler hook "
                      f"{format_seconds(r.get('hook_s_per_task', math.nan))} per task")
            if "propagation" in sections:
                r = propagation_delay(client, 50 if args.quick else 200)
                results.add("propagation_delay", r)
                print(f"propagation: median {format_seconds(r['median_s'])}, p95 {format_seconds(r['p95_s'])}, "
                      f"p99 {format_seconds(r['p99_s'])}, max {format_seconds(r['max_s'])} "
                      f"over {r['measurement'].n} deliveries (target p99 < 100 ms); lost {r['lost']}")
            if "transfers" in sections:
                runs = [(args.link.rate if args.link is not None else "loopback", None)]
                if args.emulated_link is not None:
                    runs.append((f"emulated_{args.emulated_link:g}Bps", args.emulated_link))
                for label, link in runs:
                    r = transfer_bytes_saved(client, scale=scale, link=link)
                    results.add(f"transfer_bytes_saved_{label}", r)
                    for name in ("off", "on", "adaptive"):
                        v = r[name]
                        print(f"transfers [{label}] {name:>8}: {v['wire_bytes'] / 1e6:9.1f} MB on the wire "
                              f"({v['logical_bytes'] / 1e6:9.1f} MB uncompressed), {v['transfers']} transfers, "
                              f"{v['seconds']:.2f} s end to end, states {v['final_states']}, "
                              f"{len(v['history'])} transitions")
    results.save()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
