"""The phased suite's tuning rule (benchmarks/phased.py): percentiles of ratios and alpha/beta from them."""
from __future__ import annotations

import math

import pytest

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import phased  # noqa: E402


def test_ratio_percentiles_keep_inf_and_drop_nan():
    pct = phased.ratio_percentiles([1.0, 2.0, math.inf, math.nan] + [3.0] * 6)
    assert pct["n"] == 9
    assert pct["p50"] == 3.0 and pct["p99"] == math.inf and pct["p1"] == pytest.approx(1.08)
    empty = phased.ratio_percentiles([math.nan])
    assert empty["n"] == 0 and empty["p5"] is None


def test_thresholds_rule_puts_each_threshold_between_its_bounds():
    alpha, beta = phased.thresholds_rule(shipped_p50=0.65, shipped_p90=1.4, local_p5=1.6, local_p50=58.0)
    assert (alpha, beta) == (1.0, 8.0)
    # geometric means, rounded to powers of two
    assert phased.thresholds_rule(0.25, 1.0, 16.0, 64.0) == (2.0, 8.0)
    assert phased.thresholds_rule(0.1, 0.1, 0.1, 0.1) == (0.125, 0.125)
