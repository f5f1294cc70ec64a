"""The mode tracker on scripted event streams: exact shares, learning, window, bounds."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asafe import ModeTracker
from asafe.core.tracker import EventBatch


def test_scheduled_shares_use_expected_durations():
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    tracker.add("compute", "inc")
    tracker.add("communication", "send")
    tracker.add("communication", "send")
    tracker.add("communication", "send")
    assert tracker.scheduled_work() == {"compute": 1.0, "communication": 3.0}
    assert tracker.mode().shares == {"compute": 0.25, "communication": 0.75}


def test_learned_durations_reprice_scheduled_tasks():
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    for _ in range(3):
        tracker.add("compute", "inc")
    tracker.add("communication", "send")
    tracker.finish("compute", "inc", 5.0)  # first measurement replaces the default
    # two inc tasks still scheduled, now expected to take 5 s each
    assert tracker.scheduled_work() == {"compute": 10.0, "communication": 1.0}
    tracker.finish("compute", "inc", 1.0)  # moving average (5 + 1) / 2 = 3
    assert tracker.expected_duration("compute", "inc") == 3.0
    assert tracker.scheduled_work() == {"compute": 3.0, "communication": 1.0}


def test_new_prefix_starts_from_its_type_average():
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    tracker.finish("compute", "inc", 4.0, scheduled=False)
    assert tracker.expected_duration("compute", "double") == 4.0
    assert tracker.expected_duration("io", "read") == 1.0


def test_measured_window_slides():
    tracker = ModeTracker(window=3, blend=1.0, default_duration=1.0)
    tracker.observe("communication", 3.0)
    tracker.finish("compute", "inc", 1.0, scheduled=False)
    assert tracker.measured_work() == {"communication": 3.0, "compute": 1.0}
    tracker.finish("compute", "inc", 1.0, scheduled=False)
    tracker.finish("compute", "inc", 1.0, scheduled=False)  # pushes the transfer out
    assert tracker.measured_work() == {"compute": 3.0}
    assert tracker.mode().ratio == float("inf")


def test_blend_of_scheduled_and_measured():
    tracker = ModeTracker(window=4, blend=0.25, default_duration=1.0)
    tracker.add("compute", "inc")  # scheduled: all compute
    tracker.observe("communication", 1.0)  # measured: all communication
    assert tracker.mode().shares == {"compute": 0.75, "communication": 0.25}


def test_one_empty_view_gives_the_other():
    tracker = ModeTracker(window=4, blend=0.5, default_duration=1.0)
    tracker.observe("communication", 1.0)
    assert tracker.mode().shares == {"communication": 1.0}
    assert ModeTracker().mode().shares == {}


def test_discard_removes_without_learning():
    tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
    tracker.add("compute", "inc")
    tracker.add("compute", "inc")
    tracker.discard("compute", "inc")
    tracker.discard("compute", "never-added")
    assert tracker.scheduled_work() == {"compute": 1.0}
    assert tracker.measured_work() == {}
    assert tracker.finished == 0


def test_clear_scheduled_keeps_learning():
    tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
    tracker.add("compute", "inc")
    tracker.finish("compute", "inc", 2.0)
    tracker.add("compute", "inc")
    tracker.clear_scheduled()
    assert tracker.scheduled_work() == {}
    assert tracker.expected_duration("compute", "inc") == 2.0


def test_memory_is_bounded_whatever_the_graph_size():
    tracker = ModeTracker(window=16, max_groups=32)
    for i in range(5000):
        tracker.add("compute", f"prefix-{i}")
        tracker.finish("compute", f"prefix-{i}", 0.001)
    assert len(tracker) <= 32 + 4
    assert len(tracker._ring_types) == len(tracker._ring_seconds) == len(tracker._ring_counts) == 16
    assert tracker._ring_total == 16


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"window": 0}, "window must be an integer >= 1"),
        ({"window": 2.5}, "window must be an integer >= 1"),
        ({"blend": 1.5}, r"blend must be a number from 0 to 1"),
        ({"default_duration": 0}, "default_duration must be"),
        ({"max_groups": 0}, "max_groups must be an integer >= 1"),
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModeTracker(**kwargs)


events = st.lists(
    st.tuples(st.sampled_from(["add", "finish", "discard", "observe"]), st.sampled_from(["compute", "communication", "io"]),
              st.sampled_from(["a", "b"]), st.floats(0.0, 10.0)),
    max_size=200,
)


@settings(max_examples=100, deadline=None)
@given(events)
def test_scheduled_work_equals_count_times_expected(stream):
    """The O(1) running sums always equal a recomputation from scratch."""
    tracker = ModeTracker(window=5, blend=0.5, default_duration=0.5)
    for event, task_type, prefix, seconds in stream:
        if event == "add":
            tracker.add(task_type, prefix)
        elif event == "finish":
            tracker.finish(task_type, prefix, seconds)
        elif event == "discard":
            tracker.discard(task_type, prefix)
        else:
            tracker.observe(task_type, seconds)
    expected = {}
    for group in tracker._groups.values():
        if group.count:
            expected[group.task_type] = expected.get(group.task_type, 0.0) + group.count * group.expected
    got = tracker.scheduled_work()
    assert got.keys() == {t for t, w in expected.items() if w > 1e-15}
    for t in got:
        assert got[t] == pytest.approx(expected[t], rel=1e-9, abs=1e-9)
    shares = tracker.mode().shares
    assert all(v >= 0 for v in shares.values())
    assert not shares or sum(shares.values()) == pytest.approx(1.0)


def test_a_straggler_does_not_swing_the_mode():
    tracker = ModeTracker(window=100, blend=0.5, default_duration=0.002)
    for _ in range(100):
        tracker.observe("communication", 0.01)  # one second of measured communication
    tracker.add("compute", "tail")  # a single 2 ms compute task left scheduled
    assert tracker.mode()["compute"] < 0.01
    assert tracker.mode().ratio < 0.5


def test_scheduled_sums_return_to_exact_zero():
    tracker = ModeTracker(window=8, blend=0.0, default_duration=0.1)
    for i in range(50):
        tracker.add("compute", "inc")
        tracker.finish("compute", "inc", 0.1 + i * 1e-3)
    tracker.add("compute", "inc")
    tracker.discard("compute", "inc")
    assert tracker._scheduled["compute"] == 0.0
    assert tracker.scheduled_work() == {}


# batches: what a hot path hands over once per interval ------------------------------
def test_ingest_applies_adds_then_finishes_per_group():
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    tracker.ingest([("compute", "inc", 4, 2, 6.0), ("communication", "send", 1, 0, 0.0)])
    assert tracker.expected_duration("compute", "inc") == 3.0  # two measurements of 3 s
    assert tracker.scheduled_work() == {"compute": 6.0, "communication": 1.0}
    assert tracker.measured_work() == {"compute": 6.0}
    assert tracker.finished == 2


def test_ingest_of_a_discarded_group_counts():
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    tracker.ingest([("compute", "inc", 5, 0, 0.0)])
    tracker.discard("compute", "inc", 3)
    assert tracker.scheduled_work() == {"compute": 2.0}
    tracker.discard("compute", "inc", 10)  # never below zero
    assert tracker.scheduled_work() == {}
    assert tracker._counts["compute"] == 0


def test_an_aggregated_entry_leaves_the_window_at_its_mean():
    tracker = ModeTracker(window=4, blend=1.0, default_duration=1.0)
    tracker.ingest([("communication", "send", 3, 3, 6.0)])  # three measurements of 2 s
    tracker.finish("compute", "inc", 1.0, scheduled=False)
    tracker.finish("compute", "inc", 1.0, scheduled=False)  # one send measurement leaves
    assert tracker.measured_work() == {"communication": pytest.approx(4.0), "compute": 2.0}
    assert tracker._ring_total == 4
    tracker.ingest([("compute", "inc", 0, 10, 5.0)])  # a batch larger than the window
    assert tracker.measured_work() == {"compute": pytest.approx(2.0)}  # four of its ten, at 0.5 s
    assert tracker._ring_total == 4


batches = st.lists(
    st.tuples(st.sampled_from(["compute", "communication"]), st.sampled_from(["a", "b"]),
              st.integers(0, 6), st.integers(0, 6), st.sampled_from([0.0, 0.25, 1.0, 3.0])),
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(batches)
def test_a_batch_equals_its_events_one_by_one(stream):
    """With equal durations within an entry, ingest() is the per-event API, exactly."""
    batched = ModeTracker(window=7, blend=0.5, default_duration=0.5)
    single = ModeTracker(window=7, blend=0.5, default_duration=0.5)
    for task_type, prefix, added, finished, each in stream:
        batched.ingest([(task_type, prefix, added, finished, finished * each)])
        for _ in range(added):
            single.add(task_type, prefix)
        for _ in range(finished):
            group = single._groups.get((task_type, prefix))
            single.finish(task_type, prefix, each, scheduled=group is not None and group.count > 0)
    assert batched.finished == single.finished
    assert batched._ring_total == len(single._ring_types)
    for name in ("scheduled_work", "measured_work"):
        got, want = getattr(batched, name)(), getattr(single, name)()
        assert got.keys() == want.keys()
        for t in want:
            assert got[t] == pytest.approx(want[t], rel=1e-9, abs=1e-12)
    for task_type, prefix, *_ in stream:
        assert batched.expected_duration(task_type, prefix) == pytest.approx(
            single.expected_duration(task_type, prefix), rel=1e-9)


# plan sources: a running total of planned work that the tracker reads -------------
def test_a_plan_source_counts_in_every_read_of_the_scheduled_view():
    tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
    tracker.add("compute", "produce")
    planned = [0.0]
    detach = tracker.add_plan_source("communication", lambda: planned[0])
    assert tracker.scheduled_work() == {"compute": 1.0}  # nothing planned: no entry
    planned[0] = 3.0
    assert tracker.scheduled_work() == {"compute": 1.0, "communication": 3.0}
    assert tracker.mode().ratio == pytest.approx(1 / 3)
    assert tracker.scheduled_mode().ratio == pytest.approx(1 / 3)
    assert "communication" in tracker.seen_types()
    tracker.plan("communication", 1.0)  # plan() calls add to the source's total
    assert tracker.scheduled_work()["communication"] == 4.0
    tracker.clear_scheduled()  # a source is cleared by its owner, not here
    assert tracker.scheduled_work() == {"communication": 3.0}
    detach()
    detach()  # twice: nothing more
    assert tracker.scheduled_work() == {}


@pytest.mark.parametrize("value, kind", [(math.nan, "is nan"), (math.inf, "is infinite"), ("x", "is a ValueError")])
def test_a_bad_plan_source_reads_zero_and_is_counted(value, kind):
    tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
    tracker.add("compute", "produce")
    tracker.add_plan_source("communication", lambda: value)
    assert tracker.scheduled_work() == {"compute": 1.0}
    assert tracker.rejected == {f"plan source: seconds {kind}": 1}


def test_a_plan_source_needs_a_type_and_a_callable():
    tracker = ModeTracker()
    with pytest.raises(ValueError, match="task type"):
        tracker.add_plan_source("", lambda: 0.0)
    with pytest.raises(TypeError, match="callable"):
        tracker.add_plan_source("communication", 3.0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, -1, 0]), st.sampled_from([0.1, 0.25, 1e-3, 7.0])), max_size=40))
def test_a_running_total_kept_by_its_owner_reads_as_its_plan_calls_one_by_one(stream):
    """The transfer forecast's rule (plain adds, exactly zero when no item is left) is plan()'s, bit for bit."""
    source = ModeTracker(window=4, blend=0.0, default_duration=1.0)
    single = ModeTracker(window=4, blend=0.0, default_duration=1.0)
    total, items, held = [0.0], [0], []
    source.add_plan_source("communication", lambda: total[0])
    for sign, seconds in stream:
        if sign == 1:  # an item enters
            held.append(seconds)
            total[0] += seconds
            items[0] += 1
            single.plan("communication", seconds, 1)
        elif sign == -1 and held:  # an item leaves
            gone = held.pop(0)
            items[0] -= 1
            total[0] = total[0] - gone if items[0] > 0 else 0.0
            single.plan("communication", -gone, -1)
        elif sign == 0 and held:  # an item is repriced
            held[-1], delta = held[-1] * 2, held[-1]
            total[0] += delta
            single.plan("communication", delta, 0)
        assert source.scheduled_work() == single.scheduled_work()


# an event batch: the scheduler plugin's events, tallied until the tracker is read --------
def test_one_ingest_of_many_groups_evicts_what_their_events_would_have():
    tracker = ModeTracker(window=16, max_groups=32)
    tracker.ingest([("compute", f"prefix-{i}", 1, 1, 0.001) for i in range(5000)])
    assert len(tracker) <= 32 + 4


def test_a_batch_is_drained_by_every_read():
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    batch = EventBatch(tracker)
    reads = [tracker.scheduled_work, tracker.measured_work, tracker.scheduled_tasks, tracker.seen_types,
             tracker.mode, tracker.scheduled_mode, lambda: tracker.expected_duration("compute", "inc"),
             lambda: len(tracker)]
    for read in reads:
        batch.add("compute", "inc")
        assert batch.pending() == 1
        read()
        assert batch.pending() == 0
    assert tracker.scheduled_tasks() == len(reads)
    batch.close()
    batch.add("compute", "inc")  # no longer a feed: nothing reads it
    assert tracker.scheduled_tasks() == len(reads) and batch.pending() == 1


def test_a_batch_takes_the_latest_prior_of_an_unmeasured_group():
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    batch = EventBatch(tracker)
    batch.add("compute", "inc", prior=0.5)
    batch.add("compute", "inc", prior=0.25)
    assert tracker.scheduled_work() == {"compute": 0.5}  # two tasks at 0.25 s
    batch.finish("compute", "inc", 2.0)
    batch.add("compute", "inc", prior=0.25)  # measured now: a prior changes nothing
    assert tracker.scheduled_work() == {"compute": 2.0 + 2.0}
    assert tracker.expected_duration("compute", "inc") == 2.0


@pytest.mark.parametrize("duration, kind", [(math.nan, "is nan"), (-1.0, "is negative"), (3, None)])
def test_a_measurement_the_batch_cannot_check_goes_to_the_tracker_in_order(duration, kind):
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    batch = EventBatch(tracker)
    batch.add("compute", "inc")
    batch.finish("compute", "inc", duration)  # the add is handed over first: the task leaves
    assert batch.pending() == 0 and tracker.scheduled_tasks() == 0 and tracker.finished == 1
    assert tracker.rejected == ({f"finish: duration {kind}": 1} if kind else {})


def test_a_read_on_another_thread_leaves_the_batch_to_its_thread():
    import threading

    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    batch = EventBatch(tracker)
    batch.add("compute", "inc")
    seen = []
    reader = threading.Thread(target=lambda: seen.append(tracker.scheduled_tasks()))
    reader.start()
    reader.join()
    assert seen == [0] and batch.pending() == 1  # as of the last drain
    assert tracker.scheduled_tasks() == 1


def test_a_feed_that_raises_is_counted_and_the_read_goes_on():
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    tracker.add("compute", "inc")
    detach = tracker.add_feed(lambda: 1 / 0)
    assert tracker.scheduled_work() == {"compute": 1.0}
    assert tracker.rejected == {"feed: feed raised": 1}
    detach()
    with pytest.raises(TypeError, match="callable"):
        tracker.add_feed(3.0)


def _add_or_finish(event, task_type, prior, batch, single, scheduled, durations, prefixes):
    """Apply an add, or a finish of a scheduled task, to the batch and to the per-event tracker alike."""
    if event == "add":
        batch.add(task_type, prefixes[task_type], prior=prior)
        single.add(task_type, prefixes[task_type], prior=prior)
        scheduled[task_type] += 1
        return True
    if event == "finish":
        if scheduled[task_type]:
            batch.finish(task_type, prefixes[task_type], durations[task_type])
            single.finish(task_type, prefixes[task_type], durations[task_type])
            scheduled[task_type] -= 1
        return True
    return False


# one prefix per type: a group's starting estimate (its type's average) is then the same
# whether the group is made at its first add or at the drain
_batch_events = st.lists(
    st.one_of(st.tuples(st.just("add"), st.sampled_from(["compute", "communication"]),
                        st.sampled_from([None, 0.5, 2.0])),
              st.tuples(st.just("finish"), st.sampled_from(["compute", "communication"]), st.just(None)),
              st.tuples(st.just("read"), st.just(""), st.just(None))),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(_batch_events)
def test_a_batch_reads_as_its_events_one_by_one(stream):
    """With one duration per group, every read of a batched tracker is the per-event tracker's."""
    durations = {"compute": 0.25, "communication": 3.0}
    prefixes = {"compute": "a", "communication": "b"}
    batched = ModeTracker(window=1000, blend=0.5, default_duration=1.0)
    single = ModeTracker(window=1000, blend=0.5, default_duration=1.0)
    batch = EventBatch(batched)
    scheduled = {"compute": 0, "communication": 0}
    for event, task_type, prior in stream:
        if _add_or_finish(event, task_type, prior, batch, single, scheduled, durations, prefixes):
            continue
        if event == "read":
            for name in ("scheduled_work", "measured_work"):
                got, want = getattr(batched, name)(), getattr(single, name)()
                assert got.keys() == want.keys()
                for t in want:
                    assert got[t] == pytest.approx(want[t], rel=1e-9, abs=1e-12)
            assert batched.finished == single.finished
    assert batched.scheduled_tasks() == single.scheduled_tasks()
    for task_type, prefix in prefixes.items():
        assert batched.expected_duration(task_type, prefix) == pytest.approx(
            single.expected_duration(task_type, prefix), rel=1e-9)


_ordered_events = st.lists(
    st.one_of(st.tuples(st.just("add"), st.sampled_from(["compute", "communication"])),
              st.tuples(st.just("finish"), st.sampled_from(["compute", "communication"])),
              st.tuples(st.sampled_from(["observe", "measure", "batch-measure", "batch-measure-alone", "read"]),
                        st.just("communication"))),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(_ordered_events, st.sampled_from([1, 3, 8, 1000]))
def test_a_batch_keeps_the_order_work_finished_in(stream, window):
    """The window of a batched tracker is the per-event tracker's, whatever its length.

    Work measured on the tracker itself between two reads (a transfer's share and
    the rest of its batch: ``finish(..., scheduled=False)``, ``observe``) keeps its
    place among the tallied finishes, and so does the same work recorded through the
    batch (``EventBatch.measured``, as the scheduler plugin records a measured
    transfer). A window shorter than a read's worth of tasks lost it before (the
    demo read compute in phases that shipped every panel). The batch sums
    consecutive measurements of a type, so its measurements of one type here are
    of one duration (3 s), as the per-event window's mean is then the same; and
    it makes its groups at the drain, so the batch's measured work is of the one
    communication prefix (as for the adds above, a group's first estimate is then
    the same either way).
    """
    durations = {"compute": 0.25, "communication": 3.0}
    prefixes = {"compute": "a", "communication": "b"}
    batched = ModeTracker(window=window, blend=0.5, default_duration=1.0)
    single = ModeTracker(window=window, blend=0.5, default_duration=1.0)
    batch = EventBatch(batched)
    scheduled = {"compute": 0, "communication": 0}
    for event, task_type in stream:
        if _add_or_finish(event, task_type, None, batch, single, scheduled, durations, prefixes):
            continue
        if event == "observe":
            batched.observe("communication", 2.0)
            single.observe("communication", 2.0)
        elif event == "measure":
            batched.finish("communication", "transfer-a", 1.5, scheduled=False)
            single.finish("communication", "transfer-a", 1.5, scheduled=False)
        elif event.startswith("batch-measure"):
            rest = 0.0 if event.endswith("alone") else 3.0
            batch.measured("communication", "b", 3.0, rest=rest)
            single.finish("communication", "b", 3.0, scheduled=False)
            if rest:
                single.observe("communication", rest)
        elif event == "read":
            got, want = batched.measured_work(), single.measured_work()
            assert got.keys() == want.keys()
            for t in want:
                assert got[t] == pytest.approx(want[t], rel=1e-9, abs=1e-9)
            got_ratio, want_ratio = batched.mode().ratio, single.mode().ratio
            assert (math.isnan(got_ratio) and math.isnan(want_ratio)) or got_ratio == pytest.approx(want_ratio, rel=1e-9)
    got, want = batched.measured_work(), single.measured_work()
    assert {t: pytest.approx(v, rel=1e-9, abs=1e-9) for t, v in want.items()} == got
    assert batched.finished == single.finished
    assert batched.expected_duration("communication", "b") == single.expected_duration("communication", "b")


def test_ingest_takes_the_runs_in_order_and_refuses_a_bad_one():
    tracker = ModeTracker(window=2, blend=0.0, default_duration=1.0)
    tracker.ingest([("compute", "a", 2, 2, 1.0), ("communication", "b", 1, 1, 4.0)],
                   runs=[("communication", 4.0, 1), ("compute", 1.0, 2)])
    measured = tracker.measured_work()  # the last two measurements: both computes
    assert measured["compute"] == 1.0 and not measured.get("communication")
    tracker.ingest([], runs=[("compute", 1.0, 0), (None, 1.0, 1), ("compute", math.nan, 1)])
    assert tracker.rejected == {"ingest: run is not a valid run": 3}
    assert tracker.measured_work() == measured


def test_a_batch_without_events_leaves_its_tracker_as_it_was():
    """A scheduler plugin made on the client (then sent to the scheduler) adds no feed to the user's runtime."""
    from asafe.schedulers.scheduler_plugin import AdaptiveSchedulerPlugin

    runtime = __import__("asafe").AdaptiveRuntime(signals=False)
    AdaptiveSchedulerPlugin(runtime)
    AdaptiveSchedulerPlugin(runtime)
    assert runtime.tracker._feeds == ()
    batch = EventBatch(runtime.tracker)
    batch.add("compute", "inc")
    assert len(runtime.tracker._feeds) == 1
    batch.close()
    assert runtime.tracker._feeds == ()


def test_a_batch_hands_what_it_cannot_check_to_the_tracker_in_order():
    """EventBatch.measured: a duration out of range or not a float, or an unhashable prefix, goes to the tracker."""
    tracker = ModeTracker(window=8, blend=0.0, default_duration=1.0)
    batch = EventBatch(tracker)
    batch.add("compute", "inc")
    batch.finish("compute", "inc", 0.5)
    batch.measured("communication", "transfer-inc", math.nan, rest=1.0)  # rejected; the rest is observed
    assert batch.pending() == 0  # drained first: the finish before it
    assert tracker.rejected == {"finish: duration is nan": 1}
    assert tracker.measured_work() == {"compute": 0.5, "communication": 1.0} and tracker.finished == 2
    batch.measured("communication", ["unhashable"], 1.0)
    assert tracker.rejected == {"finish: duration is nan": 1, "finish: task_type is a str": 1}  # (its group)
    batch.measured("communication", "transfer-inc", 2, rest=-1.0)  # an int: the tracker's checks
    assert tracker.expected_duration("communication", "transfer-inc") == 2.0
    tracker.ingest([], unscheduled=[("communication", "x", 0, 1.0), ("communication", "x", 1, -1.0)])
    assert tracker.rejected["ingest: unscheduled is invalid"] == 2
    batch.close()
