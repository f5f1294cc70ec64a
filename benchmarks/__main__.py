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

``--hosts N`` (with ``--link RATE``: each host's link) runs the suite on a
multi-host topology instead (:mod:`asafe.app.hosts`): N network namespaces on a
bridge, the scheduler in host 0 and a worker in each other host; the suite runs
in host 0 and gets that cluster from :func:`asafe.app.hosts.cluster_client`. Only
suites that set ``SUPPORTS_HOSTS = True`` accept it (``wire``, ``demo``).
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
    "startup": "what asafe's preload adds to starting a worker (Nanny) and a 2-worker LocalCluster",
    "threads": "kernel-threads: a phased BLAS workload under Dask's, two static, the adaptive and a per-worker thread policy",
    "granularity": "the demo's matrices in 4 to 128 panels: the per-task rule beside the global mode, its decision cost",
    "policy": "work-stealing: a phased workload (compute, transfer) under Dask's stealing, stealing off, adaptive, oracle",
    "scheduler": "scheduler throughput, cpu and memory per task with and without asafe (100k-1M tasks, 2-64 workers)",
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
            "                     private network namespace; Linux, root or user namespaces)\n"
            "  --hosts N          (wire, demo) run on N hosts: network namespaces on a bridge, each link shaped\n"
            "                     to --link RATE; scheduler and suite in host 0, a worker in each other\n"
            "                     host (Linux, root; asafe.app.hosts)"
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
    if _requested(args.options, "--hosts") is not None:  # --link is then each host's link
        status = _enter_hosts(args.suite, args.options)
    else:
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


def _requested(options: Sequence[str], option: str) -> str | None:
    """The value of ``option`` among a suite's options (``--hosts 3``, ``--hosts=3``), or None."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument(option, default=None)
    known, _ = pre.parse_known_args(list(options))
    return getattr(known, option.lstrip("-").replace("-", "_"))


def _enter_hosts(suite: str, options: Sequence[str]) -> int | None:
    """Run the suite in host 0 of a multi-host topology if the options ask for one (``--hosts N``).

    Outside a topology: builds ``N`` hosts (:mod:`asafe.app.hosts`) with each
    host's link shaped to ``--link RATE``, starts the scheduler in host 0 and a
    worker in each other host, runs ``python -m benchmarks SUITE [options]`` in
    host 0 to its end, removes everything, and returns the suite's exit status.
    Inside the topology it was started for: ``None`` (go on). A suite that does
    not run its cluster on a topology (``SUPPORTS_HOSTS``), a count or rate that
    cannot be read, or a machine where no topology can be built: exit status 2
    and what is wrong or missing, before anything starts.
    """
    import os

    requested, rate_text = _requested(options, "--hosts"), _requested(options, "--link")
    if requested is None:
        return None
    from asafe.app import hosts, link

    try:
        n_hosts = hosts.parse_hosts(requested)
        spec = link.parse_link(rate_text)
    except ValueError as exc:
        print(f"--hosts {requested}: {exc}", file=sys.stderr)
        return 2
    rate = spec.rate if spec is not None else None
    inside = hosts.current()
    if inside is not None:
        if inside.get("n_hosts") != n_hosts or inside.get("rate") != rate:
            print(f"--hosts {n_hosts} --link {rate_text}: this process runs in a topology of "
                  f"{inside.get('n_hosts')} hosts behind {inside.get('rate') or 'unshaped links'}", file=sys.stderr)
            return 2
        return None
    if not _supports_hosts(suite):
        able = sorted(name for name in available_suites() if _supports_hosts(name))
        print(f"--hosts: suite {suite} does not run its cluster on a multi-host topology; suites that do: "
              f"{', '.join(able) or 'none'}", file=sys.stderr)
        return 2
    try:
        hosts.check_available()
    except hosts.HostsUnavailable as exc:
        print(f"--hosts {n_hosts}: {exc}", file=sys.stderr)
        return 2
    import signal

    root = Path(__file__).resolve().parent.parent
    # SIGTERM (a timeout, a job scheduler) ends the run like Ctrl-C: the topology is removed on the way out
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    with hosts.Topology(n_hosts, spec) as topology, hosts.HostCluster(topology, pythonpath=[str(root)]) as cluster:
        workers = cluster.wait()
        print(f"hosts: {n_hosts} network namespaces on a bridge, each link {spec or 'unshaped'}; scheduler "
              f"{cluster.scheduler_address} (host 0, with the suite), workers {', '.join(workers)}", flush=True)
        done = topology.run(0, [sys.executable, "-m", __package__ or "benchmarks", suite, *options],
                            env=cluster.client_env(), cwd=os.getcwd())
    return done.returncode


def _supports_hosts(name: str) -> bool:
    """Whether suite ``name``'s module sets ``SUPPORTS_HOSTS = True`` (read without importing it)."""
    path = Path(__file__).resolve().parent / f"{name}.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return False
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SUPPORTS_HOSTS" for t in node.targets)
                and isinstance(node.value, ast.Constant)):
            return node.value.value is True
    return False


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
