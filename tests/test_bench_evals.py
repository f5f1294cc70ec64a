"""The evaluation plans (benchmarks/plans.py), their runner (benchmarks/evals.py) and the analysis of their results.

No plan is run here (each takes hours): every command of every plan must be one
its suite accepts, naming phase sets and variants that resolve; the runner runs
a plan of small commands for real; the analysis scripts re-read the committed
results and say what they said when those results were committed.
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import evals, phase_sets, phased, plans, variants  # noqa: E402
from benchmarks import __main__ as cli  # noqa: E402
from benchmarks.analysis import decide_arrivals, summarize_loaded  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
PLANS = ("pertask", "wire", "reuse", "wave", "load", "sampling", "arrivals", "arrivals2", "arrivals3", "arrivals4",
         "loaded2")


def _option(args, name):
    return args[args.index(name) + 1] if name in args else None


def test_every_plan_is_there_with_its_criterion_and_its_results():
    assert tuple(plans.PLANS) == PLANS
    for plan in plans.PLANS.values():
        assert plan.header.strip() and plan.steps
        assert len(plan.measured) >= 7
        for folder in plan.results.replace(" and ", " ").split():
            if folder.startswith("docs/results/") and "*" not in folder:
                assert (RESULTS.parents[1] / folder).is_dir(), (plan.name, folder)


@pytest.mark.parametrize("name", PLANS)
def test_every_command_of_a_plan_is_one_its_suite_accepts(name):
    out = Path("/nonexistent/out")
    for step, argv in evals.commands(plans.PLANS[name], out):
        assert argv[0] == sys.executable and "{out}" not in " ".join(argv)
        args = argv[1:]
        if args[:3] == ["-m", "benchmarks", "phased"]:
            options = phased._parser().parse_args([a for a in args[3:] if a not in ("--link", "10gbit", "1gbit")])
            if options.variants:
                variants.check_variants(options.variants)
            if options.phases:
                phase_sets.phases_for(options.phases)
            assert options.out.startswith(str(out)) and step.log.endswith(".log")
        elif args[:3] == ["-m", "benchmarks", "demo"]:
            variants.check_variants(_option(args, "--variants"))
            assert _option(args, "--json").startswith(str(out / step.folder))
        elif args[:3] == ["-m", "benchmarks", "wire"]:
            assert _option(args, "--out") == str(out)
        else:  # a short command whose output the trace keeps
            assert args[0] in ("-c", "-m") and step.log is None and not step.uptime
        if "--link" in args:
            assert _option(args, "--link") in ("10gbit", "1gbit")


def test_the_plans_run_what_the_scripts_ran():
    def shown(name):
        return [shlex.join(argv[1:]) for _, argv in evals.commands(plans.PLANS[name], Path("/o"))]

    arrivals2 = shown("arrivals2")
    assert arrivals2 == [
        "-m benchmarks phased --section phases --phases calibration2 --variants "
        "adaptive-arrivals,adaptive-dwell,per-task,static-on,static-off --out /o/calibration2-loopback",
        "-m benchmarks phased --link 1gbit --section phases --phases calibration2 --variants "
        "adaptive-arrivals,adaptive-dwell,per-task,static-on,static-off --out /o/calibration2-1gbit",
        "-m benchmarks.analysis.decide_arrivals /o",
    ]
    load = shown("load")
    assert len(load) == 3 + 3 + 6 and load[3] == (
        "-m benchmarks demo --link 1gbit --variants adaptive,per-task,hybrid,static-on,static-off "
        "--json /o/demo-1gbit/asafe-demo.json --plot /o/demo-1gbit/asafe-demo.png")
    assert [_option(c.split(), "--phases") for c in load[6:]] == ["heldout2"] * 3 + ["heldout"] * 3
    assert shown("wire")[-1] == ("-m benchmarks wire --link 1gbit --burn 2 --rounds 5 --variants dask,adaptive,always "
                                 "--out /o")


def test_a_dry_run_prints_the_commands_and_makes_nothing(tmp_path, capsys):
    out = tmp_path / "never"
    assert evals.main(["arrivals4", "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert not out.exists()
    assert "# Phases under load on the current default" in text  # the criterion, verbatim
    assert "+ git rev-parse HEAD" in text and text.count("+ uptime") == 3
    assert (f"+ python -m benchmarks phased --link 1gbit --section phases --phases loaded --variants "
            f"adaptive,adaptive-dwell,per-task,static-on,static-off --out {out}/loaded-1gbit > "
            f"{out}/loaded-1gbit.log 2>&1") in text
    assert evals.main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in PLANS) and "docs/results/loaded2-eval/ (measured fc74c7f)" in listed


def test_the_runner_runs_every_step_records_where_and_goes_on_past_a_failure(tmp_path, capsys):
    plan = plans.Plan("tiny", header="A plan of three commands.\n1. print, 2. print and keep, 3. fail.",
                      results="docs/results/", measured="0000000", steps=(
                          plans.Step(("-c", "print('to its log')"), log="first.log", folder="sub"),
                          plans.Step(("-c", "print('kept twice')"), tee="kept.txt", uptime=False),
                          plans.Step(("-c", "import sys; print('failing'); sys.exit(3)"), log="third.log")))
    out = tmp_path / "run"
    assert evals.run_plan(plan, out) == 1
    assert (out / "first.log").read_text() == "to its log\n" and (out / "sub").is_dir()
    assert (out / "kept.txt").read_text() == "kept twice\n"
    assert (out / "third.log").read_text() == "failing\n"
    trace = (out / "eval-tiny.log").read_text()
    assert trace == capsys.readouterr().out  # the trace is what was printed
    assert "# A plan of three commands." in trace and "+ git rev-parse HEAD" in trace
    assert "\nkept twice\n" in trace and "\nto its log\n" not in trace  # a log keeps its output
    assert "(exit status 3)" in trace and "1 step(s) failed" in trace
    assert trace.count("+ uptime") == 3  # at the start and after the steps that record it
    # a folder that holds something is refused, and nothing in it is touched
    assert evals.run_plan(plan, out) == 2
    assert "is not an empty folder" in capsys.readouterr().err and (out / "first.log").is_file()


def test_evals_and_demo_are_suites_and_the_plans_parts_are_not(capsys):
    suites = cli.available_suites()
    assert {"evals", "demo", "phased"} <= set(suites)
    assert not {"plans", "analysis", "phase_sets", "variants", "tuning"} & set(suites)


def test_the_arrivals_decision_is_the_one_committed(capsys):
    assert decide_arrivals.main([str(RESULTS / "arrivals-eval2")]) == 0
    assert capsys.readouterr().out == (RESULTS / "arrivals-eval2" / "decision.txt").read_text()
    assert decide_arrivals.main([]) == 2


def test_the_loaded_set_is_summarized_from_the_committed_run(capsys):
    assert summarize_loaded.main([]) == 0
    out = capsys.readouterr().out
    for link in ("loopback", "10gbit", "1gbit"):
        assert f"{link}: under load (" in out
    assert out.count("adaptive vs per-task:") == 3
