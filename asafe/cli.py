"""The ``asafe`` command line (click, as Dask's own CLI).

Every command has ``--help``. Commands are thin: they parse options, validate
them, and call library functions that the tests call too.
"""
from __future__ import annotations

import click

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="asafe")
def main() -> None:
    """asafe: scheduler-driven adaptive optimizations for Dask."""


@main.command()
@click.option("--tasks", default=400, show_default=True, type=click.IntRange(10, 1_000_000),
              help="Tasks per phase.")
@click.option("--scheduler", default="threads", show_default=True,
              type=click.Choice(["threads", "sync", "processes"]), help="Dask local scheduler.")
@click.option("--alpha", default=0.5, show_default=True, type=float,
              help="Compression turns on below this compute/communication ratio.")
@click.option("--beta", default=2.0, show_default=True, type=float,
              help="Compression turns off above this compute/communication ratio.")
def demo(tasks: int, scheduler: str, alpha: float, beta: float) -> None:
    """Run a small adaptive run and print the mode vector and the transitions."""
    from .demo import run_local_demo

    try:
        run_local_demo(tasks=tasks, scheduler=scheduler, alpha=alpha, beta=beta, echo=click.echo)
    except (TypeError, ValueError) as exc:
        raise click.BadParameter(str(exc)) from exc


if __name__ == "__main__":  # pragma: no cover
    main()
