"""``asafe demo`` over the phased suite's variants: the demo's run, table, JSON report and figure, any variant.

``python -m benchmarks demo [asafe demo's options]``

The same command as ``asafe demo`` (:func:`asafe.app.cli.demo_command`: the
same options, defaults, files and output), whose ``--variants`` also accepts the
variants made for evaluations (:mod:`benchmarks.variants`: ``hybrid``,
``adaptive-sampling``, ``adaptive-ready``, ``adaptive-arrivals``,
``adaptive-dwell``), compared in the suite's order
(:data:`benchmarks.variants.COMPARED`). The evaluation plans that ran the demo
with them run this (``python -m benchmarks evals PLAN``). ``--link RATE`` runs it
behind a shaped loopback, as for every suite.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

from asafe.app.cli import demo_command

from . import variants

__all__ = ["main"]

PROG = "python -m benchmarks demo"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``asafe demo`` with ``argv`` over :data:`benchmarks.variants.KNOWN`; return its exit status."""
    command = demo_command(variants.KNOWN, variants.COMPARED)
    try:
        command.main(args=list(sys.argv[1:] if argv is None else argv), prog_name=PROG, standalone_mode=True)
    except SystemExit as exc:  # click ends every command so, 0 included
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
