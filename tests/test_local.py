"""Adaptive runs on Dask's real local schedulers: threads, sync and processes."""
import dataclasses
import math
import time

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asafe
from asafe import AdaptiveRuntime, EfficiencyDomain, Hysteresis, Optimization


@asafe.typed(asafe.COMMUNICATION)
def ship(i, previous=None):
    time.sleep(0.002)
    return asafe.is_on("compression")


@asafe.typed(asafe.COMPUTE)
def work(i, previous=None):
    time.sleep(0.002)
    return asafe.is_on("compression")


@pytest.fixture(scope="module", autouse=True, params=["compiled", "python"])
def hooks(request):
    """Every test here runs on both per-task hooks: compiled (asafe.schedulers._hotpath) and pure Python."""
    if request.param == "compiled":
        request.getfixturevalue("hotpath")
    with dask.config.set({"asafe.local.compiled-hooks": request.param == "compiled"}):
        yield request.param


def make_runtime(**kwargs):
    opts = [Optimization("compression", Hysteresis(alpha=0.5, beta=2.0))]
    settings = {"window": 32, "dwell": 0, "dwell_tasks": 0, "interval": 0, "signals": False, **kwargs}
    return AdaptiveRuntime(opts, **settings)


def phase(func, n=60):
    """n tasks in a chain, so they run one after another and see states in order."""
    out = []
    previous = None
    for i in range(n):
        task = dask.delayed(func, pure=False)(i, previous)
        out.append(task)
        previous = task
    return out


@pytest.mark.parametrize("scheduler", ["threads", "sync"])
def test_phases_switch_compression_and_tasks_see_it(scheduler):
    rt = make_runtime()
    with asafe.adaptive(rt, scheduler=scheduler):
        (seen_comm,) = dask.compute(phase(ship))
        assert rt.state("compression") is True
        (seen_comp,) = dask.compute(phase(work))
        assert rt.state("compression") is False
    # tasks observed the switch: on during the communication phase (from the first
    # task: the scheduled set is all communication), off by the end of the compute one
    assert all(seen_comm)
    assert seen_comp[0] is True and seen_comp[-1] is False
    assert [(t.old, t.new) for t in rt.history] == [(False, True), (True, False)]
    assert rt.history[0].mode.ratio < 0.5 < 2.0 < rt.history[1].mode.ratio
    assert rt.tracker.finished >= 120


def test_processes_scheduler_tasks_see_the_states():
    # functions defined here are pickled by value (cloudpickle) into the workers
    @asafe.typed(asafe.COMMUNICATION)
    def shipped(i):
        time.sleep(0.01)
        import asafe as a
        return a.is_on("compression")

    rt = make_runtime()
    rt.set_state("compression", True)
    with asafe.adaptive(rt, scheduler="processes"):
        (seen,) = dask.compute([dask.delayed(shipped, pure=False)(i) for i in range(8)], num_workers=2)
    assert all(seen)
    assert rt.state("compression") is True
    assert rt.tracker.finished == 8
    assert asafe.is_on("compression") is False  # restored on exit


def test_annotations_reach_the_tracker():
    def plain(i):
        time.sleep(0.001)
        return i

    rt = make_runtime(blend=1.0)
    with asafe.adaptive(rt, scheduler="sync"):
        with asafe.task_type("io"):
            loaded = [dask.delayed(plain)(i) for i in range(10)]
        dask.compute(loaded)
    assert set(rt.tracker.measured_work()) == {"io"}
    assert rt.mode["io"] > 0.8


def test_annotation_beats_decorator_in_a_real_run():
    rt = make_runtime(blend=1.0)
    with asafe.adaptive(rt, scheduler="sync"):
        with asafe.task_type("io"):
            tasks = [dask.delayed(ship)(i) for i in range(5)]
        dask.compute(tasks)
    assert "communication" not in rt.tracker.measured_work()


def test_fused_dask_array_tasks_keep_their_type():
    @asafe.typed(asafe.COMMUNICATION)
    def slow_copy(block):
        time.sleep(0.002)
        return block.copy()

    rt = make_runtime(blend=1.0)
    x = da.ones((40,), chunks=4)
    with asafe.adaptive(rt):
        total = (x.map_blocks(slow_copy) * 2).sum().compute()
    assert total == 80
    measured = rt.tracker.measured_work()
    assert measured["communication"] > measured.get("compute", 0)


def test_explicit_scheduler_argument_is_still_tracked():
    rt = make_runtime()
    with asafe.adaptive(rt):
        dask.compute([dask.delayed(ship)(i) for i in range(10)], scheduler="sync")
    assert rt.tracker.finished == 10


class Exploding(EfficiencyDomain):
    def decide(self, mode, state):
        raise ValueError("bad domain")


def test_a_domain_that_raises_does_not_break_the_run(caplog):
    rt = AdaptiveRuntime([Optimization("broken", Exploding(), initial=True)], dwell=0, interval=0, signals=False)
    with asafe.adaptive(rt):
        (result,) = dask.compute([dask.delayed(work)(i) for i in range(10)])
    assert result == [False] * 10
    assert rt.state("broken") is True
    assert rt.errors and rt.errors[0].error == "ValueError: bad domain"


def test_is_on_outside_a_run_and_restore_after_nesting():
    assert asafe.is_on("compression") is False
    assert asafe.is_on("anything") is False
    outer = make_runtime()
    outer.set_state("compression", True)
    inner = AdaptiveRuntime([Optimization("other", Hysteresis(0.5, 2.0), initial=True)], signals=False)
    with asafe.adaptive(outer):
        assert asafe.is_on("compression") is True
        with asafe.adaptive(inner):
            assert asafe.is_on("other") is True and asafe.is_on("compression") is False
        assert asafe.is_on("compression") is True and asafe.is_on("other") is False
    assert asafe.is_on("compression") is False


def test_errors_in_tasks_propagate_and_clear_the_scheduled_set():
    def fail(i):
        raise ZeroDivisionError("task failed")

    rt = make_runtime()
    with asafe.adaptive(rt):
        with pytest.raises(ZeroDivisionError):
            dask.compute([dask.delayed(fail)(i) for i in range(4)])
    assert rt.tracker.scheduled_work() == {}


def test_adaptive_bad_input():
    with pytest.raises(TypeError, match="AdaptiveRuntime"):
        with asafe.adaptive("runtime"):
            pass
    with pytest.raises(ValueError, match="local schedulers"):
        with asafe.adaptive(make_runtime(), scheduler="distributed"):
            pass


def test_results_are_unchanged_by_tracking():
    x = da.random.default_rng(0).random((200, 200), chunks=50)
    expected = (x @ x.T).sum().compute(scheduler="sync")
    with asafe.adaptive(make_runtime()):
        got = (x @ x.T).sum().compute()
    np.testing.assert_allclose(got, expected)


def test_tasks_count_as_scheduled_from_ready_to_finished():
    """A fan-out: the 30 dependents of one root are all scheduled once it finishes."""
    rt = make_runtime()  # interval 0: the tracker is brought up to date after every task
    seen = []

    @asafe.typed(asafe.COMMUNICATION)
    def send(root, i):
        work = rt.tracker.scheduled_work().get(asafe.COMMUNICATION, 0.0)
        seen.append(round(work / rt.tracker.expected_duration(asafe.COMMUNICATION, "send")))
        return root + i

    root = dask.delayed(lambda: 1, name="root")()
    fan = [dask.delayed(send, pure=False)(root, i) for i in range(30)]
    with asafe.adaptive(rt, scheduler="sync"):
        (results,) = dask.compute(fan)
    assert sorted(results) == list(range(1, 31))
    assert seen == list(range(30, 0, -1))  # each sees itself and the ones still waiting
    assert rt.tracker.scheduled_work() == {} and rt.tracker.finished == 31


@dataclasses.dataclass
class Scale:
    """A callable dataclass: ``eq=True`` makes its instances unhashable."""

    factor: int

    def __call__(self, x):
        return x * self.factor


def test_every_kind_of_task_reaches_its_group():
    """String keys (delayed), tuple keys (array layers), fused layers, unhashable callables."""
    scale = asafe.typed("io")(Scale(3))
    with pytest.raises(TypeError):
        hash(scale)
    rt = make_runtime()
    x = da.ones((40,), chunks=4)
    with asafe.adaptive(rt, scheduler="sync"):
        shipped, scaled, total = dask.compute(
            [dask.delayed(ship)(i) for i in range(5)],
            [dask.delayed(scale)(i) for i in range(4)],
            (x.map_blocks(work_block) + 1).sum(),
        )
    assert len(shipped) == 5 and scaled == [0, 3, 6, 9] and total == 80
    groups = set(rt.tracker._groups)
    assert ("communication", "ship") in groups and any(t == "io" for t, _ in groups), groups
    assert any(t == "communication" and p != "ship" for t, p in groups), groups  # the fused array layer
    assert rt.tracker.finished >= 5 + 4 + 10  # and the array's reduction
    assert rt.tracker.scheduled_work() == {}


@asafe.typed(asafe.COMMUNICATION)
def work_block(block):
    return block.copy()


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="abcdefghxyz0129-_(),'<>. éß", max_size=40))
def test_prefix_of_a_string_key_is_key_split(key):
    from dask.utils import key_split

    from asafe.schedulers.local import _prefix

    assert _prefix(key) == key_split(key)


@pytest.mark.parametrize("key", ["inc-1f3a9c0e7b2d4c6e8f0a1b2c3d4e5f60", "read-csv-0a1b", "x-deadbeef-1", "x-deadbeefs-1",
                                 "hello-world", "ae05086432ca935f6eba409a8ecd4896", "<foo.Bar object at 0x1>-1",
                                 "('x', 1)", "finalize-hlgfinalizecompute-12", "-x", "", b"bytes-key-1", 7, None,
                                 "inc-5c1e4e2a-0b1c-4c0d-9a7e-1b2c3d4e5f60"])
def test_prefix_of_known_keys(key):
    from dask.utils import key_split

    from asafe.schedulers.local import _prefix

    assert _prefix(key) == key_split(key)


def test_annotated_and_unannotated_tasks_of_one_function_keep_their_types():
    def load(i):
        time.sleep(0.001)
        return i

    rt = make_runtime(blend=1.0, window=64)
    with asafe.adaptive(rt, scheduler="sync"):
        plain = [dask.delayed(load, pure=False)(i) for i in range(6)]
        with asafe.task_type("io"):
            loaded = [dask.delayed(load, pure=False)(i) for i in range(6)]
        dask.compute(plain, loaded, [dask.delayed(load, pure=False)(i) for i in range(6)])
    groups = {group: g.count for group, g in rt.tracker._groups.items()}
    assert set(groups) == {("compute", "load"), ("io", "load")}
    # the measurements in the window, counted per type (not their seconds: a 1 ms
    # sleep takes what a loaded machine gives it): 12 plain tasks, 6 io tasks
    counts = {}
    for task_type, count in zip(rt.tracker._ring_types, rt.tracker._ring_counts):
        counts[task_type] = counts.get(task_type, 0) + count
    assert counts == {"compute": 12, "io": 6}
    assert set(rt.tracker.measured_work()) == {"compute", "io"}
    assert rt.tracker.finished == 18 and rt.tracker.scheduled_work() == {}


def _reuse_runtime():
    domain = asafe.AnyOf([Hysteresis(alpha=0.5, beta=2.0), asafe.AtLeast("reuse", on=8)])
    return AdaptiveRuntime([Optimization("compression", domain)], window=32, dwell=0, dwell_tasks=0,
                           interval=0, signals=False)


@pytest.mark.parametrize("scheduler", ["threads", "sync"])
def test_a_graph_that_declares_reuse_runs_compressed_from_its_first_task(scheduler):
    # compute only: the ratio says off whatever the graph; the declared reuse decides
    rt = _reuse_runtime()
    with asafe.adaptive(rt, scheduler=scheduler):
        (plain,) = dask.compute(phase(work, n=20))
        with asafe.reuse(16):
            reused = phase(work, n=20)
        (seen_reused,) = dask.compute(reused)
        assert rt.history[0].mode.signals["reuse"] == 16.0  # switched on by the graph's declaration
        assert math.isnan(rt.mode.signals["reuse"])  # nothing running declares anything now
        with asafe.reuse(2):
            once = phase(work, n=20)
        (seen_once,) = dask.compute(once)
    assert not any(plain)
    assert all(seen_reused)  # the first task included: decided at the graph's start
    assert not any(seen_once)  # 2 reads declared: off from the first task
    assert [(t.old, t.new) for t in rt.history] == [(False, True), (True, False)]
    assert "reuse" not in rt._signal_sources  # detached on exit


@pytest.mark.parametrize("skip", [True, False])
def test_a_graphs_arrival_on_the_local_schedulers_is_not_held_by_the_dwell(skip):
    # a dwell longer than the run: after the first toggle, only a graph's start moves the state
    domain = asafe.AnyOf([Hysteresis(alpha=0.5, beta=2.0), asafe.AtLeast("reuse", on=8)])
    rt = AdaptiveRuntime([Optimization("compression", domain)], window=32, dwell=600, dwell_tasks=10_000,
                         interval=0, signals=False, arrivals_skip_dwell=skip)
    with asafe.adaptive(rt, scheduler="threads"):
        with asafe.reuse(16):
            (seen_reused,) = dask.compute(phase(work, n=20))
        with asafe.reuse(2):
            (seen_once,) = dask.compute(phase(work, n=20))
    assert all(seen_reused)
    if skip:
        assert not any(seen_once)
        assert [(t.old, t.new) for t in rt.history] == [(False, True), (True, False)]
    else:
        assert all(seen_once)
        assert [(t.old, t.new) for t in rt.history] == [(False, True)]


def test_a_bad_reuse_annotation_is_ignored_on_the_local_schedulers(caplog):
    rt = _reuse_runtime()
    with asafe.adaptive(rt, scheduler="sync"):
        with dask.annotate(asafe_reuse="many"):  # not through asafe.reuse, which refuses it
            tasks = phase(work, n=5)
        (seen,) = dask.compute(tasks)
    assert not any(seen) and rt.history == []
    assert any("ignored asafe_reuse" in r.getMessage() for r in caplog.records)
