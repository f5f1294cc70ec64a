"""The evaluation plans of ``docs/results/``: ``python -m benchmarks evals PLAN [--out DIR] [--dry-run]``.

Each plan (:mod:`benchmarks.plans`: ``pertask``, ``wire``, ``reuse``, ``wave``,
``load``, ``sampling``, ``arrivals``, ``arrivals2``, ``arrivals3``, ``arrivals4``,
``loaded2``) is an evaluation fixed before it ran: its header states the
criterion, its steps are the suite and demo commands over the links (the
loopback, 10 and 1 Gbit/s). This command prints the header, records the load
average (``uptime``), the commit (``git rev-parse HEAD``) and the tree's changes
(``git status --short``, first 10 lines), then runs every step in order with this
interpreter from the checkout's root, each step's output in its log under
``--out`` and the load average after it. Its own output (every command as it
starts, ``+ ...``, as the scripts' ``set -x`` did) is its trace, kept in
``--out``/``eval-PLAN.log`` too. A step that fails is reported, and the plan goes
on (the scripts did so); the exit status is 1 if any failed.

``--out`` (default ``results/evals/PLAN``) must be empty or absent: nothing is
deleted. ``--dry-run`` prints the commands without running anything. ``--list``
prints every plan with its committed results. To measure a commit the way the
committed runs did, run a plan from a checkout of that commit with its own
``pip install -e ".[test,bench]"``.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from .plans import PLANS, Plan, Step

__all__ = ["ROOT", "commands", "run_plan", "main"]

#: The checkout that holds ``benchmarks/``: every step runs from here, as the scripts did (``cd ../..``).
ROOT = Path(__file__).resolve().parents[1]
#: The lines of ``git status --short`` recorded (``| head``).
STATUS_LINES = 10


def commands(plan: Plan, out: Path) -> list[tuple[Step, list[str]]]:
    """Every step of ``plan`` with its command line, ``{out}`` made ``out``, run by this interpreter.

    Examples
    --------
    >>> [" ".join(argv[1:]) for _, argv in commands(PLANS["arrivals4"], Path("/o"))][0]
    '-m benchmarks phased --link 1gbit --section phases --phases loaded --variants adaptive,adaptive-dwell,per-task,static-on,static-off --out /o/loaded-1gbit'
    """
    return [(step, [sys.executable, *(arg.replace("{out}", str(out)) for arg in step.args)]) for step in plan.steps]


def _shown(argv: Sequence[str], step: Step, out: Path) -> str:
    """The command as a shell line, with where its output goes."""
    line = shlex.join(["python", *argv[1:]])
    if step.log is not None:
        line += f" > {shlex.quote(str(out / step.log))} 2>&1"
    if step.tee is not None:
        line += f" | tee {shlex.quote(str(out / step.tee))}"
    return line


class _Trace:
    """The plan's own output: to stdout and to ``eval-PLAN.log`` under ``--out``."""

    def __init__(self, path: Path | None) -> None:
        self.file: TextIO | None = path.open("w", encoding="utf-8") if path is not None else None

    def write(self, text: str) -> None:
        for stream in (sys.stdout, self.file):
            if stream is not None:
                stream.write(text)
                stream.flush()

    def line(self, text: str) -> None:
        self.write(text.rstrip("\n") + "\n")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _record(trace: _Trace, argv: Sequence[str], shown: str, head: int | None = None) -> None:
    """Run a short command (``uptime``, ``git ...``) from the checkout's root and put its output in the trace."""
    trace.line(f"+ {shown}")
    try:
        done = subprocess.run(list(argv), cwd=ROOT, capture_output=True, text=True, timeout=30)
        text = done.stdout + done.stderr
    except (OSError, subprocess.SubprocessError) as exc:
        text = f"({shown} failed: {exc})\n"
    lines = text.splitlines()
    trace.write("".join(f"{line}\n" for line in (lines if head is None else lines[:head])))


def _uptime(trace: _Trace) -> None:
    if shutil.which("uptime"):
        _record(trace, ["uptime"], "uptime")
    else:  # a machine without procps: the load average that uptime prints
        trace.line("+ uptime")
        trace.line("load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


def _run_step(trace: _Trace, step: Step, argv: list[str], out: Path) -> int:
    """Run one step: its output to its log (and its tee), or to the trace."""
    if step.folder is not None:
        (out / step.folder).mkdir(parents=True, exist_ok=True)
    trace.line(f"+ {_shown(argv, step, out)}")
    if step.log is not None and step.tee is None:
        with (out / step.log).open("w", encoding="utf-8") as log:
            return subprocess.run(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    with subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as child:
        copies = [open(out / name, "w", encoding="utf-8") for name in (step.log, step.tee) if name is not None]
        try:
            for text in child.stdout:
                for copy in copies:
                    copy.write(text)
                if step.log is None:
                    trace.write(text)
        finally:
            for copy in copies:
                copy.close()
    return child.returncode


def run_plan(plan: Plan, out: Path, dry_run: bool = False) -> int:
    """Run (or, with ``dry_run``, print) every step of ``plan`` into ``out``; 0 when every step succeeded."""
    out = out.resolve()
    steps = commands(plan, out)
    if dry_run:
        print(f"# evals {plan.name}: {len(steps)} steps into {out} (dry run: nothing runs)")
        print("\n".join(f"# {line}" if line else "#" for line in plan.header.splitlines()))
        print("+ uptime\n+ git rev-parse HEAD\n+ git status --short | head")
        for step, argv in steps:
            print(f"+ {_shown(argv, step, out)}")
            if step.uptime:
                print("+ uptime")
        return 0
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"evals: --out {out} is not an empty folder; name a new one (nothing is deleted)", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    trace = _Trace(out / f"eval-{plan.name}.log")
    failed = []
    try:
        trace.line(f"# evals {plan.name}: {len(steps)} steps into {out}, with {sys.executable}")
        trace.write("".join(f"# {line}\n" if line else "#\n" for line in plan.header.splitlines()))
        _uptime(trace)
        _record(trace, ["git", "rev-parse", "HEAD"], "git rev-parse HEAD")
        _record(trace, ["git", "status", "--short"], "git status --short | head", head=STATUS_LINES)
        for step, argv in steps:
            status = _run_step(trace, step, argv, out)
            if status != 0:
                failed.append(_shown(argv, step, out))
                trace.line(f"(exit status {status})")
            if step.uptime:
                _uptime(trace)
        trace.line("DONE" if not failed else f"DONE; {len(failed)} step(s) failed:\n" + "\n".join(failed))
    finally:
        trace.close()
    return 1 if failed else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks evals", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 2)[2])
    parser.add_argument("plan", nargs="?", choices=list(PLANS), metavar="PLAN",
                        help=f"the plan to run: {', '.join(PLANS)}")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="where its results go (default: results/evals/PLAN); must be empty or absent")
    parser.add_argument("--dry-run", action="store_true", help="print the commands; run nothing")
    parser.add_argument("--list", action="store_true", help="list the plans and their committed results")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or list, or print) an evaluation plan."""
    parser = _parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.list:
        for plan in PLANS.values():
            first = plan.header.split(". ")[0].split("\n")[0]
            print(f"{plan.name:<10} {plan.results} (measured {plan.measured}): {first}")
        return 0
    if args.plan is None:
        parser.error(f"name a plan: {', '.join(PLANS)} (or --list)")
    out = Path(args.out) if args.out is not None else Path("results") / "evals" / args.plan
    return run_plan(PLANS[args.plan], out, dry_run=args.dry_run)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
