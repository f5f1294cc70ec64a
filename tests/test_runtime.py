"""AdaptiveRuntime: read API, bad input, failing domains and subscribers, configuration."""
import logging
import math
import os
import pickle
import subprocess
import sys

import dask
import pytest

import asafe
from asafe import AdaptiveRuntime, EfficiencyDomain, Hysteresis, ModeVector, Optimization
from asafe.core.config import import_by_path, settings
from asafe.core.runtime import load_optimizations

COMM = ModeVector({"compute": 1, "communication": 9})
COMP = ModeVector({"compute": 9, "communication": 1})


def runtime(*opts, **kwargs):
    opts = opts or (Optimization("compression", Hysteresis(0.5, 2.0)),)
    kwargs = {"dwell": 0, "dwell_tasks": 0, "interval": 0, "signals": False, **kwargs}
    return AdaptiveRuntime(list(opts), **kwargs)


def test_history_records_time_states_and_mode():
    rt = runtime()
    rt.evaluate(COMM, now=10.0)
    rt.evaluate(COMP, now=11.0)
    (on, off) = rt.history
    assert (on.time, on.optimization, on.old, on.new, on.mode) == (10.0, "compression", False, True, COMM)
    assert (off.old, off.new, off.mode) == (True, False, COMP)
    assert rt.mode == COMP
    assert on.as_dict() == {"time": 10.0, "optimization": "compression", "from": False, "to": True,
                            "ratio": COMM.ratio, "mode": COMM.shares}
    assert [m for _, m in rt.timeline] == [COMM, COMP]


def test_unknown_name_lists_the_known_ones():
    rt = runtime()
    with pytest.raises(KeyError, match=r"unknown optimization 'tiles'; known: \['compression'\]"):
        rt.state("tiles")
    with pytest.raises(KeyError, match="known"):
        rt.set_state("tiles", True)


def test_optimization_bad_input():
    with pytest.raises(TypeError, match="non-empty str"):
        Optimization("", Hysteresis(0.5, 2.0))
    with pytest.raises(TypeError, match="decide"):
        Optimization("x", object())
    for bad in (None, "", 0.5, ["lz4"]):  # a state is a bool, an int or a non-empty str
        with pytest.raises(TypeError, match="must be a state: True/False, an int or a non-empty str"):
            Optimization("x", Hysteresis(0.5, 2.0), initial=bad)
    with pytest.raises(ValueError, match=r"repeated: \['x'\]"):
        runtime(Optimization("x", Hysteresis(0, 1)), Optimization("x", Hysteresis(0, 1)))
    with pytest.raises(TypeError, match="asafe.Optimization"):
        AdaptiveRuntime(["compression"])
    with pytest.raises(ValueError, match="dwell must be a number >= 0, got -1"):
        runtime(dwell=-1)
    with pytest.raises(TypeError, match="must be a str"):
        runtime(default_type=5)


class Exploding(EfficiencyDomain):
    def decide(self, mode, state):
        raise RuntimeError("boom")


def test_a_domain_that_raises_is_logged_recorded_and_keeps_its_state(caplog):
    rt = runtime(Optimization("broken", Exploding(), initial=True), Optimization("compression", Hysteresis(0.5, 2.0)))
    with caplog.at_level(logging.ERROR, logger="asafe"):
        rt.evaluate(COMM, now=1.0)
        rt.evaluate(COMP, now=2.0)
    assert rt.state("broken") is True
    assert [(e.optimization, e.error) for e in rt.errors] == [("broken", "RuntimeError: boom")] * 2
    assert sum("domain of 'broken' raised" in r.message for r in caplog.records) == 1  # once per streak
    assert [t.optimization for t in rt.history] == ["compression", "compression"]  # the others go on


def test_a_failing_subscriber_never_breaks_the_controller(caplog):
    rt = runtime()
    seen = []
    rt.subscribe(lambda states, transitions: 1 / 0)
    unsubscribe = rt.subscribe(lambda states, transitions: seen.append(states))
    with caplog.at_level(logging.ERROR, logger="asafe"):
        rt.evaluate(COMM)
    assert seen == [{"compression": True}]
    assert any("subscriber failed" in r.message for r in caplog.records)
    unsubscribe()
    rt.evaluate(COMP)
    assert len(seen) == 1


def test_transitions_are_logged(caplog):
    rt = runtime()
    with caplog.at_level(logging.INFO, logger="asafe"):
        rt.evaluate(COMM)
    assert any("compression off -> on" in r.message for r in caplog.records)


def test_set_state_records_a_transition():
    rt = runtime()
    rt.set_state("compression", True)
    assert rt.state("compression") is True
    assert [(t.old, t.new) for t in rt.history] == [(False, True)]


def test_runtime_pickles_with_its_states_and_history():
    rt = runtime()
    rt.evaluate(COMM)
    clone = pickle.loads(pickle.dumps(rt))
    assert clone.states == {"compression": True}
    assert clone.history == rt.history
    assert (clone.dwell, clone.interval) == (0.0, 0.0)


def test_defaults_come_from_the_configuration():
    rt = AdaptiveRuntime()
    assert list(rt.optimizations) == ["compression", "wire-compression"]
    ratio, reused = rt.optimizations["compression"].domain.domains  # AnyOf
    assert (ratio.alpha, ratio.beta, ratio.metric) == (0.5, 2.0, "ratio")
    assert (reused.metric, reused.on, reused.off) == ("reuse", 16.0, 16.0)
    wire = rt.optimizations["wire-compression"].domain  # Gated: off, or the link's speed in MB/s
    ratio, cpu, link = wire.gate.domains
    assert (wire.then.metric, wire.then.states, wire.off) == ("bandwidth", [30, 60, 120, 240, 480], False)
    assert (ratio.alpha, ratio.beta, ratio.metric) == (0.5, 2.0, "ratio")
    assert (cpu.alpha, cpu.beta, cpu.metric) == (0.5, 0.8, "external_cpu")
    assert (link.alpha, link.beta, link.metric) == (250e6, 500e6, "bandwidth")
    assert rt.dwell == 0.25 and rt.default_type == "compute"


def test_configuration_overrides():
    entries = [{"name": "f32", "domain": "asafe.Hysteresis", "kwargs": {"alpha": 0.1, "beta": 0.2, "metric": "cpu"},
                "initial": True}]
    with dask.config.set({"asafe.controller.dwell": "2s", "asafe.optimizations": entries}):
        rt = AdaptiveRuntime()
    assert rt.dwell == 2.0
    assert rt.state("f32") is True


@pytest.mark.parametrize(
    "entry, error, message",
    [
        ({"name": "x"}, ValueError, "must be a mapping with 'name' and 'domain'"),
        ({"name": "x", "domain": "asafe.Hysteresis", "kwarg": {}}, ValueError, r"unknown keys \['kwarg'\]"),
        ({"name": "x", "domain": "asafe.Nope"}, ImportError, "cannot import 'asafe.Nope'"),
        ({"name": "x", "domain": "asafe.Hysteresis", "kwargs": {"alpha": 3, "beta": 1}}, ValueError, "alpha <= beta"),
    ],
)
def test_bad_configuration(entry, error, message):
    with pytest.raises(error, match=message):
        load_optimizations([entry])


def test_import_by_path_needs_a_dotted_path():
    with pytest.raises(ValueError, match="dotted path"):
        import_by_path("Hysteresis")


def test_bad_duration_in_configuration():
    with dask.config.set({"asafe.controller.dwell": "-1s"}):
        with pytest.raises(ValueError, match="asafe.controller.dwell must be a duration"):
            settings()


def test_environment_variables_override_defaults():
    env = {**os.environ, "DASK_ASAFE__CONTROLLER__DWELL": "3s", "DASK_ASAFE__TRACKER__WINDOW": "17"}
    code = "import asafe; rt = asafe.AdaptiveRuntime(); print(rt.dwell, rt.tracker.window)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3.0", "17"]


def test_public_names():
    for name in ["COMPUTE", "COMMUNICATION", "task_type", "typed", "ModeVector", "Hysteresis", "Optimization",
                 "AdaptiveRuntime", "adaptive", "is_on", "install"]:
        assert name in asafe.__all__ and hasattr(asafe, name)


def test_signal_sources_reach_the_mode_and_a_bad_one_is_left_out(caplog):
    rt = AdaptiveRuntime([Optimization("c", Hysteresis(1e8, 2e8, metric="bandwidth"))], signals=False,
                         dwell=0, dwell_tasks=0)
    values = iter([5e7, float("inf"), -1.0, 3e8])

    def bandwidth():
        value = next(values)
        return value

    detach = rt.add_signal("bandwidth", bandwidth)
    rt.evaluate()
    assert rt.mode.signals == {"bandwidth": 5e7} and rt.state("c")
    rt.evaluate()  # inf: reads nan, logged once
    rt.evaluate()  # negative: reads nan, not logged again
    assert math.isnan(rt.mode.signals["bandwidth"]) and rt.state("c")  # no threshold crosses nan: kept
    assert sum("signal source 'bandwidth' failed" in r.message for r in caplog.records) == 1
    rt.evaluate()
    assert rt.mode.signals == {"bandwidth": 3e8} and not rt.state("c")
    detach()
    rt.evaluate()
    assert rt.mode.signals == {}
    with pytest.raises(ValueError, match="other than 'ratio'"):
        rt.add_signal("ratio", bandwidth)
    with pytest.raises(TypeError, match="callable"):
        rt.add_signal("bandwidth", 5e7)


def test_arrivals_skip_dwell_is_configured_and_travels_with_the_runtime():
    assert AdaptiveRuntime(signals=False).arrivals_skip_dwell is True
    with dask.config.set({"asafe.controller.arrivals-skip-dwell": "off"}):  # as an environment variable spells it
        rt = AdaptiveRuntime(signals=False)
    assert rt.arrivals_skip_dwell is False
    assert pickle.loads(pickle.dumps(rt)).arrivals_skip_dwell is False  # to a cluster's scheduler


def test_bad_arrivals_skip_dwell_says_what_is_allowed():
    with dask.config.set({"asafe.controller.arrivals-skip-dwell": "sometimes"}):
        with pytest.raises(ValueError, match=r"asafe.controller.arrivals-skip-dwell must be a boolean .*'sometimes'"):
            AdaptiveRuntime(signals=False)
    with pytest.raises(TypeError, match="arrivals_skip_dwell must be True or False, got 1"):
        AdaptiveRuntime(signals=False, arrivals_skip_dwell=1)
