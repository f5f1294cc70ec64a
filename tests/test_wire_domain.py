"""The wire-compression domain, scripted: Gated(AllOf(ratio, external cpu, bandwidth hysteresis), Bands(bandwidth)).

The gate decides on or off; on, the state is the link's speed band in MB/s
(the codec's cost model reads it). The on/off scripts compare ``bool(state)``.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

import asafe
from asafe.core.runtime import load_optimizations


def wire_domain():
    (opt,) = [o for o in load_optimizations() if o.name == "wire-compression"]
    return opt.domain


def on_off(history):
    """The transitions that switched it on or off (a change of band while on is no switch)."""
    return [(bool(t.old), bool(t.new)) for t in history if bool(t.old) != bool(t.new)]


GBIT = 125e6  # bytes per second


def mode(ratio, cpu, bandwidth=GBIT, host_cpu=1.0):
    """A mode with this compute/communication ratio, external cpu load and link bandwidth.

    The host's cpu load is 1.0 unless said otherwise: the domain must not read it.
    """
    signals = {"external_cpu": cpu, "bandwidth": bandwidth, "cpu": host_cpu}
    if math.isnan(ratio):  # an idle scheduler
        return asafe.ModeVector({}, **signals)
    return asafe.ModeVector({"compute": ratio, "communication": 1.0}, **signals)


def test_default_domain_flip_flop_scripted():
    # dwell 0: each step's decision is the domain's alone
    rt = asafe.AdaptiveRuntime(
        [asafe.Optimization("wire-compression", wire_domain())], dwell=0, dwell_tasks=0, signals=False
    )
    script = [
        # (ratio, cpu, expected state after the step)
        (3.0, 0.1, False),   # compute dominates
        (0.3, 0.7, False),   # communication dominates, but no cpu headroom (0.7 > alpha 0.5)
        (0.3, 0.4, True),    # both: on
        (1.0, 0.7, True),    # both in their bands: kept
        (0.3, 0.85, False),  # cpu above its beta 0.8: off at once
        (0.3, 0.6, False),   # cpu in its band: stays off
        (0.2, 0.2, True),    # on again
        (2.5, 0.2, False),   # ratio above beta: off
        (1.5, 0.2, False),   # ratio in its band: stays off
        (0.4, 0.49, True),
        (math.nan, 0.9, False),  # idle ratio keeps nothing on while the cpu is saturated
    ]
    states = []
    for i, (ratio, cpu, _) in enumerate(script):
        rt.evaluate(mode(ratio, cpu), now=float(i))
        states.append(bool(rt.state("wire-compression")))
    assert states == [expected for _, _, expected in script]
    assert on_off(rt.history) == [
        (False, True), (True, False), (False, True), (True, False), (False, True), (True, False)
    ]


def test_the_link_part_flip_flop_scripted():
    # communication dominates and the cpus are free throughout; only the link changes
    rt = asafe.AdaptiveRuntime(
        [asafe.Optimization("wire-compression", wire_domain())], dwell=0, dwell_tasks=0, signals=False
    )
    script = [
        # (bandwidth in bytes/s, expected state after the step)
        (3e9, False),     # loopback (25 Gbit/s here): the codec is slower than the link
        (400e6, False),   # in the band: stays off
        (GBIT, True),     # 1 Gbit/s: on
        (400e6, True),    # in the band (a fast burst): kept, no flip
        (600e6, False),   # above 500 MB/s: off
        (240e6, True),    # below 250 MB/s: on
    ]
    bands = []
    for i, (bandwidth, _) in enumerate(script):
        rt.evaluate(mode(0.1, 0.1, bandwidth), now=float(i))
        bands.append(rt.state("wire-compression"))
    assert [(bool(t.old), bool(t.new), t.mode.signals["bandwidth"]) for t in rt.history
            if bool(t.old) != bool(t.new)] == [(False, True, GBIT), (True, False, 600e6), (False, True, 240e6)]
    # on, the state is the link's band in MB/s: 1 Gbit/s reads 120, a burst to 400 MB/s 480, 240 MB/s 240
    assert bands == [False, False, 120, 480, False, 240]


def test_the_runs_own_cpu_load_does_not_switch_it_off():
    # the host reads saturated (the workers compressing), the others' load is low: kept on
    domain = wire_domain()
    assert domain.decide(mode(0.3, 0.1, host_cpu=1.0), False) == 120  # on: the band of 1 Gbit/s
    assert domain.decide(mode(0.3, 0.1, host_cpu=1.0), 120) == 120
    # other processes saturate the cpus (a competing compute job): off, and never on
    assert domain.decide(mode(0.3, 0.95, host_cpu=1.0), 120) is False
    assert domain.decide(mode(0.3, 0.95, host_cpu=1.0), False) is False


def test_dwell_delays_both_directions():
    rt = asafe.AdaptiveRuntime(
        [asafe.Optimization("wire-compression", wire_domain())], dwell=1.0, dwell_tasks=0, signals=False
    )
    rt.evaluate(mode(0.3, 0.3), now=0.0)
    assert rt.state("wire-compression")
    rt.evaluate(mode(0.3, 0.95), now=0.5)  # cpu saturated but within the dwell
    assert rt.state("wire-compression")
    rt.evaluate(mode(0.3, 0.95), now=1.0)
    assert not rt.state("wire-compression")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 10), st.floats(0, 1), st.floats(1e6, 1e10)), min_size=1, max_size=40),
       st.booleans())
def test_never_on_while_a_part_is_above_its_upper_threshold(steps, initial):
    domain = wire_domain()
    ratio_part, cpu_part, link_part = domain.gate.domains
    assert (cpu_part.metric, link_part.metric) == ("external_cpu", "bandwidth")
    state = initial
    for ratio, cpu, bandwidth in steps:
        old = state
        state = domain.decide(mode(ratio, cpu, bandwidth), state)
        if cpu > cpu_part.beta or ratio > ratio_part.beta or bandwidth > link_part.beta:
            assert state is False
        if not old and state:  # it only turns on where every part is below its alpha
            assert ratio < ratio_part.alpha and cpu < cpu_part.alpha and bandwidth < link_part.alpha
    assert domain.decide(mode(0.3, cpu_part.alpha + 0.01), False) is False
    assert domain.decide(mode(0.3, 0.1, link_part.alpha + 1), False) is False


def test_all_of_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        asafe.AllOf([])
    with pytest.raises(TypeError, match="decide"):
        asafe.AllOf([object()])
    with pytest.raises(ValueError, match="alpha <= beta"):
        asafe.AllOf([{"domain": "asafe.Hysteresis", "kwargs": {"alpha": 0.9, "beta": 0.5, "metric": "cpu"}}])
    with pytest.raises(ValueError, match="must be a domain"):
        asafe.AllOf([{"domian": "asafe.Hysteresis"}])
