"""The variants measured side by side: :func:`compare` and what follows from its runs (:class:`Comparison`).

:func:`compare` runs one warm-up of every variant (timed apart, never a
sample), then rounds of one run per variant in orders balanced for what one run
leaves to the next (:func:`~asafe.app.stats.balanced_orders`), every phase of
every run checked against scipy. :class:`Comparison` holds the runs and derives
the rest: per-phase and total times per round, the ``oracle`` (per phase the
static setting with the lower median, chosen after the fact), the share of the
panels a rule compressed, the competing jobs' reports and the transitions per
phase. ``asafe demo`` (:mod:`asafe.app.demo`) and the ``phased`` benchmark suite
report them.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .stats import balanced_orders, median
from .variants import (DEFAULT_THRESHOLDS, KNOWN_VARIANTS, ORACLE, VARIANTS, Thresholds, Variant, VariantRun,
                       check_variants, run_variant)
from .workload import Phase, reference

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    """Every measured run of every variant, and what follows from them."""

    phases: list[Phase]
    thresholds: Thresholds
    runs: list[VariantRun]
    warmup: list[VariantRun]
    warmup_seconds: dict[str, float]
    variants: tuple[str, ...] = VARIANTS  #: the variants that ran, in their first round's order
    #: what each variant that ran is (default: the package's :data:`~asafe.app.variants.KNOWN_VARIANTS`)
    specs: dict[str, Variant] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.specs = {v: self.specs.get(v) or KNOWN_VARIANTS[v] for v in self.variants}

    def samples(self, variant: str) -> list[list[float]]:
        """Per-phase seconds of every measured run of ``variant`` (oracle included), by repetition."""
        if variant == ORACLE:
            choice = self.oracle_choice()
            by_rep = {v: self.samples(v) for v in ("static-on", "static-off")}
            reps = min(len(by_rep["static-on"]), len(by_rep["static-off"]))
            return [[by_rep[choice[p]][r][p] for p in range(len(self.phases))] for r in range(reps)]
        runs = sorted((r for r in self.runs if r.variant == variant), key=lambda r: r.repetition)
        return [[p.seconds for p in r.phases] for r in runs]

    def phase_medians(self, variant: str) -> list[float]:
        samples = self.samples(variant)
        return [median([s[p] for s in samples]) for p in range(len(self.phases))]

    def oracle_choice(self) -> list[str]:
        """The static setting with the lower median per phase (chosen after the fact)."""
        on, off = self.phase_medians("static-on"), self.phase_medians("static-off")
        return ["static-on" if a <= b else "static-off" for a, b in zip(on, off)]

    def totals(self, variant: str) -> list[float]:
        return [sum(s) for s in self.samples(variant)]

    def correct(self, variant: str) -> bool:
        if variant == ORACLE:
            return self.correct("static-on") and self.correct("static-off")
        runs = [r for r in self.runs + self.warmup if r.variant == variant]
        return bool(runs) and all(r.correct for r in runs)

    def errors(self) -> list[str]:
        return [f"{r.variant} (repetition {r.repetition}): {p.error}"
                for r in self.runs + self.warmup for p in r.phases if p.correct is False]

    def compressed_share(self, variant: str) -> list[float | None]:
        """Per phase, the fraction of the panels that ``variant``'s per-task rule compressed (measured runs).

        ``None`` for a phase without logged decisions (a variant that is not a rule).
        """
        made = [0] * len(self.phases)
        compressed = [0] * len(self.phases)
        for run in self.runs:
            if run.variant != variant:
                continue
            for d in run.decisions:
                i = run.phase_at(d["time"])
                if i is not None:
                    made[i] += 1
                    compressed[i] += bool(d["compress"])
        return [c / m if m else None for c, m in zip(compressed, made)]

    def load_reports(self) -> dict[str, list[dict[str, Any]]]:
        """Per phase run beside a competing job, what the job did in each measured run (:mod:`asafe.app.load`)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for run in self.runs:
            for p in run.phases:
                if p.load is not None:
                    out.setdefault(p.phase, []).append({"variant": run.variant, "repetition": run.repetition,
                                                        **p.load})
        return out

    def transitions_per_phase(self) -> list[int]:
        """Most transitions any adaptive run made within each phase."""
        worst = [0] * len(self.phases)
        names = [p.name for p in self.phases]
        for run in self.runs:
            if run.variant != "adaptive":
                continue
            counts = [0] * len(self.phases)
            for t in run.transitions:
                if t.get("phase") in names:
                    counts[names.index(t["phase"])] += 1
            worst = [max(a, b) for a, b in zip(worst, counts)]
        return worst


def compare(
    client: Any,
    phases: Sequence[Phase],
    repetitions: int = 3,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    workers: Sequence[str] | None = None,
    expected: Sequence[np.ndarray] | None = None,
    warmup: bool = True,
    on_run: Callable[[str, int, bool], None] | None = None,
    on_step: Callable[[int, int, int, Any], None] | None = None,
    on_done: Callable[[VariantRun], None] | None = None,
    variants: Sequence[str] | str = VARIANTS,
    known: Mapping[str, Variant] = KNOWN_VARIANTS,
) -> Comparison:
    """Measure ``variants`` (names of ``known``; default :data:`~asafe.app.variants.VARIANTS`) interleaved on the same inputs.

    One warm-up run of each variant comes first (numba compilation, matrix
    generation on every worker, first touch: timed and reported apart, never a
    sample). Then ``repetitions`` rounds of one run per variant, in the orders
    of :func:`~asafe.app.stats.balanced_orders` (every variant at every
    position, and right after every other variant, equally often: what one run
    leaves on the workers does not always land on the same next one). Every phase of every run is
    checked against scipy. The ``oracle`` is derived from the static runs: per
    phase the static setting with the lower median, its per-round times summed.

    ``on_run(variant, repetition, warmup)`` is called before each run,
    ``on_step`` between steps (see :func:`run_variant`), ``on_done(run)`` after each.
    """
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions!r}")
    variants = check_variants(variants, known)
    specs = {v: known[v] for v in variants}
    phases = list(phases)
    if expected is None:
        expected = [reference(p) for p in phases]
    if workers is None:
        workers = sorted(client.nthreads())
    warm: list[VariantRun] = []
    warm_seconds: dict[str, float] = {}
    if warmup:
        for variant in variants:
            if on_run is not None:
                on_run(variant, -1, True)
            t0 = time.perf_counter()
            run = run_variant(client, phases, specs[variant], thresholds, expected, workers, -1, on_step)
            warm_seconds[variant] = time.perf_counter() - t0
            run.warmup = True
            warm.append(run)
            if on_done is not None:
                on_done(run)
    runs: list[VariantRun] = []
    for rep, order in enumerate(balanced_orders(variants, repetitions)):
        for variant in order:
            if on_run is not None:
                on_run(variant, rep, False)
            run = run_variant(client, phases, specs[variant], thresholds, expected, workers, rep, on_step)
            runs.append(run)
            if on_done is not None:
                on_done(run)
    return Comparison(phases, thresholds, runs, warm, warm_seconds, variants, specs)
