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
    if not any(a == "--hosts" or a.startswith("--hosts=") for a in argv):
        return argv
    from asafe.app.hosts import current

    kept, values, i = [], {}, 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in ("--hosts", "--link"):
            if "=" in arg:
                values[name] = arg.split("=", 1)[1]
            elif i + 1 < len(argv):
                values[name] = argv[i + 1]
                i += 1
            i += 1
            continue
        kept.append(arg)
        i += 1
    inside = current()
    if inside is None or str(inside.get("n_hosts")) != values.get("--hosts"):
        raise ValueError(f"--hosts {values.get('--hosts')}: this process does not run in host 0 of that "
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
