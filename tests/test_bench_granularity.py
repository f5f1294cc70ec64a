"""The granularity suite (benchmarks/granularity.py): a --quick run on a real cluster, its options and its parts.

No timing is asserted: the run checks that every variant ran every panel count
correctly (against scipy), that the per-task rule's decisions and their cost
were counted, and that the results file says what it measured.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from asafe.app.pertask import PerTask, drain

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import __main__ as cli
from benchmarks import granularity


def test_quick_run_measures_every_variant_at_every_panel_count(tmp_path, capsys):
    assert granularity.main(["--quick", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "granularity" / "granularity.json").read_text())
    assert {"environment", "load_average_start", "load_average_end", "settings", "points", "targets",
            "correct", "warning"} <= set(results)
    assert (tmp_path / "granularity" / "granularity.png").stat().st_size > 0
    assert results["correct"] is True
    settings = results["settings"]
    assert settings["panels"] == list(granularity.QUICK_PANELS) and settings["repetitions"] == 1
    assert settings["grid"] == granularity.QUICK_PHASES[0].grid
    assert [p["name"] for p in settings["phases"]] == ["gran-shipped-sparse", "gran-local-denseish"]
    assert [p["panels"] for p in results["points"]] == list(granularity.QUICK_PANELS)
    steps = sum(p.steps for p in granularity.QUICK_PHASES)
    for point in results["points"]:
        assert set(point["median_s"]) == {"adaptive", "per-task", "static-on", "static-off", "oracle"}
        assert all(point["correct"].values()) and point["errors"] == []
        assert all(len(seconds) == 1 and seconds[0] > 0 for seconds in point["seconds"].values())
        assert point["tile_rows_per_panel"] * point["panels"] == settings["grid"]
        paired = point["per_task_vs_adaptive"]
        assert paired["exact"] is False and paired["verdict"] == "not shown"  # one round: no 95% interval
        assert np.isclose(paired["ratio"], point["seconds"]["per-task"][0] / point["seconds"]["adaptive"][0])
        cost = point["decision_cost"]
        assert cost["decisions_per_run"] == point["panels"] * steps  # one estimate per panel, step and phase
        assert cost["estimate_s_per_run"] > 0 and cost["ms_per_decision"] > 0
        assert len(cost["per_run"]) == 1
        assert len(point["compressed_share"]) == 2
    targets = results["targets"]
    assert set(targets["verdicts"]) == {str(p) for p in granularity.QUICK_PANELS}  # JSON keys
    assert targets["all"] == "not shown" and targets["faster_at_finest"] == "not shown"
    out = capsys.readouterr().out
    assert "per-task / adaptive" in out and "results:" in out


@pytest.mark.parametrize("panels, message", [
    ("4,0", "--panels: 0 is not a panel count >= 1"),
    ("4,x", "--panels: 'x' is not a whole number"),
    ("4,4", "--panels: 4 is given twice"),
    ("64", "--panels: 64 is more panels than the matrix has tile rows (32)"),  # --quick: 32 tile rows
    ("", "--panels: no panel count given"),
])
def test_bad_panels_are_refused_with_a_clear_message(panels, message, tmp_path, capsys):
    assert granularity.main(["--quick", "--panels", panels, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "granularity").exists()


def test_a_round_count_below_one_is_refused(capsys):
    with pytest.raises(SystemExit):
        granularity.main(["--repetitions", "0"])
    assert "--repetitions: must be >= 1, got 0" in capsys.readouterr().err


def test_the_sweep_changes_only_the_panel_count():
    for count in granularity.PANELS:
        points = granularity.sweep_point(granularity.PHASES, count)
        for phase, base in zip(points, granularity.PHASES):
            assert phase.panels == count and phase.scaled(panels=base.panels) == base
            assert phase.source().key() == base.source().key()  # the same matrix
    assert max(granularity.PANELS) <= granularity.PHASES[0].grid
    assert {p.placement for p in granularity.PHASES} == {"shipped", "local"}


def test_the_rule_logs_the_seconds_of_each_estimate():
    drain()
    assert PerTask(reads=1, remote=False)(np.ones((64, 256)), 32, None) is False
    (logged,) = drain()
    assert logged["estimate_s"] > 0


def test_the_decision_cost_sums_the_estimates_of_a_run():
    runs = [SimpleNamespace(seconds=1.0, decisions=[{"estimate_s": 0.0005}] * 10 + [{"estimate_s": None}])]
    cost = granularity.decision_cost(runs)
    assert cost["decisions_per_run"] == 11 and np.isclose(cost["estimate_s_per_run"], 0.005)
    assert granularity.decision_cost([]) is None


def test_the_targets_need_every_count_and_the_finest_above_one():
    def point(panels, low, high):
        return {"panels": panels, "per_task_vs_adaptive": {"ci95": [low, high], "exact": True}}

    met = granularity.target_rows([point(4, 1.0, 1.1), point(128, 1.05, 1.2)])
    assert (met["all"], met["faster_at_finest"], met["finest_panels"]) == ("met", "met", 128)
    lost = granularity.target_rows([point(4, 0.9, 0.98), point(128, 1.0, 1.2)])
    assert (lost["all"], lost["faster_at_finest"]) == ("not met", "not shown")  # 1.0 at the finest is not faster


def test_the_suite_is_listed():
    assert "granularity" in cli.SUITES and "granularity" in cli.available_suites()


def test_doctests_of_the_granularity_suite():
    import doctest

    failures, _ = doctest.testmod(granularity, optionflags=doctest.ELLIPSIS)
    assert failures == 0
