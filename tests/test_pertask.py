"""The per-task cost rule (asafe.app.pertask): its sample, its costs and its decisions on real panels."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asafe.app import pertask, runner, variants
from asafe.app import workload as wl
from asafe.compression import CostModel, TiledMatrix
from benchmarks import phase_sets
from benchmarks import variants as evaluation_variants


def _panel(phase, index=0):
    source = phase.source()
    lo, hi = wl.panel_bounds(phase.grid, phase.panels)[index]
    return source.slab(lo, hi).copy(), source


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 70), cols=st.integers(1, 70), tile=st.integers(1, 32),
       density=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_a_sample_of_every_row_is_the_exact_tile_content(rows, cols, tile, density, seed):
    D = np.where(np.random.default_rng(seed).random((rows, cols)) < density, 1.0, 0.0)
    est = pertask.estimate(D, tile, threshold=CostModel(reuse=2), stride=1)
    summary = TiledMatrix.from_dense(D, tile, threshold=CostModel(reuse=2), compress=True).tile_summary()
    assert est.elements == rows * cols
    assert est.kept_elements + est.candidate_elements <= rows * cols
    # with every row read, the estimate's tiles are the engine's: sparse ones and dense ones (all stored)
    assert est.candidate_nnz == pytest.approx(summary["sparse"]["nnz"])
    assert est.kept_elements == pytest.approx(summary["dense"]["nnz"])


def test_the_sample_reads_one_row_in_stride():
    D = np.zeros((256, 512))
    D[:, ::16] = 1.0  # every row alike: the sample is exact
    D[::8, :] = 0.0  # ... except that the sampled rows (0, 8, ...) are empty
    est = pertask.estimate(D, 128, threshold=None, stride=8)
    assert est.candidate_nnz == 0 and est.kept_elements == 0  # it saw only the sampled rows
    D[::8, :] = D[1]
    est = pertask.estimate(D, 128, threshold=None, stride=8)
    assert est.candidate_nnz == pytest.approx(np.count_nonzero(D))


def test_costs_are_positive_and_calibrated_once():
    first = pertask.calibrate()
    assert pertask.calibrate() is first
    for name, value in first.as_dict().items():
        assert np.isfinite(value) and value >= 0.0, name
    assert first.copy > 0 and first.dense > 0 and first.count > 0


@pytest.mark.parametrize("phase, remote, expected", [
    # Graph500 panels shipped to another worker: 8 bytes per element against a few per non-zero
    (wl.PHASES[0].scaled(scale=10, panels=4), True, True),
    # 30%-full blocks made and read once on the same worker: the inspection and conversion do not pay
    (wl.PHASES[1].scaled(scale=10, panels=4), False, False),
    # sparse panels kept local but read for 16 vectors: compression pays by reuse alone
    (phase_sets.HELD_OUT_PHASES[0].scaled(scale=10, panels=4), False, True),
])
def test_decisions_on_the_workload_panels(phase, remote, expected):
    dense, source = _panel(phase)
    assert pertask.decide(dense, source.tile, source.threshold, reads=phase.vectors, remote=remote,
                          bandwidth=1.2e8) is expected


def test_a_faster_link_makes_shipping_uncompressed_cheaper():
    dense, source = _panel(wl.PHASES[0].scaled(scale=10, panels=4))
    est = pertask.estimate(dense, source.tile, source.threshold)
    costs = pertask.calibrate()
    slow = pertask.seconds(est, costs, reads=1, remote=True, bandwidth=1e8)
    fast = pertask.seconds(est, costs, reads=1, remote=True, bandwidth=1e10)
    assert slow[1] - slow[0] > fast[1] - fast[0] > -1.0


def test_rule_logs_each_decision_and_the_producer_uses_it():
    pertask.drain()
    phase = wl.PHASES[0].scaled(scale=10, panels=4)
    source = phase.source()
    lo, hi = wl.panel_bounds(phase.grid, phase.panels)[0]
    panel = wl.produce_panel(source, lo, hi, pertask.PerTask(reads=1, remote=True))
    assert panel.tile_summary()["sparse"]["tiles"] > 0  # compressed
    panel = wl.produce_panel(source, lo, hi, pertask.PerTask(reads=1, remote=False))
    logged = pertask.drain()
    assert [d["compress"] for d in logged] == [True, panel.tile_summary()["sparse"]["tiles"] > 0]
    assert all(d["why"] == "payoff" and d["on_s"] >= 0 and d["off_s"] >= 0 for d in logged)
    assert pertask.drain() == []


@pytest.mark.parametrize("on, off, mode_on, expected", [
    (1.0, 2.0, False, (True, "payoff")), (2.0, 1.0, True, (False, "payoff")),
    (1.0, 1.2, False, (False, "mode")), (1.2, 1.0, True, (True, "mode")),
])
def test_hybrid_takes_the_mode_on_close_calls_only(on, off, mode_on, expected):
    assert pertask.hybrid(on, off, mode_on, margin=1.25) == expected


def _decide_under(rule, *boards):
    """``rule``'s decision on a sparse shipped panel under each board state in turn, and what it logged."""
    from asafe.schedulers import board

    pertask.drain()
    dense, source = _panel(wl.PHASES[0].scaled(scale=10, panels=4))
    saved = board.snapshot()
    try:
        decided = []
        for states in boards:
            board.publish(states)
            decided.append(rule(dense, source.tile, source.threshold))
    finally:
        board.restore(saved)
    return decided, pertask.drain()


def test_hybrid_rule_reads_the_mode():
    rule = pertask.PerTask(reads=1, remote=True, prior=True)
    _, logged = _decide_under(rule, {"compression": False}, {"compression": True})
    for d, state in zip(logged, (False, True)):
        expected = pertask.hybrid(d["on_s"], d["off_s"], state)
        assert (d["compress"], d["why"]) == expected


@pytest.mark.parametrize("compression, per_task, expected", [
    (True, False, (True, "mode")), (True, True, (True, "mode")),  # the mode has compression on: no sample
    (False, False, (False, "mode")),  # neither: not compressed, no sample
    (False, True, None),  # compression off, the per-task optimization on: the rule decides from its sample
])
def test_a_deferred_rule_asks_the_mode_first(compression, per_task, expected):
    rule = pertask.PerTask(reads=1, remote=True, deferred=True)
    (decided,), (d,) = _decide_under(rule, {"compression": compression, pertask.PER_TASK: per_task})
    if expected is None:  # the payoff of a sparse shipped panel: compress, with the costs logged
        assert (decided, d["why"]) == (True, "payoff") and d["on_s"] < d["off_s"]
    else:
        assert (decided, d["why"]) == expected and d["on_s"] is None and d["off_s"] is None


def test_a_rule_is_a_hybrid_or_deferred_not_both():
    with pytest.raises(ValueError, match="either a hybrid"):
        pertask.PerTask(reads=2, remote=False, prior=True, deferred=True)


def test_adaptive_sampling_runs_the_per_task_optimization_from_the_calibrated_reuse():
    from asafe.core.mode import ModeVector

    plain = variants.adaptive_runtime()
    sampling = evaluation_variants.sampling_runtime()
    assert list(plain.optimizations) == ["compression"]
    assert list(sampling.optimizations) == ["compression", pertask.PER_TASK]
    domain = sampling.optimizations[pertask.PER_TASK].domain
    low = variants.DEFAULT_THRESHOLDS.per_task_reuse
    assert domain.decide(ModeVector({"compute": 1.0}, reuse=low), False)
    assert not domain.decide(ModeVector({"compute": 1.0}, reuse=low - 1), True)
    assert not domain.decide(ModeVector({"compute": 1.0}, reuse=float("nan")), True)


@pytest.mark.parametrize("reads", [0, -1, 1.5, True, "2"])
def test_bad_reads_are_refused(reads):
    with pytest.raises(ValueError, match="reads must be an integer >= 1"):
        pertask.PerTask(reads=reads, remote=False)


@pytest.mark.parametrize("dense, tile, stride, message", [
    (np.zeros(8), 4, 1, "2-D panel"), (np.zeros((4, 4)), 0, 1, "tile must be"),
    (np.zeros((4, 4)), 2, 0, "stride must be"), (np.zeros((4, 4)), 2.5, 1, "tile must be"),
])
def test_estimate_refuses_bad_input(dense, tile, stride, message):
    with pytest.raises(ValueError, match=message):
        pertask.estimate(dense, tile, stride=stride)


def test_variants_are_checked():
    assert variants.check_variants("adaptive, per-task,static-on,static-off") == (
        "adaptive", "per-task", "static-on", "static-off")
    with pytest.raises(ValueError, match="unknown variant"):
        variants.check_variants(["adaptive", "greedy", "static-on", "static-off"])
    with pytest.raises(ValueError, match="named twice"):
        variants.check_variants(["static-on", "static-on", "static-off"])
    with pytest.raises(ValueError, match="compress must be"):
        runner._per_panel("sometimes", wl.TEST_PHASES[0], [("a", "b")])
