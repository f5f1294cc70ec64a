"""The statistics of the demo and the harness (asafe/app/stats.py) against known distributions.

Deterministic: every random draw comes from a seeded generator; no timing is
asserted anywhere.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asafe.app import stats

TRIALS = 400


def _coverage_tolerance(p: float, trials: int = TRIALS) -> float:
    return 4.0 * math.sqrt(p * (1 - p) / trials)  # 4 sigma of a binomial proportion


# --------------------------------------------------------------------------- median CI
@pytest.mark.parametrize(
    "name, draw, true_median, n",
    [
        ("exponential", lambda rng, size: rng.exponential(1.0, size), math.log(2.0), 25),
        ("lognormal", lambda rng, size: rng.lognormal(0.0, 1.0, size), 1.0, 11),
        ("lognormal-heavy", lambda rng, size: rng.lognormal(0.0, 2.0, size), 1.0, 60),
        ("uniform", lambda rng, size: rng.uniform(0.0, 2.0, size), 1.0, 7),
    ],
)
def test_median_ci_covers_true_median_at_stated_rate(name, draw, true_median, n):
    rng = np.random.default_rng(12345)
    hits = 0
    for _ in range(TRIALS):
        ci = stats.median_ci(draw(rng, n))
        hits += ci.low <= true_median <= ci.high
    coverage = hits / TRIALS
    expected = stats.median_ci_ranks(n)[2]
    assert expected >= 0.95
    assert abs(coverage - expected) <= _coverage_tolerance(expected), (name, coverage, expected)


def test_median_ci_small_n_falls_back_to_widest_and_says_so():
    ci = stats.median_ci([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (ci.low, ci.high) == (1.0, 5.0)
    assert not ci.exact
    assert ci.coverage == pytest.approx(1 - 2 * 0.5**5)
    # and the coverage it states is the one it has
    rng = np.random.default_rng(7)
    draws = np.sort(rng.exponential(size=(TRIALS, 5)), axis=1)
    coverage = np.mean((draws[:, 0] <= math.log(2)) & (math.log(2) <= draws[:, -1]))
    assert abs(coverage - ci.coverage) <= _coverage_tolerance(ci.coverage)


def test_median_ci_ranks_known_values():
    assert stats.median_ci_ranks(6)[:2] == (1, 6)
    assert stats.median_ci_ranks(20)[:2] == (6, 15)
    assert stats.median_ci_ranks(100)[:2] == (40, 61)
    assert stats.median_ci_ranks(1) == (1, 1, 0.0, False)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=1, max_value=3000))
def test_median_ci_ranks_are_the_narrowest_reaching_95(n):
    low, high, coverage, exact = stats.median_ci_ranks(n)
    assert 1 <= low <= high <= n and low + high == n + 1
    assert low <= (n + 1) / 2 <= high
    assert exact == (n >= 6)
    if exact:
        assert coverage >= 0.95
        if low + 1 <= high - 1:  # one rank narrower would miss the level
            from scipy.stats import binom

            assert 1 - 2 * binom.cdf(low, n, 0.5) < 0.95


finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=1, max_size=300))
def test_median_ci_contains_median_within_range(samples):
    ci = stats.median_ci(samples)
    median = float(np.median(samples))
    assert min(samples) <= ci.low <= median <= ci.high <= max(samples)
    s = stats.summarize(samples)
    assert s.min <= s.median <= s.p95 <= s.p99 <= s.max


def test_invalid_inputs_are_refused():
    with pytest.raises(ValueError, match="empty"):
        stats.median_ci([])
    with pytest.raises(ValueError, match="NaN"):
        stats.median_ci([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        stats.median_ci([1.0], confidence=1.0)
    with pytest.raises(ValueError, match="rel_ci"):
        stats.stop_decision({"a": [1.0]}, rel_ci=0, min_samples=1, max_samples=2)
    with pytest.raises(ValueError, match="percentile"):
        stats.percentile([1.0], 101)


# --------------------------------------------------------------------------- percentiles, spread
def test_percentiles_match_known_values():
    assert stats.percentile(range(101), 95) == 95.0
    assert stats.percentile(range(101), 99) == 99.0
    assert stats.percentile([5.0], 99) == 5.0
    rng = np.random.default_rng(3)
    big = rng.exponential(1.0, 200_000)
    assert stats.percentile(big, 95) == pytest.approx(-math.log(0.05), rel=0.03)
    assert stats.percentile(big, 99) == pytest.approx(-math.log(0.01), rel=0.05)
    assert stats.percentile(big, 50) == pytest.approx(math.log(2), rel=0.02)


def test_spread_is_iqr_over_median():
    assert stats.spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)
    assert stats.spread([4.0]) == 0.0
    rng = np.random.default_rng(4)
    normal = rng.normal(10.0, 1.0, 100_000)  # IQR of N(0, 1) is 1.349
    assert stats.spread(normal) == pytest.approx(1.349 / 10.0, rel=0.02)


# --------------------------------------------------------------------------- instability
def test_instability_flags_spread_and_missed_target():
    rng = np.random.default_rng(5)
    tight = rng.normal(1.0, 0.005, 50)
    assert stats.instability(tight, True) is None
    reason = stats.instability(rng.lognormal(0.0, 0.5, 50), True)
    assert reason is not None and "spread IQR/median" in reason and "> 10%" in reason
    reason = stats.instability(tight, False, rel_ci=0.05)
    assert reason is not None and "not reached" in reason and "+-5%" in reason
    assert "only 3 samples" in stats.instability([1.0, 1.0, 1.0], False)


# --------------------------------------------------------------------------- stop rule
def test_stop_rule_stops_early_for_tight_data():
    rng = np.random.default_rng(6)
    data = {"a": list(rng.normal(1.0, 0.002, 7)), "b": list(rng.normal(2.0, 0.004, 7))}
    decision = stats.stop_decision(data, rel_ci=0.05, min_samples=7, max_samples=200)
    assert decision.stop and decision.reached
    assert "target reached" in decision.reason


def test_stop_rule_waits_for_min_samples():
    data = {"a": [1.0] * 6}
    decision = stats.stop_decision(data, rel_ci=0.05, min_samples=7, max_samples=200)
    assert not decision.stop and not decision.reached


def test_stop_rule_runs_to_the_cap_for_wide_data_and_says_so():
    rng = np.random.default_rng(8)
    wide = list(rng.lognormal(0.0, 2.0, 200))
    before = stats.stop_decision({"tight": [1.0] * 199, "wide": wide[:199]}, rel_ci=0.05, min_samples=7,
                                 max_samples=200)
    assert not before.stop and "wide" in before.reason and "tight" not in before.reason
    at_cap = stats.stop_decision({"tight": [1.0] * 200, "wide": wide}, rel_ci=0.05, min_samples=7, max_samples=200)
    assert at_cap.stop and not at_cap.reached
    assert "max_samples=200" in at_cap.reason and "wide" in at_cap.reason


def test_stop_rule_time_cap():
    decision = stats.stop_decision({"a": [1.0, 5.0, 9.0]}, rel_ci=0.05, min_samples=7, max_samples=200,
                                   elapsed=31.0, max_seconds=30.0)
    assert decision.stop and not decision.reached
    assert "max_seconds=30" in decision.reason and "min_samples=7 not reached" in decision.reason


def test_stop_rule_with_no_live_variant_stops():
    assert stats.stop_decision({}, rel_ci=0.05, min_samples=7, max_samples=10).stop


# --------------------------------------------------------------------------- comparisons
def test_ratio_ci_on_a_known_ratio_is_deterministic_and_covers_it():
    rng = np.random.default_rng(9)
    base = rng.lognormal(math.log(2.0), 0.1, 60)
    new = rng.lognormal(0.0, 0.1, 60)
    low, high = stats.ratio_ci(base, new)
    assert low < 2.0 < high and high / low < 1.2
    assert stats.ratio_ci(base, new) == (low, high)  # fixed seed


def test_ratio_ci_coverage_is_roughly_nominal():
    rng = np.random.default_rng(10)
    trials, hits = 150, 0
    for _ in range(trials):
        low, high = stats.ratio_ci(rng.lognormal(math.log(3.0), 0.3, 40), rng.lognormal(0.0, 0.3, 40),
                                   resamples=1000)
        hits += low <= 3.0 <= high
    assert 0.85 <= hits / trials <= 1.0


def test_mann_whitney_and_significance():
    rng = np.random.default_rng(11)
    a, b = rng.normal(1.0, 0.01, 30), rng.normal(1.1, 0.01, 30)
    p = stats.mann_whitney_p(a, b)
    assert p < 1e-6
    ci_a, ci_b = stats.median_ci(a), stats.median_ci(b)
    assert stats.significant((ci_a.low, ci_a.high), (ci_b.low, ci_b.high), p)
    c = rng.normal(1.0, 0.01, 30)
    p_same = stats.mann_whitney_p(a, c)
    assert p_same > 0.01
    assert not stats.significant((0.9, 1.1), (1.0, 1.2), 1e-9)  # overlapping intervals
    assert not stats.significant((0.9, 1.0), (1.1, 1.2), 0.2)  # rank test cannot reject
    assert math.isnan(stats.mann_whitney_p([1.0], [2.0, 3.0]))
    assert not stats.significant((0.0, 1.0), (2.0, 3.0), math.nan)
    assert stats.mann_whitney_p([1.0, 1.0], [1.0, 1.0]) == 1.0


def test_intervals_overlap():
    assert stats.intervals_overlap((0, 1), (1, 2))
    assert not stats.intervals_overlap((0, 1), (1.5, 2))


def test_doctests_of_stats_module():
    import doctest

    failures, _ = doctest.testmod(stats, optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_paired_ratio_cancels_drift_shared_by_both_variants():
    rng = np.random.default_rng(12)
    drift = np.linspace(1.0, 3.0, 41) * rng.lognormal(0.0, 0.3, 41)  # the machine slows down
    base = 2.0 * drift * rng.lognormal(0.0, 0.01, 41)
    new = 1.0 * drift * rng.lognormal(0.0, 0.01, 41)
    ratio, (low, high), exact = stats.paired_ratio(base, new)
    assert exact and low <= 2.0 <= high and high - low < 0.05
    unpaired_low, unpaired_high = stats.ratio_ci(base, new)
    assert unpaired_high - unpaired_low > 10 * (high - low)
    with pytest.raises(ValueError, match="per round"):
        stats.paired_ratio([1.0, 2.0], [1.0])


@pytest.mark.parametrize("n", [3, 4, 5, 6, 9])
def test_paired_ratio_ci_states_the_coverage_it_has(n):
    # per-round ratios of a lognormal with median 1.5: the interval holds 1.5 at the rate it states
    rng = np.random.default_rng(100 + n)
    new = rng.uniform(1.0, 3.0, (TRIALS, n))
    base = 1.5 * new * rng.lognormal(0.0, 0.2, (TRIALS, n))
    results = [stats.paired_ratio_ci(b, x) for b, x in zip(base, new)]
    stated = results[0].coverage
    assert all(r.coverage == stated and r.n == n for r in results)
    assert stated == pytest.approx(stats.median_ci_ranks(n)[2]) and results[0].exact is (n >= 6)
    if n == 3:
        assert stated == 0.75  # [min, max] of 3 samples: not 95%
    hits = np.mean([r.low <= 1.5 <= r.high for r in results])
    assert abs(hits - stated) <= _coverage_tolerance(stated), (n, hits, stated)
    # paired_ratio is the same estimate without the coverage
    ratio, ci, exact = stats.paired_ratio(base[0], new[0])
    assert (ratio, ci, exact) == (results[0].ratio, results[0].ci, results[0].exact)


def test_format_coverage_never_overstates():
    for n in range(1, 40):
        coverage = stats.median_ci_ranks(n)[2]
        printed = float(stats.format_coverage(coverage).rstrip("%")) / 100
        assert printed <= coverage + 1e-12 and coverage - printed < 0.001, (n, coverage, printed)
    assert stats.format_coverage(0.75) == "75%" and stats.format_coverage(1.0) == "100%"
    with pytest.raises(ValueError, match="coverage must be in"):
        stats.format_coverage(1.2)


@pytest.mark.parametrize(
    "interval, target, direction, expected",
    [
        # the case: the point estimate 1.197 clears 1.05, the interval reaches below it
        ((0.993, 1.703), 1.05, ">=", "not shown"),
        ((1.05, 1.703), 1.05, ">=", "met"),  # the lower end at the target clears it
        ((1.06, 1.2), 1.05, ">=", "met"),
        ((0.9, 1.0499), 1.05, ">=", "not met"),
        ((0.9, 1.05), 1.05, ">=", "not shown"),  # the upper end touches the target: not wholly below
        # an upper-bound target: adaptive / oracle <= 1.10
        ((1.02, 1.10), 1.10, "<=", "met"),
        ((1.02, 1.11), 1.10, "<=", "not shown"),
        ((1.1001, 1.3), 1.10, "<=", "not met"),
        ((1.10, 1.3), 1.10, "<=", "not shown"),
        (None, 1.05, ">=", "not shown"),
        ((math.nan, math.nan), 1.05, ">=", "not shown"),
        ((1.2, 1.2), 1.05, ">=", "met"),  # a single round: a point, and its coverage (0%) says what it is worth
    ],
)
def test_verdict_reads_the_interval_never_the_point(interval, target, direction, expected):
    assert stats.verdict(interval, target, direction) == expected


def test_verdict_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="direction must be one of"):
        stats.verdict((1.0, 2.0), 1.05, ">")
    with pytest.raises(ValueError, match="low <= high"):
        stats.verdict((2.0, 1.0), 1.05)
    with pytest.raises(ValueError, match="need must be"):
        stats.combine_verdicts(["met"], "some")
    with pytest.raises(ValueError, match="non-empty sequence"):
        stats.combine_verdicts(["met", "yes"])


@pytest.mark.parametrize(
    "verdicts, all_, any_",
    [
        (["met", "met"], "met", "met"),
        (["met", "not shown"], "not shown", "met"),
        (["met", "not met"], "not met", "met"),
        (["not shown", "not met"], "not met", "not shown"),
        (["not met", "not met"], "not met", "not met"),
        (["not shown"], "not shown", "not shown"),
    ],
)
def test_combine_verdicts(verdicts, all_, any_):
    assert stats.combine_verdicts(verdicts, "all") == all_
    assert stats.combine_verdicts(verdicts, "any") == any_


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9))
def test_balanced_orders_put_every_variant_everywhere_and_after_every_other_equally(n):
    from collections import Counter

    from asafe.app.stats import balanced_orders

    names = [f"v{i}" for i in range(n)]
    cycle = n if n % 2 == 0 else 2 * n
    orders = balanced_orders(names, cycle)
    assert all(sorted(order) == names for order in orders)  # each round runs every variant once
    positions = Counter((i, name) for order in orders for i, name in enumerate(order))
    assert set(positions.values()) == {cycle // n}  # every variant at every position equally often
    if n > 1:
        after = Counter((a, b) for order in orders for a, b in zip(order, order[1:]))
        assert len(after) == n * (n - 1)  # every variant right after every other one ...
        assert set(after.values()) == {cycle // n}  # ... equally often
    assert balanced_orders(names, cycle + 3)[cycle:] == [orders[i % cycle] for i in range(3)]  # the orders again
    first_n = Counter((i, name) for order in orders[:n] for i, name in enumerate(order))
    assert set(first_n.values()) == {1}  # n rounds: every variant at every position once
    if n > 2:  # across the boundaries between rounds, the cycle's last before its first included
        boundaries = [(orders[r - 1][-1], orders[r][0]) for r in range(cycle)]
        assert all(a != b for a, b in boundaries)  # no variant twice in a row
        assert len(set(boundaries)) == len(boundaries)  # no pair of variants at two boundaries


def test_three_variants_get_every_predecessor_equally_across_rounds():
    """The A/A control's case: over 6 rounds run back to back, every variant follows every other exactly
    three times (twice inside rounds, once across), and none follows itself."""
    from collections import Counter

    from asafe.app.stats import balanced_orders

    sequence = [name for order in balanced_orders(["dask", "dask-control", "asafe"], 6) * 2 for name in order]
    after = Counter(zip(sequence, sequence[1:]))
    assert all(a != b for a, b in after)
    assert Counter(after.values()) == {6: 5, 5: 1}  # two cycles: 6 each, but the pair that closes the second cycle
