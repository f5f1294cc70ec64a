"""asafe.schedulers._hotpath, the compiled per-task hooks: the same events as the Python hooks.

``tests/test_local.py`` runs every adaptive-run test on both hooks; here the
two are compared event for event on random graphs, and the compiled types and
their errors are checked directly.
"""
import gc
import subprocess
import sys
import textwrap
import time
import weakref
from collections import Counter

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asafe
from asafe.schedulers import local


def make_runtime():
    opts = [asafe.Optimization("compression", asafe.Hysteresis(alpha=0.5, beta=2.0))]
    return asafe.AdaptiveRuntime(opts, window=32, dwell=0, dwell_tasks=0, interval=0, signals=False)


def tracked_events(collections, compiled, scheduler="sync"):
    """Run ``collections`` adaptively; the (added, finished) totals per group that reached the tracker."""
    rt = make_runtime()
    totals = Counter()
    seconds = Counter()
    ingest = rt.tracker.ingest

    def spy(batch):
        batch = list(batch)
        for task_type, prefix, added, finished, spent in batch:
            totals[task_type, prefix, "added"] += added
            totals[task_type, prefix, "finished"] += finished
            seconds[task_type, prefix] += spent
        ingest(batch)

    rt.tracker.ingest = spy
    with dask.config.set({"asafe.local.compiled-hooks": compiled}):
        with asafe.adaptive(rt, scheduler=scheduler):
            values = dask.compute(*collections)
    assert rt.tracker.scheduled_work() == {}  # everything scheduled also finished
    assert all(spent >= 0 for spent in seconds.values()), seconds
    return values, dict(totals)


@asafe.typed("io")
def load(*deps):
    return 1 + sum(deps)


@asafe.typed(asafe.COMMUNICATION)
def send(*deps):
    return 2 + sum(deps)


@asafe.typed(asafe.COMPUTE)
def crunch(*deps):
    return 3 + sum(deps)


def untyped(*deps):
    return 4 + sum(deps)


FUNCS = {"load": (load, "io"), "send": (send, "communication"), "crunch": (crunch, "compute"),
         "untyped": (untyped, "compute")}

node = st.tuples(st.sampled_from(sorted(FUNCS)), st.lists(st.integers(0, 10**6), max_size=3), st.booleans())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(node, min_size=1, max_size=25))
def test_compiled_and_python_hooks_report_the_same_events(hotpath, nodes):
    """Random DAGs of typed, untyped and annotated delayed tasks: both hooks count every task
    in its (type, prefix) group, once added and once finished, exactly as the graph says."""
    built, expected = [], Counter()
    for name, picks, annotated in nodes:
        func, task_type = FUNCS[name]
        deps = [built[i % len(built)] for i in picks] if built else []
        if annotated:
            with asafe.task_type("tagged"):
                built.append(dask.delayed(func, pure=False)(*deps))
            task_type = "tagged"  # the annotation beats the decorator (asafe.core.types)
        else:
            built.append(dask.delayed(func, pure=False)(*deps))
        expected[task_type, name, "added"] += 1
        expected[task_type, name, "finished"] += 1
    compiled_values, compiled = tracked_events(built, compiled=True)
    python_values, python = tracked_events(built, compiled=False)
    assert compiled_values == python_values
    assert compiled == python == dict(expected)


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_array_layers_fused_and_unfused_are_counted_alike(hotpath, scheduler):
    """Tuple keys, fused layers and reductions: the groups of both hooks are the same."""
    x = da.from_array(np.arange(400.0), chunks=10)
    graphs = [((x + 1) * 2).sum(), x.map_blocks(lambda b: b - 1).mean(), (x[::2] + x[1::2]).max()]
    compiled_values, compiled = tracked_events(graphs, compiled=True, scheduler=scheduler)
    python_values, python = tracked_events(graphs, compiled=False, scheduler=scheduler)
    assert compiled_values == python_values == dask.compute(*graphs, scheduler="sync")
    assert compiled == python
    finished = sum(count for (_, _, what), count in compiled.items() if what == "finished")
    added = sum(count for (_, _, what), count in compiled.items() if what == "added")
    assert finished == added > 3 * 40  # the graphs have at least a task per chunk each


def test_the_default_is_the_compiled_hooks_and_config_turns_them_off(hotpath):
    rt = make_runtime()
    assert local._TrackingCallback(rt).compiled is True
    with dask.config.set({"asafe.local.compiled-hooks": "false"}):  # as an environment variable arrives
        assert local._TrackingCallback(rt).compiled is False
    with dask.config.set({"asafe.local.compiled-hooks": "sometimes"}):
        with pytest.raises(ValueError, match=r"asafe.local.compiled-hooks must be a boolean .*, got 'sometimes' \(environment variable DASK_ASAFE__LOCAL__COMPILED_HOOKS\)"):
            local._TrackingCallback(rt)


def test_the_compiled_types_are_the_run_and_tally_types(hotpath):
    assert hotpath.RUN_KEY == local._RUN
    assert local._Tally is hotpath.Tally and issubclass(local._Run, hotpath.RunState)
    tally = hotpath.Tally("compute", "inc")
    assert (tally.task_type, tally.prefix, tally.added, tally.finished, tally.in_flight, tally.seconds) == \
        ("compute", "inc", 0, 0, 0, 0.0)
    tally.added, tally.seconds = 3, 1.5
    tally.in_flight += tally.added
    assert repr(tally) == "Tally('compute', 'inc', added=3, finished=0, in_flight=3)"
    with pytest.raises(AttributeError):
        tally.task_type = "io"
    run = local._Run({"k": "io"})
    assert (run.scheduled, run.started, run.by_func, run.next_flush, run.annotations) == ({}, {}, {}, 0.0, {"k": "io"})
    with pytest.raises(AttributeError):
        run.scheduled = {}


class Task:
    def __init__(self, func):
        self.func = func


def fake_run(hotpath, resolve=None, flush=None):
    """A run of three tasks a0 -> (a1, a2), a2 still waiting, outside Dask."""
    tally = hotpath.Tally("compute", "a")

    def resolve_and_cache(run, key, dsk):
        run.by_func.setdefault(dsk[key].func, {})[key[0]] = tally
        return tally

    flushed = []
    hooks = hotpath.Hooks(resolve or resolve_and_cache, flush or (lambda run, now: flushed.append(now)),
                          local._prefix, time.perf_counter)
    run = local._Run({})
    dsk = {("a", i): Task(sum) for i in range(3)}
    state = {local._RUN: run, "waiting": {("a", 2): {("a", 1)}},
             "dependents": {("a", 0): {("a", 1), ("a", 2)}, ("a", 1): set(), ("a", 2): set()}}
    return hooks, run, dsk, state, tally, flushed


def test_a_task_through_the_compiled_hooks(hotpath):
    hooks, run, dsk, state, tally, flushed = fake_run(hotpath)
    hooks.schedule(run, [("a", 0)], dsk)
    entry = run.scheduled[("a", 0)]
    assert type(entry) is hotpath.Entry and entry.tally is tally and entry.start is None
    before = time.perf_counter()
    hooks.pretask(("a", 0), dsk, state)
    assert run.started == {}  # the start is in the entry
    assert before <= entry.start <= time.perf_counter()
    hooks.posttask(("a", 0), None, dsk, state, 0)
    assert (tally.added, tally.finished) == (2, 1) and tally.seconds >= 0
    assert list(run.scheduled) == [("a", 1)] and run.scheduled[("a", 1)].start is None  # a2 is still waiting
    assert len(flushed) == 1  # next_flush is 0: due at once
    assert repr(run.scheduled[("a", 1)]) == "Entry(Tally('compute', 'a', added=2, finished=1, in_flight=0))"


def scripted_clock(*times):
    ticks = iter(times)
    return lambda: next(ticks)


def test_durations_are_measured_from_pretask_to_posttask(hotpath):
    hooks, run, dsk, state, tally, flushed = fake_run(hotpath)
    hooks = hotpath.Hooks(hooks_resolve(tally), lambda run, now: flushed.append(now), local._prefix,
                          scripted_clock(1.0, 3.5, 10.0, 20.0))
    hooks.schedule(run, [("a", 0)], dsk)
    hooks.pretask(("a", 0), dsk, state)  # 1.0
    hooks.posttask(("a", 0), None, dsk, state, 0)  # 3.5
    assert (tally.finished, tally.seconds) == (1, 2.5) and flushed == [3.5]
    assert repr(run.scheduled[("a", 1)]) == "Entry(Tally('compute', 'a', added=2, finished=1, in_flight=0))"
    hooks.posttask(("a", 1), None, dsk, state, 0)  # 10.0: never started, a zero duration, as in Python
    assert (tally.finished, tally.seconds) == (2, 2.5)


def test_a_task_that_was_never_scheduled_is_timed_through_started(hotpath):
    """Dask runs only tasks it made ready, but the hooks do not rely on having seen that."""
    hooks, run, dsk, state, tally, flushed = fake_run(hotpath)
    hooks = hotpath.Hooks(hooks_resolve(tally), lambda run, now: None, local._prefix, scripted_clock(2.0, 2.25))
    hooks.pretask(("a", 0), dsk, state)
    assert run.started == {("a", 0): 2.0} and run.scheduled == {}
    hooks.posttask(("a", 0), None, dsk, state, 0)
    assert (tally.added, tally.finished, tally.seconds) == (1, 1, 0.25) and run.started == {}


def test_the_default_clock_is_perf_counter(hotpath):
    hooks, run, dsk, state, tally, flushed = fake_run(hotpath)
    hooks = hotpath.Hooks(hooks_resolve(tally), lambda run, now: flushed.append(now), local._prefix)
    hooks.schedule(run, [("a", 0)], dsk)
    before = time.perf_counter()
    hooks.pretask(("a", 0), dsk, state)
    time.sleep(0.01)
    hooks.posttask(("a", 0), None, dsk, state, 0)
    after = time.perf_counter()
    assert before <= flushed[0] <= after
    assert 0.01 <= tally.seconds <= after - before


def hooks_resolve(tally):
    def resolve(run, key, dsk):
        run.by_func.setdefault(dsk[key].func, {})[key[0]] = tally
        return tally

    return resolve


def test_the_compiled_hooks_hold_no_references(hotpath):
    hooks, run, dsk, state, tally, _ = fake_run(hotpath)
    key = ("a", 0)
    hooks.schedule(run, [key], dsk)
    hooks.pretask(key, dsk, state)
    hooks.posttask(key, None, dsk, state, 0)  # warm: caches filled, the run of this state cached
    del run.scheduled[("a", 1)]
    objects = [key, dsk, state, tally, run, dsk[key], dsk[("a", 1)]]
    before = [sys.getrefcount(o) for o in objects]
    for _ in range(100):
        hooks.schedule(run, [key], dsk)
        hooks.pretask(key, dsk, state)
        hooks.posttask(key, None, dsk, state, 0)
        del run.scheduled[("a", 1)]
    assert [sys.getrefcount(o) for o in objects] == before
    hooks.forget()  # the end of a run: the cached state and run are let go
    after = [sys.getrefcount(o) for o in objects]
    assert after == [count - (o is state or o is run) for o, count in zip(objects, before)]


def test_the_cached_run_follows_the_state(hotpath):
    """Runs alternate (two states): each task is counted in its own run, not the cached one."""
    hooks, run, dsk, state, tally, _ = fake_run(hotpath)
    other_run = local._Run({})
    other_state = dict(state, **{local._RUN: other_run})
    for target_run, target_state in [(run, state), (other_run, other_state), (run, state)]:
        hooks.schedule(target_run, [("a", 0)], dsk)
        hooks.pretask(("a", 0), dsk, target_state)
        assert target_run.scheduled[("a", 0)].start is not None
        hooks.posttask(("a", 0), None, dsk, target_state, 0)
        assert ("a", 0) not in target_run.scheduled
    assert tally.finished == 3


def test_a_run_leaves_nothing_in_the_hooks(hotpath):
    """The run cached for the per-task steps is dropped at the end of the run (``forget``)."""
    rt = make_runtime()
    callback_hooks = []
    original = local._TrackingCallback.__init__

    def spy(self, runtime):
        original(self, runtime)
        callback_hooks.append(self._hooks)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(local._TrackingCallback, "__init__", spy)
        with asafe.adaptive(rt, scheduler="threads"):
            assert dask.compute(dask.delayed(sum)([1, 2]))[0] == 3
    hooks = callback_hooks[0]
    assert isinstance(hooks, hotpath.Hooks)
    assert not [o for o in gc.get_referents(hooks) if isinstance(o, (dict, local._Run))]


def test_the_compiled_hooks_reject_bad_input(hotpath):
    with pytest.raises(TypeError, match="argument 'flush' must be callable, got None"):
        hotpath.Hooks(len, None, len, len)
    with pytest.raises(TypeError, match="argument 'clock' must be callable or None, got 3"):
        hotpath.Hooks(len, len, len, 3)
    with pytest.raises(TypeError, match="cannot create"):
        hotpath.Entry()
    hooks, run, dsk, state, tally, _ = fake_run(hotpath)
    with pytest.raises(TypeError, match=r"pretask\(\) takes 3 arguments"):
        hooks.pretask(("a", 0), dsk)
    with pytest.raises(TypeError, match=r"posttask\(\) takes 5 arguments"):
        hooks.posttask(("a", 0), None, dsk, state)
    with pytest.raises(KeyError, match="asafe-run"):
        hooks.pretask(("a", 0), dsk, {})
    with pytest.raises(TypeError, match="is a dict, not an asafe run"):
        hooks.pretask(("a", 0), dsk, {local._RUN: {}})
    with pytest.raises(TypeError, match="needs an asafe run"):
        hooks.schedule({}, [("a", 0)], dsk)
    run.scheduled[("a", 0)] = tally  # what the Python hooks keep there
    with pytest.raises(TypeError, match=r"run.scheduled\[\('a', 0\)\] is a .*Tally, not an entry of the compiled"):
        hooks.pretask(("a", 0), dsk, state)
    with pytest.raises(TypeError, match=r"not an entry of the compiled hooks"):
        hooks.posttask(("a", 0), None, dsk, state, 0)
    with pytest.raises(TypeError, match="the clock returned 'now', not a float"):
        hotpath.Hooks(len, len, len, lambda: "now").pretask(("a", 0), dsk, state)
    bad, run, dsk, state, *_ = fake_run(hotpath, resolve=lambda run, key, dsk: "not a tally")
    with pytest.raises(TypeError, match=r"the group of \('a', 0\) is a str, not a Tally"):
        bad.schedule(run, [("a", 0)], dsk)


def test_errors_of_the_slow_path_fail_the_run_and_leave_nothing_behind(monkeypatch):
    """An error in the Python slow path called back from either hook reaches dask.compute."""

    def broken(self, run, key, dsk):
        raise RuntimeError(f"cannot type {key!r}")

    monkeypatch.setattr(local._TrackingCallback, "_resolve", broken)
    for compiled in (True, False):
        rt = make_runtime()
        with dask.config.set({"asafe.local.compiled-hooks": compiled}):
            with asafe.adaptive(rt, scheduler="sync"), pytest.raises(RuntimeError, match="cannot type"):
                dask.compute(dask.delayed(sum)([1, 2]))
        assert rt.tracker.scheduled_work() == {}


def test_a_callback_and_its_compiled_hooks_are_collected(hotpath):
    """The callback holds its hooks and the hooks hold the callback's methods: a cycle the
    garbage collector must see through (tp_traverse)."""
    callback = local._TrackingCallback(make_runtime())
    assert callback.compiled
    ref = weakref.ref(callback)
    del callback
    gc.collect()
    assert ref() is None


def test_without_the_compiled_module_the_python_hooks_run(tmp_path):
    """A build without a C compiler: asafe imports, tracks with the Python hooks, same results."""
    code = textwrap.dedent("""
        import sys
        sys.modules["asafe.schedulers._hotpath"] = None  # as if it had not been built
        import dask, asafe
        from asafe.schedulers import local
        assert local._hotpath is None and local._Tally is local._PyTally
        rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0))])
        with asafe.adaptive(rt, scheduler="threads"):
            assert dask.compute([dask.delayed(abs)(-i) for i in range(50)])[0] == list(range(50))
        assert rt.tracker.finished == 50 and not local._TrackingCallback(rt).compiled
        print("python hooks ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "python hooks ok"
