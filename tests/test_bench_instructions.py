"""The instructions suite (benchmarks/instructions.py): its arithmetic, its child program, its errors.

Valgrind itself is not run here (a count takes minutes); the child program each
variant runs under it is run directly, on a tiny graph, so a broken variant fails
here and not in the middle of a benchmark.
"""
from __future__ import annotations

import subprocess

import dask
import pytest

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import instructions  # noqa: E402


def test_per_compute_is_half_the_difference_of_three_and_one():
    assert instructions.per_compute(1_000, 1_600) == 300
    with pytest.raises(ValueError, match=r"three computes counted fewer instructions \(900\) than one \(1000\)"):
        instructions.per_compute(1_000, 900)


def test_the_summary_line_of_a_cachegrind_file_is_the_count():
    text = "desc: I1 cache: ...\ncmd: python -c ...\nevents: Ir\nfl=x.c\n1 5\nsummary: 4615123456\n"
    assert instructions._summary(text) == 4_615_123_456
    with pytest.raises(ValueError, match="no 'summary:' line"):
        instructions._summary("events: Ir\n")


def test_intervals_are_stretched_by_the_slowdown_from_the_configured_values():
    assert instructions.scaled_intervals(50.0) == {"DASK_ASAFE__CONTROLLER__INTERVAL": "0.5s",
                                                   "DASK_ASAFE__SIGNALS__INTERVAL": "25s"}
    with dask.config.set({"asafe.controller.interval": "20ms"}):
        assert instructions.scaled_intervals(10.0)["DASK_ASAFE__CONTROLLER__INTERVAL"] == "0.2s"
    with pytest.raises(ValueError, match="slowdown must be >= 1, got 0.5"):
        instructions.scaled_intervals(0.5)


def test_bad_variants_and_schedulers_are_refused_before_valgrind_runs():
    with pytest.raises(ValueError, match=r"unknown variant 'fast'; known: \['adaptive', 'adaptive-python', 'plain'\]"):
        instructions.count_instructions("fast", "sync", 1, 10, {})
    with pytest.raises(ValueError, match=r"scheduler must be one of \['threads', 'sync'\], got 'processes'"):
        instructions.count_instructions("plain", "processes", 1, 10, {})


def test_main_says_what_is_missing_or_wrong(monkeypatch, capsys):
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    assert instructions.main(["--scheduler", "sync"]) == 2
    assert "valgrind is not on the PATH" in capsys.readouterr().err
    monkeypatch.setattr(instructions.shutil, "which", lambda name: "/usr/bin/valgrind")
    assert instructions.main(["--repeat", "0"]) == 2
    assert "--repeat must be >= 1, got 0" in capsys.readouterr().err
    assert instructions.main(["--tasks", "3"]) == 2
    assert "--tasks must be >= 4, got 3" in capsys.readouterr().err


@pytest.mark.parametrize("variant", sorted(instructions.VARIANTS))
def test_the_child_program_of_every_variant_runs_and_checks_its_result(variant, tmp_path):
    """Run from an empty folder, as under valgrind: it imports this process's asafe and the workload."""
    import asafe

    command = instructions.child_command(variant, "threads", 2, 10)
    command[2] += "\nprint(asafe.__file__)"
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == asafe.__file__
    broken = instructions.child_command(variant, "sync", 1, 10)
    broken[2] = broken[2].replace("expected_total(n_tasks)", "expected_total(n_tasks) + 1")
    done = subprocess.run(broken, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "AssertionError" in done.stderr


def test_a_run_without_the_compiled_hooks_is_flagged(monkeypatch, tmp_path, capsys):
    from asafe.schedulers import local
    from benchmarks import overhead
    from benchmarks.harness import Results

    results = Results("instructions", tmp_path)
    overhead.warn_without_compiled_hooks(results)
    if local._hotpath is not None:
        assert results.warnings == []
    monkeypatch.setattr(local, "_hotpath", None)
    overhead.warn_without_compiled_hooks(results)
    assert "HOOKS: asafe imported from" in capsys.readouterr().err
    assert any("'adaptive' measures the pure-Python hooks" in w for w in results.warnings)
