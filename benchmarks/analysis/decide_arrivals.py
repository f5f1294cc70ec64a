"""The default of ``asafe.controller.arrivals-skip-dwell``, from the calibration2 runs (the ``arrivals2`` plan).

The rule, fixed before those runs: the default is on when, on the calibration2
phases, (1) the rule fired -- in some ``adaptive-arrivals`` run two toggles
came closer than the dwell (only an arrival's toggle can) -- and (2) the median
over the rounds of both links together of ``adaptive-dwell_i /
adaptive-arrivals_i`` (paired, round by round: above 1 when the rule is faster)
is at least 1.0. Otherwise it stays off.

Usage: ``python -m benchmarks.analysis.decide_arrivals DIR`` with ``DIR`` holding
``calibration2-loopback/`` and ``calibration2-1gbit/`` (each ``phased/results.json``, or ``results.json``):
the ``--out`` of ``python -m benchmarks evals arrivals2``, which runs it as its
last step, or the committed ``docs/results/arrivals-eval2``. It was
``docs/results/arrivals-eval2/decide.py``, run by ``eval-arrivals2.sh``.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

LINKS = ("loopback", "1gbit")


def load(folder: Path) -> dict:
    """The ``phases`` record of one run: ``phased/results.json`` as the suite writes it, or ``results.json``
    where it was copied out of ``phased/`` (the committed runs)."""
    path = folder / "phased" / "results.json"
    return json.loads((path if path.is_file() else folder / "results.json").read_text())["records"]["phases"]


def fired(record: dict) -> list[float]:
    """Gaps (s) between consecutive toggles of one run of adaptive-arrivals that are shorter than the dwell."""
    dwell = record["thresholds"]["dwell"]
    by_run: dict[int, list[float]] = {}
    for t in record["transitions_by_variant"].get("adaptive-arrivals", []):
        by_run.setdefault(t["repetition"], []).append(t["time"])
    gaps = []
    for times in by_run.values():
        times.sort()
        gaps += [b - a for a, b in zip(times, times[1:]) if b - a < dwell]
    return gaps


def decide(root: str | Path) -> bool:
    """Apply the rule to the runs under ``root``; print the evidence and the decision; return it."""
    ratios, gaps = [], []
    for link in LINKS:
        record = load(Path(root) / f"calibration2-{link}")
        totals = record["totals"]  # per variant: its per-round seconds, in round order, under "samples"
        on, off = totals["adaptive-arrivals"]["samples"], totals["adaptive-dwell"]["samples"]
        link_ratios = [b / a for a, b in zip(on, off)]
        print(f"{link}: adaptive-dwell / adaptive-arrivals per round "
              + " ".join(f"{r:.3f}" for r in link_ratios) + f"; median {statistics.median(link_ratios):.3f}")
        ratios += link_ratios
        gaps += fired(record)
    pooled = statistics.median(ratios)
    print(f"toggles closer than the dwell (the rule fired): {len(gaps)} "
          + " ".join(f"{g * 1000:.0f} ms" for g in sorted(gaps)))
    print(f"pooled median over {len(ratios)} rounds: {pooled:.3f}")
    on = bool(gaps) and pooled >= 1.0
    print(f"decision: arrivals-skip-dwell {'on' if on else 'off'} by default")
    return on


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.analysis.decide_arrivals DIR``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchmarks.analysis.decide_arrivals DIR", file=sys.stderr)
        return 2
    decide(args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
