"""The start-up suite (benchmarks/startup.py): a --quick run on real clusters and its summary.

No timing is asserted: the run checks that both starts are measured with and
without asafe's preload and that the results file says what it measured.
"""
from __future__ import annotations

import json

import pytest

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import startup


def test_the_summary_is_the_median_difference_with_its_interval():
    summary = startup.summarize([(1.0, 1.2), (1.0, 1.1), (2.0, 2.1), (1.0, 0.9), (1.0, 1.1), (1.0, 1.3)])
    assert summary["added_s"] == pytest.approx(0.1)
    assert summary["n"] == 6 and summary["exact"] and summary["coverage"] >= 0.95
    low, high = summary["ci95"]
    assert low <= summary["added_s"] <= high


def test_a_round_count_below_one_is_refused(capsys):
    with pytest.raises(SystemExit):
        startup.main(["--rounds", "0"])
    assert "--rounds: must be >= 1, got 0" in capsys.readouterr().err


def test_quick_run_measures_both_starts_with_and_without_the_preload(tmp_path, capsys):
    assert startup.main(["--quick", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "startup" / "startup.json").read_text())
    for name in ("nanny", "cluster"):
        (without, with_preload), = results[name]["pairs"]
        assert without > 0 and with_preload > 0
        assert results[name]["n"] == 1 and not results[name]["exact"]
    out = capsys.readouterr().out
    assert "nanny" in out and "cluster" in out and "results:" in out
