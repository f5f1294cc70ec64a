"""Declared reuse (asafe.core.reuse) and the domains that read it (AtLeast, AnyOf)."""
from __future__ import annotations

import math
from collections import deque

import dask
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asafe
from asafe.core.reuse import REUSE_ANNOTATION, DeclaredReuse, declared_reuse, validate_reuse


# --------------------------------------------------------------------------- the public boundary
@pytest.mark.parametrize("bad, error", [(0, ValueError), (0.99, ValueError), (math.inf, ValueError),
                                        (math.nan, ValueError), (-3, ValueError), ("16", TypeError),
                                        (True, TypeError), (None, TypeError), ([2], TypeError)])
def test_reuse_refuses_what_is_not_a_finite_number_of_reads(bad, error):
    with pytest.raises(error, match="reuse must be"):
        with asafe.reuse(bad):
            pass
    assert REUSE_ANNOTATION not in dask.get_annotations()  # nothing left annotated


def test_reuse_annotates_the_tasks_built_inside_and_restores():
    with asafe.reuse(4) as times:
        inside = dask.delayed(sum)([1, 2])
    outside = dask.delayed(sum)([3, 4])
    assert times == 4.0
    assert inside.__dask_graph__().layers[inside.key].annotations == {REUSE_ANNOTATION: 4.0}
    assert not outside.__dask_graph__().layers[outside.key].annotations
    with asafe.task_type("io"), asafe.reuse(2):  # composes with a type
        both = dask.delayed(sum)([5])
    assert both.__dask_graph__().layers[both.key].annotations == {"asafe_type": "io", REUSE_ANNOTATION: 2.0}


def test_declared_reuse_of_annotations():
    assert declared_reuse(None) is None and declared_reuse({}) is None
    assert declared_reuse({"asafe_type": "io"}) is None
    assert declared_reuse({REUSE_ANNOTATION: 3}) == 3.0
    with pytest.raises(ValueError):
        declared_reuse({REUSE_ANNOTATION: 0})
    assert validate_reuse(1) == 1.0


def test_declared_reuse_window_must_be_positive():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="window"):
            DeclaredReuse(window=bad)


# --------------------------------------------------------------------------- the signal
def test_a_restart_forgets_the_scheduled_but_not_the_finished():
    r = DeclaredReuse(window=8)
    r.add(4)
    r.remove(4, finished=True)
    r.add(16)
    r.clear_scheduled()
    assert r.scheduled == 0 and r.value == 4.0


_events = st.lists(st.tuples(st.sampled_from(["add", "finish", "release", "undeclared"]),
                             st.one_of(st.none(), st.sampled_from([1.0, 2.0, 16.0, 3.5]))), max_size=80)


@settings(max_examples=200, deadline=None)
@given(_events, st.integers(1, 10))
def test_the_signal_is_the_mean_of_the_scheduled_else_of_the_recent_declarations(events, window):
    # a plain model: the scheduled declarations, and the last `window` finished tasks
    r = DeclaredReuse(window=window)
    scheduled: list = []
    recent: deque = deque(maxlen=window)
    for op, declared in events:
        if op == "add":
            r.add(declared)
            scheduled.append(declared)
        elif op in ("finish", "release") and scheduled:
            declared = scheduled.pop(0)
            r.remove(declared, finished=op == "finish")
            if op == "finish":
                recent.append(declared)
        elif op == "undeclared":
            r.finished(None)
            recent.append(None)
        now = [d for d in scheduled if d is not None]
        before = [d for d in recent if d is not None]
        expected = sum(now) / len(now) if now else (sum(before) / len(before) if before else math.nan)
        if math.isnan(expected):
            assert math.isnan(r.value)
        else:
            assert r.value == pytest.approx(expected)
        assert r.scheduled == len(now)


# --------------------------------------------------------------------------- the domains
def test_at_least_validates():
    with pytest.raises(ValueError, match="off <= on"):
        asafe.AtLeast("reuse", on=2, off=4)
    with pytest.raises(TypeError, match="metric"):
        asafe.AtLeast("", on=2)
    with pytest.raises(ValueError, match="non-negative"):
        asafe.AtLeast("reuse", on=-1)


def test_at_least_keeps_its_band():
    band = asafe.AtLeast("reuse", on=8, off=4)
    mode = asafe.ModeVector({"compute": 1}, reuse=6.0)
    assert band.decide(mode, True) is True and band.decide(mode, False) is False


def test_any_of_and_all_of_build_from_configuration_entries():
    entries = [{"domain": "asafe.Hysteresis", "kwargs": {"alpha": 1, "beta": 8}},
               {"domain": "asafe.AtLeast", "kwargs": {"metric": "reuse", "on": 16}}]
    either = asafe.AnyOf(entries)
    assert repr(either) == ("AnyOf([Hysteresis(alpha=1.0, beta=8.0, metric='ratio'), "
                            "AtLeast('reuse', on=16.0, off=16.0)])")
    with pytest.raises(ValueError, match="AnyOf needs at least one domain"):
        asafe.AnyOf([])
    with pytest.raises(TypeError, match=r"AnyOf domains\[0\] has no decide"):
        asafe.AnyOf([object()])
    with pytest.raises(ValueError, match=r"AllOf domains\[0\] must be"):
        asafe.AllOf([{"kwargs": {}}])


def test_the_default_compression_domain_reads_the_ratio_or_the_reuse():
    rt = asafe.AdaptiveRuntime(signals=False)
    domain = rt.optimizations["compression"].domain
    local = asafe.ModeVector({"compute": 1.0})
    assert domain.decide(local.replace(reuse=16.0), False) is True
    assert domain.decide(local.replace(reuse=2.0), True) is False
    assert domain.decide(local, True) is False  # nothing declared: the ratio decides
    shipped = asafe.ModeVector({"compute": 1.0, "communication": 4.0}, reuse=1.0)
    assert domain.decide(shipped, False) is True


_ratio = st.one_of(st.floats(0, 100), st.just(math.inf), st.just(math.nan))
_reuse = st.one_of(st.floats(1, 64), st.just(math.nan))


@settings(max_examples=300, deadline=None)
@given(_ratio, _reuse, st.booleans())
def test_any_of_is_on_exactly_when_one_part_is(ratio, reuse, state):
    parts = [asafe.Hysteresis(1.0, 8.0), asafe.AtLeast("reuse", on=16)]
    comm = 1.0
    compute = 0.0 if math.isnan(ratio) else (1.0 if math.isinf(ratio) else ratio)
    shares = {"compute": compute} if math.isinf(ratio) else (
        {} if math.isnan(ratio) else {"compute": compute, "communication": comm})
    mode = asafe.ModeVector(shares, reuse=reuse)
    decided = asafe.AnyOf(parts).decide(mode, state)
    assert decided == any(p.decide(mode, state) for p in parts)
    if not math.isnan(reuse) and reuse >= 16:
        assert decided  # enough declared reuse is on, whatever the ratio
    if (math.isnan(reuse) or reuse < 16) and mode.ratio > 8.0:
        assert not decided  # neither reason holds: off, whatever the state
