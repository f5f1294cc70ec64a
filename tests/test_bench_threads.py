"""The kernel-threads suite (benchmarks/threads.py): a --quick run on a real cluster, and its parts.

No timing is asserted: the run checks that every variant ran the same work
(checksums), with the BLAS threads it stands for, and that the results file
says what it measured.
"""
from __future__ import annotations

import json
import os

import pytest

from asafe.schedulers import threads as kernel_threads

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import threads

CORES = os.cpu_count() or 1


def test_the_ladder_is_the_guide_s_domain():
    for cores in (1, 2, 3, 8, 64):
        ladder = threads._ladder(cores)
        domain = kernel_threads.domain(cores)
        assert (ladder["states"], ladder["edges"]) == (domain.states, domain.edges)


def test_the_summary_is_each_variant_s_median_and_its_paired_ratio_to_dask():
    summary = threads.summarize({"dask": [2.0, 2.0, 4.0], "static-1": [1.0, 1.0, 2.0]})
    assert summary["dask"]["speedup"] == 1.0
    assert summary["static-1"]["speedup"] == 2.0 and summary["static-1"]["median_s"] == 1.0
    assert summary["static-1"]["n"] == 3 and not summary["static-1"]["exact"]


def test_the_local_rule_outside_a_worker_asks_every_core():
    assert threads.local_threads() == CORES


def test_quick_run_runs_every_variant_on_the_same_work(tmp_path, capsys):
    assert threads.main(["--quick", "--out", str(tmp_path), "--workers", "2"]) == 0
    results = json.loads((tmp_path / "threads" / "threads.json").read_text())
    assert set(results["runs"]) == set(threads.VARIANTS) and results["checksums_agree"]
    assert {"environment", "load_average_start", "load_average_end", "settings", "summary"} <= set(results)
    for variant, (run,) in results["runs"].items():
        assert run["seconds"] > 0 and len(run["phase_seconds"]) == 2
        assert results["summary"][variant]["n"] == 1
    seen = {variant: run["blas_threads"] for variant, (run,) in results["runs"].items()}
    assert seen["dask"] == seen["static-1"] == {"large": [1], "small": [1]}  # distributed: OPENBLAS_NUM_THREADS=1
    assert seen["static-all"] == {"large": [CORES], "small": [CORES]}
    assert seen["local"]["large"] == [CORES]  # one task on its worker's queue: the local rule asks every core
    assert seen["oracle"] == {"large": [CORES], "small": [1]}  # set by the driver before each phase
    assert [row["against"] for row in results["targets"]] in (["static-1", "oracle"], ["static-all", "oracle"])
    if CORES >= 2:
        assert seen["adaptive"]["large"] == [CORES]  # one large task on two worker threads
        assert 1 in seen["adaptive"]["small"]  # 8 small tasks per worker thread
        assert results["runs"]["adaptive"][0]["transitions"] >= 1
    out = capsys.readouterr().out
    assert "adaptive" in out and "results:" in out


def test_the_heldout_set_runs_another_sequence_and_is_held_to_the_static_setting(tmp_path):
    assert threads.main(["--quick", "--out", str(tmp_path), "--workers", "2", "--phase-set", "heldout"]) == 0
    results = json.loads((tmp_path / "threads" / "threads-heldout.json").read_text())
    assert results["checksums_agree"] and results["settings"]["phase_set"] == "heldout"
    assert [phase for phase, _, _ in results["settings"]["plan"]] == list(threads.HELDOUT_ORDER[:2])
    (row,) = results["targets"]
    assert row["target"] == 0.97 and row["against"] in ("static-1", "static-all")


def test_targets_are_met_only_when_the_interval_clears_them():
    fast = {"static-1": [3.0] * 6, "static-all": [2.0] * 6, "adaptive": [1.0] * 6, "oracle": [1.0] * 6}
    assert [row["verdict"] for row in threads.targets(fast, "calibration")] == ["met", "met"]
    slow = {"static-1": [3.0] * 6, "static-all": [2.0] * 6, "adaptive": [2.5] * 6, "oracle": [1.0] * 6}
    assert [row["verdict"] for row in threads.targets(slow, "calibration")] == ["not met", "not met"]
    (row,) = threads.targets({"static-1": [2.0] * 6, "static-all": [2.1] * 6, "adaptive": [2.02] * 6}, "heldout")
    assert row["against"] == "static-1" and row["verdict"] == "met"


def test_an_unknown_phase_set_is_refused(capsys):
    with pytest.raises(SystemExit):
        threads.main(["--phase-set", "held-out"])
    assert "invalid choice: 'held-out'" in capsys.readouterr().err


def test_a_round_count_below_one_is_refused(capsys):
    with pytest.raises(SystemExit):
        threads.main(["--rounds", "0"])
    assert "--rounds: must be >= 1, got 0" in capsys.readouterr().err


def test_doctests_of_the_threads_suite():
    import doctest

    failures, _ = doctest.testmod(threads, optionflags=doctest.ELLIPSIS)
    assert failures == 0
