"""``asafe demo``: a small adaptive run on Dask's local threaded scheduler.

Three phases of real work alternate the balance of the run: a communication
phase (tasks that serialize and copy tiles, typed ``communication``), a compute
phase (tasks that multiply tiles, typed ``compute``), and a communication phase
again. The runtime's ``compression`` optimization follows the
compute/communication ratio through its alpha/beta hysteresis; tasks read it
with :func:`asafe.is_on`. The mode vector after each phase and every transition
are printed.
"""
from __future__ import annotations

import pickle
from collections.abc import Callable

import dask
import numpy as np

from .domains import Hysteresis
from .local import adaptive
from .runtime import AdaptiveRuntime, Optimization
from .types import COMMUNICATION, COMPUTE, typed

__all__ = ["run_local_demo"]


@typed(COMMUNICATION)
def _ship(tile: np.ndarray) -> int:
    """Serialize and copy a tile, as a transfer would; report whether compression is on."""
    from . import is_on

    payload = pickle.dumps(tile, protocol=5)
    pickle.loads(payload)
    return int(is_on("compression"))


@typed(COMPUTE)
def _multiply(tile: np.ndarray) -> int:
    """Multiply a tile by itself a few times; report whether compression is on."""
    from . import is_on

    product = tile
    for _ in range(3):
        product = product @ tile
    return int(is_on("compression"))


def run_local_demo(
    tasks: int = 400,
    scheduler: str = "threads",
    alpha: float = 0.5,
    beta: float = 2.0,
    echo: Callable[[str], None] = print,
) -> AdaptiveRuntime:
    """Run the three-phase demo and return its runtime.

    Examples
    --------
    >>> rt = run_local_demo(tasks=20, scheduler="sync", echo=lambda line: None)
    >>> sorted(rt.states)
    ['compression']
    """
    runtime = AdaptiveRuntime(
        [Optimization("compression", Hysteresis(alpha=alpha, beta=beta))], dwell=0.05, dwell_tasks=8
    )
    rng = np.random.default_rng(0)
    tile = rng.random((96, 96))
    phases = [("communication", _ship), ("compute", _multiply), ("communication", _ship)]
    echo(f"asafe demo: {len(phases)} phases x {tasks} tasks on the {scheduler!r} scheduler, "
         f"Hysteresis(alpha={alpha}, beta={beta})")
    with adaptive(runtime, scheduler=scheduler):
        for name, func in phases:
            (seen,) = dask.compute([dask.delayed(func, pure=False)(tile) for _ in range(tasks)])
            echo(f"  phase {name:<13} tasks saw compression on: {sum(seen):>5}/{tasks}  "
                 f"mode: {runtime.mode!r}")
    echo("transitions:")
    start = runtime.history[0].time if runtime.history else 0.0
    for t in runtime.history:
        echo(f"  t={t.time - start:7.3f}s  {t.optimization}: {'on' if t.old else 'off'} -> "
             f"{'on' if t.new else 'off'}  (ratio={t.mode.ratio:.3g})")
    if not runtime.history:
        echo("  none")
    return runtime
