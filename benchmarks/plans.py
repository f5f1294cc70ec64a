"""The evaluation plans of ``docs/results/``, as data: what ``python -m benchmarks evals PLAN`` runs.

Each evaluation of the adaptive runtime was fixed before it ran: its criterion
(the header, kept verbatim as it was written, naming the scripts of its time:
``eval-X.sh`` is the plan ``X`` here), then the commands, run once, measuring one
commit. They were shell scripts, ``docs/results/eval-*.sh``; each is a
:class:`Plan` now, whose steps are the same commands (``python -m benchmarks
phased`` on a phase set, the demo, the wire suite) over the same links, in the
same order. :mod:`benchmarks.evals` runs a plan.

A plan names its results folder and the commit its committed run measured; the
commands that made them are in ``docs/results/README.md``.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Step", "Plan", "PLANS", "LINKS"]

#: The links of most plans: the loopback as it is, and shaped to 10 and 1 Gbit/s (``--link``).
LINKS = ("loopback", "10gbit", "1gbit")


@dataclass(frozen=True)
class Step:
    """One command of a plan: the interpreter with ``args`` (``{out}`` is the plan's folder).

    ``log``: the file under the folder that gets the command's output (``None``: the
    plan's own output, its trace); ``tee``: a file under the folder that gets a copy
    of it; ``folder``: made before the command (where the demo writes);
    ``uptime``: the load average recorded after it, as the scripts did.
    """

    args: tuple[str, ...]
    log: str | None = None
    tee: str | None = None
    folder: str | None = None
    uptime: bool = True


@dataclass(frozen=True)
class Plan:
    """One evaluation: its criterion, fixed before it ran (verbatim), and its steps."""

    name: str
    header: str
    results: str  #: where its committed run is, under the repository
    measured: str  #: the commit that committed run measured
    steps: tuple[Step, ...]


def _link(link: str) -> tuple[str, ...]:
    return () if link == "loopback" else ("--link", link)


def _phased(name: str, link: str, *options: str) -> Step:
    """``python -m benchmarks phased [--link L] OPTIONS --out {out}/NAME``, its output in ``NAME.log``."""
    return Step(("-m", "benchmarks", "phased", *_link(link), *options, "--out", f"{{out}}/{name}"), log=f"{name}.log")


def _phases(sets: tuple[str, ...], links: tuple[str, ...], variants: str, name: str | None = None) -> tuple[Step, ...]:
    """The ``phases`` section on every set, on every link (links inner), as ``SET-LINK`` (or ``NAME-LINK``)."""
    return tuple(_phased(f"{name or s}-{link}", link, "--section", "phases", "--phases", s, "--variants", variants)
                 for s in sets for link in links)


def _demos(links: tuple[str, ...], variants: str) -> tuple[Step, ...]:
    """The demo with ``variants`` on every link (``python -m benchmarks demo``: asafe demo over every variant)."""
    return tuple(Step(("-m", "benchmarks", "demo", *_link(link), "--variants", variants,
                       "--json", f"{{out}}/demo-{link}/asafe-demo.json",
                       "--plot", f"{{out}}/demo-{link}/asafe-demo.png"),
                      log=f"demo-{link}/demo.log", folder=f"demo-{link}")
                 for link in links)


def _wire(name: str, *options: str) -> Step:
    """``python -m benchmarks wire OPTIONS --out {out}``, its output in ``NAME.log``."""
    return Step(("-m", "benchmarks", "wire", *options, "--out", "{out}"), log=f"{name}.log")


V_DEMO = "adaptive,per-task,static-on,static-off"
V_HYBRID = "adaptive,per-task,hybrid,static-on,static-off"
V_DWELL = "adaptive,adaptive-dwell,per-task,static-on,static-off"
V_WAVE = "adaptive,adaptive-ready,per-task,static-on,static-off"
V_SAMPLING = "adaptive,adaptive-sampling,per-task,static-on,static-off"

#: Every plan, by name, in the order they ran.
PLANS: dict[str, Plan] = {plan.name: plan for plan in (
    Plan(
        "pertask",
        header="""\
The per-task evaluation, fixed before it runs: the demo on loopback, 10 and 1 Gbit/s, then the held-out
phases on each, every variant interleaved. Thresholds as committed (not re-tuned).
""",
        results="docs/results/demo-*/ and docs/results/heldout-*/",
        measured="7e27f26",
        steps=(
            *_demos(LINKS, V_HYBRID),
            *_phases(("heldout",), LINKS, V_HYBRID, name="ho"),
        ),
    ),
    Plan(
        "wire",
        header="""\
The wire-compression evaluation, fixed before it runs (thresholds as committed, not re-tuned):
the rechunk suite on 1 Gbit/s, 10 Gbit/s and the loopback, smooth and random data, and 1 Gbit/s with two
cpu-spinning processes outside the run; every variant interleaved within a run.
""",
        results="docs/results/wire-eval1/ and docs/results/wire-eval2/",
        measured="7b398fd (wire-eval1), b89c357 (wire-eval2)",
        steps=(
            _wire("1gbit-smooth", "--link", "1gbit", "--variants", "dask,adaptive,always,host-cpu"),
            _wire("loopback-smooth", "--variants", "dask,adaptive,always,host-cpu"),
            _wire("10gbit-smooth", "--link", "10gbit", "--variants", "dask,adaptive,always"),
            _wire("1gbit-random", "--link", "1gbit", "--data", "random", "--variants", "dask,adaptive,always"),
            _wire("loopback-random", "--data", "random", "--variants", "dask,adaptive,always"),
            _wire("1gbit-smooth-burn2", "--link", "1gbit", "--burn", "2", "--rounds", "5",
                  "--variants", "dask,adaptive,always"),
        ),
    ),
    Plan(
        "reuse",
        header="""\
The declared-reuse evaluation, fixed before it runs. The reuse threshold (16 declared reads) was
chosen on the calibration phases only (docs/results/calibration-reuse/); alpha, beta, window, dwell
and blend as committed. First the second held-out set (heldout2: fixed before the threshold was
evaluated), then the first held-out set again (seen before: reported as such), on loopback,
10 Gbit/s and 1 Gbit/s, every variant interleaved. The demo's phases declare at most 8 reads, below
the threshold: the demo is not re-run.
""",
        results="docs/results/reuse-eval/",
        measured="dcbfe6e",
        steps=(
            *_phases(("heldout2", "heldout"), LINKS, V_HYBRID),
        ),
    ),
    Plan(
        "wave",
        header="""\
The next-wave evaluation, fixed before it runs (measuring the commit that adds this script).
The scheduled view now counts waiting tasks whose every dependency is ready, running or in memory
(asafe.distributed.next-wave). Nothing is re-tuned: thresholds, window, blend, dwell and the reuse
threshold as committed. Side by side in every run: adaptive (with the next wave) and
adaptive-ready (the view before it, next_wave=False), per-task, static-on, static-off, interleaved.
1. The calibration phases' ratios with compression pinned (loopback): what thresholds_rule makes
   of the new view, reported, not applied.
2. heldout2 then heldout (both seen before: reported as such), on loopback, 10 Gbit/s, 1 Gbit/s.
3. The full demo behind 1 Gbit/s and on loopback.
""",
        results="docs/results/wave-eval/",
        measured="1252422",
        steps=(
            _phased("ratios", "loopback", "--section", "ratios"),
            *_phases(("heldout2", "heldout"), LINKS, V_WAVE),
            *_demos(("1gbit", "loopback"), V_WAVE),
        ),
    ),
    Plan(
        "load",
        header="""\
Phases that change under load (issue 18), and the current code on the issue-14 runs; fixed before it runs
(measuring the commit that adds this script). Nothing is tuned: thresholds, window, blend, dwell, the reuse
threshold and the hybrid's margin as committed. Variants in every run, interleaved:
adaptive, per-task, hybrid, static-on, static-off (oracle: the better static setting per phase, after the fact).
1. The loaded set (asafe.app.workload.LOADED_PHASES: each graph quiet, then beside a competing job -- a bulk
   flow on the link or a memory stream on one core, asafe.app.load), on loopback, 10 Gbit/s and 1 Gbit/s.
   Seen before this plan: one 2-round smoke run on loopback (adaptive,per-task,static-on,static-off),
   before one phase's scale was changed from 12 to 11; nothing in asafe was changed after it.
2. The full demo on 1 Gbit/s, 10 Gbit/s and loopback: the issue-14 targets on the current code (the engine
   changes of issue 17 came after the last evaluation of record, eval-wave.sh).
3. heldout2 then heldout on loopback, 10 Gbit/s, 1 Gbit/s (both seen before: reported as such).
""",
        results="docs/results/load-eval/",
        measured="e49c8df",
        steps=(
            *_phases(("loaded",), LINKS, V_HYBRID),
            *_demos(("1gbit", "10gbit", "loopback"), V_HYBRID),
            *_phases(("heldout2", "heldout"), LINKS, V_HYBRID),
        ),
    ),
    Plan(
        "sampling",
        header="""\
adaptive-sampling (the global mode first; the per-task rule decides the panels the mode leaves uncompressed
while the scheduled producers declare >= 2 reads -- benchmarks.phased.per_task_rule on the committed
calibration-reuse data), fixed before it runs (measuring the commit that adds this script). Nothing else is
tuned: thresholds, window, blend, dwell, the reuse threshold as committed. Variants in every run,
interleaved: adaptive, adaptive-sampling, per-task, static-on, static-off (oracle: after the fact).
1. heldout3 (fixed in the same commit, before adaptive-sampling first ran): loopback, 10 Gbit/s, 1 Gbit/s.
2. The full demo on 1 Gbit/s, 10 Gbit/s and loopback (its local-dense phase declares 2 reads: the
   sampling's cost shows there).
3. Sets seen before, on loopback, reported as such: heldout2, heldout, loaded (the last runs its
   competing jobs).
""",
        results="docs/results/sampling-eval/",
        measured="0fbd442",
        steps=(
            *_phases(("heldout3",), LINKS, V_SAMPLING),
            *_demos(("1gbit", "10gbit", "loopback"), V_SAMPLING),
            *_phases(("heldout2", "heldout", "loaded"), ("loopback",), V_SAMPLING),
        ),
    ),
    Plan(
        "arrivals",
        header="""\
arrivals_skip_dwell (a toggle decided when a graph arrives is not held by the dwell where the scheduled
view alone makes it too), fixed before it runs (measuring the commit that adds this script). Nothing is
tuned: thresholds, window, blend, dwell (0.2 s / 16 tasks) and reuse as committed. Variants in every run,
interleaved: adaptive (the rule on), adaptive-dwell (the rule off: the design before), per-task,
static-on, static-off (oracle: after the fact).
1. The calibration set, loopback and 1 Gbit/s: the rule stays on by default if adaptive vs adaptive-dwell
   is >= 0.98x (the paired ratio's point estimate) on both; else the default goes back to off and the
   held-out runs below report the rule as an option.
2. heldout4 (fixed in the same commit, before the rule first ran): loopback, 10 Gbit/s, 1 Gbit/s.
3. The full demo on 1 Gbit/s, 10 Gbit/s and loopback.
4. heldout (seen: its 1 Gbit/s run, 0.938x against static-on in load-eval/, is what the rule answers),
   on 1 Gbit/s, 10 Gbit/s and loopback, reported as seen.
""",
        results="docs/results/arrivals-eval/",
        measured="015a75c",
        steps=(
            *_phases(("calibration",), ("loopback", "1gbit"), V_DWELL),
            *_phases(("heldout4",), LINKS, V_DWELL),
            *_demos(("1gbit", "10gbit", "loopback"), V_DWELL),
            *_phases(("heldout",), ("1gbit", "10gbit", "loopback"), V_DWELL),
        ),
    ),
    Plan(
        "arrivals2",
        header="""\
The default of asafe.controller.arrivals-skip-dwell, chosen on a calibration set that exercises it, fixed
before it runs (measuring the commit that adds this script). eval-arrivals.sh checked the rule on the first
calibration set, where it never fires (every toggle 4-70 ms into a long phase): its criterion failed on
noise (0.940x and 0.974x, both intervals containing 1) and the default went off. calibration2 (short
phases before phases of the other placement; seed 3) and heldout5 (seed 4) were fixed together, before
either ran. Nothing else is tuned.
1. calibration2 on loopback and 1 Gbit/s, interleaved: adaptive-arrivals, adaptive-dwell, per-task,
   static-on, static-off.
2. docs/results/arrivals-eval2/decide.py applies the rule written in it: on when the rule fired and the
   pooled median of the paired per-round ratios (adaptive-dwell / adaptive-arrivals) is >= 1.0.
The decision is committed; then eval-arrivals3.sh checks it on heldout5.
""",
        results="docs/results/arrivals-eval2/",
        measured="b7f5c07",
        steps=(
            *_phases(("calibration2",), ("loopback", "1gbit"),
                     "adaptive-arrivals,adaptive-dwell,per-task,static-on,static-off"),
            Step(("-m", "benchmarks.analysis.decide_arrivals", "{out}"), tee="decision.txt", uptime=False),
        ),
    ),
    Plan(
        "arrivals3",
        header="""\
heldout5 (fixed with calibration2, before either ran): the check of the arrivals-skip-dwell default that
eval-arrivals2.sh chose, fixed before eval-arrivals2.sh ran (measuring the commit that sets the default).
Interleaved: adaptive (the default as committed), adaptive-arrivals and adaptive-dwell (the rule on and
off, whatever the default: one of them is the same configuration as adaptive), per-task, static-on,
static-off; loopback, 10 Gbit/s and 1 Gbit/s.
""",
        results="docs/results/arrivals-eval3/",
        measured="e197088",
        steps=(
            Step(("-c", "import asafe; print('arrivals_skip_dwell', "
                        "asafe.AdaptiveRuntime(signals=False).arrivals_skip_dwell)"), uptime=False),
            *_phases(("heldout5",), LINKS, "adaptive,adaptive-arrivals,adaptive-dwell,per-task,static-on,static-off"),
        ),
    ),
    Plan(
        "arrivals4",
        header="""\
Phases under load on the current default (arrivals-skip-dwell on, chosen by eval-arrivals2.sh), fixed before
it runs: the loaded set (seen in load-eval/ and sampling-eval/, reported as seen) behind 1 Gbit/s and on
loopback, interleaved in balanced orders: adaptive, adaptive-dwell, per-task, static-on, static-off. The
question: does the default change adaptive against the per-task rule where phases change under load? (Its
phases are 3-5 steps long, so the rule is expected not to fire there; the run says whether it did.)
""",
        results="docs/results/arrivals-eval4/",
        measured="1b7b7cf",
        steps=(
            *_phases(("loaded",), ("1gbit", "loopback"), V_DWELL),
        ),
    ),
    Plan(
        "loaded2",
        header="""\
Issue 18's aim, "faster where phases change under load", on a held-out set, fixed before it runs (measuring
74db8be: the per-task rule's decision made cheaper -- 0.45 -> 0.23 ms per 410x4096 panel, the same
estimates -- a cpu load beside the memory and link ones, and the loaded2 set, seed 5, never run before).
Nothing is tuned; the runtime's settings are the committed defaults (arrivals past the dwell on).
Variants in every run, interleaved in balanced orders: adaptive, per-task, static-on, static-off (the
oracle after the fact).
1. loaded2 on loopback, 10 Gbit/s, 1 Gbit/s. The criterion, fixed here: on a link, adaptive is faster
   under load when the paired 95% interval of adaptive vs per-task over the loaded phases ("under load" in
   the report) lies above 1, slower when it lies below 1, tied otherwise. The aim is met if adaptive is
   faster on at least two links and slower on none; otherwise it is not met, and that is reported.
2. heldout5 (seen: arrivals-eval3/) on 1 Gbit/s, 10 Gbit/s, loopback: adaptive against the cheaper
   per-task rule on a held-out set, reported as seen.
3. The demo on 1 Gbit/s, 10 Gbit/s, loopback, the same variants (seen), against the cheaper per-task rule.
""",
        results="docs/results/loaded2-eval/",
        measured="fc74c7f",
        steps=(
            *_phases(("loaded2",), LINKS, V_DEMO),
            *_phases(("heldout5",), ("1gbit", "10gbit", "loopback"), V_DEMO),
            *_demos(("1gbit", "10gbit", "loopback"), V_DEMO),
        ),
    ),
)}
