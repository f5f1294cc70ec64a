"""The benchmark harness (benchmarks/harness.py), the CLI and the overhead suite.

No timing is asserted: :func:`measure` runs on a fake clock that each fake variant
advances by a chosen amount, so samples, loop counts and stop decisions are exact.
``benchmarks`` is loaded from the checkout by file location, without adding the
repository root to ``sys.path`` (see tests/test_bench_stats.py).
"""
from __future__ import annotations

import itertools
import json
import math
import sys
import types

import numpy as np
import pytest



# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import harness  # noqa: E402
from benchmarks import __main__ as cli  # noqa: E402
from benchmarks.harness import Measurement, Results, measure, speedup  # noqa: E402


class FakeClock:
    """A clock that only moves when a fake variant says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake(clock: FakeClock, durations, value=42, log=None, name=None):
    """A variant whose calls take ``next(durations)`` fake seconds and return ``value``."""
    durations = iter(durations)

    def call():
        clock.now += next(durations)
        if log is not None:
            log.append(name)
        return value

    return call


def constant(seconds):
    return itertools.repeat(seconds)


def recorder():
    calls = []

    def check(name, result):
        calls.append((name, result))

    return check, calls


# --------------------------------------------------------------------------- measure
def test_check_is_called_on_warmup_and_every_sample():
    clock = FakeClock()
    check, calls = recorder()
    m = measure({"a": fake(clock, constant(0.01)), "b": fake(clock, constant(0.02))}, check=check,
                warmup=2, min_samples=9, timer=clock)
    for name in ("a", "b"):
        assert m[name].ok and m[name].loops == 1
        assert m[name].n == 9  # constant data: the target is met as soon as min_samples is
        n_checks = sum(1 for c, _ in calls if c == name)
        assert n_checks == m[name].checks == 2 + m[name].n  # warm-up + every sample
    assert m["a"].samples == pytest.approx([0.01] * 9) and m["a"].median == pytest.approx(0.01)
    assert m["a"].reached_target and not m["a"].unstable


def test_failing_check_is_reported_and_never_timed_further():
    clock = FakeClock()
    log: list[str] = []

    def check(name, result):
        if result != 42:
            raise AssertionError(f"got {result}, expected 42")

    m = measure({"good": fake(clock, constant(0.01), log=log, name="good"),
                 "wrong": fake(clock, constant(0.001), value=41, log=log, name="wrong")},
                check=check, timer=clock)
    assert m["good"].ok
    assert m["wrong"].failed is not None and "check failed on warm-up" in m["wrong"].failed
    assert "expected 42" in m["wrong"].failed
    assert m["wrong"].samples == [] and m["wrong"].n == 0 and math.isnan(m["wrong"].median)
    assert log.count("wrong") == 1  # the warm-up call only
    assert not m["wrong"].unstable  # failed, not unstable
    assert "FAILED" in harness.summary_table(m)
    with pytest.raises(ValueError, match="wrong"):
        speedup(m["good"], m["wrong"])


def test_a_variant_that_goes_wrong_later_loses_its_samples():
    clock = FakeClock()
    counter = itertools.count()

    def flaky():
        clock.now += 0.01
        return 0 if next(counter) == 4 else 1  # the 5th call answers wrongly

    def check(name, result):
        if result != 1:
            raise ValueError("wrong answer")

    m = measure({"flaky": flaky, "ok": fake(clock, constant(0.01), value=1)}, check=check, timer=clock)
    assert m["flaky"].failed is not None and "sample" in m["flaky"].failed and m["flaky"].samples == []
    assert next(counter) == 5  # never called again after the wrong answer
    assert m["ok"].ok


def test_a_variant_that_raises_is_reported():
    clock = FakeClock()

    def broken():
        raise RuntimeError("boom")

    m = measure({"broken": broken, "ok": fake(clock, constant(0.01))}, timer=clock)
    assert "raised on warm-up call 1: RuntimeError: boom" in m["broken"].failed
    assert m["ok"].ok


def test_warmup_is_kept_apart_from_samples():
    clock = FakeClock()
    m = measure({"jit": fake(clock, itertools.chain([5.0, 0.5], constant(0.01)))}, warmup=2, timer=clock)
    assert m["jit"].warmup_s == 5.0 and m["jit"].warmup_times == [5.0, 0.5]
    assert max(m["jit"].samples) == pytest.approx(0.01)
    other = FakeClock()
    no_warmup = measure({"x": fake(other, constant(0.01))}, warmup=0, timer=other)
    assert math.isnan(no_warmup["x"].warmup_s)


def test_sub_millisecond_calls_are_batched():
    clock = FakeClock()
    check, calls = recorder()
    m = measure({"fast": fake(clock, constant(1e-5)), "slow": fake(clock, constant(2e-3))}, check=check,
                min_sample_time=1e-3, timer=clock)
    assert m["fast"].loops == 128  # 1, 2, 4, ... doubled until 128 * 10 us >= 1 ms
    assert m["slow"].loops == 1
    assert np.allclose(m["fast"].samples, 1e-5)  # per-call time = sample / loops
    # checked once per sample (the last call's result) plus warm-up and the calibration steps
    assert m["fast"].checks == 1 + 8 + (m["fast"].n - 1)  # 8 steps: loops 1 .. 128


def test_rounds_are_interleaved_in_rotated_order():
    clock = FakeClock()
    log: list[str] = []
    variants = {name: fake(clock, constant(0.01), log=log, name=name) for name in "ABC"}
    m = measure(variants, warmup=1, min_samples=7, timer=clock)
    assert all(v.n == 7 for v in m.values())
    setup, rounds = log[:6], log[6:]  # warm-up A B C, calibration A B C
    assert setup == list("ABCABC")
    assert [rounds[i:i + 3] for i in range(0, 9, 3)] == [list("BCA"), list("CAB"), list("ABC")]
    assert len(rounds) == 3 * 6


def test_stop_rule_in_measure_runs_to_the_cap_for_wide_data():
    clock = FakeClock()
    rng = np.random.default_rng(0)
    m = measure({"wide": fake(clock, (float(x) for x in rng.lognormal(-4, 1.5, 10_000))),
                 "tight": fake(clock, constant(0.01))}, max_samples=40, max_seconds=1e9, timer=clock)
    assert m["wide"].n == m["tight"].n == 40
    assert not m["wide"].reached_target and "max_samples=40" in m["wide"].stop_reason
    assert m["wide"].unstable and "not reached" in m["wide"].unstable_reason
    assert m["tight"].unstable  # the target is shared: the run as a whole did not reach it


def test_stop_rule_in_measure_time_cap():
    clock = FakeClock()
    rng = np.random.default_rng(1)
    m = measure({"wide": fake(clock, (float(x) for x in rng.lognormal(0, 1, 10_000)))}, max_seconds=5.0,
                timer=clock)
    assert not m["wide"].reached_target and "max_seconds=5" in m["wide"].stop_reason
    assert m["wide"].n < 40


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(variants={}), ValueError, "at least one variant"),
        (dict(variants={"a": 3}), TypeError, "not callable"),
        (dict(variants=[lambda: 1]), TypeError, "mapping"),
        (dict(variants={"a": lambda: 1}, rel_ci=0), ValueError, "rel_ci"),
        (dict(variants={"a": lambda: 1}, rel_ci=-0.1), ValueError, "rel_ci"),
        (dict(variants={"a": lambda: 1}, min_samples=10, max_samples=5), ValueError, "max_samples"),
        (dict(variants={"a": lambda: 1}, max_seconds=0), ValueError, "max_seconds"),
        (dict(variants={"a": lambda: 1}, warmup=-1), ValueError, "warmup"),
        (dict(variants={"a": lambda: 1}, check="no"), TypeError, "check"),
    ],
)
def test_measure_refuses_bad_arguments(kwargs, error, match):
    variants = kwargs.pop("variants")
    with pytest.raises(error, match=match):
        measure(variants, **kwargs)


def test_measure_on_the_real_clock_returns_sane_measurements():
    m = measure({"noop": lambda: None}, max_seconds=0.5, min_samples=6, max_samples=10)
    assert m["noop"].ok and 6 <= m["noop"].n <= 10 and m["noop"].loops >= 1
    assert m["noop"].min <= m["noop"].ci95[0] <= m["noop"].median <= m["noop"].ci95[1] <= m["noop"].max


# --------------------------------------------------------------------------- speedup
def _m(name, samples, **kw):
    return Measurement.from_samples(name, list(samples), **kw)


def test_speedup_on_constructed_data():
    rng = np.random.default_rng(2)
    base = _m("numpy", rng.lognormal(np.log(2e-3), 0.05, 40))
    new = _m("asafe", rng.lognormal(np.log(1e-3), 0.05, 40))
    s = speedup(base, new)
    assert s.ratio == pytest.approx(2.0, rel=0.05) and s.ci95[0] < 2.0 < s.ci95[1]
    assert s.significant and s.p_value < 1e-6
    assert s.slowdown == pytest.approx(1 / s.ratio)
    assert s.paired_ratio == pytest.approx(2.0, rel=0.1) and s.paired_ci95[0] <= s.paired_ratio <= s.paired_ci95[1]
    assert speedup(base, _m("short", new.samples[:10])).paired_ratio is None  # no rounds to pair
    d = s.as_dict()
    assert d["base"] == "numpy" and d["base_median_s"] == pytest.approx(base.median)  # rule 6
    assert "ms" in str(s) and "numpy" in str(s)
    json.dumps(d, allow_nan=False)


def test_speedup_of_equal_distributions_is_not_significant():
    rng = np.random.default_rng(3)
    s = speedup(_m("a", rng.lognormal(0, 0.1, 30)), _m("b", rng.lognormal(0, 0.1, 30)))
    assert s.ci95[0] < 1.0 < s.ci95[1]
    assert not s.significant


def test_measurement_as_dict_and_unstable_reason():
    rng = np.random.default_rng(4)
    wide = _m("wide", rng.lognormal(0, 1, 30), reached_target=False, warmup_times=[3.0])
    d = wide.as_dict()
    assert d["unstable"] and "spread" in d["unstable_reason"] and d["spread_kind"] == "IQR/median"
    assert d["warmup_s"] == 3.0 and d["n"] == 30 and len(d["ci95"]) == 2
    json.dumps(d, allow_nan=False)
    failed = _m("f", [], failed="check failed").as_dict()
    assert failed["median"] == "nan" and failed["failed"] == "check failed"
    json.dumps(failed, allow_nan=False)


# --------------------------------------------------------------------------- environment, results
def test_environment_has_the_required_keys():
    env = harness.environment(scheduler="threads", workers=2)
    assert env["cpu"]["model"] and env["cpu"]["logical_cores"] >= 1
    assert "physical_cores" in env["cpu"] and env["memory"]["total_bytes"] > 0
    assert env["os"]["platform"] and env["python"]["version"]
    for package in ("numpy", "scipy", "numba", "dask", "distributed", "asafe"):
        assert package in env["packages"]
    assert env["packages"]["numpy"] == np.__version__
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        assert variable in env["threads"]["env"]
    assert isinstance(env["threads"]["threadpoolctl"], list) and "numba" in env["threads"]
    assert env["scheduler"] == "threads" and env["workers"] == 2
    json.dumps(env, allow_nan=False)
    with pytest.raises(ValueError, match="overwrite"):
        harness.environment(cpu="mine")


def test_results_write_valid_json_warnings_and_a_figure(tmp_path, capsys):
    rng = np.random.default_rng(5)
    results = Results("demo", outdir=tmp_path)
    results.set_environment(scheduler="sync")
    tight = _m("tight", rng.normal(1e-3, 1e-6, 20))
    wide = _m("wide", rng.lognormal(-7, 1, 20), reached_target=False)
    results.add("matvec", {"tight": tight, "wide": wide})
    results.add("ratio", speedup(tight, wide))
    results.add("parameters", {"alpha": 0.5, "beta": 2.0, "tile": 128, "inf": math.inf, "arr": np.arange(3)})
    results.add("failed", _m("bad", [], failed="wrong result"))
    with pytest.raises(ValueError, match="already"):
        results.add("ratio", 1)
    with pytest.raises(TypeError, match="cannot record"):
        results.add("object", object())
    with results.figure("samples") as (fig, path):
        harness.plot_samples(fig.subplots(), {"tight": tight, "wide": wide})
    path_json = results.save()
    err = capsys.readouterr().err
    assert "UNSTABLE: matvec/wide" in err and "FAILED: failed/bad: wrong result" in err
    assert "matvec/tight" not in err
    data = json.loads(path_json.read_text())
    assert path_json == tmp_path / "demo" / "results.json"
    assert data["suite"] == "demo" and data["environment"]["scheduler"] == "sync"
    assert data["records"]["matvec"]["tight"]["n"] == 20
    assert data["records"]["ratio"]["base_median_s"] == pytest.approx(tight.median)
    assert data["records"]["parameters"]["inf"] == "inf" and data["records"]["parameters"]["arr"] == [0, 1, 2]
    assert any(w.startswith("UNSTABLE: matvec/wide") for w in data["warnings"])
    assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert data["figures"] == [str(path)]


def test_format_table_and_seconds():
    text = harness.format_table([{"variant": "a", "n": 7, "median": "1.2 ms"}, ["bb", 12, "10 ms"]],
                                ["variant", "n", "median"])
    lines = text.splitlines()
    assert lines[0].split() == ["variant", "n", "median"] and set(lines[1]) <= {"-", " "}
    assert lines[2].startswith("a ") and lines[3].endswith("10 ms") and len(lines) == 4
    with pytest.raises(ValueError, match="cells"):
        harness.format_table([[1]], ["a", "b"])
    assert harness.format_seconds(1.5) == "1.5 s"
    assert harness.format_seconds(0.00123) == "1.23 ms"
    assert harness.format_seconds(2.5e-7) == "250 ns"
    assert harness.format_seconds(math.nan) == "-"


# --------------------------------------------------------------------------- command line
def test_cli_lists_suites_and_refuses_unknown(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for suite in ("kernels", "phased", "overhead", "paper"):
        assert suite in out
    with pytest.raises(SystemExit) as exc:
        cli.main(["no-such-suite"])
    assert exc.value.code == 2


def test_cli_missing_suite_module_says_so(monkeypatch, capsys):
    monkeypatch.setitem(cli.SUITES, "absent", "a suite whose module is not in this checkout")
    assert cli.main(["absent", "--quick"]) == 2
    assert "suite absent is not available in this checkout" in capsys.readouterr().err


def test_cli_dispatches_options_to_the_suite(monkeypatch):
    seen = []
    module = types.ModuleType("benchmarks.fakesuite")
    module.main = lambda argv: seen.append(list(argv)) or 0
    monkeypatch.setitem(sys.modules, "benchmarks.fakesuite", module)
    monkeypatch.setitem(cli.SUITES, "fakesuite", "test double")
    assert cli.main(["fakesuite", "--quick", "--out", "x", "--max-seconds", "3"]) == 0
    assert seen == [["--quick", "--out", "x", "--max-seconds", "3"]]


def test_common_arguments():
    import argparse

    parser = harness.add_common_arguments(argparse.ArgumentParser(), max_seconds=60)
    args = parser.parse_args([])
    assert (args.quick, args.out, args.max_seconds, args.rel_ci) == (False, "results", 60, 0.05)
    with pytest.raises(SystemExit):
        parser.parse_args(["--max-seconds", "0"])


# --------------------------------------------------------------------------- overhead suite
@pytest.mark.parametrize("n_tasks", [4, 10, 11, 101])
def test_overhead_graph_has_n_tasks_and_the_closed_form_value(n_tasks):
    import dask

    from benchmarks import overhead

    total, count = overhead.build_graph(n_tasks)
    assert count == n_tasks == len(dict(total.__dask_graph__()))
    assert dask.compute(total, scheduler="sync")[0] == overhead.expected_total(n_tasks)


def test_overhead_verdict():
    from benchmarks import overhead

    assert overhead.verdict((0.98, 1.04)) == "met"
    assert overhead.verdict((1.06, 1.20)) == "exceeded"
    assert overhead.verdict((1.00, 1.10)).startswith("inconclusive")


def test_overhead_suite_runs_end_to_end(tmp_path, capsys):
    from benchmarks import overhead

    assert {"threads", "sync", "profile"} <= set(overhead.SECTIONS)
    code = overhead.main(["--quick", "--tasks", "40", "--max-seconds", "0.5", "--section", "sync",
                          "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr()
    assert "adaptive / plain" in out.out and "FAILED" not in out.err
    data = json.loads((tmp_path / "overhead" / "results.json").read_text())
    record = data["records"]["sync"]
    assert record["parameters"]["n_tasks"] == 40
    assert record["measurements"]["adaptive"]["failed"] is None  # the tracker saw every task
    assert record["comparison"]["base"] == "plain" and "verdict" in record["overhead"]
    assert (tmp_path / "overhead" / "overhead.png").is_file()


def test_results_credit_the_code_that_ran_not_a_commit_made_during_the_run(monkeypatch, tmp_path):
    states = iter([{"commit": "a" * 40, "dirty": False}, {"commit": "b" * 40, "dirty": False}])
    monkeypatch.setattr(harness, "git_state", lambda: next(states))
    results = Results("suite", tmp_path)  # the suite starts at commit a ...
    monkeypatch.setattr(harness, "environment", lambda **extra: {"git": {"commit": "b" * 40, "dirty": False}, **extra})
    env = results.as_dict()["environment"]  # ... and saves after commit b was made
    assert env["git"] == {"commit": "a" * 40, "dirty": False}
    assert env["git_at_save"] == {"commit": "b" * 40, "dirty": False}
