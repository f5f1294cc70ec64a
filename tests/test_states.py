"""States beyond on/off: a domain may choose a value (a codec, a thread count), read in tasks by asafe.state."""
from __future__ import annotations

import logging
import math

import dask
import pytest
from hypothesis import given
from hypothesis import strategies as st

import asafe
from asafe.core.states import same
from asafe.schedulers import board


def test_a_domain_that_chooses_a_value_sets_the_state_and_tasks_read_it():
    codec = asafe.Gated(asafe.Hysteresis(0.5, 2.0), asafe.Bands("bandwidth", [200e6], ["zstd", "lz4"]))
    rt = asafe.AdaptiveRuntime([asafe.Optimization("codec", codec)], dwell=0, dwell_tasks=0, signals=False)
    slow = asafe.ModeVector({"compute": 1, "communication": 4}, bandwidth=1e8)
    assert [(t.old, t.new) for t in rt.evaluate(mode=slow)] == [(False, "zstd")]
    fast = asafe.ModeVector({"compute": 1, "communication": 4}, bandwidth=4e8)
    assert [(t.old, t.new) for t in rt.evaluate(mode=fast)] == [("zstd", "lz4")]
    assert rt.history[-1].as_dict()["to"] == "lz4"
    pinned = asafe.AdaptiveRuntime([asafe.Optimization("codec", asafe.Fixed("lz4"))], signals=False)
    with asafe.adaptive(pinned, scheduler="sync"):
        seen = dask.compute(dask.delayed(lambda: (asafe.state("codec"), asafe.is_on("codec")))())[0]
    assert seen == ("lz4", True)
    assert asafe.state("codec") is None and asafe.is_on("codec") is False  # outside the run


def test_true_is_not_the_state_one():
    assert not same(True, 1) and not same(False, 0) and same("lz4", "lz4") and same(2, 2)
    rt = asafe.AdaptiveRuntime([asafe.Optimization("threads", asafe.Fixed(1), initial=True)], signals=False)
    assert [(t.old, t.new) for t in rt.evaluate(mode=asafe.ModeVector({"compute": 1}))] == [(True, 1)]


def test_a_domain_that_returns_no_state_keeps_the_state_and_is_recorded():
    class Broken(asafe.EfficiencyDomain):
        def decide(self, mode, state):
            return None

    rt = asafe.AdaptiveRuntime([asafe.Optimization("x", Broken(), initial="lz4")], signals=False)
    assert rt.evaluate(mode=asafe.ModeVector({"compute": 1})) == []
    assert rt.state("x") == "lz4"
    assert "must be a state" in rt.errors[-1].error


@given(st.lists(st.floats(min_value=0, max_value=1e9, allow_nan=False), min_size=1, max_size=60),
       st.floats(min_value=0, max_value=0.5))
def test_bands_always_choose_one_of_their_states_and_switch_only_past_the_margin(values, margin):
    bands = asafe.Bands("bandwidth", [1e8, 3e8], ["zstd", "lz4", False], margin=margin)
    state = "zstd"
    for value in values:
        new = bands.decide(asafe.ModeVector({}, bandwidth=value), state)
        assert any(same(new, known) for known in bands.states)
        if not same(new, state):  # it left the old state's band by more than the margin
            old = next(i for i, known in enumerate(bands.states) if same(known, state))
            low = bands.edges[old - 1] * (1 - margin) if old > 0 else -math.inf
            high = bands.edges[old] * (1 + margin) if old < 2 else math.inf
            assert not low <= value <= high
        state = new
    assert bands.decide(asafe.ModeVector({}, bandwidth=math.nan), state) is state  # unknown: kept


def test_gated_configuration_entries_build_nested_domains():
    domain = asafe.Gated({"domain": "asafe.Hysteresis", "kwargs": {"alpha": 0.5, "beta": 2.0}},
                         {"domain": "asafe.Fixed", "kwargs": {"state": "zstd"}})
    assert repr(domain) == "Gated(Hysteresis(alpha=0.5, beta=2.0, metric='ratio'), Fixed('zstd'), off=False)"
    with pytest.raises(asafe.core.validate.InvalidSetting, match="one state more than edges"):
        asafe.Bands("bandwidth", [1.0], ["a"])


def test_asking_for_an_optimization_the_runtime_does_not_know_warns_once(caplog):
    previous = board.publish({"compression": True})
    try:
        with caplog.at_level(logging.WARNING, logger="asafe"):
            assert asafe.is_on("compresion") is False
            assert asafe.is_on("compresion") is False
            assert asafe.state("compresion", "off") == "off"
    finally:
        board.restore(previous)
    warned = [r.getMessage() for r in caplog.records if "compresion" in r.getMessage()]
    assert len(warned) == 1 and "did you mean 'compression'" in warned[0]
    assert asafe.is_on("anything") is False  # outside any run: no warning, library code may ask freely
