"""The phased suite's tuning rule (benchmarks/phased.py): percentiles of ratios and alpha/beta from them."""
from __future__ import annotations

import math

import pytest

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import phased  # noqa: E402


def test_ratio_percentiles_keep_inf_and_drop_nan():
    pct = phased.ratio_percentiles([1.0, 2.0, math.inf, math.nan] + [3.0] * 6)
    assert pct["n"] == 9
    assert pct["p50"] == 3.0 and pct["p99"] == math.inf and pct["p1"] == pytest.approx(1.08)
    empty = phased.ratio_percentiles([math.nan])
    assert empty["n"] == 0 and empty["p5"] is None


def test_thresholds_rule_puts_each_threshold_between_its_bounds():
    alpha, beta = phased.thresholds_rule(shipped_p50=0.65, shipped_p90=1.4, local_p5=1.6, local_p50=58.0)
    assert (alpha, beta) == (1.0, 8.0)
    # geometric means, rounded to powers of two
    assert phased.thresholds_rule(0.25, 1.0, 16.0, 64.0) == (2.0, 8.0)
    assert phased.thresholds_rule(0.1, 0.1, 0.1, 0.1) == (0.125, 0.125)


def test_reuse_rule_takes_the_smallest_reuse_that_pays_everywhere_from_there_on():
    gains = {"fill20": {1: 0.90, 2: 0.97, 4: 1.20, 8: 1.50, 16: 1.9},
             "dense": {1: 0.80, 2: 1.05, 4: 1.10, 8: 1.30, 16: 2.0}}
    assert phased.reuse_rule(gains) == 4.0
    # a win at 2 that a loss at 4 contradicts is noise, not a threshold
    assert phased.reuse_rule({"a": {1: 0.9, 2: 1.1, 4: 0.95, 8: 1.2}}) == 8.0
    # compression never pays: the ratio alone decides
    assert phased.reuse_rule({"a": {1: 0.9, 2: 0.8}}) == math.inf
    assert phased.reuse_rule({"a": {1: 1.2, 2: 1.3}}) == 1.0


def test_the_reuse_section_measures_each_local_phase_at_each_reuse(tmp_path):
    import json

    assert phased.main(["--quick", "--section", "reuse", "--tune-phases", "test", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "phased" / "results.json").read_text())["records"]["reuse"]
    assert set(record["phases"]) == {"local-denseish", "local-dense"}  # the local phases of the set only
    for by_reuse in record["phases"].values():
        assert sorted(by_reuse, key=int) == [str(r) for r in phased.QUICK_REUSES]
        for point in by_reuse.values():
            assert point["phase"]["vectors"] in phased.QUICK_REUSES
            assert len(point["samples_s"]["static-on"]) == len(point["samples_s"]["static-off"]) == 3
    assert float(record["rule"]["reuse"]) == phased.reuse_rule(  # JSON writes inf as "inf"
        {name: {int(r): p["off_over_on"] for r, p in by_reuse.items()} for name, by_reuse in record["phases"].items()})


def test_thresholds_rule_keeps_beta_below_what_the_blend_lets_the_ratio_reach():
    # (1 - blend) / blend is the ratio of a pure-compute scheduled view beside a
    # pure-communication window: a beta at or above it cannot switch off at a phase start
    for blend in (0.05, 0.1, 0.2, 0.25, 0.5):
        alpha, beta = phased.thresholds_rule(0.65, 1.4, 1.6, 58.0, blend=blend)
        assert beta < (1 - blend) / blend and alpha <= beta
    assert phased.thresholds_rule(0.65, 1.4, 1.6, 58.0, blend=1.0) == (1.0, 8.0)  # the window alone: no ceiling


def test_under_load_pairs_the_loaded_phases_of_each_round():
    from asafe.app.workload import Phase

    phases = [Phase("quiet", scale=8), Phase("link", scale=8, load="link"), Phase("mem", scale=8, load="memory")]
    samples = {  # per round: the seconds of each phase; the quiet phase must not count
        "adaptive": [[9.0, 1.0, 1.0], [0.1, 2.0, 2.0], [5.0, 1.0, 3.0]],
        "per-task": [[0.1, 2.0, 2.0], [9.0, 2.0, 2.0], [0.1, 4.0, 4.0]],
    }
    out = phased.under_load(phases, samples)
    assert out["phases"] == ["link", "mem"] and out["base"] == "adaptive"
    assert out["median_s"] == {"adaptive": 4.0, "per-task": 4.0}
    # paired per round: 4/2, 4/4, 8/4 -> median 2.0 (an unpaired ratio of medians would say 1.0)
    assert out["vs"]["per-task"]["ratio"] == 2.0
    assert phased.under_load(phases[:1], samples) is None  # nothing ran under load
    assert phased.under_load(phases, {"per-task": samples["per-task"]}) is None  # adaptive did not run


def test_per_task_rule_takes_where_the_tuning_phases_start_to_disagree():
    gains = {"fill20": {1: 0.9, 2: 0.95, 4: 0.9, 8: 0.97, 16: 1.1},
             "dense": {1: 0.8, 2: 0.97, 4: 1.05, 8: 1.2, 16: 1.3}}
    assert phased.per_task_rule(gains) == 4.0  # dense wins from 4 on; fill20 only at 16
    assert phased.reuse_rule(gains) == 16.0  # where they all agree
    # a win that a larger reuse contradicts is noise, in each phase
    assert phased.per_task_rule({"a": {1: 1.2, 2: 0.9, 4: 1.1}}) == 4.0
    assert phased.per_task_rule({"a": {1: 0.9}}) == math.inf


def test_the_default_reuse_settings_follow_from_the_committed_calibration_data():
    import json
    from pathlib import Path

    from asafe.app.variants import DEFAULT_THRESHOLDS

    path = Path(__file__).resolve().parents[1] / "docs" / "results" / "calibration-reuse" / "results.json"
    phases = json.loads(path.read_text())["records"]["reuse"]["phases"]
    gains = {name: {int(r): x["off_over_on"] for r, x in by_reuse.items()} for name, by_reuse in phases.items()}
    assert phased.reuse_rule(gains) == DEFAULT_THRESHOLDS.reuse == 16.0
    assert phased.per_task_rule(gains) == DEFAULT_THRESHOLDS.per_task_reuse == 2.0


def test_the_phases_section_reports_its_phases_under_load(tmp_path, capsys):
    import json

    from distributed import Client, LocalCluster

    from asafe.app import workload as wl
    from asafe.app.variants import DEFAULT_THRESHOLDS
    from benchmarks.harness import Results

    quiet = wl.TEST_PHASES[0]
    phases = [quiet, quiet.scaled(name="busy", load="memory")]
    results = Results("phased", tmp_path)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        expected = [wl.reference(quiet)] * 2
        phased.section_phases(client, phases, DEFAULT_THRESHOLDS, expected, 1, results,
                              variants=("adaptive", "static-on", "static-off"))
    out = capsys.readouterr().out
    assert "under load (busy): adaptive" in out
    results.save()
    record = json.loads((tmp_path / "phased" / "results.json").read_text())["records"]["phases"]
    # the targets' verdicts are the demo's, from the shared rule: the interval decides, never the point
    from asafe.app import stats

    targets = record["targets"]
    best, oracle = targets["adaptive_vs_best_static"], targets["adaptive_vs_oracle"]
    assert best["verdict"] == stats.verdict(best["ci95"], best["target"], ">=")
    assert oracle["verdict"] == stats.verdict(oracle["ci95"], oracle["target"], "<=")
    assert best["ci_coverage"] == 0.0  # one round: the interval is a point and covers nothing
    line = next(line for line in out.splitlines() if line.strip().startswith("targets (paired ratios"))
    assert f">= {best['target']}: {best['verdict']})" in line and f"<= {oracle['target']}: {oracle['verdict']})" in line
    assert "(0%)" in line and "True" not in line and "False" not in line
    assert record["under_load"]["phases"] == ["busy"] and set(record["under_load"]["vs"]) == {
        "static-on", "static-off", "oracle"}
    assert [r["kind"] for r in record["loads"]["busy"]] == ["memory"] * 3  # one measured run per variant


def test_the_phases_section_runs_without_the_adaptive_variant(tmp_path, capsys):
    import json

    from distributed import Client, LocalCluster

    from asafe.app import workload as wl
    from asafe.app.variants import DEFAULT_THRESHOLDS
    from benchmarks.harness import Results

    phases = list(wl.TEST_PHASES[:2])
    results = Results("phased", tmp_path)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        phased.section_phases(client, phases, DEFAULT_THRESHOLDS, [wl.reference(p) for p in phases], 1, results,
                              variants=("adaptive-arrivals", "adaptive-dwell", "static-on", "static-off"))
    assert "targets: the adaptive variant's, and it did not run" in capsys.readouterr().out
    results.save()
    record = json.loads((tmp_path / "phased" / "results.json").read_text())["records"]["phases"]
    assert set(record["transitions_by_variant"]) == {"adaptive-arrivals", "adaptive-dwell"}
    assert "adaptive-arrivals_vs_adaptive-dwell" in record["paired_speedups"]


def test_the_suite_resolves_every_variant_and_phase_set_by_the_names_they_had(capsys):
    from asafe.app.variants import DEFAULT_THRESHOLDS
    from benchmarks import demo as bench_demo
    from benchmarks import phase_sets, variants

    names = ("adaptive", "adaptive-ready", "adaptive-arrivals", "adaptive-dwell", "adaptive-sampling", "per-task",
             "hybrid", "static-on", "static-off")
    assert variants.ALL_VARIANTS == tuple(variants.KNOWN) == names
    known = variants.KNOWN
    # what each does: a runtime installed, a rule per panel, the next wave counted, arrivals past the dwell
    assert {v for v in names if known[v].installed} == {
        "adaptive", "adaptive-ready", "adaptive-arrivals", "adaptive-dwell", "adaptive-sampling", "hybrid"}
    assert {v for v in names if known[v].rule} == {"per-task", "hybrid", "adaptive-sampling"}
    assert [v for v in names if not known[v].next_wave] == ["adaptive-ready"]
    assert known["adaptive-arrivals"].runtime(DEFAULT_THRESHOLDS).arrivals_skip_dwell is True
    assert known["adaptive-dwell"].runtime(DEFAULT_THRESHOLDS).arrivals_skip_dwell is False
    assert set(phase_sets.PHASE_SETS) == {"default", "quick", "test", "calibration", "calibration2", "heldout",
                                          "heldout2", "heldout3", "heldout4", "heldout5", "loaded", "loaded2"}
    # the suite's errors and the demo twin's help list exactly what is allowed
    assert phased.main(["--variants", "adaptive,greedy,static-on,static-off"]) == 2
    assert f"allowed: {', '.join(names)}" in capsys.readouterr().err
    assert phased.main(["--phases", "huge"]) == 2
    assert "size must be one of ['calibration', 'calibration2', 'default'" in capsys.readouterr().err
    assert bench_demo.main(["--help"]) == 0
    assert f"from {', '.join(names)} (static-on" in " ".join(capsys.readouterr().out.split())
