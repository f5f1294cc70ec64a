"""Bad values reaching the mode tracker: ignored, counted, warned about once, never raised.

The tracker runs inside scheduler callbacks, where a raise stops the run. Each
test here fails on a tracker that takes NaN, infinities, negative values or
non-integer counts at face value.
"""
import logging
import math
import types

import dask
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asafe
from asafe import ModeTracker, ModeVector
from asafe.schedulers import local

NAN, INF = float("nan"), float("inf")


def test_one_nan_duration_does_not_remove_a_type_from_the_measured_view(caplog):
    tracker = ModeTracker(window=8, blend=1.0, default_duration=1.0)
    tracker.add("compute", "inc")
    with caplog.at_level(logging.WARNING, logger="asafe"):
        tracker.finish("compute", "inc", NAN)
        tracker.finish("compute", "inc", NAN, scheduled=False)
    tracker.finish("compute", "inc", 2.0, scheduled=False)
    tracker.observe("communication", 2.0)
    assert tracker.measured_work() == {"compute": 2.0, "communication": 2.0}
    assert tracker.expected_duration("compute", "inc") == 2.0
    assert tracker.scheduled_work() == {}  # the task still left the scheduled set
    assert tracker.mode().shares == {"compute": 0.5, "communication": 0.5}
    assert tracker.rejected == {"finish: duration is nan": 2}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # once per kind of problem, then counted
    message = warnings[0].getMessage()
    assert "duration=nan" in message and "finite number of seconds" in message


@pytest.mark.parametrize("bad", [INF, -INF, -1.0, 1e300, "soon", None])
def test_a_bad_duration_never_makes_mode_raise(bad):
    tracker = ModeTracker(window=8, blend=0.5, default_duration=1.0)
    tracker.add("compute", "inc")
    tracker.add("compute", "inc")
    tracker.add("communication", "send")
    tracker.finish("compute", "inc", bad)
    tracker.observe("communication", bad)
    mode = tracker.mode()
    assert math.isfinite(mode["compute"]) and math.isfinite(mode["communication"])
    assert tracker.scheduled_work() == {"compute": 1.0, "communication": 1.0}
    assert tracker.measured_work() == {}
    assert tracker.finished == 1
    assert sum(tracker.rejected.values()) == 2


def test_a_negative_discard_count_does_not_grow_the_scheduled_set(caplog):
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    tracker.add("compute", "inc")
    with caplog.at_level(logging.WARNING, logger="asafe"):
        tracker.discard("compute", "inc", -5)
        tracker.discard("compute", "inc", 1.5)
        tracker.discard("compute", "inc", True)
    assert tracker.scheduled_work() == {"compute": 1.0}
    assert tracker.rejected == {"discard: count is negative": 1, "discard: count is not an integer": 1,
                                "discard: count is a bool": 1}
    assert any("count=-5" in r.getMessage() and "an integer in [0, 2**53]" in r.getMessage() for r in caplog.records)
    tracker.discard("compute", "inc", 3)  # more than scheduled: down to zero, never below
    assert tracker.scheduled_work() == {}


def test_a_batch_with_bad_entries_applies_its_good_parts():
    tracker = ModeTracker(window=8, blend=1.0, default_duration=1.0)
    tracker.ingest([
        ("compute", "inc", 3, 1, INF),  # adds apply; the finish leaves, unlearned
        ("compute", "dec", -2, 0, 0.0),  # a negative add: ignored
        ("communication", "send", 1, -1, 1.0),  # a negative finish: ignored
        ("io", "read", 1, 1, NAN),
        ("compute", "mul", 1, 1, 0.5),  # a good entry after bad ones
        ("broken",),  # not an entry at all
        ("", "x", 1, 0, 0.0),  # not a type
    ])
    assert tracker.scheduled_work() == {"compute": 2.0 + 0.0, "communication": 1.0}
    assert tracker.measured_work() == {"compute": 0.5}
    assert tracker.expected_duration("compute", "inc") == 1.0
    assert tracker.finished == 3
    assert tracker.rejected == {
        "ingest: seconds is infinite": 1,
        "ingest: added is negative": 1,
        "ingest: finished is negative": 1,
        "ingest: seconds is nan": 1,
        "ingest: entry is not a 5-tuple": 1,
        "ingest: task_type is an empty str": 1,
    }
    assert all(math.isfinite(v) for v in tracker.mode().shares.values())


@pytest.mark.parametrize("hooks", ["compiled", "python"])
def test_a_broken_clock_in_the_per_task_hooks_does_not_stop_the_run(hooks, monkeypatch, request):
    """The clock goes to +inf mid-run: durations of inf and nan reach ingest through flush."""
    ticks = iter([0.0, INF] * 1000)

    def clock():
        return next(ticks)

    if hooks == "compiled":
        real = request.getfixturevalue("hotpath")
        monkeypatch.setattr(local, "_hotpath", types.SimpleNamespace(
            Hooks=lambda resolve, flush, prefix: real.Hooks(resolve, flush, prefix, clock)))
    else:
        monkeypatch.setattr(local, "perf_counter", clock)
    rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))],
                               dwell=0, dwell_tasks=0, interval=0, signals=False, window=16)

    @asafe.typed(asafe.COMMUNICATION)
    def ship(i):
        return i

    with dask.config.set({"asafe.local.compiled-hooks": hooks == "compiled"}), asafe.adaptive(rt, scheduler="sync"):
        (out,) = dask.compute([dask.delayed(ship, pure=False)(i) for i in range(20)])
    assert out == list(range(20))
    assert rt.tracker.finished == 20
    assert rt.tracker.rejected.get("ingest: seconds is infinite", 0) >= 1
    assert rt.tracker.scheduled_work() == {}
    assert all(math.isfinite(v) for v in rt.mode.shares.values())


def _values():
    return st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-3, 3),
        st.sampled_from([NAN, INF, -INF, -0.0, 1e308, "x", None]),
    )


stream = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(["compute", "communication", "io", ""]), st.sampled_from(["a", "b"])),
        st.tuples(st.just("finish"), st.sampled_from(["compute", "communication"]), st.sampled_from(["a", "b"]),
                  _values(), st.booleans()),
        st.tuples(st.just("discard"), st.sampled_from(["compute", "communication"]), st.sampled_from(["a", "b"]),
                  st.one_of(st.integers(-5, 5), _values())),
        st.tuples(st.just("observe"), st.sampled_from(["compute", "communication", 7]), _values()),
        st.tuples(st.just("ingest"), st.lists(st.tuples(
            st.sampled_from(["compute", "communication"]), st.sampled_from(["a", "b"]),
            st.one_of(st.integers(-3, 5), _values()), st.one_of(st.integers(-3, 5), _values()), _values()),
            max_size=4)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(stream)
def test_whatever_the_events_mode_is_valid_and_counts_never_negative(events):
    tracker = ModeTracker(window=5, blend=0.5, default_duration=0.5)
    for event in events:
        getattr(tracker, event[0])(*event[1:])  # never raises
        for group in tracker._groups.values():
            assert group.count >= 0 and math.isfinite(group.expected) and group.expected >= 0
        assert all(count >= 0 for count in tracker._counts.values())
    mode = tracker.mode()
    assert isinstance(mode, ModeVector)
    assert all(math.isfinite(v) and v >= 0 for v in mode.shares.values())
    assert not mode.shares or sum(mode.shares.values()) == pytest.approx(1.0)
    assert all(math.isfinite(w) for w in (*tracker.scheduled_work().values(), *tracker.measured_work().values()))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1, 0, "soon", None, 1e12])
def test_prime_ignores_what_is_not_a_duration(bad):
    tracker = ModeTracker(window=4, blend=0.0, default_duration=0.001)
    tracker.add("compute", "p")
    assert tracker.prime("compute", "p", bad) is False
    assert tracker.scheduled_work() == {"compute": 0.001}
    assert tracker.prime("", "p", 1.0) is False  # an invalid type: no group
    tracker.add("compute", "q", prior=bad)  # the same rule when the prior comes with the task
    assert tracker.expected_duration("compute", "q") == 0.001
