"""``python -m benchmarks SUITE [options]``: run one benchmark suite from a checkout.

Each suite is a module ``benchmarks/<suite>.py`` with a ``main(argv) -> int``
function that parses its own options (the common ones come from
:func:`benchmarks.harness.add_common_arguments`). The known suites are listed
below with one line of help; a module added to ``benchmarks/`` later is found too.
A known suite whose module is not in this checkout exits with status 2 and says so.

``--link RATE`` (``1gbit``, ``100mbit``: tc's units) runs the suite behind a shaped
loopback: before the suite starts, the command re-executes itself in a private
network namespace whose loopback is rate-limited by ``tc tbf``
(:mod:`asafe.app.link`), so the clusters the suite starts talk over that link. A
rate that cannot be read, or a machine where no namespace can be made, exits with
status 2 and says what is needed.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SUITES", "available_suites", "main"]

#: Suites of the project and what they measure (modules may be added by others).
SUITES: dict[str, str] = {
    "kernels": "tile kernels (numba) against numpy dense and scipy CSR matvec, with a bandwidth roofline",
    "phased": "phased workloads: the adaptive switch against the best static settings",
    "demo": "asafe demo with the phased suite's evaluation variants too (hybrid, adaptive-sampling, ...)",
    "evals": "the evaluation plans of docs/results/, one command each: python -m benchmarks evals PLAN",
    "overhead": "cost of asafe's tracking on Dask's schedulers (20k trivial tasks, with and without)",
    "instructions": "the overhead workload's instructions per compute under cachegrind (deterministic; needs valgrind)",
    "paper": "the ASAFESSS paper's configuration (2048x2048, 128x128 tiles) and sweeps around it",
    "workloads": "dask.array, dask.dataframe and futures workloads on four data kinds: Dask, asafe, each static codec",
}

#: Modules of this folder that are not suites: the harness, the parts of the phased suite, the evaluation
#: plans' data and the analysis of their results.
_NOT_SUITES = {"harness", "stats", "__main__", "__init__", "conftest", "phase_sets", "variants", "tuning", "plans",
               "analysis"}


def available_suites() -> dict[str, str]:
    """The known suites plus any other suite module present in ``benchmarks/``."""
    here = Path(__file__).resolve().parent
    suites = dict(SUITES)
    for info in pkgutil.iter_modules([str(here)]):
        if info.name not in suites and info.name not in _NOT_SUITES and not info.name.startswith("_"):
            suites[info.name] = _first_docstring_line(here / f"{info.name}.py")
    return suites


def _first_docstring_line(path: Path) -> str:
    """The module docstring's first line, read without importing the module."""
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, ValueError):
        doc = None
    return doc.strip().splitlines()[0].rstrip(".") if doc and doc.strip() else "(no description)"


def _present(name: str) -> bool:
    here = Path(__file__).resolve().parent
    return (here / f"{name}.py").is_file() or (here / name / "__init__.py").is_file()


def _parser() -> argparse.ArgumentParser:
    suites = available_suites()
    lines = [f"  {name:<10} {help_}{'' if _present(name) else '  [not in this checkout]'}"
             for name, help_ in suites.items()]
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run an asafe benchmark suite (rules: docs/benchmarking.rst).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="suites:\n" + "\n".join(lines) + (
            "\n\noptions every suite accepts (see python -m benchmarks SUITE --help):\n"
            "  --quick            smaller problems and budgets (a smoke run)\n"
            "  --out DIR          results folder, files go to DIR/<suite>/ (default: results)\n"
            "  --max-seconds S    sampling budget per measurement\n"
            "  --rel-ci R         target half-width of the median's 95% CI (default: 0.05)\n"
            "  --link RATE        run behind a loopback shaped to RATE (1gbit, 100mbit; tc tbf in a\n"
            "                     private network namespace; Linux, root or user namespaces)"
        ),
    )
    parser.add_argument("suite", choices=sorted(suites), metavar="SUITE", help="the suite to run (listed below)")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="options passed to the suite")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``SUITE [options]`` and run ``benchmarks.<suite>.main(options)``.

    With ``--link RATE`` among the options and outside that link, the process is
    replaced by ``python -m benchmarks SUITE [options]`` behind it (its own command
    line when ``argv`` is None); this call then does not return.
    """
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    status = _enter_link(args.options, argv)
    if status is not None:
        return status
    module_name = f"{__package__ or 'benchmarks'}.{args.suite}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:  # the suite exists but something it imports does not
            raise
        print(f"suite {args.suite} is not available in this checkout (no benchmarks/{args.suite}.py)",
              file=sys.stderr)
        return 2
    run = getattr(module, "main", None)
    if not callable(run):
        print(f"suite {args.suite} has no main(argv) function", file=sys.stderr)
        return 2
    return int(run(args.options) or 0)


def _enter_link(options: Sequence[str], argv: Sequence[str] | None) -> int | None:
    """Re-execute this command behind ``--link RATE`` if the options ask for one.

    Returns an exit status on error (the message printed), ``None`` to go on (on
    the loopback, or already inside the link, after printing its measured check).
    """
    from asafe.app import link

    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--link", default=None)
    known, _ = pre.parse_known_args(list(options))
    if known.link is None:
        return None
    try:
        spec = link.parse_link(known.link)
        if spec is None:
            return None
        command = None if argv is None else [sys.executable, "-m", __package__ or "benchmarks", *argv]
        link.enter(spec, command)
    except (ValueError, link.LinkUnavailable) as exc:
        print(f"--link {known.link}: {exc}", file=sys.stderr)
        return 2
    print(link.summary(), flush=True)
    return None


if __name__ == "__main__":
    sys.exit(main())
