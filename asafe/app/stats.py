"""The one statistics module of ``asafe demo`` and of every benchmark suite.

The demo (installed with asafe) and the benchmark harness (``benchmarks/``, run
from a checkout) measure the same way, with the functions here: a median with
its distribution-free interval, paired ratios of interleaved rounds, the stop
rule and the order of variants in each round (:func:`rotations`). Everything
takes plain sequences of numbers and returns numbers, so each rule can be tested
against known distributions (``tests/test_bench_stats.py``); the machine and
software a result was measured on is :func:`asafe.app.environment.environment`.
The choices follow Hoefler & Belli, "Scientific benchmarking of parallel computing
systems" (SC15), rules 5, 6 and 8 (``/work/shared/seeds/``), and the project's
``docs/benchmarking.rst``:

Central value: the median
    Timings are right-skewed (interference only ever adds time), so the mean is
    pulled by outliers and normality cannot be assumed (rule 6). We report the
    median with a nonparametric confidence interval (rule 5) and the tail
    percentiles p95/p99 (rule 8).

Confidence interval of the median: order statistics (distribution-free)
    For ``n`` independent samples of a continuous distribution with median ``m``,
    the number of samples below ``m`` is Binomial(n, 1/2). The interval
    ``[x_(l), x_(n-l+1)]`` (1-based order statistics) therefore contains ``m`` with
    probability ``1 - 2 * P(B <= l - 1)`` whatever the distribution. :func:`median_ci`
    takes the narrowest symmetric pair whose coverage is at least the requested
    level (so the true coverage is >= 95%, slightly conservative because the
    binomial is discrete). With ``n <= 5`` not even ``[min, max]`` reaches 95%
    (its coverage is ``1 - 2**(1-n)``); the widest available interval ``[min,
    max]`` is returned and flagged ``exact=False`` with its real coverage.

Percentiles
    :func:`percentile` is numpy's default (linear interpolation between order
    statistics, Hyndman & Fan type 7). With few samples p99 is close to the maximum;
    report ``n`` alongside.

Spread: IQR / median
    :func:`spread` is the interquartile range divided by the median: robust to the
    few large outliers a shared machine produces, and comparable across sizes. A
    result is *unstable* (:func:`instability`) when it exceeds 10% of the median
    (``docs/benchmarking.rst``) or when the confidence target was not reached.

Ratio of two medians: percentile bootstrap, fixed seed
    :func:`ratio_ci` resamples both sample sets independently (2000 resamples,
    ``numpy.random.default_rng(0)``), takes the ratio of the resampled medians and
    returns its 2.5 and 97.5 percentiles. Deterministic for given data. With very
    few samples the bootstrap distribution of a median is coarse (it can only take
    sample values), so the interval is then approximate.

Paired ratio (interleaved samples): :func:`paired_ratio`
    Sample ``i`` of every variant comes from the same round of :func:`measure`,
    seconds apart, so slow drift of a shared machine hits both alike. The median of
    the per-round ratios ``base_i / new_i`` with its order-statistic CI (the same
    distribution-free interval as above, rounds taken as independent) is reported
    next to the ratio of medians; it is usually much tighter on a noisy machine.
    :func:`paired_ratio_ci` returns it with its real coverage (that of the
    median's interval over that many rounds: 75% over 3 rounds).

Coverage as printed: :func:`format_coverage`
    The coverage an interval reaches, rounded down to 0.1% (never overstated):
    ``[0.993, 1.703] (75%)``. Every interval the demo prints carries it.

Whether a target is shown: :func:`verdict`
    A target (``speedup >= 1.05``, ``slowdown <= 1.10``) is *met* only when the
    whole interval lies on its side, *not met* when the whole interval lies on
    the other side, and *not shown* when the interval straddles it: a point
    estimate on the right side with an interval reaching across shows nothing.
    :func:`combine_verdicts` joins several (every one of them, or at least one).

Difference test: Mann-Whitney U (two-sided), :func:`mann_whitney_p`
    A rank test, no normality assumed. Two variants differ *significantly*
    (:func:`significant`) only when their median intervals do not overlap AND
    ``p < 0.05``.

Order of variants: :func:`rotations`
    Variants compared with each other run in alternating order, rotated every
    round (A B C, B C A, C A B, ...), so none always runs first after a pause.

Stop rule: :func:`stop_decision`
    Sampling stops when every variant has at least ``min_samples`` and its 95% CI
    of the median lies within +-``rel_ci`` of its median (target reached), or when
    ``max_samples`` or ``max_seconds`` is hit (target not reached, and the reason
    says which cap).

Examples
--------
>>> median([1, 3, 2, 10])
2.5
>>> ci = median_ci([3.0, 1.0, 2.0, 5.0, 4.0, 6.0])
>>> ci.low, ci.high, ci.coverage, ci.exact
(1.0, 6.0, 0.96875, True)
>>> rotations(["a", "b", "c"], 4)
[['a', 'b', 'c'], ['b', 'c', 'a'], ['c', 'a', 'b'], ['a', 'b', 'c']]
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

# The environment capture lived here before it had a module of its own; callers
# that import it from here keep working.
from .environment import cpu_model, environment, git_state  # noqa: F401

__all__ = [
    "CONFIDENCE",
    "UNSTABLE_SPREAD",
    "MedianCI",
    "Summary",
    "StopDecision",
    "median",
    "median_ci",
    "median_ci_ranks",
    "percentile",
    "spread",
    "ci_relative_halfwidth",
    "ci_within",
    "summarize",
    "instability",
    "ratio_ci",
    "PairedRatio",
    "paired_ratio",
    "paired_ratio_ci",
    "format_coverage",
    "VERDICTS",
    "verdict",
    "combine_verdicts",
    "balanced_orders",
    "mann_whitney_p",
    "intervals_overlap",
    "significant",
    "stop_decision",
    "describe",
    "rotations",
]

#: Confidence level of every interval reported.
CONFIDENCE = 0.95
#: A result whose spread (IQR / median) exceeds this is unstable.
UNSTABLE_SPREAD = 0.10
#: Fewest samples for which an order-statistic interval reaches 95%.
_MIN_EXACT_N = 6


@dataclass(frozen=True)
class MedianCI:
    """A confidence interval of the median from order statistics.

    Attributes
    ----------
    low, high : float
        The interval's bounds (two order statistics of the samples).
    coverage : float
        Its true distribution-free coverage probability (>= the requested level
        when ``exact``).
    exact : bool
        False when there were too few samples to reach the requested level and
        ``[min, max]`` (the widest available interval) was returned instead.
    ranks : tuple of int
        The 1-based order statistics used, ``(l, n - l + 1)``.
    """

    low: float
    high: float
    coverage: float
    exact: bool
    ranks: tuple[int, int]


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one set of samples (see :func:`summarize`)."""

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


@dataclass(frozen=True)
class StopDecision:
    """Outcome of the stop rule (see :func:`stop_decision`)."""

    stop: bool
    reached: bool  #: every variant's CI is within the target
    reason: str


def _as_array(samples: Sequence[float], what: str = "samples") -> np.ndarray:
    array = np.asarray(samples, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{what} must be a one-dimensional sequence of numbers, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{what} is empty: at least one sample is needed")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} contains NaN or infinite values")
    return array


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


@lru_cache(maxsize=4096)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int, float, bool]:
    """Order-statistic ranks of the distribution-free interval of the median.

    Returns ``(low_rank, high_rank, coverage, exact)``: the 1-based ranks ``l``
    and ``n - l + 1`` of the narrowest symmetric pair whose coverage
    ``1 - 2 P(Binomial(n, 1/2) <= l - 1)`` reaches ``confidence``, that coverage,
    and whether it does reach it (not for ``n <= 5`` at 95%, where ``[min, max]``
    is returned). The binomial is summed in exact integers.

    >>> median_ci_ranks(6)
    (1, 6, 0.96875, True)
    >>> median_ci_ranks(5)
    (1, 5, 0.9375, False)
    >>> median_ci_ranks(20)[:2]
    (6, 15)
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    n = int(n)
    half_alpha = (1.0 - confidence) / 2.0
    outcomes = 1 << n
    low_rank, exact = 1, False
    tail = 1  # outcomes with at most low_rank - 1 samples below the median
    below, term = 0, 1  # term = comb(n, x), updated in exact integers
    for x in range((n + 1) // 2):  # P(B <= x) grows with x: the last x under alpha / 2
        below += term
        term = term * (n - x) // (x + 1)
        if below / outcomes > half_alpha * (1 + 1e-12):  # a tiny slack absorbs rounding
            break
        low_rank, exact, tail = x + 1, True, below
    coverage = 1.0 - 2 * tail / outcomes  # int / int: exact, no overflow for large n
    return low_rank, n - low_rank + 1, coverage, exact


def median(samples: Sequence[float]) -> float:
    """The sample median.

    >>> median([1, 3, 2, 10])
    2.5
    """
    return float(np.median(_as_array(samples)))


def median_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> MedianCI:
    """Distribution-free confidence interval of the median (order statistics).

    Parameters
    ----------
    samples : sequence of float
        At least one finite value.
    confidence : float
        Requested coverage, default 0.95.

    Returns
    -------
    MedianCI
        Always contains the sample median and lies within ``[min, max]``.

    Examples
    --------
    >>> ci = median_ci(range(1, 21))
    >>> ci.low, ci.high, ci.exact
    (6.0, 15.0, True)
    >>> median_ci([3.0, 1.0, 2.0]).exact   # 3 samples cannot give 95%
    False
    """
    array = np.sort(_as_array(samples))
    low_rank, high_rank, coverage, exact = median_ci_ranks(array.size, confidence)
    return MedianCI(
        float(array[low_rank - 1]), float(array[high_rank - 1]), coverage, exact, (low_rank, high_rank)
    )


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), numpy's linear interpolation (type 7).

    Examples
    --------
    >>> percentile(range(101), 95)
    95.0
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be in [0, 100], got {q!r}")
    return float(np.percentile(_as_array(samples), q))


def spread(samples: Sequence[float]) -> float:
    """Interquartile range divided by the median (0 for a single sample).

    Examples
    --------
    >>> spread([1.0, 2.0, 3.0, 4.0, 5.0])
    0.6666666666666666
    """
    array = _as_array(samples)
    median = float(np.median(array))
    q25, q75 = np.percentile(array, [25, 75])
    if median == 0.0:
        return 0.0 if q75 == q25 else math.inf
    with np.errstate(over="ignore"):  # a median near 0 with a wide IQR: infinite spread
        return float(np.float64(q75 - q25) / abs(median))


def ci_relative_halfwidth(median: float, ci: tuple[float, float]) -> float:
    """The larger distance from the median to a CI bound, relative to the median."""
    low, high = ci
    if median == 0.0:
        return 0.0 if low == high == 0.0 else math.inf
    return max(median - low, high - median) / abs(median)


def ci_within(samples: Sequence[float], rel_ci: float, confidence: float = CONFIDENCE) -> bool:
    """Whether the (exact) CI of the median lies within +-``rel_ci`` of the median."""
    if rel_ci <= 0:
        raise ValueError(f"rel_ci must be > 0, got {rel_ci!r}")
    array = _as_array(samples)
    ci = median_ci(array, confidence)
    if not ci.exact:
        return False
    return ci_relative_halfwidth(float(np.median(array)), (ci.low, ci.high)) <= rel_ci


def summarize(samples: Sequence[float], confidence: float = CONFIDENCE) -> Summary:
    """Median, its CI, tail percentiles, extremes and spread of ``samples``."""
    array = _as_array(samples)
    ci = median_ci(array, confidence)
    p95, p99 = np.percentile(array, [95, 99])
    return Summary(
        n=int(array.size),
        median=float(np.median(array)),
        ci95=(ci.low, ci.high),
        ci_coverage=ci.coverage,
        ci_exact=ci.exact,
        p95=float(p95),
        p99=float(p99),
        min=float(array.min()),
        max=float(array.max()),
        mean=float(array.mean()),
        spread=spread(array),
    )


def instability(
    samples: Sequence[float],
    reached_target: bool,
    *,
    threshold: float = UNSTABLE_SPREAD,
    rel_ci: float | None = None,
) -> str | None:
    """Why a result is unstable, or ``None`` when it is not.

    Unstable means: spread (IQR / median) above ``threshold``, or the CI target
    not reached (``reached_target`` False).

    Examples
    --------
    >>> instability([1.0, 1.01, 0.99, 1.0, 1.0, 1.02, 0.98], True) is None
    True
    >>> instability([1.0, 2.0, 3.0], False)
    'spread IQR/median 50.0% > 10%; 95% CI of the median target not reached (only 3 samples: widest CI covers 75.0%)'
    """
    array = _as_array(samples)
    reasons = []
    s = spread(array)
    if s > threshold:
        reasons.append(f"spread IQR/median {s:.1%} > {threshold:.0%}")
    if not reached_target:
        ci = median_ci(array)
        half = ci_relative_halfwidth(float(np.median(array)), (ci.low, ci.high))
        target = f" +-{rel_ci:.0%}" if rel_ci is not None else ""
        if not ci.exact:
            detail = f"only {array.size} samples: widest CI covers {ci.coverage:.1%}"
        else:
            detail = f"CI is +-{half:.1%} after {array.size} samples"
        reasons.append(f"95% CI of the median target{target} not reached ({detail})")
    return "; ".join(reasons) or None


def ratio_ci(
    base: Sequence[float],
    new: Sequence[float],
    confidence: float = CONFIDENCE,
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of ``median(base) / median(new)``.

    Both sample sets are resampled independently with replacement ``resamples``
    times from ``numpy.random.default_rng(seed)``; the interval is the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the ratio of
    resampled medians. Deterministic for given inputs.

    Examples
    --------
    >>> low, high = ratio_ci([2.0] * 10, [1.0] * 10)
    >>> low, high
    (2.0, 2.0)
    """
    _check_confidence(confidence)
    if resamples < 100:
        raise ValueError(f"resamples must be >= 100, got {resamples!r}")
    b, n = _as_array(base, "base"), _as_array(new, "new")
    if np.any(n <= 0) or np.any(b < 0):
        raise ValueError("ratio_ci needs non-negative base and positive new samples")
    rng = np.random.default_rng(seed)
    ratios = np.empty(resamples)
    chunk = max(1, 500_000 // max(b.size, n.size))  # bounded memory for large n
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        size = stop - start
        mb = np.median(b[rng.integers(0, b.size, (size, b.size))], axis=1)
        mn = np.median(n[rng.integers(0, n.size, (size, n.size))], axis=1)
        ratios[start:stop] = mb / mn
    low, high = np.quantile(ratios, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


@dataclass(frozen=True)
class PairedRatio:
    """The median of per-round ratios with its order-statistic interval (see :func:`paired_ratio_ci`).

    Attributes
    ----------
    ratio : float
        The median over rounds of ``base[i] / new[i]``.
    low, high : float
        Its distribution-free interval (two order statistics of the ratios).
    coverage : float
        The interval's real coverage with ``n`` rounds (0.75 with 3 rounds).
    exact : bool
        Whether ``coverage`` reaches the requested confidence.
    n : int
        The number of rounds.
    """

    ratio: float
    low: float
    high: float
    coverage: float
    exact: bool
    n: int

    @property
    def ci(self) -> tuple[float, float]:
        """``(low, high)``."""
        return (self.low, self.high)


def paired_ratio_ci(base: Sequence[float], new: Sequence[float], confidence: float = CONFIDENCE) -> PairedRatio:
    """Median of the per-round ratios ``base[i] / new[i]``, its order-statistic interval and that interval's coverage.

    The interval is :func:`median_ci` of the ratios, rounds taken as
    independent: with fewer than 6 rounds it is ``[min, max]`` of the ratios and
    covers less than 95% (``1 - 2**(1 - n)``: 75% over 3 rounds).

    Examples
    --------
    >>> r = paired_ratio_ci([2.0, 3.0, 2.4], [1.0, 2.0, 2.0])
    >>> r.ratio, r.ci, r.coverage, r.exact, r.n
    (1.5, (1.2, 2.0), 0.75, False, 3)
    >>> paired_ratio_ci([2.0] * 6, [1.0] * 6).coverage
    0.96875
    """
    b, n = _as_array(base, "base"), _as_array(new, "new")
    if b.size != n.size:
        raise ValueError(f"paired_ratio needs one sample per round of each: {b.size} != {n.size}")
    if np.any(n <= 0):
        raise ValueError("paired_ratio needs positive new samples")
    ratios = b / n
    ci = median_ci(ratios, confidence)
    return PairedRatio(float(np.median(ratios)), ci.low, ci.high, ci.coverage, ci.exact, int(ratios.size))


def paired_ratio(
    base: Sequence[float], new: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, tuple[float, float], bool]:
    """Median of the per-round ratios ``base[i] / new[i]`` and its order-statistic CI.

    :func:`paired_ratio_ci` is the same with the interval's coverage.

    Returns
    -------
    ratio : float
    ci : (float, float)
    exact : bool
        False when there are too few rounds for the requested confidence.

    Examples
    --------
    >>> paired_ratio([2.0, 4.0, 2.2, 2.0, 2.0, 2.1], [1.0, 2.0, 1.1, 1.0, 1.0, 1.05])
    (2.0, (2.0, 2.0), True)
    """
    r = paired_ratio_ci(base, new, confidence)
    return r.ratio, r.ci, r.exact


def format_coverage(coverage: float) -> str:
    """An interval's coverage as printed beside it: a percentage rounded down to 0.1%.

    Rounded down, so that the printed coverage is never more than the real one.

    Examples
    --------
    >>> format_coverage(0.75), format_coverage(0.875), format_coverage(0.9375), format_coverage(0.96875)
    ('75%', '87.5%', '93.7%', '96.8%')
    >>> format_coverage(median_ci_ranks(3)[2])   # [min, max] of 3 samples
    '75%'
    """
    if not 0.0 <= coverage <= 1.0:
        raise ValueError(f"coverage must be in [0, 1], got {coverage!r}")
    tenths = math.floor(coverage * 1000 + 1e-9)  # 0.75 * 1000 may land a hair below 750
    text = f"{tenths / 10:.1f}"
    return (text[:-2] if text.endswith(".0") else text) + "%"


#: The three verdicts of a target: its interval on its side, across it, on the other side.
VERDICTS = ("met", "not shown", "not met")
_DIRECTIONS = (">=", "<=")


def verdict(interval: Sequence[float] | None, target: float, direction: str = ">=") -> str:
    """Whether an interval shows a target: ``"met"``, ``"not shown"`` or ``"not met"``.

    Parameters
    ----------
    interval : (low, high) or None
        The interval of the estimate (a paired ratio's, a median's). ``None`` or
        a NaN bound: nothing is shown.
    target : float
        The bound the estimate should clear.
    direction : {">=", "<="}
        ``">="``: the estimate should be at least ``target`` (a speedup); met when
        the interval's lower end is at or above it, not met when its upper end is
        below it. ``"<="``: at most ``target`` (a slowdown); met when the upper
        end is at or below it, not met when the lower end is above it.

    Returns
    -------
    str
        One of :data:`VERDICTS`. An interval that straddles the target is ``"not
        shown"`` whatever its point estimate.

    Examples
    --------
    >>> verdict((0.993, 1.703), 1.05)          # the point estimate 1.197 clears it; the interval does not
    'not shown'
    >>> verdict((1.06, 1.31), 1.05), verdict((0.91, 1.02), 1.05)
    ('met', 'not met')
    >>> verdict((1.02, 1.08), 1.10, "<="), verdict((1.04, 1.23), 1.10, "<="), verdict((1.12, 1.3), 1.10, "<=")
    ('met', 'not shown', 'not met')
    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {list(_DIRECTIONS)}, got {direction!r}")
    if interval is None:
        return "not shown"
    low, high = (float(x) for x in interval)
    if math.isnan(low) or math.isnan(high):
        return "not shown"
    if low > high:
        raise ValueError(f"interval must be (low, high) with low <= high, got {tuple(interval)!r}")
    if direction == ">=":
        return "met" if low >= target else "not met" if high < target else "not shown"
    return "met" if high <= target else "not met" if low > target else "not shown"


def combine_verdicts(verdicts: Sequence[str], need: str = "all") -> str:
    """The verdict of several targets together: ``need="all"`` of them, or ``"any"`` (at least one).

    ``"all"``: met when every one is met, not met when one is not met, else not
    shown. ``"any"``: met when one is met, not met when every one is not met,
    else not shown.

    Examples
    --------
    >>> combine_verdicts(["met", "not shown"]), combine_verdicts(["met", "not met", "not shown"])
    ('not shown', 'not met')
    >>> combine_verdicts(["not met", "met"], "any"), combine_verdicts(["not met", "not shown"], "any")
    ('met', 'not shown')
    """
    if need not in ("all", "any"):
        raise ValueError(f"need must be 'all' or 'any', got {need!r}")
    verdicts = list(verdicts)
    unknown = [v for v in verdicts if v not in VERDICTS]
    if unknown or not verdicts:
        raise ValueError(f"verdicts must be a non-empty sequence of {list(VERDICTS)}, got {verdicts!r}")
    sure, opposite = ("not met", "met") if need == "all" else ("met", "not met")
    if sure in verdicts:
        return sure
    return opposite if all(v == opposite for v in verdicts) else "not shown"


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value (NaN when a side has fewer than 2 samples)."""
    x, y = _as_array(a, "a"), _as_array(b, "b")
    if x.size < 2 or y.size < 2:
        return math.nan
    if np.all(x == x[0]) and np.all(y == y[0]) and x[0] == y[0]:
        return 1.0  # all ties: no evidence of a difference
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two closed intervals share a point."""
    return a[0] <= b[1] and b[0] <= a[1]


def significant(ci_a: tuple[float, float], ci_b: tuple[float, float], p_value: float, alpha: float = 0.05) -> bool:
    """A difference is significant only if the CIs do not overlap and ``p < alpha``."""
    if math.isnan(p_value):
        return False
    return (not intervals_overlap(ci_a, ci_b)) and p_value < alpha


def stop_decision(
    samples: Mapping[str, Sequence[float]],
    *,
    rel_ci: float,
    min_samples: int,
    max_samples: int,
    elapsed: float = 0.0,
    max_seconds: float = math.inf,
    confidence: float = CONFIDENCE,
) -> StopDecision:
    """Decide whether to stop sampling (the data decides, rule 3).

    Parameters
    ----------
    samples : mapping name -> samples
        The live (not failed) variants and their samples so far.
    rel_ci : float
        Target: the CI of every median within +-``rel_ci`` of that median.
    min_samples, max_samples : int
        Fewest samples before the target may stop sampling; cap on samples.
    elapsed, max_seconds : float
        Time spent sampling and its cap.

    Returns
    -------
    StopDecision
        ``stop``; ``reached`` (the target was met by every variant); ``reason``
        naming the cap hit or the variants still outside the target.

    Examples
    --------
    >>> stop_decision({"a": [1.0] * 7}, rel_ci=0.05, min_samples=7, max_samples=50).reason
    'target reached: every 95% CI of the median within +-5% (7 samples)'
    """
    if rel_ci <= 0:
        raise ValueError(f"rel_ci must be > 0, got {rel_ci!r}")
    if not samples:
        return StopDecision(True, False, "no live variant left")
    counts = {name: len(s) for name, s in samples.items()}
    n_min = min(counts.values())
    wide = [
        name for name, s in samples.items()
        if len(s) == 0 or not ci_within(s, rel_ci, confidence)
    ]
    reached = not wide
    if reached and n_min >= min_samples:
        return StopDecision(True, True, f"target reached: every 95% CI of the median within +-{rel_ci:.0%} ({n_min} samples)")
    outside = f"; outside +-{rel_ci:.0%}: {', '.join(wide)}" if wide else ""
    if n_min >= max_samples:
        return StopDecision(True, reached, f"max_samples={max_samples} reached{outside}")
    if elapsed >= max_seconds:
        short = f" (min_samples={min_samples} not reached)" if n_min < min_samples else ""
        return StopDecision(True, reached and n_min >= min_samples,
                            f"max_seconds={max_seconds:g} reached after {n_min} samples{short}{outside}")
    return StopDecision(False, False, f"continue ({n_min} samples){outside}")


def describe(samples: Sequence[float], rel_ci: float = 0.05, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """One result as plain data: median, interval, spread, and why it is unstable.

    The form ``asafe demo`` writes in its JSON: ``unstable`` when the spread is
    above 10% of the median or the interval is not within +-``rel_ci`` of it (or
    the samples are too few for the confidence level), with the reason.

    Examples
    --------
    >>> d = describe([1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0])
    >>> d["median_s"], d["ci95"], d["unstable"]
    (1.0, [0.98, 1.02], False)
    >>> describe([1.0, 2.0, 3.0])["unstable"]   # 3 samples cannot give 95%
    True
    """
    s = summarize(samples, confidence)
    reason = instability(samples, ci_within(samples, rel_ci, confidence), rel_ci=rel_ci)
    return {
        "median_s": s.median,
        "ci95": [s.ci95[0], s.ci95[1]],
        "ci_coverage": s.ci_coverage,
        "ci_exact": s.ci_exact,
        "n": s.n,
        "min_s": s.min,
        "max_s": s.max,
        "spread": s.spread,
        "unstable": reason is not None,
        "unstable_reason": reason,
        "samples": [float(v) for v in samples],
    }


def rotations(names: Sequence[str], rounds: int) -> list[list[str]]:
    """The order of the variants in each round, rotated every round."""
    names = list(names)
    return [names[r % len(names):] + names[:r % len(names)] for r in range(rounds)]


def balanced_orders(names: Sequence[str], rounds: int) -> list[list[str]]:
    """The order of the variants in each round, balanced for what a run leaves to the next (a Williams design).

    A rotation (A B C, B C A, ...) puts every variant at every position, but
    always after the same variant: whatever one run leaves behind on the
    workers -- warm or cold caches, a bandwidth estimate, memory not yet
    returned -- always lands on the same next variant, a bias that no number
    of rounds averages out. Here the first order is 0, 1, n-1, 2, n-2, ...,
    each next one adds 1 to every index (mod n), and an odd n adds the n
    orders reversed: over n rounds (2n for an odd n) every variant runs at
    every position equally often and right after every other variant equally
    often (once; twice for an odd n). Rounds beyond cycle through the orders
    again; fewer rounds get the first ones, as balanced as their number allows.

    The rounds run back to back, so the last variant of a round also runs
    right before the first of the next. For three or more variants the orders
    of a cycle are arranged (:func:`_chained`) so that no variant runs twice in
    a row across two rounds and no two of those boundaries pair the same two
    variants in the same order (the cycle's last round before its first
    included, as the cycle repeats); the first n orders stay the rotations, so
    that n rounds still put every variant at every position once. Three
    variants then follow each other exactly three times each per cycle,
    boundaries included. Without it they ran 0 1 2, 1 2 0, 2 0 1, 2 1 0, 0 2 1,
    1 0 2: variants 0 and 1 each ran twice in a row, 2 never, and the
    workloads suite's A/A control read about 1% below plain Dask; with the
    rounds chained it read 0.996x, no row off 1
    (docs/results/workloads/loopback-aa-s32/). Two variants alternate, and each
    runs twice in a row equally often.

    Examples
    --------
    >>> balanced_orders(["a", "b", "c", "d"], 4)
    [['a', 'b', 'd', 'c'], ['b', 'c', 'a', 'd'], ['c', 'd', 'b', 'a'], ['d', 'a', 'c', 'b']]
    >>> balanced_orders(["a", "b", "c"], 6)
    [['a', 'b', 'c'], ['b', 'c', 'a'], ['c', 'a', 'b'], ['c', 'b', 'a'], ['b', 'a', 'c'], ['a', 'c', 'b']]
    >>> balanced_orders(["a", "b"], 3)
    [['a', 'b'], ['b', 'a'], ['a', 'b']]
    """
    names = list(names)
    n = len(names)
    if n == 0:
        return [[] for _ in range(rounds)]
    first, low, high = [0], 1, n - 1
    while len(first) < n:
        first.append(low if len(first) % 2 else high)
        if len(first) % 2:
            high -= 1
        else:
            low += 1
    rotations = [[(i + shift) % n for i in first] for shift in range(n)]
    groups = [rotations, [order[::-1] for order in rotations]] if n % 2 else [rotations]
    orders = _chained(groups) if n > 2 else None
    if orders is None:
        orders = [order for group in groups for order in group]
    return [[names[i] for i in orders[r % len(orders)]] for r in range(rounds)]


class _OutOfSteps(Exception):
    """:func:`_chained`'s search ran out of steps."""


def _chained(groups: list[list[list[int]]], steps: int = 20_000) -> list[list[int]] | None:
    """``groups``' orders, group by group, each group's in an order that chains the rounds.

    The first order stays first; consecutive orders (and the last before the
    first) never have the same variant on either side of their boundary, and
    no two boundaries pair the same two variants in the same order. A
    depth-first search in the orders' own order, bounded by ``steps``; None
    where it finds no such arrangement (two variants: each boundary repeats
    one), and the caller keeps the orders as they are.
    """
    sizes = [len(group) for group in groups]
    total = sum(sizes)
    chain, pairs, used = [groups[0][0]], set(), {(0, 0)}
    visited = 0

    def group_at(position: int) -> int:
        for index, size in enumerate(sizes):
            if position < size:
                return index
            position -= size
        raise IndexError(position)

    def extend() -> bool:
        nonlocal visited
        visited += 1
        if visited > steps:
            raise _OutOfSteps
        if len(chain) == total:
            wrap = (chain[-1][-1], chain[0][0])
            return wrap[0] != wrap[1] and wrap not in pairs
        g = group_at(len(chain))
        for j, order in enumerate(groups[g]):
            pair = (chain[-1][-1], order[0])
            if (g, j) in used or pair[0] == pair[1] or pair in pairs:
                continue
            chain.append(order)
            pairs.add(pair)
            used.add((g, j))
            if extend():
                return True
            chain.pop()
            pairs.discard(pair)
            used.discard((g, j))
        return False

    try:
        return chain if extend() else None
    except _OutOfSteps:
        return None
