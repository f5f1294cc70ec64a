"""``asafe demo`` over the phased suite's variants: the demo's run, table, JSON report and figure, any variant.

``python -m benchmarks demo [asafe demo's options]``

The same command as ``asafe demo`` (:func:`asafe.app.cli.demo_command`: the
same options, defaults, files and output), whose ``--variants`` also accepts the
variants made for evaluations (:mod:`benchmarks.variants`: ``hybrid``,
``adaptive-sampling``, ``adaptive-ready``, ``adaptive-arrivals``,
``adaptive-dwell``), compared in the suite's order
(:data:`benchmarks.variants.COMPARED`). The evaluation plans that ran the demo
with them run this (``python -m benchmarks evals PLAN``). ``--link RATE`` runs it
behind a shaped loopback, as for every suite; ``--hosts N --link RATE`` runs it
on a multi-host topology (:mod:`asafe.app.hosts`): the demo's client in host 0
with the scheduler, a worker in each other host, every host's link shaped.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from asafe.app.cli import demo_command

from . import variants

__all__ = ["main"]

PROG = "python -m benchmarks demo"
#: ``python -m benchmarks demo --hosts N`` runs the demo in host 0 of a topology (see main).
SUPPORTS_HOSTS = True


def _topology_options(argv: list[str]) -> list[str]:
    """``argv`` less ``--hosts N`` and ``--link RATE``, checked against the topology this process runs in.

    ``python -m benchmarks`` builds the topology those two options ask for and
    runs this suite in host 0 with them (:func:`benchmarks.__main__._enter_hosts`);
    here the demo takes the topology's cluster instead of an embedded one
    (:func:`asafe.app.demo.connect`), and its own ``--link`` would shape host 0's
    loopback again. Outside a topology, ``--hosts`` is refused (``ValueError``) with how to run it.

    >>> _topology_options(["--quick"])
    ['--quick']
    """
    options = argparse.ArgumentParser(add_help=False, allow_abbrev=False)  # as __main__._requested reads them
    options.add_argument("--hosts")
    options.add_argument("--link")
    given, kept = options.parse_known_args(argv)
    if given.hosts is None:
        return argv
    from asafe.app.hosts import current

    inside = current()
    if inside is None or str(inside.get("n_hosts")) != given.hosts:
        raise ValueError(f"--hosts {given.hosts}: this process does not run in host 0 of that "
                         "topology; run `python -m benchmarks demo --hosts N [--link RATE] ...`, which builds it "
                         "and runs the demo there")
    if "--scheduler-address" in (a.split("=", 1)[0] for a in kept):
        raise ValueError("--hosts runs the demo on the topology's cluster; it cannot be combined with "
                         "--scheduler-address")
    return kept


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``asafe demo`` with ``argv`` over :data:`benchmarks.variants.KNOWN`; return its exit status."""
    try:
        args = _topology_options(list(sys.argv[1:] if argv is None else argv))
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    command = demo_command(variants.KNOWN, variants.COMPARED)
    try:
        command.main(args=args, prog_name=PROG, standalone_mode=True)
    except SystemExit as exc:  # click ends every command so, 0 included
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
