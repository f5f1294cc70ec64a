"""The per-task rule's estimate before 74db8be and now, on the same panels, interleaved.

Run from a checkout with ``pip install -e .`` done::

    git show 74db8be~1:asafe/app/pertask.py > /tmp/pertask_before.py
    python -m benchmarks.analysis.pertask_cost /tmp/pertask_before.py

(It was ``docs/results/pertask-cost/estimate_cost.py``; its output is
``docs/results/pertask-cost/estimate_cost.log``.)

Each round times both versions (the order alternating), each the best of 50
calls; the median over 7 rounds is printed. The panels are the first of the
demo's ``local-denseish`` phase and of ``loaded2``'s first phase.
"""
from __future__ import annotations

import importlib.util
import statistics
import sys
import time

from asafe.app import pertask as now
from asafe.app import workload as wl
from benchmarks.phase_sets import phases_for

ROUNDS, CALLS = 7, 50


def load_before(path):
    spec = importlib.util.spec_from_file_location("asafe.app._pertask_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def best_seconds(estimate, panel, tile, threshold):
    estimate(panel, tile, threshold)
    best = float("inf")
    for _ in range(CALLS):
        start = time.perf_counter()
        estimate(panel, tile, threshold)
        best = min(best, time.perf_counter() - start)
    return best


def compare(before_path):
    """Time ``estimate`` of the module at ``before_path`` and of today's, interleaved; print the medians."""
    versions = {"before": load_before(before_path), "now": now}
    for phase in (wl.PHASES[1], phases_for("loaded2")[0]):
        source = phase.source()
        panel = source.slab(*wl.panel_bounds(phase.grid, phase.panels)[0]).copy()
        seconds = {name: [] for name in versions}
        for rnd in range(ROUNDS):
            names = list(versions) if rnd % 2 else list(reversed(versions))
            for name in names:
                seconds[name].append(best_seconds(versions[name].estimate, panel, phase.tile, source.threshold))
        ms = {name: statistics.median(s) * 1e3 for name, s in seconds.items()}
        print(f"{phase.name} panel {panel.shape}: estimate before {ms['before']:.3f} ms, now {ms['now']:.3f} ms "
              f"(median of {ROUNDS} rounds, best of {CALLS} calls each)")


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.analysis.pertask_cost BEFORE.py``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchmarks.analysis.pertask_cost BEFORE.py "
              "(git show 74db8be~1:asafe/app/pertask.py > BEFORE.py)", file=sys.stderr)
        return 2
    compare(args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
