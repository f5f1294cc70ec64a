"""The rule that coalesces small graphs' arrivals (``AdaptiveSchedulerPlugin._coalesce_arrival``), as a property.

``tests/distributed/test_cluster_arrivals.py`` runs the rule on a LocalCluster;
here arbitrary sequences of arrivals (the gap before each, how many new tasks
it brings, whether the forecast planned transfers for it) drive the plugin's
``update_graph`` on a scripted clock and event loop (the module's ``time`` and
``asyncio`` replaced in the module only), and the invariants are checked:

* every arrival is evaluated at once or coalesced, never both or neither;
* an arrival evaluates at once where it brings more new tasks than the
  setting, where the forecast planned transfers for it, or where the latest
  evaluation is an interval old or more;
* every arrival is covered by an evaluation as an arrival no later than one
  interval after it;
* at most one covering evaluation is pending at a time, none runs without an
  arrival that waited for it, and no timer is left once the plugin is
  detached.
"""
from __future__ import annotations

import contextlib
import time as real_time
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asafe
from asafe.schedulers import scheduler_plugin

INTERVAL = 0.05


class ScriptedLoop:
    """``call_later`` on a scripted clock: the timers run when the test advances the clock past them."""

    def __init__(self):
        self.now = 100.0
        self.timers = []  # [due, callback, cancelled]

    def monotonic(self):
        return self.now

    def call_later(self, delay, callback):
        timer = [self.now + delay, callback, False]
        self.timers.append(timer)
        return types.SimpleNamespace(cancel=lambda: timer.__setitem__(2, True))

    def pending(self):
        return [t for t in self.timers if not t[2]]

    def advance(self, seconds):
        """Move the clock forward, running every timer due on the way at its due time."""
        until = self.now + seconds
        while True:
            due = sorted((t for t in self.pending() if t[0] <= until), key=lambda t: t[0])
            if not due:
                break
            timer = due[0]
            self.timers.remove(timer)
            self.now = max(self.now, timer[0])
            timer[1]()
        self.now = until


@contextlib.contextmanager
def _scripted():
    """A fresh scripted loop, the module's clock and event loop replaced by it while the block runs."""
    loop = ScriptedLoop()
    clock = types.SimpleNamespace(monotonic=loop.monotonic, thread_time=real_time.thread_time,
                                  perf_counter=real_time.perf_counter, time=real_time.time)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scheduler_plugin, "time", clock)
        patch.setattr(scheduler_plugin, "asyncio", types.SimpleNamespace(get_running_loop=lambda: loop))
        yield loop


@pytest.fixture
def scripted():
    with _scripted() as loop:
        yield loop


def _plugin(loop, coalesce, evaluations, arrival_plan):
    runtime = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))], signals=False)
    plugin = scheduler_plugin.AdaptiveSchedulerPlugin(runtime, evaluate_interval=INTERVAL,
                                                      coalesce_arrivals=coalesce)

    def evaluate(**event):
        evaluations.append((loop.now, event.get("arrival", False)))

    def arrive(tasks):  # update_graph's part per task: as scripted, new tasks and the transfers planned
        new, plans = arrival_plan.pop(0)
        if plans:
            plugin.forecast.planned += 0.01
        return new

    plugin.runtime = types.SimpleNamespace(evaluate=evaluate)
    plugin._arrive = arrive
    plugin._worth_probing = lambda: False
    plugin._attached = True
    return plugin


arrivals = st.lists(st.tuples(st.floats(0.0, 3 * INTERVAL, allow_nan=False),  # the gap before it
                              st.integers(1, 4),  # new tasks
                              st.booleans()),  # the forecast planned transfers for it
                    min_size=1, max_size=30)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(sequence=arrivals, coalesce=st.integers(0, 3))
def test_every_arrival_is_covered_within_one_interval(sequence, coalesce):
    with _scripted() as scripted:
        _check_coalescing(scripted, sequence, coalesce)


def _check_coalescing(scripted, sequence, coalesce):
    evaluations, plan = [], [(new, plans) for _, new, plans in sequence]
    plugin = _plugin(scripted, coalesce, evaluations, plan)
    times, at_once = [], []
    for gap, new, plans in sequence:
        scripted.advance(gap)
        latest = max((t for t, _ in evaluations), default=None)
        before = plugin.arrivals["at_once"]
        plugin.update_graph(None, tasks=["k"])
        assert len(scripted.pending()) <= 1  # one covering evaluation pending at most
        evaluated_now = plugin.arrivals["at_once"] == before + 1
        # the plugin's own arithmetic: the interval ends at the latest evaluation + INTERVAL
        must = new > coalesce or plans or latest is None or scripted.now >= latest + INTERVAL
        assert evaluated_now == must
        if evaluated_now:
            assert evaluations[-1] == (scripted.now, True)  # evaluated as an arrival, now
            evaluations[-1] = (scripted.now, "at once")
        else:
            evaluations.append((scripted.now, "waits"))
        times.append(scripted.now)
        at_once.append(evaluated_now)
    scripted.advance(10 * INTERVAL)
    counts = plugin.arrivals
    assert counts["at_once"] + counts["coalesced"] == len(sequence)
    assert counts["at_once"] == sum(at_once)
    waiting = 0  # an evaluation at an interval's end covers an arrival that waited since the arrivals' evaluation before
    for _, event in evaluations:
        if event == "waits":
            waiting += 1
        elif event == "at once":
            waiting = 0
        elif event is True:
            assert waiting
            waiting = 0
    covering = [t for t, event in evaluations if event in (True, "at once")]
    assert len(covering) == counts["at_once"] + counts["covering"]
    for t in times:  # every arrival: an evaluation as an arrival within one interval after it
        assert any(t <= e <= t + INTERVAL + 1e-9 for e in covering)
    assert not scripted.pending()


def test_detaching_cancels_a_pending_covering_evaluation(scripted):
    evaluations = []
    plugin = _plugin(scripted, 1, evaluations, [(5, False), (1, False)])
    plugin.update_graph(None, tasks=["a"])  # at once
    scripted.advance(INTERVAL / 5)
    plugin.update_graph(None, tasks=["b"])  # waits
    assert plugin.arrivals == {"at_once": 1, "coalesced": 1, "covering": 0}
    assert len(scripted.pending()) == 1
    plugin.detach()
    assert not scripted.pending()
    scripted.advance(INTERVAL)
    assert len(evaluations) == 1  # nothing evaluated after the detach


def test_an_arrival_off_an_event_loop_is_evaluated_at_once(monkeypatch):
    """A direct call with no running loop (a test, a script) has no timer to wait on: at once."""
    loop = ScriptedLoop()
    monkeypatch.setattr(scheduler_plugin, "time", types.SimpleNamespace(monotonic=loop.monotonic))
    evaluations = []
    plugin = _plugin(loop, 1, evaluations, [(5, False), (1, False)])
    plugin.update_graph(None, tasks=["a"])
    loop.advance(INTERVAL / 5)
    plugin.update_graph(None, tasks=["b"])  # the real asyncio: no running loop here
    assert plugin.arrivals == {"at_once": 2, "coalesced": 0, "covering": 0}
