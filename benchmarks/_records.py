"""What a measurement is and how it is printed: the records of the benchmark harness.

:class:`Measurement` (the samples of one variant and their statistics),
:class:`Speedup` and :func:`speedup` (two measurements compared, always with the
base's absolute time), :func:`to_jsonable` (what ``results.json`` holds) and the
console and figure forms of them (:func:`format_seconds`, :func:`format_table`,
:func:`summary_table`, :func:`plot_samples`). :mod:`benchmarks.harness` makes the
measurements and exports every name here; import them from there.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from asafe.app import stats
from asafe.app.console import format_table

__all__ = [
    "Measurement",
    "Speedup",
    "speedup",
    "to_jsonable",
    "format_seconds",
    "format_table",
    "summary_table",
    "plot_samples",
]

# --------------------------------------------------------------------------- results
@dataclasses.dataclass
class Measurement:
    """The steady-state timings of one variant, in seconds per call.

    Attributes
    ----------
    name : str
    samples : list of float
        Per-call seconds of each measured sample (empty when ``failed``).
    n : int
    median : float
        NaN when failed.
    ci95 : (float, float)
        Distribution-free 95% CI of the median (order statistics). With fewer than
        6 samples it is ``[min, max]`` with lower coverage: ``ci_exact`` False,
        ``ci_coverage`` says how much.
    ci_coverage : float
    ci_exact : bool
    p95, p99, min, max, mean : float
    spread : float
        IQR / median.
    reached_target : bool
        Whether the stop rule's CI target (+-``rel_ci``) was met.
    stop_reason : str
    rel_ci : float
        The target used.
    warmup_s : float
        Duration of the first warm-up call (JIT, first touch), NaN with no warm-up.
    warmup_times : list of float
        Every warm-up call.
    loops : int
        Calls per sample (loop calibration).
    checks : int
        How many results ``check`` accepted (warm-up, calibration and samples).
    failed : str or None
        Why the variant failed (wrong result or exception); it was then not timed.
    """

    name: str
    samples: list[float]
    n: int
    median: float
    ci95: tuple[float, float]
    ci_coverage: float
    ci_exact: bool
    p95: float
    p99: float
    min: float
    max: float
    mean: float
    spread: float
    reached_target: bool
    stop_reason: str
    rel_ci: float
    warmup_s: float
    warmup_times: list[float]
    loops: int
    checks: int
    failed: str | None = None

    @classmethod
    def from_samples(
        cls,
        name: str,
        samples: Sequence[float],
        *,
        reached_target: bool = True,
        stop_reason: str = "",
        rel_ci: float = 0.05,
        warmup_times: Sequence[float] = (),
        loops: int = 1,
        checks: int = 0,
        failed: str | None = None,
    ) -> Measurement:
        """Build a measurement from per-call seconds (also used by tests and suites
        that time something other than a Python call, such as a cluster event)."""
        warm = [float(t) for t in warmup_times]
        common = dict(
            name=name, reached_target=bool(reached_target), stop_reason=stop_reason, rel_ci=float(rel_ci),
            warmup_s=warm[0] if warm else math.nan, warmup_times=warm, loops=int(loops), checks=int(checks),
            failed=failed,
        )
        if failed is not None or len(samples) == 0:
            nan = math.nan
            empty = {field.name: nan for field in dataclasses.fields(stats.Summary)}
            empty.update(n=0, ci95=(nan, nan), ci_exact=False)
            return cls(samples=[], **empty, **{**common, "reached_target": False})
        summary = stats.summarize(samples)  # its fields are the first of a Measurement
        described = {field.name: getattr(summary, field.name) for field in dataclasses.fields(stats.Summary)}
        return cls(samples=[float(v) for v in samples], **described, **common)

    @property
    def ok(self) -> bool:
        """Not failed and at least one sample."""
        return self.failed is None and self.n > 0

    @property
    def unstable_reason(self) -> str | None:
        """Why the result is unstable (spread > 10% or CI target missed), else None."""
        if not self.ok:
            return None
        return stats.instability(self.samples, self.reached_target, rel_ci=self.rel_ci)

    @property
    def unstable(self) -> bool:
        """Spread above 10% of the median, or the CI target was not reached."""
        return self.unstable_reason is not None

    @property
    def ci_rel(self) -> float:
        """Half-width of the CI relative to the median (the larger side)."""
        return stats.ci_relative_halfwidth(self.median, self.ci95) if self.ok else math.nan

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (seconds; non-finite numbers as strings)."""
        data = dataclasses.asdict(self)
        data["ci95"] = list(self.ci95)
        data.update(unit="seconds per call", spread_kind="IQR/median", ci_rel=self.ci_rel,
                    unstable=self.unstable, unstable_reason=self.unstable_reason)
        return to_jsonable(data)

    def __str__(self) -> str:
        if not self.ok:
            return f"{self.name}: FAILED ({self.failed or 'no samples'})"
        flag = f"  UNSTABLE: {self.unstable_reason}" if self.unstable else ""
        return (f"{self.name}: median {format_seconds(self.median)} "
                f"[{format_seconds(self.ci95[0])}, {format_seconds(self.ci95[1])}] n={self.n}{flag}")


@dataclasses.dataclass(frozen=True)
class Speedup:
    """``base.median / new.median`` (> 1: ``new`` is faster), with its evidence.

    Attributes
    ----------
    base, new : str
        Names of the compared variants.
    ratio : float
        Ratio of medians, base / new.
    ci95 : (float, float)
        Percentile-bootstrap 95% interval of the ratio (2000 resamples, seed 0).
    p_value : float
        Two-sided Mann-Whitney U test of the two sample sets.
    significant : bool
        False when the two medians' CIs overlap or ``p >= 0.05``.
    base_median, new_median : float
        Absolute medians in seconds (rule 6: never a speedup alone).
    base_ci95, new_ci95 : (float, float)
    paired_ratio, paired_ci95 : float, (float, float) or None
        Median of the per-round ratios ``base_i / new_i`` of interleaved samples and
        its order-statistic CI (:func:`asafe.app.stats.paired_ratio`); None when
        the sample counts differ. Robust to drift of a shared machine.
    """

    base: str
    new: str
    ratio: float
    ci95: tuple[float, float]
    p_value: float
    significant: bool
    base_median: float
    new_median: float
    base_ci95: tuple[float, float]
    new_ci95: tuple[float, float]
    paired_ratio: float | None = None
    paired_ci95: tuple[float, float] | None = None

    @property
    def slowdown(self) -> float:
        """``new / base``: the relative cost of ``new`` (1.05 = 5% slower)."""
        return 1.0 / self.ratio

    @property
    def slowdown_ci95(self) -> tuple[float, float]:
        """The interval of :attr:`slowdown` (reciprocal bounds)."""
        return (1.0 / self.ci95[1], 1.0 / self.ci95[0])

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form, including the base case's absolute time."""
        return to_jsonable({
            "base": self.base, "new": self.new, "ratio": self.ratio, "ratio_definition": "median(base) / median(new)",
            "ci95": list(self.ci95), "ci_method": "percentile bootstrap of the ratio of medians, 2000 resamples, seed 0",
            "p_value": self.p_value, "test": "Mann-Whitney U, two-sided", "significant": self.significant,
            "base_median_s": self.base_median, "base_ci95_s": list(self.base_ci95),
            "new_median_s": self.new_median, "new_ci95_s": list(self.new_ci95),
            "slowdown": self.slowdown, "slowdown_ci95": list(self.slowdown_ci95),
            "paired_ratio": self.paired_ratio,
            "paired_ci95": list(self.paired_ci95) if self.paired_ci95 else None,
            "paired_method": "median of per-round ratios base_i / new_i, order-statistic 95% CI",
        })

    def __str__(self) -> str:
        verdict = "significant" if self.significant else "not significant"
        return (f"{self.new} vs {self.base}: speedup {self.ratio:.3f}x [{self.ci95[0]:.3f}, {self.ci95[1]:.3f}] "
                f"(base {self.base} {format_seconds(self.base_median)}, {self.new} {format_seconds(self.new_median)}; "
                f"Mann-Whitney p={self.p_value:.3g}; {verdict})")


def speedup(base: Measurement, new: Measurement) -> Speedup:
    """Compare ``new`` against ``base``: ratio of medians ``base / new`` with evidence.

    The ratio's 95% interval is a percentile bootstrap of the ratio of medians
    (:func:`asafe.app.stats.ratio_ci`: 2000 resamples, seed 0). Measurements of
    one :func:`measure` call have one sample per round each, so the per-round
    (paired) ratio is given too. ``p_value`` is a
    two-sided Mann-Whitney U test; ``significant`` requires non-overlapping median
    CIs and ``p < 0.05``.

    Raises
    ------
    ValueError
        If either measurement failed or has no samples.
    """
    for m in (base, new):
        if not isinstance(m, Measurement):
            raise TypeError(f"speedup() compares Measurement objects, got {type(m).__name__}")
        if not m.ok:
            raise ValueError(f"cannot compare {m.name!r}: {m.failed or 'it has no samples'}")
    p = stats.mann_whitney_p(base.samples, new.samples)
    paired = stats.paired_ratio(base.samples, new.samples) if base.n == new.n else None
    return Speedup(
        base=base.name, new=new.name, ratio=base.median / new.median,
        ci95=stats.ratio_ci(base.samples, new.samples), p_value=p,
        significant=stats.significant(base.ci95, new.ci95, p),
        base_median=base.median, new_median=new.median, base_ci95=base.ci95, new_ci95=new.ci95,
        paired_ratio=paired[0] if paired else None, paired_ci95=paired[1] if paired else None,
    )


# --------------------------------------------------------------------------- output
def to_jsonable(obj: Any) -> Any:
    """Convert ``obj`` to plain JSON types (objects with ``as_dict``, dataclasses,
    numpy scalars and arrays, paths, tuples); non-finite floats become strings."""
    if hasattr(obj, "as_dict") and callable(obj.as_dict) and not isinstance(obj, type):
        obj = obj.as_dict()
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        obj = dataclasses.asdict(obj)
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot record a {type(obj).__name__} in results.json: {obj!r}")


def format_seconds(seconds: float) -> str:
    """A duration with a readable unit: ``format_seconds(0.00123) == '1.23 ms'``."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    magnitude = abs(seconds)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if magnitude >= scale or unit == "ns":
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s"  # pragma: no cover


def summary_table(measurements: Mapping[str, Measurement] | Sequence[Measurement]) -> str:
    """The standard console table of measurements (median, CI, tails, status)."""
    items = measurements.values() if isinstance(measurements, Mapping) else measurements
    rows = []
    for m in items:
        if not m.ok:
            rows.append({"variant": m.name, "status": f"FAILED: {m.failed or 'no samples'}"})
            continue
        rows.append({
            "variant": m.name, "n": m.n, "loops": m.loops, "median": format_seconds(m.median),
            "95% CI": f"[{format_seconds(m.ci95[0])}, {format_seconds(m.ci95[1])}]",
            "+-CI": f"{m.ci_rel:.1%}", "p95": format_seconds(m.p95), "p99": format_seconds(m.p99),
            "min": format_seconds(m.min), "IQR/med": f"{m.spread:.1%}",
            "warm-up": format_seconds(m.warmup_s), "status": "UNSTABLE" if m.unstable else "ok",
        })
    return format_table(rows, ["variant", "n", "loops", "median", "95% CI", "+-CI", "p95", "p99", "min",
                               "IQR/med", "warm-up", "status"])


def plot_samples(ax: Any, measurements: Mapping[str, Measurement] | Sequence[Measurement], *,
                 scale: float = 1e-3, unit: str = "ms", title: str | None = None) -> None:
    """Box plot with the individual samples as a jittered strip, median CIs as notches.

    Failed variants are labelled as such and drawn empty.
    """
    items = list(measurements.values() if isinstance(measurements, Mapping) else measurements)
    labels, data = [], []
    for m in items:
        labels.append(m.name if m.ok else f"{m.name}\n(FAILED)")
        data.append(np.asarray(m.samples, dtype=float) / scale if m.ok else np.array([]))
    positions = np.arange(1, len(items) + 1)
    drawn = [(p, d) for p, d in zip(positions, data) if d.size]
    if drawn:
        ax.boxplot([d for _, d in drawn], positions=[p for p, _ in drawn], widths=0.5, showfliers=False,
                   medianprops={"color": "black"})
        rng = np.random.default_rng(0)
        for p, d in drawn:
            ax.plot(p + rng.uniform(-0.15, 0.15, d.size), d, "o", ms=3, alpha=0.6)
        for p, m in zip(positions, items):
            if m.ok:
                ax.errorbar([p + 0.3], [m.median / scale],
                            yerr=[[(m.median - m.ci95[0]) / scale], [(m.ci95[1] - m.median) / scale]],
                            fmt="D", color="crimson", ms=4, capsize=3)
    ax.set_xticks(positions)
    ax.set_xticklabels(labels)
    ax.set_ylabel(f"time per call ({unit})")
    if title:
        ax.set_title(title)
