"""The ``asafe`` command line (click, as Dask's own CLI).

Every command has ``--help``. Commands are thin: they parse options, validate
them, and call library functions that the tests call too.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

__all__ = ["main", "demo_command"]


@click.group(name="asafe", context_settings={"help_option_names": ["-h", "--help"]})  # also `dask asafe`
@click.version_option(package_name="asafe")
def main() -> None:
    """asafe: scheduler-driven adaptive optimizations for Dask."""


def _positive(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise click.BadParameter(f"must be > 0, got {value}")
    return value


def _link_option(ctx: click.Context, param: click.Parameter, value: str | None):
    from .link import parse_link

    try:
        return parse_link(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _enter_link(spec, echo: bool = True) -> None:
    """Re-execute this command behind ``spec`` (a shaped loopback), or go on inside it.

    ``echo``: print the link's one-line summary (the demo prints it in its own opening lines).
    """
    from .link import LinkUnavailable, enter, summary

    if spec is None:
        return
    try:
        enter(spec)
    except LinkUnavailable as exc:
        raise click.ClickException(f"--link {spec.rate}: {exc}") from None
    if echo:
        click.echo(summary())


_LINK_HELP = ("Run behind a shaped loopback of this rate (tc units: 1gbit, 100mbit, ...): the command "
              "re-executes itself in a private network namespace whose loopback is rate-limited by tc tbf "
              "(Linux; root or user namespaces). Default: the loopback as it is.")


def demo_command(known: Mapping[str, Any] | None = None, compared: Sequence[str] | None = None,
                 name: str = "demo") -> click.Command:
    """The ``asafe demo`` command, over the variants of ``known`` (default: the package's).

    ``python -m benchmarks demo`` is the same command over the ``phased`` suite's
    variants (the evaluation ones too): its ``--variants`` help and errors list
    exactly the names of its ``known``.
    """
    from .variants import COMPARED, KNOWN_VARIANTS, VARIANTS

    known = KNOWN_VARIANTS if known is None else known
    compared = COMPARED if compared is None else compared
    default_variants = ",".join(VARIANTS)

    @click.command(name=name)
    @click.option("--quick", is_flag=True, help="Smaller phases and 3 rounds: a few minutes on 2 cores.")
    @click.option("--workers", default=2, show_default=True, type=click.IntRange(min=2),
                  help="Worker processes of the embedded LocalCluster (panels are shipped between them).")
    @click.option("--threads-per-worker", default=1, show_default=True, type=click.IntRange(min=1),
                  help="Threads per worker of the embedded LocalCluster.")
    @click.option("--scheduler-address", default=None, metavar="ADDRESS",
                  help="Run on this existing cluster (tcp://host:port) instead of an embedded one.")
    @click.option("--repetitions", default=None, type=click.IntRange(1, 100),
                  help="Measured rounds of every variant, interleaved [default: 3 with --quick, else 6].")
    @click.option("--alpha", default=None, type=float, callback=_positive,
                  help="Compression turns on below this compute/communication ratio [default: 1].")
    @click.option("--beta", default=None, type=float, callback=_positive,
                  help="Compression turns off above this compute/communication ratio [default: 8].")
    @click.option("--window", default=None, type=click.IntRange(min=1),
                  help="Measurements in the mode tracker's sliding window [default: 16].")
    @click.option("--blend", default=None, type=click.FloatRange(0.0, 1.0),
                  help="Weight of the measured window against the scheduled tasks and planned transfers "
                       "(1: the measured window alone) [default: 0.1].")
    @click.option("--plot", "plot", default="asafe-demo.png", show_default=True, type=click.Path(dir_okay=False),
                  help='Where the PNG figure goes (it needs matplotlib: pip install "asafe[demo]").')
    @click.option("--json", "json_path", default="asafe-demo.json", show_default=True,
                  type=click.Path(dir_okay=False), help="Where the JSON report goes.")
    @click.option("--link", "link", default=None, metavar="RATE", callback=_link_option, help=_LINK_HELP)
    @click.option("--variants", default=default_variants, show_default=True, metavar="LIST",
                  help=f"Comma-separated variants to run, from {', '.join(known)} (static-on and static-off "
                       "are always needed: the oracle is made of them).")
    @click.option("--verbose", "-v", is_flag=True,
                  help="Also print how the thresholds were chosen and what each phase is (default: a few lines on "
                       "what runs, on which link, how many rounds).")
    @click.option("--size", default=None, hidden=True, type=click.Choice(["default", "quick", "test"]),
                  help="Phase sizes (tests use 'test').")
    def demo(quick: bool, workers: int, threads_per_worker: int, scheduler_address: str | None,
             repetitions: int | None, alpha: float | None, beta: float | None, window: int | None,
             blend: float | None, plot: str, json_path: str, link, variants: str, verbose: bool,
             size: str | None) -> None:
        """Run the phased Graph500 workload: adaptive compression against the per-task rule and the static settings.

        Four phases (shipped sparse panels, local dense-ish panels, shipped panels
        reused for 8 vectors, local 256-tiles) run under asafe's adaptive runtime,
        the per-task cost rule, compression always on, always off, and the
        per-phase oracle. Prints progress, transitions, a table of medians with
        their intervals and the coverage each reaches, and every target's verdict
        (met only when the whole interval is on its side); warns when the machine
        was busy. Writes a JSON report and a PNG figure.
        """
        from dataclasses import replace

        from .demo import DemoError, run_demo
        from .variants import DEFAULT_THRESHOLDS

        if size is None:
            size = "quick" if quick else "default"
        thresholds = DEFAULT_THRESHOLDS
        changes = {k: v for k, v in (("alpha", alpha), ("beta", beta), ("window", window), ("blend", blend))
                   if v is not None}
        if changes:
            thresholds = replace(thresholds, **changes, how="set on the command line: " + ", ".join(
                f"{k}={v}" for k, v in changes.items()))
        if thresholds.alpha > thresholds.beta:
            raise click.BadParameter(
                f"Hysteresis needs alpha <= beta, got alpha={thresholds.alpha} > beta={thresholds.beta}",
                param_hint="'--alpha' / '--beta'")
        if link is not None and scheduler_address is not None:
            raise click.UsageError("--link shapes the loopback of the embedded LocalCluster; it cannot be combined "
                                   "with --scheduler-address (shape that cluster's own network instead)")
        _enter_link(link, echo=False)  # the demo's opening lines name the link
        try:
            run_demo(size=size, workers=workers, threads_per_worker=threads_per_worker,
                     scheduler_address=scheduler_address, repetitions=repetitions, thresholds=thresholds,
                     plot=plot, json_path=json_path, variants=variants, known=known, compared=compared,
                     verbose=verbose)
        except DemoError as exc:
            raise click.ClickException(str(exc)) from exc

    return demo


main.add_command(demo_command())


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("rate", callback=_link_option)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def link(rate, command: tuple[str, ...]) -> None:
    """Run COMMAND behind a shaped loopback of RATE; without COMMAND, measure it.

    RATE uses tc's units (1gbit, 100mbit, 2.5gbit, 125MBps). COMMAND runs in a
    private network namespace (Linux; root or unprivileged user namespaces) whose
    only interface, the loopback, is rate-limited by tc's token bucket filter, with
    ASAFE_LINK=RATE in its environment; everything it starts (a LocalCluster's
    scheduler, nanny and workers) shares that link. Example:

    \b
        asafe link 1gbit -- python my_cluster_script.py

    Without COMMAND: enter such a namespace, send data between two TCP sockets on
    its loopback, and print the measured rate.
    """
    from .link import LinkUnavailable, exec_in_link

    if rate is None:
        raise click.BadParameter("needs a rate such as 1gbit (the loopback needs no command)", param_hint="RATE")
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        _enter_link(rate)
        return
    try:
        exec_in_link(rate, command)
    except LinkUnavailable as exc:
        raise click.ClickException(f"{rate.rate}: {exc}") from None
    except OSError as exc:
        raise click.ClickException(f"cannot run {command[0]!r}: {exc}") from None


if __name__ == "__main__":  # pragma: no cover
    main()


@main.command()
@click.argument("scheduler_address", required=False)
@click.option("--timeout", default=10.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Seconds to wait for the scheduler to answer.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def info(scheduler_address: str | None, timeout: float, as_json: bool) -> None:
    """asafe's settings and where each came from; with SCHEDULER_ADDRESS, what that scheduler runs and why."""
    import json

    from .info import InfoError, render, report

    try:
        data = report(scheduler_address, timeout=timeout)
    except InfoError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(data, indent=2, default=str) if as_json else render(data))
