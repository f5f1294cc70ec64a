"""Running the phases of the workload on a Dask cluster: :func:`run_phase` and :func:`run_workload`.

A phase (:class:`~asafe.app.workload.Phase`) runs as its power-iteration steps:
each step submits one producer per panel, pinned to its worker by the phase's
placement, the multiplies (on another worker for a shipped phase, in the same
task for a local one) and the gather, and waits for the gather. Every
producer declares its panel's reads (:func:`asafe.reuse`), and is told what to
do about compression: a static setting, ``None`` (ask the installed runtime),
or a per-task rule made for that panel. A phase with a competing job
(:attr:`~asafe.app.workload.Phase.load`) runs beside it from the first task to
the result. The result is checked against scipy and the run's times, its
wall-clock bounds (to place the runtime's transitions in it) and what the
competing job did are returned as a :class:`PhaseRun`.

Which variant gives which setting, and which runtime is installed around the
run, is :mod:`asafe.app.variants`.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.reuse import reuse
from .load import external_load
from .workload import (Phase, PhaseMatrix, check_result, initial_vectors, multiply_panel, normalize, panel_bounds,
                       placement_plan, produce_and_multiply, produce_panel)

__all__ = ["PhaseRun", "PER_TASK_RULE", "run_phase", "run_workload"]

#: ``compress`` of the per-task cost rule (:class:`~asafe.app.pertask.PerTask`, one per panel).
PER_TASK_RULE = "per-task"


@dataclass
class PhaseRun:
    """What one run of one phase measured."""

    phase: str
    seconds: float  #: end-to-end: submission of the first task to the result in the client
    step_seconds: list[float]
    start: float  #: ``time.time()`` at the start (the scheduler's clock on one host)
    stop: float
    x: np.ndarray = field(repr=False)
    correct: bool | None = None
    error: str | None = None
    load: dict[str, Any] | None = None  #: what the competing job did (:attr:`asafe.app.load.Load.report`)

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "seconds": self.seconds, "step_seconds": list(self.step_seconds),
                "start": self.start, "stop": self.stop, "correct": self.correct, "error": self.error,
                "load": self.load}


def _map(client: Any, func: Callable, args: list[tuple], keys: list[str], workers: list[str],
         priority: int = 0) -> list:
    """``client.map`` grouped by target worker, each task pinned; futures in the order of ``args``."""
    futures: list[Any] = [None] * len(args)
    groups: dict[str, list[int]] = {}
    for i, w in enumerate(workers):
        groups.setdefault(w, []).append(i)
    for w, idx in groups.items():
        columns = list(zip(*[args[i] for i in idx]))
        mapped = client.map(func, *columns, key=[keys[i] for i in idx], workers=[w],
                            allow_other_workers=False, pure=False, priority=priority)
        for i, f in zip(idx, mapped):
            futures[i] = f
    return futures


def _per_panel(compress: Any, phase: Phase, plan: list[tuple[str, str]]) -> list[Any]:
    """The ``compress`` argument of every panel's producer: the setting itself, or a rule per panel.

    A rule is made per panel by ``compress(reads=..., remote=...)`` (``"per-task"``:
    :class:`~asafe.app.pertask.PerTask`), told the panel's declared reads and whether
    its consumer is pinned to another worker.
    """
    if compress is None or isinstance(compress, bool):
        return [compress] * len(plan)
    if compress == PER_TASK_RULE:
        from .pertask import PerTask

        compress = PerTask
    if isinstance(compress, str) or not callable(compress):
        raise ValueError(f"compress must be True, False, None, {PER_TASK_RULE!r} or a rule factory "
                         f"(callable(reads=, remote=), as asafe.app.pertask.PerTask), got {compress!r}")
    return [compress(reads=phase.vectors, remote=producer != consumer) for producer, consumer in plan]


def run_phase(
    client: Any,
    phase: Phase,
    compress: Any,
    workers: Sequence[str] | None = None,
    on_step: Callable[[int, int], None] | None = None,
    expected: np.ndarray | None = None,
) -> PhaseRun:
    """Run one phase on the cluster behind ``client`` and check its result.

    Parameters
    ----------
    compress : bool, None, "per-task" or callable
        ``None``: the producers ask ``asafe.is_on("compression")`` (install a
        runtime first); ``True``/``False``: a static setting; ``"per-task"``:
        each panel is decided by :class:`~asafe.app.pertask.PerTask` from its
        reuse, whether its consumer is pinned to another worker, a sample of its
        tiles and calibrated costs; a callable: a rule factory called as
        ``compress(reads=..., remote=...)`` for every panel (``PerTask`` with
        other options, such as ``functools.partial(PerTask, prior=True)``, the
        mode as a prior: install a runtime first where the rule reads the mode).
    workers : list of str, optional
        Worker addresses (default: all, sorted).
    on_step : callable(step, steps), optional
        Called after every step, outside the timed region (progress display).
    expected : numpy.ndarray, optional
        The reference result (default: computed with scipy).

    Returns
    -------
    PhaseRun
        ``correct`` is set; a wrong result is reported in ``error``, never raised.
    """
    if workers is None:
        workers = sorted(client.nthreads())
    source = phase.source()
    bounds = panel_bounds(phase.grid, phase.panels)
    plan = placement_plan(phase.placement, len(bounds), workers)
    producers = [p for p, _ in plan]
    consumers = [c for _, c in plan]
    per_panel = _per_panel(compress, phase, plan)
    with external_load(phase.load) as job:  # the competing job runs from before the first task to the result
        result, elapsed, step_seconds, start_wall, stop_wall = _run_steps(
            client, phase, source, bounds, producers, consumers, per_panel, on_step)
    run = PhaseRun(phase.name, elapsed, step_seconds, start_wall, stop_wall, result, load=job.report)
    try:
        check_result(phase, result, expected)
        run.correct = True
    except AssertionError as exc:
        run.correct, run.error = False, str(exc)
    return run


def _run_steps(client: Any, phase: Phase, source: PhaseMatrix, bounds: list[tuple[int, int]],
               producers: list[str], consumers: list[str], per_panel: list[Any],
               on_step: Callable[[int, int], None] | None) -> tuple[np.ndarray, float, list[float], float, float]:
    """The timed steps of :func:`run_phase`: ``(x, seconds, step_seconds, start, stop)``."""
    from distributed import wait

    token = uuid.uuid4().hex
    step_seconds: list[float] = []
    start_wall = time.time()
    elapsed = 0.0
    t0 = time.perf_counter()
    x = client.submit(initial_vectors, phase.n, phase.vectors, key=f"asafe-x0-{token}", pure=False)
    for step in range(phase.steps):
        # every producer declares its panel's reads (asafe.reuse): what the
        # per-task rule is told as `reads`, the global mode reads as its signal
        if phase.placement == "local":
            # made and used once where it is made: one task per panel
            panels = []
            with reuse(phase.vectors):
                parts = _map(client, produce_and_multiply,
                             [(source, lo, hi, x, c) for (lo, hi), c in zip(bounds, per_panel)],
                             [f"asafe-local-{token}-{step}-{i}" for i in range(len(bounds))], producers)
        else:
            with reuse(phase.vectors):
                panels = _map(client, produce_panel,
                              [(source, lo, hi, c) for (lo, hi), c in zip(bounds, per_panel)],
                              [f"asafe-produce-{token}-{step}-{i}" for i in range(len(bounds))], producers)
            # multiplies first on a worker (higher priority): a panel is consumed as
            # soon as it is there, so produced and shipped panels do not pile up
            parts = _map(client, multiply_panel, [(p, x) for p in panels],
                         [f"asafe-multiply-{token}-{step}-{i}" for i in range(len(bounds))], consumers,
                         priority=1)
        x = client.submit(normalize, *parts, key=f"asafe-normalize-{token}-{step}", pure=False, priority=2)
        wait(x)
        del panels, parts
        now = time.perf_counter()
        step_seconds.append(now - t0)
        elapsed += now - t0
        if on_step is not None:
            on_step(step + 1, phase.steps)
        t0 = time.perf_counter()
    result = x.result()
    elapsed += time.perf_counter() - t0
    stop_wall = time.time()
    return result, elapsed, step_seconds, start_wall, stop_wall


def run_workload(
    client: Any,
    phases: Sequence[Phase],
    compress: Any,
    workers: Sequence[str] | None = None,
    on_step: Callable[[int, int, int], None] | None = None,
    expected: Sequence[np.ndarray] | None = None,
) -> list[PhaseRun]:
    """Run every phase in order (one run of one variant); see :func:`run_phase`.

    ``on_step(phase_index, step, steps)`` is called after every step.
    """
    runs = []
    for i, phase in enumerate(phases):
        callback = None if on_step is None else (lambda step, steps, i=i: on_step(i, step, steps))
        runs.append(run_phase(client, phase, compress, workers, callback,
                              None if expected is None else expected[i]))
    return runs
