"""Small, dependency-free statistics and environment capture for ``asafe demo``.

The benchmark harness (``benchmarks/stats.py``, ``benchmarks/harness.py``) is not
installed with asafe, so the installed ``asafe demo`` carries the few pieces of it
that it needs, implemented the same way (``/work/shared/BENCHMARKING.md``):

* :func:`median_ci` -- the distribution-free confidence interval of the median
  from order statistics: for ``n`` samples the number below the true median is
  Binomial(n, 1/2), so ``[x_(l), x_(n-l+1)]`` covers it with probability
  ``1 - 2 P(B <= l - 1)``; the narrowest symmetric pair with coverage at least
  the requested level is taken. With ``n <= 5`` even ``[min, max]`` stays below
  95% (its coverage is ``1 - 2**(1-n)``): that interval is returned with
  ``exact=False`` and its true coverage.
* :func:`spread` -- interquartile range over median; above 10% a result is
  *unstable* (:func:`summarize` says why).
* :func:`paired_ratio` -- for variants measured in interleaved rounds, the
  median of the per-round ratios ``base_i / new_i`` with the same order-statistic
  interval (rounds taken as independent).
* :func:`rotations` -- the interleaved order of variants, rotated every round
  (A B C, B C A, C A B, ...).
* :func:`environment` -- machine and software a result was measured on.

Examples
--------
>>> median_ci([3.0, 1.0, 2.0, 5.0, 4.0, 6.0])
MedianCI(low=1.0, high=6.0, coverage=0.96875, exact=True)
>>> rotations(["a", "b", "c"], 4)
[['a', 'b', 'c'], ['b', 'c', 'a'], ['c', 'a', 'b'], ['a', 'b', 'c']]
"""
from __future__ import annotations

import math
import numbers
import os
import platform
import sys
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

__all__ = [
    "CONFIDENCE",
    "UNSTABLE_SPREAD",
    "MedianCI",
    "median",
    "median_ci",
    "median_ci_ranks",
    "cpu_model",
    "percentile",
    "spread",
    "summarize",
    "paired_ratio",
    "rotations",
    "environment",
]

#: Confidence level of every interval.
CONFIDENCE = 0.95
#: A result whose spread (IQR / median) exceeds this is unstable.
UNSTABLE_SPREAD = 0.10


class MedianCI(NamedTuple):
    """A confidence interval of the median (two order statistics of the samples)."""

    low: float
    high: float
    coverage: float  #: its true, distribution-free coverage
    exact: bool  #: whether the coverage reaches the requested level


def _clean(samples: Sequence[float]) -> list[float]:
    values = [float(v) for v in samples]
    if not values:
        raise ValueError("at least one sample is needed")
    if not all(math.isfinite(v) for v in values):
        raise ValueError("samples contain NaN or infinite values")
    return sorted(values)


def median(samples: Sequence[float]) -> float:
    """The sample median.

    >>> median([1, 3, 2, 10])
    2.5
    """
    values = _clean(samples)
    n = len(values)
    mid = n // 2
    return values[mid] if n % 2 else 0.5 * (values[mid - 1] + values[mid])


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear interpolation (numpy's default).

    >>> percentile([1, 2, 3, 4, 5], 25)
    2.0
    """
    values = _clean(samples)
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q!r}")
    pos = (len(values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


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


def median_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> MedianCI:
    """Distribution-free confidence interval of the median (order statistics).

    >>> ci = median_ci(range(1, 21))
    >>> ci.low, ci.high, ci.exact
    (6.0, 15.0, True)
    >>> median_ci([2.0, 1.0, 3.0]).exact   # 3 samples cannot give 95%
    False
    """
    values = _clean(samples)
    low_rank, high_rank, coverage, exact = median_ci_ranks(len(values), confidence)
    return MedianCI(values[low_rank - 1], values[high_rank - 1], coverage, exact)


def spread(samples: Sequence[float]) -> float:
    """Interquartile range divided by the median (0.0 for one sample).

    >>> spread([9, 10, 10, 11])
    0.05
    """
    values = _clean(samples)
    m = median(values)
    if len(values) < 2 or m == 0:
        return 0.0
    return (percentile(values, 75) - percentile(values, 25)) / abs(m)


def summarize(samples: Sequence[float], confidence: float = CONFIDENCE, rel_ci: float = 0.05) -> dict[str, Any]:
    """Median, its interval, spread and an ``unstable`` flag with its reason.

    >>> s = summarize([1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0])
    >>> s["median_s"], s["ci95"], s["unstable"]
    (1.0, [0.98, 1.02], False)
    """
    values = _clean(samples)
    m = median(values)
    ci = median_ci(values, confidence)
    sp = spread(values)
    reasons = []
    if sp > UNSTABLE_SPREAD:
        reasons.append(f"spread (IQR/median) {sp:.0%} > {UNSTABLE_SPREAD:.0%}")
    if not ci.exact:
        reasons.append(f"{len(values)} samples cannot give a {confidence:.0%} interval "
                       f"([min, max] covers {ci.coverage:.1%})")
    elif m > 0 and max(m - ci.low, ci.high - m) > rel_ci * m:
        reasons.append(f"the {confidence:.0%} interval is wider than +-{rel_ci:.0%} of the median")
    return {
        "median_s": m,
        "ci95": [ci.low, ci.high],
        "ci_coverage": ci.coverage,
        "ci_exact": ci.exact,
        "n": len(values),
        "min_s": values[0],
        "max_s": values[-1],
        "spread": sp,
        "unstable": bool(reasons),
        "unstable_reason": "; ".join(reasons) or None,
        "samples": list(samples),
    }


def paired_ratio(base: Sequence[float], new: Sequence[float],
                 confidence: float = CONFIDENCE) -> tuple[float, tuple[float, float], bool]:
    """Median of the per-round ratios ``base_i / new_i``, its interval, and whether it is exact.

    >>> ratio, (low, high), exact = paired_ratio([2.0, 2.2, 1.8], [1.0, 1.1, 0.9])
    >>> ratio, low, high, exact
    (2.0, 2.0, 2.0, False)
    """
    if len(base) != len(new):
        raise ValueError(f"paired samples need equal lengths, got {len(base)} and {len(new)}")
    ratios = [b / n for b, n in zip(_check(base), _check(new))]
    ci = median_ci(ratios, confidence)
    return median(ratios), (ci.low, ci.high), ci.exact


def _check(values: Sequence[float]) -> list[float]:
    out = [float(v) for v in values]
    if not out or any(not math.isfinite(v) or v <= 0 for v in out):
        raise ValueError("ratios need positive finite samples")
    return out


def rotations(names: Sequence[str], rounds: int) -> list[list[str]]:
    """The order of the variants in each round, rotated every round."""
    names = list(names)
    return [names[r % len(names):] + names[:r % len(names)] for r in range(rounds)]


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


_PACKAGES = ("asafe", "numpy", "scipy", "numba", "dask", "distributed", "psutil", "matplotlib", "rich")
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
                     "OMP_WAIT_POLICY", "MALLOC_TRIM_THRESHOLD_")


def environment(**extra: Any) -> dict[str, Any]:
    """Machine and software: cpu, memory, os, python, package versions, thread settings, load.

    ``extra`` (workers, threads, scheduler address, ...) is added as given.
    """
    try:
        import psutil

        memory = psutil.virtual_memory()
        mem = {"total_gib": round(memory.total / 2**30, 2), "available_gib": round(memory.available / 2**30, 2)}
        physical = psutil.cpu_count(logical=False)
    except Exception:  # psutil is a dependency, but the report must not fail on it
        mem, physical = {}, None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    info = {
        "machine": {
            "cpu": cpu_model(),
            "physical_cores": physical,
            "logical_cores": os.cpu_count(),
            "usable_cores": usable,
            "arch": platform.machine(),
            "memory": mem,
            "os": platform.platform(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        },
        "python": platform.python_version(),
        "executable": sys.executable,
        "packages": {name: _version(name) for name in _PACKAGES},
        "thread_env": {k: os.environ.get(k) for k in _THREAD_VARIABLES},
    }
    info.update(extra)
    return info
