"""Scheduler throughput with and without asafe installed: tasks per second, scheduler cpu and memory per task.

``python -m benchmarks scheduler [--workers N] [--in-process] [--tasks 100000,1000000] [--graph NAME ...]``

A Dask scheduler is one Python thread, and whatever asafe adds per transition is
paid by every user of the cluster. This suite runs the same graphs with plain
Dask (variant ``dask``) and with asafe installed (variant ``asafe``), interleaved
(rounds ``dask asafe``, ``asafe dask``, ...; rule 5 of docs/benchmarking.rst),
a fresh ``asafe.install(client)`` before every asafe sample and
``handle.uninstall()`` after it, neither inside the timed region. Every sample's
result is checked (rule 1), outside the timed region; an asafe sample also
checks that the scheduler's tracker saw every task of a graph whose task count
is exact.

The graphs (``--graph``, repeatable; default all)
-------------------------------------------------
``map-one-prefix``
    ``client.map(inc, range(N))``: N trivial tasks, one key prefix, for each
    N of ``--tasks`` (default 100,000 and 1,000,000).
``map-many-prefixes``
    The same with keys of ``--prefixes`` (5,000) key prefixes: per-prefix
    bookkeeping (Dask's ``TaskPrefix``, asafe's tracker groups) at its widest.
``array-reduction``
    ``da.arange(10 * C, chunks=10).sum(split_every=8)``: one task per chunk
    and a reduction tree, C chosen so that the graph has at least the smallest
    ``--tasks`` tasks (the count reported is the optimized graph's).
``fan-in``
    Groups of ``--fan-in`` (5,000) trivial leaves, each group summed by one task
    that depends on all of them, as many groups as fill the smallest ``--tasks``.
``many-small``
    ``--graphs`` (1,000) graphs of 10 tasks submitted one after another, each
    waited for: what each arriving graph costs (asafe plans its transfers and
    evaluates the domains at every arrival).

What is measured, and why this way
----------------------------------
The scheduler runs in a process of its own (``python -m
distributed.cli.dask_scheduler``), the client in this process, and the
workers either as ``--workers`` worker processes (``dask worker --nworkers N
--nthreads 1``) or, with ``--in-process``, as N in-process workers sharing one
process of their own (the many-worker case: 32 or 64 workers on this machine).
In a ``LocalCluster`` the scheduler shares its event-loop thread with the
client (and with the workers when ``processes=False``), so neither the thread's
cpu time (``time.thread_time`` on the loop) nor the process's could tell the
scheduler's work from theirs; in a process of its own, the scheduler's cpu is
the process's (psutil ``cpu_times``, user + system, every thread: the event
loop, the offload thread that deserializes graphs, the garbage collector).

* **tasks per second**: the graph's tasks over the wall time from the
  submitting call (``client.map``, ``client.compute``) until every output is
  in memory; ratios are paired per round (``dask`` over ``asafe`` time), with
  their order-statistic 95% interval (:func:`asafe.app.stats.paired_ratio`);
* **scheduler cpu seconds per task**: the scheduler process's cpu time from
  just before the submission until every task of the graph was released
  again (the whole life of the graph; the scheduler's background work over
  that time, heartbeats included, is in it for both variants: the idle rate
  measured before the run is recorded too);
* **scheduler memory**: the peak of the scheduler's resident memory above its
  level before the sample (a thread reads it every 20 ms; after the first
  graphs the scheduler mostly reuses memory it freed, so this ratio is
  reported only where every sample grew it by 1 MiB); and, in
  ``--tracemalloc-rounds`` (3) extra untimed rounds per graph, interleaved,
  the peak of the Python memory the scheduler allocated for the graph
  (``tracemalloc`` on the scheduler, started before and stopped after each
  run: it slows the scheduler, so it is never mixed into the timed samples),
  with its paired ratio;
* **state push latency**: seconds from the scheduler's decision to each
  worker's plugin applying it (``benchmarks.cluster.propagation_delay``: forced
  toggles, the worker plugin's ``receipts``), p50/p95/p99/max over every
  (transition, worker) pair.

Results go to ``OUT/scheduler/scheduler-<N>w-<processes|inprocess>.json``
(``-2``, ``-3``, ... before ``.json`` rather than over the file of an earlier
run: :func:`result_path`) with the environment (load average at the start and
at the end, link, packages).
The issue's targets are printed next to each ratio; a verdict is ``met`` only
when the whole interval clears the target. ``--quick`` runs 2,000 tasks, 2
rounds and 20 small graphs: a check of the harness, not a result.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asafe.app import stats

from . import harness
from .harness import Measurement, format_seconds

__all__ = ["GRAPHS", "TARGETS", "Graph", "SchedulerCluster", "build_graph", "measure_graph", "main"]

#: The graphs of the suite, in the order they run.
GRAPHS = ("map-one-prefix", "map-many-prefixes", "array-reduction", "fan-in", "many-small")
#: The issue's targets (issue 31): throughput with asafe / without, at least; cpu and memory per task, at most.
TARGETS = {"throughput": 0.97, "throughput_1m_one_prefix": 0.99, "cpu_per_task": 1.05, "memory_per_task": 1.05,
           "push_p99_s": 0.1}
#: Tasks of each small graph of ``many-small``.
SMALL_GRAPH_TASKS = 10

_ROOT = Path(__file__).resolve().parent.parent
#: Least resident-memory growth (bytes) of every sample for a ratio of the growths to mean anything.
RSS_FLOOR = 2**20


def inc(x: int) -> int:
    """A trivial task."""
    return x + 1


def total(*values: int) -> int:
    """The sum of a fan-in group."""
    return sum(values)


# --------------------------------------------------------------------------- the cluster
_WORKER_HOST = """
import asyncio, sys
from distributed import Worker

async def main(address, n, nthreads):
    workers = [Worker(address, nthreads=nthreads, name=f"inproc-{i}") for i in range(n)]
    await asyncio.gather(*workers)
    print("ready", flush=True)
    await asyncio.gather(*(w.finished() for w in workers))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


class SchedulerCluster:
    """A scheduler in a process of its own, workers in other processes, the client here.

    Parameters
    ----------
    n_workers : int
    in_process : bool
        All workers in one process (in-process workers) instead of one process each.
    nthreads : int
        Threads per worker.
    dashboard : bool
        Start the scheduler's dashboard (off by default: the suite measures the scheduler).
    timeout : float
        Seconds to wait for the scheduler and the workers.

    Use as a context manager; :attr:`client` is connected, :attr:`scheduler`
    is the scheduler's :class:`psutil.Process`.
    """

    def __init__(self, n_workers: int = 2, *, in_process: bool = False, nthreads: int = 1, dashboard: bool = False,
                 timeout: float = 120.0) -> None:
        if n_workers < 1:
            raise ValueError(f"n_workers must be >= 1, got {n_workers}")
        self.n_workers, self.in_process, self.nthreads = int(n_workers), bool(in_process), int(nthreads)
        self.dashboard, self.timeout = dashboard, float(timeout)
        self._dir = Path(tempfile.mkdtemp(prefix="asafe-scheduler-suite-"))
        self._processes: list[subprocess.Popen] = []
        self.client: Any = None
        self.scheduler: Any = None
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])

    def _popen(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self._dir / f"{name}.log", "wb")
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=self.env, cwd=str(_ROOT))
        log.close()
        self._processes.append(process)
        return process

    def _log(self, name: str) -> str:
        with contextlib.suppress(OSError):
            return (self._dir / f"{name}.log").read_text(errors="replace")[-3000:]
        return ""

    def __enter__(self) -> "SchedulerCluster":
        import psutil
        from distributed import Client

        try:
            scheduler_file = self._dir / "scheduler.json"
            process = self._popen("scheduler", [
                sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                "--scheduler-file", str(scheduler_file), *(["--dashboard-address", ":0"] if self.dashboard
                                                           else ["--no-dashboard"])])
            deadline = time.monotonic() + self.timeout
            while not scheduler_file.exists():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the scheduler did not start: {self._log('scheduler')}")
                time.sleep(0.05)
            time.sleep(0.1)  # the file is written whole, but give the writer its close
            address = json.loads(scheduler_file.read_text())["address"]
            self.scheduler = psutil.Process(process.pid)
            if self.in_process:
                self._popen("workers", [sys.executable, "-c", _WORKER_HOST, address, str(self.n_workers),
                                        str(self.nthreads)])
            else:
                self._popen("workers", [sys.executable, "-m", "distributed.cli.dask_worker", address,
                                        "--nworkers", str(self.n_workers), "--nthreads", str(self.nthreads),
                                        "--no-dashboard"])
            self.client = Client(address, timeout=self.timeout)
            self.client.wait_for_workers(self.n_workers, timeout=self.timeout)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close()
            self.client = None
        for process in reversed(self._processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self._processes):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        self._processes = []

    def describe(self) -> dict[str, Any]:
        return {"scheduler": "its own process (python -m distributed.cli.dask_scheduler), dashboard "
                             + ("on" if self.dashboard else "off"),
                "workers": self.n_workers, "threads_per_worker": self.nthreads,
                "worker_processes": 1 if self.in_process else self.n_workers,
                "kind": (f"{self.n_workers} in-process workers in one process" if self.in_process
                         else f"{self.n_workers} worker processes (dask worker --nworkers, nannies)"),
                "client": "this process"}

    def scheduler_cpu(self) -> float:
        times = self.scheduler.cpu_times()
        return float(times.user + times.system)

    def scheduler_rss(self) -> int:
        return int(self.scheduler.memory_info().rss)


class _RSSPeak:
    """The peak of a process's resident memory, read every ``interval`` seconds in a thread."""

    def __init__(self, read: Callable[[], int], interval: float = 0.02) -> None:
        self._read, self._interval = read, interval
        self.start = self.peak = read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-peak", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            with contextlib.suppress(Exception):
                self.peak = max(self.peak, self._read())

    def __enter__(self) -> "_RSSPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(Exception):
            self.peak = max(self.peak, self._read())

    @property
    def increase(self) -> int:
        return self.peak - self.start


# --------------------------------------------------------------------------- the graphs
@dataclass
class Graph:
    """One graph of the suite: how to submit it, how many tasks it has, and its check.

    ``run(client)`` submits, waits until every output is in memory and returns
    what :attr:`check` needs (futures kept alive until checked); ``check``
    raises on a wrong result. ``exact`` says whether ``tasks`` is exact (the
    tracker check needs it).
    """

    name: str
    tasks: int
    run: Callable[[Any], Any]
    check: Callable[[Any, Any], None]
    exact: bool = True
    detail: dict[str, Any] = field(default_factory=dict)


def _gather_sum(client: Any, futures: list, batch: int = 100_000) -> tuple[int, int]:
    total_, count = 0, 0
    for start in range(0, len(futures), batch):
        values = client.gather(futures[start:start + batch])
        total_ += sum(values)
        count += len(values)
    return total_, count


def build_graph(name: str, n_tasks: int, *, prefixes: int = 5000, fan_in: int = 5000, graphs: int = 1000) -> Graph:
    """The graph ``name`` with about ``n_tasks`` tasks (see the module docstring).

    Every call to ``run`` makes fresh keys, so no result is served from memory.

    Examples
    --------
    >>> g = build_graph("fan-in", 100, fan_in=9)
    >>> g.tasks, g.detail["groups"], g.detail["width"]
    (100, 10, 9)
    """
    from distributed import wait

    counter = iter(range(1 << 62))

    def token() -> str:
        return f"{next(counter)}x{os.getpid()}x{time.time_ns()}"

    if name == "map-one-prefix" or name == "map-many-prefixes":
        n = int(n_tasks)
        expected = n * (n + 1) // 2
        many = name == "map-many-prefixes"
        p = max(1, min(int(prefixes), n))

        def run(client: Any) -> Any:
            if many:
                t = token()
                futures = client.map(inc, range(n), key=[f"p{i % p:05d}-{t}-{i}" for i in range(n)])
            else:
                futures = client.map(inc, range(n), pure=False)
            wait(futures)
            return futures

        def check(client: Any, futures: Any) -> None:
            got, count = _gather_sum(client, futures)
            if (got, count) != (expected, n):
                raise AssertionError(f"{name}: {count} results summing to {got}, expected {n} summing to {expected}")

        return Graph(name, n, run, check, detail={"prefixes": p if many else 1})

    if name == "array-reduction":
        import dask
        import dask.array as da

        chunks = max(int(n_tasks) // 2, 2)
        size = 10 * chunks
        expected = size * (size - 1) // 2
        (sample,) = dask.optimize(da.arange(size, chunks=10).sum(split_every=8))
        tasks = len(sample.__dask_graph__())

        def run(client: Any) -> Any:
            future = client.compute(da.arange(size, chunks=10).sum(split_every=8))
            wait(future)
            return future

        def check(client: Any, future: Any) -> None:
            if int(future.result()) != expected:
                raise AssertionError(f"array-reduction: {future.result()} != {expected}")

        return Graph(name, tasks, run, check, exact=False,
                     detail={"chunks": chunks, "elements": size, "split_every": 8,
                             "tasks_counted": "len(dask.optimize(x)[0].__dask_graph__())"})

    if name == "fan-in":
        width = max(1, min(int(fan_in), int(n_tasks) - 1))
        groups = max(1, int(n_tasks) // (width + 1))
        expected = [sum(range(g * width + 1, (g + 1) * width + 1)) for g in range(groups)]

        def run(client: Any) -> Any:
            t = token()
            graph: dict[Any, Any] = {}
            outputs = []
            for g in range(groups):
                leaves = [(f"leaf-{t}", g * width + i) for i in range(width)]
                for key in leaves:
                    graph[key] = (inc, key[1])
                out = (f"fanin-{t}", g)
                graph[out] = (total, *leaves)
                outputs.append(out)
            futures = client.get(graph, outputs, sync=False)
            wait(futures)
            return futures

        def check(client: Any, futures: Any) -> None:
            got = client.gather(futures)
            if list(got) != expected:
                raise AssertionError(f"fan-in: group sums {list(got)[:3]}... differ from {expected[:3]}...")

        return Graph(name, groups * (width + 1), run, check, detail={"groups": groups, "width": width})

    if name == "many-small":
        from .cluster import tree_graph

        n_graphs = max(1, int(graphs))

        def run(client: Any) -> Any:
            wrong = []
            for _ in range(n_graphs):
                collection, expected_value = tree_graph(SMALL_GRAPH_TASKS, token())
                value = client.compute(collection).result()
                if value != expected_value:
                    wrong.append((value, expected_value))
            return wrong

        def check(client: Any, wrong: Any) -> None:
            if wrong:
                raise AssertionError(f"many-small: {len(wrong)} of {n_graphs} graphs wrong, e.g. {wrong[0]}")

        return Graph(name, n_graphs * SMALL_GRAPH_TASKS, run, check,
                     detail={"graphs": n_graphs, "tasks_per_graph": SMALL_GRAPH_TASKS,
                             "how": "client.compute(g).result() one after another"})

    raise ValueError(f"unknown graph {name!r}; choose from {', '.join(GRAPHS)}")


# --------------------------------------------------------------------------- one graph, both variants
def _wait_released(client: Any, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) > 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the scheduler still holds tasks {timeout:g} s after the sample")
        time.sleep(0.02)


def _sample(cluster: SchedulerCluster, graph: Graph, variant: str) -> dict[str, Any]:
    """One checked sample of ``graph`` under ``variant``; install and uninstall outside the timed region."""
    import asafe

    client = cluster.client
    handle = asafe.install(client) if variant == "asafe" else None
    try:
        before = handle.finished if handle is not None else 0
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
        with _RSSPeak(cluster.scheduler_rss) as rss:
            cpu0 = cluster.scheduler_cpu()
            start = time.perf_counter()
            kept = graph.run(client)
            wall = time.perf_counter() - start
            graph.check(client, kept)  # rule 1, outside the time; the futures keep the outputs until here
            del kept
            _wait_released(client)
            cpu = cluster.scheduler_cpu() - cpu0
        if handle is not None:
            target = before + graph.tasks if graph.exact else before + 1
            seen = harness.wait_finished(handle, target, timeout=60.0)
            if seen < target:
                raise AssertionError(f"asafe's tracker saw {seen - before} of {graph.tasks} tasks")
    finally:
        if handle is not None:
            handle.uninstall()
    return {"variant": variant, "wall_s": wall, "cpu_s": cpu, "rss_increase": rss.increase, "rss_peak": rss.peak,
            "tasks_per_s": graph.tasks / wall, "cpu_s_per_task": cpu / graph.tasks, "load_1min": load}


def _traced_peak(cluster: SchedulerCluster, graph: Graph, variant: str) -> dict[str, Any]:
    """Peak Python memory the scheduler allocated during one run (tracemalloc on the scheduler; untimed)."""
    import tracemalloc

    import asafe

    client = cluster.client
    handle = asafe.install(client) if variant == "asafe" else None
    try:
        client.run_on_scheduler(tracemalloc.start)
        current, _ = client.run_on_scheduler(tracemalloc.get_traced_memory)
        client.run_on_scheduler(tracemalloc.reset_peak)
        kept = graph.run(client)
        _, peak = client.run_on_scheduler(tracemalloc.get_traced_memory)
        graph.check(client, kept)
        del kept
        _wait_released(client)
    finally:
        with contextlib.suppress(Exception):
            client.run_on_scheduler(tracemalloc.stop)
        if handle is not None:
            handle.uninstall()
    return {"peak_bytes": int(peak - current), "bytes_per_task": (peak - current) / graph.tasks}


def _verdict(ratio_ci: tuple[float, float], target: float, higher_is_better: bool, exact: bool = True) -> str:
    """``met`` only when the whole 95% interval clears the target; too few rounds for one: ``not shown``.

    >>> _verdict((0.98, 1.10), 0.97, True), _verdict((0.98, 1.10), 0.97, True, exact=False)
    ('met', 'not shown')
    """
    if not exact:  # 4 rounds give a 87.5% interval, 5 a 93.8% one: no verdict at 95% from them
        return "not shown"
    return stats.verdict(ratio_ci, target, ">=" if higher_is_better else "<=")


def measure_graph(cluster: SchedulerCluster, graph: Graph, *, min_rounds: int = 6, max_rounds: int = 15,
                  rel_ci: float = 0.05, max_seconds: float = 1800.0, tracemalloc_rounds: int = 3,
                  log: Callable[[str], None] = print) -> dict[str, Any]:
    """Both variants on ``graph``: a warm-up each, interleaved rounds until the stop rule, then the memory pass.

    Returns
    -------
    dict
        ``samples`` per variant, ``measurements`` (wall time, as
        :class:`~benchmarks.harness.Measurement`), ``summary`` (tasks/s,
        cpu s/task, rss increase per variant), ``ratios`` (paired: throughput
        asafe/dask, cpu and rss per task asafe/dask, each with its interval
        and verdict), ``tracemalloc`` (peak bytes per task per variant),
        ``warmup``, ``stop_reason``.
    """
    variants = ("dask", "asafe")
    warmup = {v: _sample(cluster, graph, v) for v in variants}  # rule 2: first graphs apart
    samples: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    started = time.perf_counter()
    decision = None
    for order in stats.balanced_orders(list(variants), max_rounds):
        for variant in order:
            s = _sample(cluster, graph, variant)
            s["position"] = order.index(variant)
            samples[variant].append(s)
            log(f"  {graph.name} [{graph.tasks} tasks] {variant:>5}: {s['tasks_per_s']:9.0f} tasks/s, "
                f"scheduler {format_seconds(s['cpu_s_per_task'])} cpu/task, rss +{s['rss_increase'] / 2**20:.1f} MiB")
        walls = {v: [s["wall_s"] for s in samples[v]] for v in variants}
        decision = stats.stop_decision(walls, rel_ci=rel_ci, min_samples=min_rounds, max_samples=max_rounds,
                                       elapsed=time.perf_counter() - started, max_seconds=max_seconds)
        if decision.stop:
            break
    walls = {v: [s["wall_s"] for s in samples[v]] for v in variants}
    measurements = {v: Measurement.from_samples(v, walls[v], reached_target=decision.reached,
                                                stop_reason=decision.reason, rel_ci=rel_ci,
                                                warmup_times=[warmup[v]["wall_s"]], checks=len(walls[v]) + 1)
                    for v in variants}
    summary = {}
    for v in variants:
        summary[v] = {key: stats.describe([s[key] for s in samples[v]], rel_ci=rel_ci)
                      for key in ("tasks_per_s", "cpu_s_per_task", "rss_increase")}
    ratios = {}
    for key, name, better_high, target in (
            ("wall_s", "throughput", True, TARGETS["throughput"]),
            ("cpu_s", "cpu_per_task", False, TARGETS["cpu_per_task"]),
            ("rss_increase", "rss_per_task", False, TARGETS["memory_per_task"])):
        base = [s[key] for s in samples["dask"]]
        new = [s[key] for s in samples["asafe"]]
        if min(base + new) <= (RSS_FLOOR if key == "rss_increase" else 0):
            ratios[name] = {"asafe_over_dask": None, "ci95": None, "target": target, "verdict": "not measurable",
                            "why": "a sample did not grow the scheduler's resident memory by 1 MiB (memory freed by "
                                   "earlier graphs was reused): see tracemalloc" if key == "rss_increase"
                            else "a sample measured 0"}
            continue
        # throughput: dask time / asafe time (the asafe variant's share of plain Dask's rate);
        # cpu and memory: asafe / dask (paired_ratio(new, base))
        ratio, ci, exact = stats.paired_ratio(base, new) if better_high else stats.paired_ratio(new, base)
        if name == "throughput" and graph.name == "map-one-prefix" and graph.tasks >= 1_000_000:
            target = TARGETS["throughput_1m_one_prefix"]
        ratios[name] = {"asafe_over_dask": ratio, "ci95": list(ci), "exact": exact, "target": target,
                        "verdict": _verdict(ci, target, better_high, exact)}
    out: dict[str, Any] = {
        "graph": graph.name, "tasks": graph.tasks, "tasks_exact": graph.exact, "detail": graph.detail,
        "samples": samples, "warmup": warmup, "measurements": measurements, "summary": summary,
        "ratios": ratios, "stop_reason": decision.reason, "reached_target": decision.reached,
    }
    if tracemalloc_rounds:
        traced: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        for order in stats.balanced_orders(list(variants), tracemalloc_rounds):
            for variant in order:
                traced[variant].append(_traced_peak(cluster, graph, variant))
        peaks = {v: [t["peak_bytes"] for t in traced[v]] for v in variants}
        entry: dict[str, Any] = {"runs": traced, "target": TARGETS["memory_per_task"],
                                 "bytes_per_task": {v: stats.median(peaks[v]) / graph.tasks for v in variants},
                                 "note": "untimed runs with tracemalloc on the scheduler (it slows the scheduler, so "
                                         "these runs are apart from the timed samples); peak bytes allocated above "
                                         "the level before the graph"}
        if min(peaks["dask"] + peaks["asafe"]) > 0:
            ratio, ci, exact = stats.paired_ratio(peaks["asafe"], peaks["dask"])
            entry.update(asafe_over_dask=ratio, ci95=list(ci), exact=exact,
                         verdict=_verdict(ci, TARGETS["memory_per_task"], False, exact))
        out["tracemalloc"] = entry
    return out


def _idle_cpu_rate(cluster: SchedulerCluster, seconds: float) -> float:
    cpu0, t0 = cluster.scheduler_cpu(), time.perf_counter()
    time.sleep(seconds)
    return (cluster.scheduler_cpu() - cpu0) / (time.perf_counter() - t0)


# --------------------------------------------------------------------------- command line
def _task_counts(text: str) -> list[int]:
    try:
        counts = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--tasks takes comma-separated whole numbers (100000,1000000), got {text!r}")
    if not counts or any(n < 10 for n in counts):
        raise argparse.ArgumentTypeError(f"--tasks needs numbers >= 10, got {text!r}")
    return counts


def _format_ratio(r: dict[str, Any]) -> str:
    if r.get("asafe_over_dask") is None:
        return r["verdict"]
    return f"{r['asafe_over_dask']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] ({r['verdict']} vs {r['target']})"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks scheduler``: measure, print, write ``OUT/scheduler/scheduler-<cluster>.json``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks scheduler", description=__doc__.splitlines()[0])
    harness.add_common_arguments(parser, max_seconds=1800.0)
    parser.add_argument("--graph", action="append", choices=GRAPHS, help="graphs to run (repeatable; default all)")
    parser.add_argument("--tasks", type=_task_counts, default=None, metavar="N[,N...]",
                        help="tasks of the map graphs, one run each (default 100000,1000000; --quick 2000); the "
                             "array, fan-in and many-small graphs use the smallest")
    parser.add_argument("--workers", type=harness.positive_int, default=2, help="workers (default %(default)s)")
    parser.add_argument("--in-process", action="store_true",
                        help="all workers in one process of their own (32-64 workers) instead of a process each")
    parser.add_argument("--prefixes", type=harness.positive_int, default=5000, help="key prefixes of map-many-prefixes")
    parser.add_argument("--fan-in", type=harness.positive_int, default=5000, help="dependencies of each fan-in task")
    parser.add_argument("--graphs", type=harness.positive_int, default=None,
                        help="small graphs of many-small (default 1000; --quick 20)")
    parser.add_argument("--min-rounds", type=harness.positive_int, default=None,
                        help="fewest rounds (default 6, the fewest with a 95%% interval; --quick 2)")
    parser.add_argument("--max-rounds", type=harness.positive_int, default=None,
                        help="most rounds (default 15; --quick 2)")
    parser.add_argument("--pushes", type=harness.positive_int, default=None,
                        help="forced state transitions of the push-latency section (default 200; --quick 20)")
    parser.add_argument("--tracemalloc-rounds", type=int, default=None, metavar="K",
                        help="untimed rounds with tracemalloc on the scheduler, per graph (default 3; --quick 1; "
                             "0 skips them)")
    parser.add_argument("--push-only", action="store_true",
                        help="measure only the state push (and its baseline, a plain Dask stream message), no graphs")
    parser.add_argument("--dashboard", action="store_true", help="start the scheduler's dashboard (default off)")
    args = parser.parse_args(argv)
    if args.push_only and args.graph:
        parser.error("--push-only runs no graphs: leave out --graph")
    counts = args.tasks or ([2_000] if args.quick else [100_000, 1_000_000])
    graphs = [] if args.push_only else (args.graph or list(GRAPHS))
    min_rounds = args.min_rounds or (2 if args.quick else 6)
    max_rounds = max(args.max_rounds or (2 if args.quick else 15), min_rounds)
    n_small = args.graphs or (20 if args.quick else 1000)
    pushes = args.pushes or (20 if args.quick else 200)
    traced_rounds = args.tracemalloc_rounds if args.tracemalloc_rounds is not None else (1 if args.quick else 3)
    if traced_rounds < 0:
        parser.error(f"--tracemalloc-rounds must be >= 0, got {traced_rounds}")
    label = f"{args.workers}w-{'inprocess' if args.in_process else 'processes'}"

    results = harness.Results("scheduler", args.out)
    print(f"scheduler suite: {label}, graphs {', '.join(graphs)}, tasks {counts}", flush=True)
    started = time.perf_counter()
    with SchedulerCluster(args.workers, in_process=args.in_process, dashboard=args.dashboard) as cluster:
        results.set_environment(cluster=cluster.describe(), cluster_start_s=time.perf_counter() - started)
        idle = _idle_cpu_rate(cluster, 1.0 if args.quick else 5.0)
        results.add("scheduler_idle_cpu_per_s", idle)
        print(f"cluster up in {time.perf_counter() - started:.1f} s; the idle scheduler uses {idle:.4f} cpu s/s")
        smallest = min(counts)
        for name in graphs:
            sizes = counts if name.startswith("map-") else [smallest]
            for n in sizes:
                graph = build_graph(name, n, prefixes=args.prefixes, fan_in=args.fan_in, graphs=n_small)
                r = measure_graph(cluster, graph, min_rounds=min_rounds, max_rounds=max_rounds, rel_ci=args.rel_ci,
                                  max_seconds=args.max_seconds, tracemalloc_rounds=traced_rounds)
                results.add(f"{name}-{graph.tasks}", r)
                s = r["summary"]
                print(f"{name} [{graph.tasks} tasks]: dask {s['dask']['tasks_per_s']['median_s']:.0f} tasks/s, "
                      f"asafe {s['asafe']['tasks_per_s']['median_s']:.0f} tasks/s; throughput asafe/dask "
                      f"{_format_ratio(r['ratios']['throughput'])}; scheduler cpu per task asafe/dask "
                      f"{_format_ratio(r['ratios']['cpu_per_task'])}; rss increase asafe/dask "
                      f"{_format_ratio(r['ratios']['rss_per_task'])}"
                      + (f"; tracemalloc peak asafe/dask {_format_ratio(r['tracemalloc'])}"
                         if "asafe_over_dask" in r.get("tracemalloc", {}) else ""), flush=True)
        from .cluster import propagation_delay

        push = propagation_delay(cluster.client, pushes)
        push["verdict"] = "met" if push["p99_s"] < TARGETS["push_p99_s"] else "not met"
        results.add("state_push", push)
        print(f"state push to {args.workers} workers: p50 {format_seconds(push['median_s'])}, p95 "
              f"{format_seconds(push['p95_s'])}, p99 {format_seconds(push['p99_s'])} ({push['verdict']} vs < 100 ms), "
              f"max {format_seconds(push['max_s'])}, lost {push['lost']}, superseded by a newer version "
              f"{push['superseded']}; a plain Dask stream message on the same "
              f"streams, interleaved: p50 {format_seconds(push['baseline_median_s'])}, p95 "
              f"{format_seconds(push['baseline_p95_s'])}, p99 {format_seconds(push['baseline_p99_s'])}, max "
              f"{format_seconds(push['baseline_max_s'])}, lost {push['baseline_lost']}", flush=True)
    data = results.as_dict()
    data["environment"]["load_average_at_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    data["targets"] = TARGETS
    results.dir.mkdir(parents=True, exist_ok=True)
    path = result_path(results.dir, label)
    path.write_text(json.dumps(harness.to_jsonable(data), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    print(f"results: {path}")
    return 0


def result_path(directory: Path, label: str) -> Path:
    """Where a run's results go: ``scheduler-<label>.json``, never over an earlier run's file.

    A file of that name already there (an earlier run with the same ``--out``:
    another graph, ``--push-only``) is kept, and this run's gets the next number.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> result_path(folder, "2w-processes").name
    'scheduler-2w-processes.json'
    >>> _ = (folder / "scheduler-2w-processes.json").write_text("{}")
    >>> result_path(folder, "2w-processes").name
    'scheduler-2w-processes-2.json'
    """
    path, number = directory / f"scheduler-{label}.json", 2
    while path.exists():
        path, number = directory / f"scheduler-{label}-{number}.json", number + 1
    return path


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
