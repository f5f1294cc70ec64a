"""Explanations of domains and runtimes, and the warning for a metric no signal or type has."""
from __future__ import annotations

import json
import logging
import math

import dask
import pytest

import asafe
from asafe import AllOf, AnyOf, AtLeast, Bands, Fixed, Gated, Hysteresis, ModeVector, Optimization
from asafe.core.explain import domain_metrics, explain_domain, unknown_metrics

COMM = ModeVector({"compute": 1, "communication": 4}, external_cpu=0.1, reuse=math.nan)  # ratio 0.25


def _runtime(*opts, **kwargs):
    kwargs.setdefault("signals", False)
    kwargs.setdefault("dwell", 0)
    kwargs.setdefault("dwell_tasks", 0)
    return asafe.AdaptiveRuntime(list(opts), **kwargs)


def test_hysteresis_reports_value_thresholds_and_request():
    part = Hysteresis(0.5, 2.0).explain(COMM, False)
    assert part == {"domain": "Hysteresis", "metric": "ratio", "value": 0.25, "source": "ratio",
                    "thresholds": {"alpha": 0.5, "beta": 2.0}, "asks": True, "why": "below alpha"}
    above = Hysteresis(0.5, 2.0).explain(ModeVector({"compute": 4, "communication": 1}), True)
    assert (above["asks"], above["why"]) == (False, "above beta")
    idle = Hysteresis(0.5, 2.0).explain(ModeVector(), True)
    assert (idle["value"], idle["asks"], idle["why"]) == ("nan", True, "unknown (nan): keeps on")


def test_combined_domains_nest_their_parts_with_the_states_they_see():
    domain = AnyOf([Hysteresis(1.0, 8.0), AtLeast("reuse", on=16)])
    local = ModeVector({"compute": 1}, reuse=32.0)
    part = domain.explain(local, False)
    assert part["asks"] is True and part["why"] == "on while some part asks on"
    ratio, reuse = part["parts"]
    assert (ratio["value"], ratio["asks"]) == ("inf", False)
    assert (reuse["value"], reuse["asks"], reuse["thresholds"]) == (32.0, True, {"on": 16.0, "off": 16.0})
    # every part's request is what its decide() gives for the state it is handed
    wire = AllOf([Hysteresis(0.5, 2.0), Hysteresis(0.5, 0.8, metric="external_cpu"),
                  Hysteresis(2.5e8, 5e8, metric="bandwidth")])
    explained = wire.explain(COMM, True)
    assert [p["asks"] for p in explained["parts"]] == [d.decide(COMM, True) for d in wire.domains]
    assert explained["parts"][2]["source"] == "absent"  # no bandwidth signal in this mode
    assert explained["asks"] == wire.decide(COMM, True)


def test_gated_bands_and_fixed():
    wire = Gated(Hysteresis(0.5, 2.0), Bands("bandwidth", [200e6], ["zstd", "lz4"], margin=0.2))
    on = wire.explain(COMM.replace(bandwidth=1e8), False)
    assert on["asks"] == "zstd"
    gate, then = on["parts"]
    assert (gate["role"], gate["asks"], then["role"], then["asks"]) == ("gate", True, "then", "zstd")
    assert then["thresholds"] == {"edges": [200e6], "states": ["zstd", "lz4"], "margin": 0.2}
    off = wire.explain(ModeVector({"compute": 4, "communication": 1}, bandwidth=1e8), "zstd")
    assert off["asks"] is False and off["parts"][1]["asks"] is None
    assert off["parts"][1]["why"] == "not asked: the gate is off"
    kept = Bands("bandwidth", [200e6], ["zstd", "lz4"], margin=0.2).explain(ModeVector({}, bandwidth=220e6), "zstd")
    assert kept["asks"] == "zstd" and "margin" in kept["why"]
    assert Fixed("lz4").explain(COMM, False) == {"domain": "Fixed", "thresholds": {}, "asks": "lz4", "why": "fixed"}


def test_user_domains_get_a_default_and_a_failing_one_is_reported():
    class Plain:  # not an EfficiencyDomain: any object with decide
        metric = "cpu"

        def decide(self, mode, state):
            return mode.metric("cpu") > 0.8

    part = explain_domain(Plain(), ModeVector({"compute": 1}, cpu=0.9), False)
    assert (part["domain"], part["value"], part["asks"]) == ("Plain", 0.9, True)

    class Broken(asafe.EfficiencyDomain):
        def decide(self, mode, state):
            raise RuntimeError("boom")

    broken = explain_domain(Broken(), COMM, False)
    assert broken["asks"] is None and broken["error"] == "RuntimeError: boom"
    assert domain_metrics(Gated(Plain(), AtLeast("reuse", on=2))) == ["cpu", "reuse"]


def test_runtime_explain_is_json_and_text_one_line_per_part():
    wire = AllOf([Hysteresis(0.5, 2.0), Hysteresis(0.5, 0.8, metric="external_cpu")])
    rt = _runtime(Optimization("wire", wire))
    before = rt.explain("wire")
    assert before["time"] is None and str(before).splitlines()[0] == "wire: off; not evaluated yet"
    rt.evaluate(mode=COMM, now=10.0)
    explained = rt.explain("wire")
    data = json.loads(json.dumps(explained))
    assert data["state"] is True and data["asks"] is True and data["held"] is None and data["time"] == 10.0
    assert data["mode"]["ratio"] == 0.25 and data["mode"]["signals"]["reuse"] == "nan"
    lines = str(explained).splitlines()
    assert len(lines) == 4  # the optimization, AllOf, its two parts
    assert lines[2].strip().startswith("Hysteresis: ratio = 0.25") and lines[2].endswith("asks on")
    with pytest.raises(KeyError, match="known: \\['wire'\\]"):
        rt.explain("wrie")


def test_runtime_explain_says_when_the_dwell_holds_a_state():
    rt = _runtime(Optimization("c", Hysteresis(0.5, 2.0)), dwell=5.0)
    rt.evaluate(mode=COMM, now=0.0)
    rt.evaluate(mode=ModeVector({"compute": 4, "communication": 1}), now=1.0)  # asks off; 1 s of 5
    explained = rt.explain("c")
    assert explained["state"] is True and explained["asks"] is False
    assert explained["held"].startswith("held by the dwell: 1 s of 5 s")
    assert "held by the dwell" in str(explained).splitlines()[0]
    # the dwell's two exceptions: a graph's arrival, and (once a dwell) a change of the signals alone
    assert "arrival" in explained["held"] and "signals alone" in explained["held"]


def test_explain_leaves_out_the_signals_exception_once_a_report_has_skipped_the_dwells_seconds():
    rt = _runtime(Optimization("c", Hysteresis(0.5, 0.8, metric="external_cpu")), dwell=5.0)
    rt.evaluate(mode=ModeVector({"compute": 1}, external_cpu=0.1), now=0.0)  # on
    off = rt.evaluate(mode=ModeVector({"compute": 1}, external_cpu=0.9), now=1.0, signals_changed=True)
    assert [t.new for t in off] == [False]  # a report's toggle within the seconds: the once of this dwell
    rt.evaluate(mode=ModeVector({"compute": 1}, external_cpu=0.1), now=2.0)  # asks on, held
    held = rt.explain("c")["held"]
    assert held.startswith("held by the dwell: 1 s of 5 s") and "signals alone" not in held


def test_unknown_metrics():
    mode = ModeVector({"compute": 1}, cpu=0.5)
    assert unknown_metrics(["ratio", "cpu", "bandwidth", "reuse", "compute"], mode, []) == []
    assert unknown_metrics(["ratoi", "io"], mode, ["io"]) == ["ratoi"]


def test_a_typo_in_a_metric_warns_once_at_the_first_evaluation(caplog):
    rt = _runtime(Optimization("c", Hysteresis(0.5, 2.0, metric="ratoi")))
    with caplog.at_level(logging.WARNING, logger="asafe"):
        rt.evaluate(mode=COMM)
        rt.evaluate(mode=COMM)
    warned = [r.getMessage() for r in caplog.records if "ratoi" in r.getMessage()]
    assert len(warned) == 1
    assert "Did you mean 'ratio'?" in warned[0] and "external_cpu, reuse" in warned[0]
    assert "communication, compute" in warned[0]  # the types the mode has


def test_declared_and_seen_types_and_asafe_signals_do_not_warn(caplog):
    @asafe.typed("h6-declared")
    def load(x):
        return x

    rt = _runtime(Optimization("a", AtLeast("h6-declared", on=0.5)),
                  Optimization("b", Hysteresis(2.5e8, 5e8, metric="bandwidth")),
                  Optimization("c", AtLeast("h6-seen", on=0.5)))
    rt.tracker.add("h6-seen", "x")
    with caplog.at_level(logging.WARNING, logger="asafe"):
        rt.evaluate()
    assert [r.getMessage() for r in caplog.records] == []


def test_the_default_runtime_warns_nothing_on_the_threaded_scheduler(caplog):
    rt = asafe.AdaptiveRuntime()
    with caplog.at_level(logging.WARNING, logger="asafe"), asafe.adaptive(rt, scheduler="threads"):
        with asafe.task_type(asafe.COMMUNICATION):
            sent = [dask.delayed(sum)([i, 1]) for i in range(8)]
        dask.compute(*sent)
    assert rt.timeline, "the runtime was never evaluated"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
