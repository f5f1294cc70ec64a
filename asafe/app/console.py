"""What ``asafe demo`` prints: progress, transitions as they happen, the tables and the targets.

With `rich <https://rich.readthedocs.io>`_ installed (``pip install "asafe[demo]"``)
the demo draws a progress bar per phase on a terminal and prints its tables as
rich tables; without it, :class:`PlainConsole` prints the same lines and tables
as plain text (no colors, no progress bars), so that a worker's environment
without the demo's extras can still run it. :func:`make_console` picks one.
:func:`format_table` is the plain-text table of the demo and of the benchmark
suites.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TextIO

from .stats import format_coverage
from .variants import ORACLE, VariantRun
from .workload import Phase

__all__ = ["PlainConsole", "make_console", "format_table", "interval_text", "Display", "print_summary"]

# rich's markup: [bold], [red], [/], [bold red] ... (a tag starts with a letter, '#', '/' or '@'; a
# backslash before it prints it as it is); an interval such as [0.976, 1.252] is not a tag
_TAG = re.compile(r"(?<!\\)\[[a-z#/@][^\[\]]*\]")


class PlainConsole:
    """A console that prints plain text: rich's markup is removed, nothing is drawn live.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> PlainConsole(out).print("[bold]asafe demo[/]: 4 phases [0.976, 1.252]")
    >>> out.getvalue()
    'asafe demo: 4 phases [0.976, 1.252]\\n'
    """

    is_terminal = False

    def __init__(self, file: TextIO | None = None) -> None:
        self.file = file

    def print(self, *objects: Any, markup: bool = True, soft_wrap: bool = False) -> None:
        text = " ".join(str(o) for o in objects)  # never wrapped: soft_wrap is rich's, accepted for it
        if markup:
            text = _TAG.sub("", text).replace("\\[", "[")
        print(text, file=self.file or sys.stdout, flush=True)


def make_console() -> Any:
    """A rich console (wide enough for the tables where the output is not a terminal), else a :class:`PlainConsole`."""
    try:
        from rich.console import Console
    except ImportError:
        return PlainConsole()
    console = Console()
    return console if console.is_terminal else Console(width=130)  # a log file: wide enough for the tables


def escape(console: Any, text: str) -> str:
    """``text`` printed as it is on ``console`` (rich's markup escaped)."""
    if isinstance(console, PlainConsole):
        return re.sub(r"\[(?=[a-z#/@])", r"\\[", text)
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def format_table(rows: Sequence[Mapping[str, Any] | Sequence[Any]], columns: Sequence[str]) -> str:
    """A plain-text table: one header line, a rule, one line per row.

    Rows are mappings (read by column name; missing cells are blank) or sequences
    in column order. Numbers are right-aligned (floats with 4 significant digits),
    text left-aligned.

    Examples
    --------
    >>> print(format_table([{"variant": "a", "n": 7}, {"variant": "bb", "n": 12}], ["variant", "n"]))
    variant   n
    -------  --
    a         7
    bb       12
    """
    columns = [str(c) for c in columns]
    cells: list[list[str]] = []
    numeric = [True] * len(columns)
    for row in rows:
        values = [row.get(c, "") for c in columns] if isinstance(row, Mapping) else list(row)
        if len(values) != len(columns):
            raise ValueError(f"row {row!r} has {len(values)} cells for {len(columns)} columns")
        line = []
        for i, value in enumerate(values):
            if isinstance(value, (bool, str)) or value is None:
                text = "" if value is None else str(value)
                numeric[i] = numeric[i] and (text == "" or _looks_numeric(text))
                line.append(text)
            elif isinstance(value, float):
                line.append(f"{value:.4g}")
            else:
                line.append(str(value))
        cells.append(line)
    widths = [max([len(c)] + [len(line[i]) for line in cells]) for i, c in enumerate(columns)]

    def render(line: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(line, widths, numeric)).rstrip()

    return "\n".join([render(columns), render(["-" * w for w in widths])] + [render(line) for line in cells])


def _looks_numeric(text: str) -> bool:
    # "1.23 ms", "+4.5%", "[1 ms, 2 ms]", "-" (a blank number) align right
    return not isinstance(text, bool) and (text[0].isdigit() or text[0] in "+-.[") and text not in ("True", "False")



def _table(console: Any, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table with a title, the first column left-aligned: a rich table, or plain text on a :class:`PlainConsole`."""
    if isinstance(console, PlainConsole):
        console.print(title, markup=False)
        console.print(format_table([[_TAG.sub("", c) for c in row] for row in rows], columns), markup=False)
        return
    from rich.table import Table

    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="left" if col == columns[0] else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)


class Display:
    """Progress bars per phase (rich) and transitions as they happen."""

    def __init__(self, console: Any, phases: Sequence[Phase], live: bool, installed: Collection[str] = ()) -> None:
        self.console = console
        self.phases = list(phases)
        self.live = live
        self.installed = set(installed)  #: the variants whose runtime's transitions are counted
        self.progress = None
        self.bars: list[Any] = []
        self.seen = 0
        self.label = ""

    def __enter__(self) -> "Display":
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=self.console, transient=True)
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)

    def start_run(self, variant: str, rep: int, warmup: bool) -> None:
        self.seen = 0
        self.label = f"{variant} {'warm-up' if warmup else f'round {rep + 1}'}"
        if self.progress is not None:
            for bar in self.bars:
                self.progress.remove_task(bar)
            self.bars = [self.progress.add_task(f"{self.label:>20} {p.name:<15}", total=p.steps)
                         for p in self.phases]

    def step(self, i: int, step: int, steps: int, handle: Any) -> None:
        state = ""
        if handle is not None:
            info = handle.info("states", "mode", "history")
            from ..core.mode import ModeVector

            shares, signals = info["mode"]
            mode = ModeVector(shares, **signals)
            on = info["states"].get("compression", False)
            state = f" compression {'on ' if on else 'off'} ratio {mode.ratio:.3g}"
            history = info["history"]
            for t, name, old, new, tshares, _ in history[self.seen:]:
                ratio = ModeVector(tshares).ratio
                self.console.print(f"  [bold]{self.label}[/] {self.phases[i].name}: {name} "
                                   f"{'on' if old else 'off'} -> {'on' if new else 'off'} (ratio {ratio:.3g})")
            self.seen = len(history)
            if self.progress is None and step == steps:
                self.console.print(f"  {self.label} {self.phases[i].name}: mode {mode!r}")
        if self.progress is not None:
            self.progress.update(self.bars[i], completed=step,
                                 description=f"{self.label:>20} {self.phases[i].name:<15}{state}")

    def done(self, run: VariantRun) -> None:
        times = " ".join(f"{p.seconds:6.2f}" for p in run.phases)
        ok = "correct" if run.correct else "[red]WRONG[/]"
        self.console.print(f"  {self.label:>20}: {times}  total {run.seconds:6.2f} s  {ok}"
                           + (f"  ({len(run.transitions)} transitions)" if run.variant in self.installed else "")
                           + (f"  ({sum(d['compress'] for d in run.decisions)} of {len(run.decisions)} panels "
                              "compressed)" if run.decisions else ""))


def interval_text(low: float, high: float, coverage: float | None, digits: int = 3) -> str:
    """An interval as printed: its bounds and, beside them, the coverage it reaches.

    Examples
    --------
    >>> interval_text(0.99312, 1.7031, 0.75)
    '[0.993, 1.703] (75%)'
    >>> interval_text(1.0, 2.0, None, digits=2)
    '[1.00, 2.00]'
    """
    text = f"[{low:.{digits}f}, {high:.{digits}f}]"
    return text if coverage is None else f"{text} ({format_coverage(coverage)})"


_VERDICT_STYLE = {"met": "[green]met[/]", "not shown": "[yellow]not shown[/]", "not met": "[red]not met[/]"}


def print_summary(console: Any, report: dict[str, Any], order: Sequence[str] = ()) -> None:
    """The demo's tables (totals, per phase) and its targets with their verdicts; variants in ``order``, then the rest.

    A warning that the machine was busy (``report["load"]["warning"]``) comes
    first; every interval carries the coverage it reaches; a target is "met"
    only when its interval lies wholly on its side (:func:`asafe.app.stats.verdict`).
    """
    load = report.get("load") or {}
    if load.get("warning"):
        console.print(f"[bold yellow]warning:[/] {escape(console, load['warning'])}")
    v = report["variants"]
    sp = report["speedups"]
    names = [n for n in (*order, ORACLE) if n in v] + [n for n in v if n not in order and n != ORACLE]
    rounds = report.get("settings", {}).get("repetitions")
    rows = []
    for name in names:
        d = v[name]
        cells = []
        for base in ("static-on", "static-off"):
            if name == base:
                cells.append("(base)")
                continue
            if f"{name}_vs_{base}" in sp:
                s = sp[f"{name}_vs_{base}"]
                cells.append(f"{s['paired_ratio']:.2f}x {interval_text(*s['paired_ci95'], s.get('ci_coverage'), 2)}")
            else:  # the oracle is no run: the ratio of the medians
                cells.append(f"{v[base]['median_s'] / d['median_s']:.2f}x")
        rows.append([name, f"{d['median_s']:.3f} s", interval_text(*d["ci95"], d.get("ci_coverage")),
                     *cells, "yes" if d["correct"] else "[red]NO[/]"])
    over = f"{rounds} round{'s' if rounds != 1 else ''}" if rounds else "the measured rounds"
    _table(console, f"Total time of the phases (median of {over}, its interval (coverage); speedups paired per round)",
           ["variant", "median", "interval (coverage)", *[f"vs {b} ({v[b]['median_s']:.2f} s)"
                                                          for b in ("static-on", "static-off")], "correct"], rows)
    ran = [n for n in names if n != ORACLE]
    rows = []
    for p in report["phases"]:
        pv = p["variants"]
        cells = []
        for x in ran:
            share = p.get("compressed_share", {}).get(x)
            cells.append(f"{pv[x]['median_s']:.3f}" + (f" ({share:.0%})" if share is not None else ""))
        rows.append([p["name"], *cells, p["oracle_choice"], str(p["max_transitions"])])
    _table(console, "Per phase (median seconds; oracle = the better static setting; "
                    "per-task rules: share of panels compressed)",
           ["phase", *ran, "oracle picks", "max transitions"], rows)
    tg = report["targets"]
    a = tg["adaptive_vs_best_static"]
    b = tg["adaptive_vs_oracle"]
    c = tg["transitions_per_phase"]
    d = tg["static_losses"]

    def mark(x: dict) -> str:
        return _VERDICT_STYLE[x["verdict"]]

    def interval(x: dict, percent: bool = False) -> str:
        if not x.get("ci95"):
            return " (no interval)"
        low, high = x["ci95"]
        if percent:
            return f" [{low:+.0%}, {high:+.0%}] ({format_coverage(x['ci_coverage'])})"
        return " " + escape(console, interval_text(low, high, x.get("ci_coverage")))

    pad = " " * len("targets: ")

    def say(text: str) -> None:  # one line per target, however long: a wrapped verdict reads as two
        console.print(text, soft_wrap=True)

    if "adaptive" in report["variants"]:
        say("targets: met when the whole interval clears the target, not shown when it straddles it, "
            "not met when wholly on the wrong side")
        say(f"{pad}adaptive {a['speedup']:.3f}x{interval(a)} the better static ({a['best_static']}), "
            f"target >= {a['target']} -- {mark(a)}")
        say(f"{pad}adaptive / oracle {b['slowdown']:.3f}{interval(b)}, target <= {b['target']} -- "
            f"{mark(b)}")
        say(f"{pad}transitions per phase (the most in one run; a count) {c['max_per_phase']}, "
            f"target <= {c['target']} -- {mark(c)}")
    else:
        say("targets: the adaptive variant's, and it did not run (the speedups above compare the others)")
    for name, x in d["variants"].items():
        say(f"{pad}{name} loses {x['loss']:+.0%}{interval(x, percent=True)} in {x['worst_phase']} "
            f"vs the oracle, target >= {d['target']:.0%} in a phase -- {mark(x)}")
    e = tg.get("adaptive_vs_per_task")
    if e:
        say(f"{pad}adaptive {e['speedup']:.3f}x{interval(e)} the per-task rule, target >= "
            f"{e['target']} -- {mark(e)}")
    for w in report["warnings"]:
        if w != load.get("warning"):  # printed first
            console.print(f"[yellow]warning:[/] {escape(console, w)}")
