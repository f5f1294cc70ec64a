"""``asafe demo`` end to end on a real LocalCluster of worker processes (test-sized phases).

No timing assertions (the machines are shared): the report must have its shape,
every variant must be correct against scipy, and the figure must be a PNG.
"""
from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from asafe.app import stats
from asafe.app import workload as wl
from asafe.app.cli import main
from asafe.app.demo import TARGETS, DemoError, run_demo
from asafe.app.variants import Thresholds

pytestmark = pytest.mark.timeout(240)

VARIANTS = ("adaptive", "per-task", "static-on", "static-off", "oracle")


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    # alpha huge, beta infinite: compression turns on at the first measured
    # communication and stays on, so transitions are sure to be recorded
    thresholds = Thresholds(alpha=1e9, beta=math.inf, window=16, dwell=0.0, dwell_tasks=1, blend=1.0,
                               how="test: on at the first communication, never off")
    from rich.console import Console

    console = Console(record=True, width=120)
    data = run_demo(size="test", repetitions=2, thresholds=thresholds, plot=out / "demo.png",
                    json_path=out / "demo.json", console=console)
    return data, out, console.export_text()


def test_json_file_is_the_returned_report(report):
    data, out, _ = report
    assert json.loads((out / "demo.json").read_text()) == json.loads(json.dumps(data))


def test_png_is_written(report):
    _, out, _ = report
    png = (out / "demo.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000


def test_environment(report):
    env = report[0]["environment"]
    assert env["workers"] == 2 and env["threads_per_worker"] == [1]
    assert env["cpu"]["logical_cores"] >= 1 and env["cpu"]["model"]
    for name in ("numpy", "scipy", "numba", "dask", "distributed"):
        assert env["packages"][name]


def test_every_variant_is_correct_with_medians_and_intervals(report):
    variants = report[0]["variants"]
    assert set(variants) == set(VARIANTS)
    for name in VARIANTS:
        v = variants[name]
        assert v["correct"] is True, name
        assert _number(v["median_s"]) and v["median_s"] > 0
        low, high = v["ci95"]
        assert _number(low) and _number(high) and low <= v["median_s"] <= high
        assert len(v["samples"]) == 2
    assert report[0]["settings"]["repetitions"] == 2
    assert not [w for w in report[0]["warnings"] if w.startswith("wrong result")]


def test_phases(report):
    phases = report[0]["phases"]
    assert [p["name"] for p in phases] == [p.name for p in wl.TEST_PHASES]
    assert len(phases) >= 4
    for p in phases:
        assert set(p["variants"]) == set(VARIANTS)
        for v in p["variants"].values():
            assert _number(v["median_s"]) and len(v["ci95"]) == 2 and len(v["samples"]) == 2
        assert p["oracle_choice"] in ("static-on", "static-off")
        oracle = p["variants"]["oracle"]["median_s"]
        assert oracle == min(p["variants"]["static-on"]["median_s"], p["variants"]["static-off"]["median_s"])


def test_transitions_are_well_formed(report):
    transitions = report[0]["transitions"]
    assert transitions, "alpha=1e9 must switch compression on"
    names = {p.name for p in wl.TEST_PHASES}
    for t in transitions:
        assert _number(t["time"]) and _number(t["t_s"]) and t["t_s"] >= 0
        assert t["optimization"] == "compression"
        assert isinstance(t["from"], bool) and isinstance(t["to"], bool) and t["from"] != t["to"]
        assert _number(t["ratio"]) or t["ratio"] in ("inf", "nan")
        assert t["phase"] in names or t["phase"] is None
        assert t["repetition"] in (0, 1)
    # once on, never off: one transition per run
    assert report[0]["transitions_per_run"] == [1, 1]


def test_targets_and_speedups_are_reported(report):
    data = report[0]
    for key in ("adaptive_vs_static-on", "adaptive_vs_static-off", "adaptive_vs_oracle"):
        s = data["speedups"][key]
        assert _number(s["base_median_s"]) and _number(s["paired_ratio"]) and len(s["paired_ci95"]) == 2
    targets = data["targets"]
    for key in ("adaptive_vs_best_static", "adaptive_vs_oracle", "transitions_per_phase", "static_losses"):
        assert targets[key]["verdict"] in stats.VERDICTS
    assert len(targets["transitions_per_phase"]["max_per_phase"]) == len(wl.TEST_PHASES)
    # the per-task rule is compared with adaptive, and its decisions are reported per phase
    assert _number(data["speedups"]["adaptive_vs_per-task"]["paired_ratio"])
    assert targets["adaptive_vs_per_task"]["verdict"] in stats.VERDICTS
    for p in data["phases"]:
        share = p["compressed_share"]["per-task"]
        assert 0.0 <= share <= 1.0, p["name"]
    # test phases: panels shipped between workers are compressed, local single-use dense-ish ones are not
    by_name = {p["name"]: p["compressed_share"]["per-task"] for p in data["phases"]}
    assert by_name["shipped-sparse"] == 1.0 and by_name["local-denseish"] == 0.0
    # the figure's decisions over time: every panel of the per-task rule's median run
    rule = data["rule_decisions"]["per-task"]
    panels = sum(p.steps * min(p.panels, p.grid) for p in wl.TEST_PHASES)
    assert len(rule["decisions"]) == panels
    for phase, since, compress, why in rule["decisions"]:
        assert 0 <= phase < len(wl.TEST_PHASES) and since >= 0 and isinstance(compress, bool) and why == "payoff"
    run = data["figure_run"]
    assert run["timeline"] and [p["name"] for p in run["phases"]] == [p.name for p in wl.TEST_PHASES]


def test_every_verdict_is_read_from_its_interval_and_every_interval_has_its_coverage(report):
    data = report[0]
    two_rounds = stats.median_ci_ranks(2)[2]  # [min, max] of 2 samples covers 50%
    assert two_rounds == 0.5
    for name, v in data["variants"].items():
        assert v["ci_coverage"] == two_rounds, name
    for p in data["phases"]:
        assert all(v["ci_coverage"] == two_rounds for v in p["variants"].values()), p["name"]
    for key, s in data["speedups"].items():
        assert s["ci_coverage"] == two_rounds and "95% asked for" in s["estimator"], key
    targets = data["targets"]
    checked = 0
    for key, direction in (("adaptive_vs_best_static", ">="), ("adaptive_vs_oracle", "<="),
                           ("adaptive_vs_per_task", ">=")):
        t = targets[key]
        low, high = t["ci95"]
        assert low <= high and t["ci_coverage"] == two_rounds and t["direction"] == direction
        assert t["target"] == TARGETS[key]
        assert t["verdict"] == stats.verdict((low, high), t["target"], direction), key
        checked += 1
    # the slowdown against the oracle is the paired speedup turned over, interval and all
    vs_oracle = data["speedups"]["adaptive_vs_oracle"]
    assert targets["adaptive_vs_oracle"]["slowdown"] == pytest.approx(1 / vs_oracle["paired_ratio"])
    assert targets["adaptive_vs_oracle"]["ci95"] == pytest.approx([1 / x for x in reversed(vs_oracle["paired_ci95"])])
    losses = targets["static_losses"]
    for name, x in losses["variants"].items():
        phase_verdicts = [ph["verdict"] for ph in x["per_phase"]]
        for ph in x["per_phase"]:
            assert ph["ci95"][0] <= ph["loss"] <= ph["ci95"][1] and ph["ci_coverage"] == two_rounds
            assert ph["verdict"] == stats.verdict(ph["ci95"], TARGETS["static_loss"], ">=")
        assert x["verdict"] == stats.combine_verdicts(phase_verdicts, "any"), name
        checked += 1
    assert losses["verdict"] == stats.combine_verdicts([x["verdict"] for x in losses["variants"].values()], "all")
    most = max(targets["transitions_per_phase"]["max_per_phase"])
    assert targets["transitions_per_phase"]["verdict"] == ("met" if most <= 2 else "not met")
    assert checked == 5
    assert "cover 0.5" in data["settings"]["intervals"]


def test_the_load_average_is_recorded_and_a_busy_machine_is_said(report):
    data, _, text = report
    load = data["load"]
    if not load["available"]:  # os.getloadavg is not there (Windows)
        assert load["samples"] == [] and load["busy"] is False
        return
    import os

    assert load["cores"] == os.cpu_count() and load["threshold"] == 1.5 * load["cores"]
    assert len(load["start"]) == 3 and len(load["end"]) == 3
    # one reading before every run: a warm-up and 2 rounds of the 4 variants
    assert len(load["samples"]) == 3 * 4
    assert [s["at"] for s in load["samples"]][:4] == [f"{v} warm-up" for v in data["settings"]["variants"]]
    assert all(_number(s["load1"]) and s["load1"] >= 0 for s in load["samples"])
    assert [s["t_s"] for s in load["samples"]] == sorted(s["t_s"] for s in load["samples"])
    during = [s["load1"] for s in load["samples"]] + [load["end"][0]]
    assert load["max_during_run"] == max(during)
    assert load["busy"] is (max(during) > load["threshold"])
    if load["busy"]:
        assert load["warning"].endswith("timings are unreliable") and data["warnings"][0] == load["warning"]
        # one clear line at the top of the summary, before the tables
        assert text.index("busy machine") < text.index("Total time") and text.count("busy machine") == 1
    else:
        assert load["warning"] is None and "busy machine" not in text


def test_a_busy_warning_opens_the_summary(report):
    import copy
    import io

    from asafe.app.console import PlainConsole, print_summary
    from asafe.app.demo import busy_warning

    data = copy.deepcopy(report[0])
    data["load"] = {**(data["load"] or {}), "warning": busy_warning([4.8], cores=2)}
    data["warnings"] = [data["load"]["warning"], *[w for w in data["warnings"] if "busy machine" not in w]]
    out = io.StringIO()
    print_summary(PlainConsole(out), data)
    lines = out.getvalue().splitlines()
    assert lines[0] == ("warning: busy machine: load average up to 4.8 on 2 cores during the run "
                        "(over 1.5 x cores = 3); timings are unreliable")
    assert sum("busy machine" in line for line in lines) == 1
    data["load"]["warning"] = None
    data["warnings"] = data["warnings"][1:]
    out = io.StringIO()
    print_summary(PlainConsole(out), data)
    assert "busy" not in out.getvalue() and out.getvalue().startswith("Total time")


def test_busy_warning_rule():
    from asafe.app.demo import LoadWatch, busy_warning

    assert busy_warning([3.0], cores=2) is None  # at the threshold: not above it
    assert "up to 3.1 on 2 cores" in busy_warning([1.0, 3.1], cores=2)
    assert "on 1 core during" in busy_warning([2.0], cores=1)
    assert busy_warning([], cores=2) is None
    with pytest.raises(ValueError, match="cores must be >= 1"):
        busy_warning([1.0], cores=0)
    watch = LoadWatch(cores=4, factor=2.0)
    watch.sample("a round")
    watch.stop()
    r = watch.report()
    assert r["threshold"] == 8.0 and "2 x the logical cores" in r["rule"]


def test_unknown_variant_is_a_clear_error():
    result = CliRunner().invoke(main, ["demo", "--size", "test", "--variants", "adaptive,static-on,bogus"])
    assert result.exit_code != 0
    assert "bogus" in result.output and "allowed: adaptive, per-task, static-on, static-off" in result.output
    # the evaluation variants are the benchmarks' (python -m benchmarks demo): asafe demo lists only its own
    result = CliRunner().invoke(main, ["demo", "--size", "test", "--variants", "adaptive,hybrid,static-on,static-off"])
    assert result.exit_code != 0 and "['hybrid']" in result.output
    help_text = " ".join(CliRunner().invoke(main, ["demo", "--help"]).output.split())
    assert "from adaptive, per-task, static-on, static-off (static-on" in help_text
    result = CliRunner().invoke(main, ["demo", "--size", "test", "--variants", "adaptive,per-task"])
    assert result.exit_code != 0 and "must include static-on and static-off" in result.output


def test_console_output(report):
    text = report[2]
    assert "asafe demo" in text and "warm-up" in text
    assert "compression off -> on" in text or "off -> on" in text  # a transition as it happened
    assert "Total time" in text and "static-off" in text and "targets:" in text
    # a few opening lines: what runs, on which link, how many rounds; the calibration behind --verbose
    lines = text.splitlines()
    opening = lines[:[i for i, line in enumerate(lines) if line.lstrip().startswith("cluster:")][0] + 1]
    assert len(opening) <= 5, opening
    assert opening[0].startswith("asafe demo: 4 phases x 4 variants") and "2 interleaved rounds" in opening[0]
    assert any(line.strip().startswith("link: the loopback as it is") for line in opening)
    assert "--verbose" in text and "test: on at the first communication" not in text
    assert "phase shipped-sparse " not in text and "scipy references computed" not in text
    # every interval with the coverage it reaches (2 rounds: [min, max], 50%), never called 95% (which only
    # the stop rule's target, not reached, mentions)
    assert "(50%)" in text and "interval (coverage)" in text
    assert "95%" not in " ".join(text.split()).replace("95% CI of the median target +-5% not reached", "")
    for verdict in ("adaptive", "adaptive / oracle", "static-on loses", "static-off loses"):
        line = next(line for line in lines if line.strip().startswith(verdict) and " -- " in line)
        assert line.endswith(("-- met", "-- not shown", "-- not met")), line


def test_each_verdict_is_one_line_on_a_narrow_console(report):
    # a verdict wrapped at the console's width ("-- not" / "shown") reads as two lines
    from rich.console import Console

    from asafe.app.console import print_summary

    console = Console(record=True, width=60)
    print_summary(console, report[0])
    lines = console.export_text().splitlines()
    verdicts = [line for line in lines if " -- " in line]
    assert len(verdicts) >= 5
    assert all(line.endswith(("-- met", "-- not shown", "-- not met")) for line in verdicts), verdicts


def test_bad_options_are_clear():
    with pytest.raises(DemoError, match="--workers must be >= 2"):
        run_demo(workers=1, plot=None, json_path=None)
    with pytest.raises(DemoError, match="does not exist"):
        run_demo(size="test", plot="/nonexistent-folder/x.png", json_path=None)
    runner = CliRunner()
    result = runner.invoke(main, ["demo", "--workers", "1"])
    assert result.exit_code == 2 and "--workers" in result.output
    result = runner.invoke(main, ["demo", "--alpha", "0"])
    assert result.exit_code == 2 and "must be > 0" in result.output
    result = runner.invoke(main, ["demo", "--scheduler-address", "tcp://127.0.0.1:1", "--size", "test",
                                  "--plot", "x.png", "--json", "x.json"])
    assert result.exit_code == 1 and "cannot connect" in result.output


def test_a_run_without_the_adaptive_variant_reports_the_others(tmp_path):
    # e.g. the rule on and off, side by side (python -m benchmarks evals arrivals2): no targets to
    # report, every installed variant's transitions recorded
    from rich.console import Console

    from benchmarks import variants as evaluation_variants

    console = Console(record=True, width=120)
    data = run_demo(size="test", repetitions=1, plot=tmp_path / "demo.png", json_path=tmp_path / "demo.json",
                    console=console, variants=("adaptive-arrivals", "adaptive-dwell", "static-on", "static-off"),
                    known=evaluation_variants.KNOWN, compared=evaluation_variants.COMPARED)
    assert "the adaptive variant's, and it did not run" in console.export_text()
    assert set(data["transitions_by_variant"]) == {"adaptive-arrivals", "adaptive-dwell"}
    assert data["transitions"] == [] and "adaptive-arrivals_vs_adaptive-dwell" in data["speedups"]
    assert data["settings"]["repetitions"] == 1
    assert (tmp_path / "demo.png").read_bytes().startswith(b"\x89PNG")


def test_importing_asafe_or_a_worker_plugin_loads_neither_matplotlib_nor_rich(tmp_path):
    # workers never draw: matplotlib and rich are the demo's extras, imported only when it draws or prints
    import subprocess
    import sys

    # asafe, every module of the rooms a worker loads (the plugins among them: scheduler_plugin and
    # worker_plugin today, whatever their modules are named), the command and the demo
    code = ("import importlib, pkgutil, sys, asafe, asafe.core, asafe.schedulers, asafe.app.cli, asafe.app.demo\n"
            "for package in (asafe.core, asafe.schedulers):\n"
            "    for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
            "        importlib.import_module(info.name)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'rich')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_demo_extras_the_demo_prints_plain_text_and_says_the_figure_needs_them(tmp_path, monkeypatch,
                                                                                            capsys):
    import sys

    for name in ("matplotlib", "rich", "rich.console", "rich.table", "rich.progress", "rich.markup",
                 *[m for m in sys.modules if m.startswith(("matplotlib.", "rich."))]):
        monkeypatch.setitem(sys.modules, name, None)  # an import of it fails, as where it is not installed
    data = run_demo(size="test", repetitions=1, plot=tmp_path / "demo.png", json_path=tmp_path / "demo.json",
                    variants=("static-on", "static-off"))
    out = capsys.readouterr().out
    assert not (tmp_path / "demo.png").exists() and (tmp_path / "demo.json").is_file()
    assert out.count('not drawn: the figure needs matplotlib (pip install "asafe[demo]")') == 1
    assert "asafe demo: 4 phases x 2 variants" in out and "[bold]" not in out and "[/]" not in out
    assert "Total time of the phases" in out and "Per phase" in out
    assert data["variants"]["static-on"]["correct"] is True
