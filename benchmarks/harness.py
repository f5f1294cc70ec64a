"""The benchmark harness: measure variants side by side, compare, record, report.

Every suite (``kernels``, ``phased``, ``overhead``, ``paper``) measures with this
module, so each number obeys ``docs/benchmarking.rst`` (after Hoefler &
Belli, "Scientific benchmarking of parallel computing systems", SC15; see
``/work/shared/seeds/``). The statistics live in :mod:`asafe.app.stats`, the one statistics
module that ``asafe demo`` uses too; this module adds the clock, the bookkeeping
and the output. The records themselves and their printed forms
(:class:`Measurement`, :class:`Speedup`, the tables) are in
:mod:`benchmarks._records`; every public name of both is importable from here.

What :func:`measure` does, in order
-----------------------------------
1. **Warm-up apart (rule 2).** Each variant is called ``warmup`` times first. Those
   calls (JIT compilation, first touch, caches) are timed and kept in
   :attr:`Measurement.warmup_s` / ``warmup_times``, never in the samples.
2. **Correct first (rule 1).** ``check(name, result)`` is called on every warm-up
   result and on the result of every measured sample, outside the timed region. A
   variant whose check raises (or that raises itself) is marked
   :attr:`Measurement.failed` with the message, its samples are dropped and it is
   never timed again. In a batched sample (below) the result of the last call is
   checked.
3. **Loop calibration (rule 3).** A variant whose call takes less than
   ``min_sample_time`` is batched: ``k`` calls per sample, ``k`` doubled from 1
   until one sample lasts ``min_sample_time``; a sample's value is its time divided
   by ``k`` (per-call seconds). ``k`` is :attr:`Measurement.loops`. The last
   calibration sample (the one with the final ``k``) is kept as the first sample.
4. **Interleaved (rule 5).** Then rounds of one sample per live variant, the order
   rotated every round (A B C, B C A, C A B, ...), so drift and interference of a
   shared machine spread evenly over the variants. The callables close over the
   same inputs.
5. **Stop rule decided by the data (rule 3).** After each round: stop when every
   live variant has ``min_samples`` and the 95% CI of its median is within
   +-``rel_ci`` of that median; otherwise go on until ``max_samples`` rounds or
   ``max_seconds`` of sampling (warm-up and calibration not counted), and record
   that the target was not reached (:attr:`Measurement.reached_target`).

Each :class:`Measurement` carries the median, its distribution-free 95% CI, p95,
p99, min, spread (IQR/median) and an ``unstable`` flag (spread above 10% of the
median or CI target not reached) with its reason. :func:`speedup` compares two of
them: ratio of medians with a bootstrap interval and a Mann-Whitney test, always
with the base case's absolute median (rule 6). :class:`Results` writes
``<out>/<suite>/results.json`` with the machine's :func:`environment` and draws
PNGs next to it; every unstable or failed measurement added to it is warned about
on stderr and recorded in the file.

The clock is :func:`time.perf_counter`. The garbage collector stays enabled: its
pauses are part of the cost of Python code, and interleaving spreads them evenly.

Example
-------
::

    import numpy as np
    from benchmarks.harness import Results, measure, plot_samples, speedup, summary_table

    A, x = np.random.default_rng(0).random((500, 500)), np.ones(500)
    reference = A.sum(axis=1)                      # independent reference (rule 1)

    def check(name, y):
        np.testing.assert_allclose(y, reference, rtol=1e-10)

    m = measure({"matmul": lambda: A @ x, "einsum": lambda: np.einsum("ij,j->i", A, x)}, check=check)
    s = speedup(m["einsum"], m["matmul"])          # base first: median(einsum) / median(matmul)
    print(summary_table(m)); print(s)              # s prints the base's absolute time too (rule 6)
    results = Results("example")                   # files go to results/example/
    results.add("matvec", m); results.add("matmul_vs_einsum", s)
    with results.figure("samples") as (fig, path):
        plot_samples(fig.subplots(), m)
    results.save()                                 # results/example/results.json

Command-line suites share :func:`add_common_arguments` (``--quick``, ``--out``,
``--max-seconds``, ``--rel-ci``).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from asafe.app import stats
from asafe.app.environment import environment, git_state

from ._records import (Measurement, Speedup, format_seconds, format_table, plot_samples, speedup, summary_table,
                       to_jsonable)

__all__ = [
    "Measurement",
    "Speedup",
    "measure",
    "speedup",
    "environment",
    "Results",
    "credit_git_at_start",
    "format_table",
    "format_seconds",
    "summary_table",
    "plot_samples",
    "add_common_arguments",
    "positive_float",
    "positive_int",
    "summarize_variants",
    "wait_finished",
    "to_jsonable",
]

#: Largest loop count of the calibration (a call this fast is below timer noise).
MAX_LOOPS = 1 << 24


# --------------------------------------------------------------------------- measuring
def _validate(variants: Mapping[str, Callable[[], Any]], check: Any, rel_ci: float, min_samples: int,
              max_samples: int, max_seconds: float, min_sample_time: float, warmup: int) -> None:
    if not isinstance(variants, Mapping):
        raise TypeError(f"variants must be a mapping name -> callable, got {type(variants).__name__}")
    if not variants:
        raise ValueError("measure() needs at least one variant")
    for name, fn in variants.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"variant names must be non-empty str, got {name!r}")
        if not callable(fn):
            raise TypeError(f"variant {name!r} is not callable (got {type(fn).__name__}); pass a function "
                            f"that runs it, e.g. lambda: f(x)")
    if check is not None and not callable(check):
        raise TypeError(f"check must be callable(name, result) or None, got {type(check).__name__}")
    if not (isinstance(rel_ci, (int, float)) and rel_ci > 0 and math.isfinite(rel_ci)):
        raise ValueError(f"rel_ci must be a finite number > 0 (0.05 = +-5%), got {rel_ci!r}")
    if not isinstance(min_samples, int) or min_samples < 1:
        raise ValueError(f"min_samples must be an int >= 1, got {min_samples!r}")
    if not isinstance(max_samples, int) or max_samples < min_samples:
        raise ValueError(f"max_samples must be an int >= min_samples ({min_samples}), got {max_samples!r}")
    if not max_seconds > 0:
        raise ValueError(f"max_seconds must be > 0, got {max_seconds!r}")
    if not min_sample_time >= 0:
        raise ValueError(f"min_sample_time must be >= 0, got {min_sample_time!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")


class _Variant:
    """Book-keeping of one variant during :func:`measure`."""

    def __init__(self, name: str, fn: Callable[[], Any]) -> None:
        self.name, self.fn = name, fn
        self.samples: list[float] = []
        self.warmup_times: list[float] = []
        self.loops = 1
        self.checks = 0
        self.failed: str | None = None


def _run_checked(v: _Variant, loops: int, check: Callable[[str, Any], None] | None,
                 timer: Callable[[], float], what: str) -> float | None:
    """Time ``loops`` calls of a variant, check the last result; None if it failed."""
    fn = v.fn
    try:
        start = timer()
        for _ in range(loops):
            result = fn()
        elapsed = timer() - start
    except Exception as exc:  # a broken variant is reported, the others go on
        v.failed = f"raised on {what}: {type(exc).__name__}: {exc}"
        return None
    if check is not None:
        try:
            check(v.name, result)
        except Exception as exc:
            v.failed = f"check failed on {what}: {type(exc).__name__}: {exc}"
            return None
        v.checks += 1
    return elapsed


def _calibrate(v: _Variant, check: Any, min_sample_time: float, timer: Callable[[], float]) -> float | None:
    """Double the loop count until one sample lasts ``min_sample_time``; return that sample's time."""
    loops = 1
    while True:
        elapsed = _run_checked(v, loops, check, timer, f"calibration (loops={loops})")
        if elapsed is None:
            return None
        if elapsed >= min_sample_time or loops >= MAX_LOOPS:
            v.loops = loops
            return elapsed
        loops *= 2


def measure(
    variants: Mapping[str, Callable[[], Any]],
    *,
    check: Callable[[str, Any], None] | None = None,
    rel_ci: float = 0.05,
    min_samples: int = 7,
    max_samples: int = 200,
    max_seconds: float = 30.0,
    min_sample_time: float = 1e-3,
    warmup: int = 1,
    timer: Callable[[], float] = time.perf_counter,
) -> dict[str, Measurement]:
    """Measure callables side by side until their medians are known to +-``rel_ci``.

    Parameters
    ----------
    variants : mapping name -> callable
        Zero-argument callables, each running one variant on the same inputs.
    check : callable(name, result), optional
        Raises when ``result`` is wrong (e.g. ``numpy.testing.assert_allclose``
        against a reference). Called on every warm-up and sample result, never
        timed. A variant that fails is reported as failed and not timed further.
    rel_ci : float
        Target half-width of the 95% CI of the median, relative to it (0.05: +-5%).
    min_samples, max_samples : int
        Fewest samples before the target may stop; most samples (rounds).
    max_seconds : float
        Sampling budget in seconds (warm-up and calibration excluded).
    min_sample_time : float
        Calls shorter than this are batched (loop calibration).
    warmup : int
        Untimed-for-the-samples calls before calibration; their times are kept.
    timer : callable, optional
        The clock (default :func:`time.perf_counter`); tests pass a fake one.

    Returns
    -------
    dict name -> Measurement
        In the order of ``variants``.

    Raises
    ------
    TypeError, ValueError
        For no variants, a non-callable variant, or an invalid setting.
    """
    _validate(variants, check, rel_ci, min_samples, max_samples, max_seconds, min_sample_time, warmup)
    state = [_Variant(name, fn) for name, fn in variants.items()]

    for v in state:  # 1. warm-up, checked, kept apart
        for i in range(warmup):
            elapsed = _run_checked(v, 1, check, timer, f"warm-up call {i + 1}")
            if elapsed is None:
                break
            v.warmup_times.append(elapsed)

    for v in state:  # 2. loop calibration; its last sample is the first sample
        if v.failed is None:
            elapsed = _calibrate(v, check, min_sample_time, timer)
            if elapsed is not None:
                v.samples.append(elapsed / v.loops)

    start = timer()  # 3. interleaved rounds until the data says stop
    decision = _decide(state, rel_ci, min_samples, max_samples, 0.0, max_seconds)
    round_index = 1
    while not decision.stop:
        live = [v for v in state if v.failed is None]
        shift = round_index % len(live)
        for v in live[shift:] + live[:shift]:
            elapsed = _run_checked(v, v.loops, check, timer, f"sample {len(v.samples) + 1}")
            if elapsed is not None:
                v.samples.append(elapsed / v.loops)
        round_index += 1
        decision = _decide(state, rel_ci, min_samples, max_samples, timer() - start, max_seconds)

    return {
        v.name: Measurement.from_samples(
            v.name, v.samples, reached_target=decision.reached, stop_reason=decision.reason, rel_ci=rel_ci,
            warmup_times=v.warmup_times, loops=v.loops, checks=v.checks, failed=v.failed,
        )
        for v in state
    }


def _decide(state: list[_Variant], rel_ci: float, min_samples: int, max_samples: int, elapsed: float,
            max_seconds: float) -> stats.StopDecision:
    for v in state:
        if v.failed is not None:
            v.samples = []  # fast but wrong is not a timing
    live = {v.name: v.samples for v in state if v.failed is None}
    return stats.stop_decision(live, rel_ci=rel_ci, min_samples=min_samples, max_samples=max_samples,
                               elapsed=elapsed, max_seconds=max_seconds)


# --------------------------------------------------------------------------- recording
class Results:
    """Collects a suite's records and writes ``<outdir>/<suite>/results.json``.

    Parameters
    ----------
    suite : str
        The suite's name (also the folder name).
    outdir : str or Path
        Parent folder, default ``results``.

    Notes
    -----
    :meth:`add` a :class:`Measurement` that is unstable or failed, or a
    :class:`Speedup`, and the matching warning is recorded and printed to stderr
    (``UNSTABLE: ...`` / ``FAILED: ...``). The environment is read at
    :meth:`save` time (thread settings then reflect what the suite imported), and
    the load average at creation is kept too.
    """

    def __init__(self, suite: str, outdir: str | Path = "results") -> None:
        if not isinstance(suite, str) or not suite or any(c in suite for c in "/\\"):
            raise ValueError(f"suite must be a plain non-empty name, got {suite!r}")
        self.suite = suite
        self.dir = Path(outdir) / suite
        self.records: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.figures: list[str] = []
        self._extra: dict[str, Any] = {}
        self._started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self._load_at_start = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
        self._git_at_start = git_state()  # the code that runs: a commit made during the run must not be credited

    def _environment(self) -> dict[str, Any]:
        return credit_git_at_start(environment(load_average_at_start=self._load_at_start, **self._extra),
                                   self._git_at_start)

    def set_environment(self, **extra: Any) -> None:
        """Run settings recorded with the environment (``scheduler=..., workers=...``)."""
        self._extra.update(extra)

    def add(self, name: str, obj: Any) -> Any:
        """Record ``obj`` (anything :func:`to_jsonable` accepts) under ``name``; return it.

        Measurements (also inside a mapping) that are unstable or failed are warned
        about.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"a record needs a non-empty str name, got {name!r}")
        if name in self.records:
            raise ValueError(f"record {name!r} was already added to results {self.suite!r}")
        self.records[name] = to_jsonable(obj)  # fails early on what cannot be saved
        for m in _measurements_in(obj):
            if m.failed is not None:
                self.warn(f"{name}/{m.name}: {m.failed}", kind="FAILED")
            elif m.unstable:
                self.warn(f"{name}/{m.name}: {m.unstable_reason}")
        return obj

    def warn(self, message: str, kind: str = "UNSTABLE") -> None:
        """Record a warning and print it to stderr as ``KIND: message``."""
        text = f"{kind}: {message}"
        if text not in self.warnings:
            self.warnings.append(text)
            print(text, file=sys.stderr)

    @contextlib.contextmanager
    def figure(self, name: str, **figure_kw: Any) -> Iterator[tuple[Any, Path]]:
        """Draw a PNG next to results.json: ``with results.figure("samples") as (fig, path):``.

        ``fig`` is a :class:`matplotlib.figure.Figure` (Agg canvas, no pyplot state);
        on leaving the block it is saved to ``path`` (``<dir>/<name>.png``).
        """
        from matplotlib.figure import Figure

        if not name or any(c in name for c in "/\\"):
            raise ValueError(f"figure name must be a plain file name, got {name!r}")
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / f"{name}.png"
        fig = Figure(**{"figsize": (8, 4.5), "layout": "constrained", **figure_kw})
        yield fig, path
        fig.savefig(path, dpi=120)
        if str(path) not in self.figures:
            self.figures.append(str(path))

    def as_dict(self) -> dict[str, Any]:
        """Everything :meth:`save` writes."""
        return {
            "suite": self.suite,
            "started": self._started,
            "command": [Path(sys.argv[0]).name] + sys.argv[1:],
            "environment": self._environment(),
            "records": self.records,
            "warnings": self.warnings,
            "figures": self.figures,
        }

    def save(self) -> Path:
        """Write ``<outdir>/<suite>/results.json`` (atomically) and return its path."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / "results.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(to_jsonable(self.as_dict()), indent=2, allow_nan=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path


def _measurements_in(obj: Any) -> list[Measurement]:
    if isinstance(obj, Measurement):
        return [obj]
    if isinstance(obj, Mapping):
        return [m for v in obj.values() for m in _measurements_in(v)]
    if isinstance(obj, (list, tuple)):
        return [m for v in obj for m in _measurements_in(v)]
    return []


def credit_git_at_start(env: dict[str, Any], at_start: dict[str, Any]) -> dict[str, Any]:
    """``env`` (taken when a result is saved) crediting the git state of the run's start.

    A commit made while a suite runs must not be credited with its results: the
    start's state becomes ``env["git"]``, and the state at the save is kept as
    ``git_at_save`` where the tree changed meanwhile.

    Examples
    --------
    >>> credit_git_at_start({"git": {"commit": "b", "dirty": False}}, {"commit": "a", "dirty": False})
    {'git': {'commit': 'a', 'dirty': False}, 'git_at_save': {'commit': 'b', 'dirty': False}}
    """
    if env.get("git") != at_start:
        env["git_at_save"] = env.get("git")
    env["git"] = at_start
    return env


# --------------------------------------------------------------------------- command line
def add_common_arguments(parser: argparse.ArgumentParser, *, max_seconds: float = 30.0,
                         hosts: bool = False) -> argparse.ArgumentParser:
    """Add the options every suite accepts: ``--quick``, ``--out``, ``--max-seconds``, ``--rel-ci``, ``--link``.

    ``max_seconds`` is the suite's default sampling budget per measurement.
    ``--link RATE`` gives the :class:`asafe.app.link.Link` the suite runs behind
    (``None``: the loopback as it is); every results file records it in its
    environment (``environment["link"]``, with a measured check).
    ``hosts=True`` adds ``--hosts N`` for a suite that gets its cluster from
    :func:`asafe.app.hosts.cluster_client` (and sets ``SUPPORTS_HOSTS = True``):
    ``python -m benchmarks SUITE --hosts N`` runs the suite in host 0 of a
    multi-host topology, where the option is accepted; elsewhere it is refused.
    """
    parser.add_argument("--quick", action="store_true",
                        help="smaller problems and budgets: a smoke run, not a result to report")
    parser.add_argument("--out", default="results", metavar="DIR",
                        help="results folder; files go to DIR/<suite>/ (default: %(default)s)")
    parser.add_argument("--max-seconds", type=positive_float, default=max_seconds, metavar="S",
                        help="sampling budget per measurement in seconds (default: %(default)s)")
    parser.add_argument("--rel-ci", type=positive_float, default=0.05, metavar="R",
                        help="stop when the 95%% CI of every median is within +-R of it (default: %(default)s)")
    parser.add_argument("--link", type=_link_rate, action=_LinkAction, default=None, metavar="RATE",
                        help="run behind a loopback shaped to RATE (tc units: 1gbit, 100mbit) in a private "
                             "network namespace; python -m benchmarks re-executes itself there "
                             "(default: the loopback as it is)")
    if hosts:
        parser.add_argument("--hosts", type=int, action=_HostsAction, default=None, metavar="N",
                            help="run on N hosts (network namespaces on a bridge, each link shaped to --link "
                                 "RATE; scheduler and suite in host 0, a worker in each other host); "
                                 "python -m benchmarks re-executes the suite there (default: one host)")
    return parser


class _HostsAction(argparse.Action):
    """``--hosts N``: the suite must already run in host 0 of a topology of N hosts (see :class:`_LinkAction`)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from asafe.app.hosts import current

        inside = current()
        if inside is None or inside.get("n_hosts") != values:
            parser.error(f"--hosts {values}: this process does not run in host 0 of a topology of {values} hosts; "
                         f"run the suite as `python -m benchmarks SUITE --hosts {values} [--link RATE]`, which "
                         f"builds it and runs the suite there")
        setattr(namespace, self.dest, values)


def _link_rate(text: str) -> Any:
    from asafe.app.link import parse_link

    try:
        return parse_link(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _LinkAction(argparse.Action):
    """``--link RATE``: the command must already run behind that link.

    ``python -m benchmarks SUITE --link RATE`` re-executes itself inside the link
    before the suite parses its options (:func:`benchmarks.__main__.main`); a suite's
    ``main()`` called from Python cannot re-execute its caller, so there the option
    is refused unless the process already runs behind the same link (for example
    under ``asafe link RATE -- python script.py``).
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from asafe.app.hosts import current as current_hosts
        from asafe.app.link import current

        inside = current()
        topology = current_hosts()
        if topology is not None and values is not None and topology.get("rate") == values.rate:
            inside = values  # each host's link of a multi-host topology (asafe.app.hosts)
        if values is not None and (inside is None or inside.rate != values.rate):
            parser.error(f"--link {values.rate}: this process does not run behind that link "
                         f"({'the loopback as it is' if inside is None else 'it runs behind ' + inside.rate}); "
                         f"run the suite as `python -m benchmarks SUITE --link {values.rate}`, which "
                         f"re-executes itself behind it, or under `asafe link {values.rate} -- COMMAND`")
        setattr(namespace, self.dest, values)


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0.

    >>> positive_float("2.5")
    2.5
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1.

    >>> positive_int("3")
    3
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def wait_finished(handle: Any, target: int, timeout: float) -> int:
    """Poll an installed runtime's handle until its tracker has seen ``target`` finished tasks (or ``timeout``).

    Returns the count it saw last; the caller compares it with ``target``. The
    scheduler counts a task when the task's event reaches its plugin, which may
    be after the client got the result: suites call this outside their timing.
    """
    deadline = time.monotonic() + timeout
    seen = handle.finished
    while seen < target and time.monotonic() < deadline:
        time.sleep(0.01)
        seen = handle.finished
    return seen


def summarize_variants(rounds: dict[str, list[float]], base: str = "dask") -> dict[str, Any]:
    """Each variant's median seconds and its per-round ratio to ``base`` (base / variant: above 1 is faster).

    The summary of the suites that time whole phased runs per variant, round
    by round (``threads``, ``policy``).

    >>> s = summarize_variants({"dask": [2.0, 2.2, 2.0], "adaptive": [1.0, 1.1, 1.0]})
    >>> s["adaptive"]["median_s"], s["adaptive"]["speedup"], s["dask"]["speedup"]
    (1.0, 2.0, 1.0)
    """
    out = {}
    for variant, seconds in rounds.items():
        ratio, ci, exact = stats.paired_ratio(rounds[base], seconds)
        out[variant] = {"median_s": stats.median(seconds), "speedup": ratio, "ci95": list(ci), "exact": exact,
                        "n": len(seconds), "seconds": list(seconds)}
    return out
