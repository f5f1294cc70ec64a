"""The work-stealing suite (benchmarks/policy.py): a --quick run on a real cluster, and its parts.

No timing is asserted: the run checks that every variant ran the same work
(checksums), that stealing runs again after every variant, and that the
results file says what it measured. It runs on the loopback as it is (--link
needs root or user namespaces).
"""
from __future__ import annotations

import json

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import policy


def test_the_plan_is_fixed_and_the_same_for_every_variant():
    assert policy.phase_plan(2, 2, 8.0) == policy.phase_plan(2, 2, 8.0)
    kinds = [p["kind"] for p in policy.phase_plan(2, 2, 8.0)]
    assert kinds == ["compute", "transfer", "compute", "transfer"]


def test_targets_compare_with_the_better_static_setting():
    rows = policy.targets({"dask": [2.0] * 6, "static-off": [3.0] * 6, "adaptive": [1.0] * 6, "oracle": [1.0] * 6})
    assert rows[0]["against"] == "dask" and rows[0]["verdict"] == "met"
    assert rows[1] == {**rows[1], "against": "oracle", "target": None, "verdict": "reported"}


def test_quick_run_runs_every_variant_on_the_same_work(tmp_path, capsys):
    assert policy.main(["--quick", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "policy" / "policy.json").read_text())
    assert set(results["runs"]) == set(policy.VARIANTS) and results["checksums_agree"]
    assert {"environment", "load_average_start", "load_average_end", "settings", "summary", "targets"} <= set(results)
    for variant, (run,) in results["runs"].items():
        assert run["seconds"] > 0 and len(run["phase_seconds"]) == 2
        assert results["summary"][variant]["n"] == 1
    assert results["runs"]["static-off"][0]["phase_steals"] == [0, 0]  # stopped for the whole run
    assert results["runs"]["adaptive"][0]["fallbacks"].get("work-stealing", 0) == 0
    assert results["targets"][0]["against"] in ("dask", "static-off") and results["targets"][0]["target"] == 1.10
    out = capsys.readouterr().out
    assert "adaptive vs" in out and "results:" in out


def test_doctests_of_the_policy_suite():
    import doctest

    failures, _ = doctest.testmod(policy, optionflags=doctest.ELLIPSIS)
    assert failures == 0
