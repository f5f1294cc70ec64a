"""``python -m asafe.testing.peer_run``: run test targets with asafe off and on, and table the outcomes.

The peer-suite check (docs/reliability.rst, "Dask's own tests with asafe active"):
each group of test targets runs in a fresh pytest process twice, ``--asafe=off``
and ``--asafe=MODE`` (:mod:`asafe.testing.peer`), with ``-p no:cacheprovider -q
-rA`` and junit XML. Each test's outcome (passed, failed, error, skipped,
xfailed, xpassed; ``missing`` where a run never reported it) is compared. Tests
whose outcomes differ run again in both modes (``--reruns``, default 2), and a
difference is kept only if no outcome was seen in both modes: a test that passed
and failed in one mode and passed in the other is *flaky*, listed apart, and does
not fail the check. The table goes to ``DIR/peer-outcomes.md`` and
``DIR/peer-outcomes.json`` (every test id, off against on, every difference with
its error line, the wall time of each run and, in cluster mode, how many
schedulers and workers ran asafe); the runs' logs, junit XML and outcome lines to
``DIR/runs/``. The exit status is 1 when an outcome differs after the
reruns, 2 when the runs did not work (no test reported with asafe off), else 0.

Targets are module names (run with ``--pyargs``, from a blank ``pytest.ini``
written in ``DIR``, with the installed package's ``site-packages`` as rootdir,
so that node ids read ``dask/tests/test_local.py::test_x``), or paths and node
ids relative to ``--cwd`` (a source checkout, whose own pytest configuration
applies). ``--suite ci`` is the subset of Dask's own tests that the project's
suite checks (:data:`CI_SUITE`).

Examples::

    python -m asafe.testing.peer_run --suite ci --mode local --out /tmp/peer
    python -m asafe.testing.peer_run --mode cluster --per-target --cwd ~/src/distributed \\
        --out /tmp/peer-distributed distributed/tests/test_worker.py distributed/tests/test_nanny.py
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from .peer import MODES

__all__ = ["CI_SUITE", "OUTCOMES", "Group", "SuiteEntry", "compare", "main", "read_outcomes", "read_servers",
           "run_peer", "verdict"]

#: The outcomes a test can have, in the order the tables list them.
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "missing")


@dataclasses.dataclass(frozen=True)
class SuiteEntry:
    """One test module of a suite: all its tests, or only ``select`` (test function names).

    ``deselect`` names tests left out (pytest's ``--deselect``, which matches node id
    prefixes: a name also leaves out the tests whose names start with it).
    """

    module: str
    select: tuple[str, ...] = ()
    deselect: tuple[str, ...] = ()


# The tests of dask.bag.tests.test_bag in the CI subset: those whose cases took under
# 0.75 s together on the project's 2-core machine (76 of 133 functions, 14 s of the
# module's 170 s). dask.bag computes on the processes scheduler by default, and most of
# the time of the others is starting its pool of processes; dask.tests.test_multiprocessing
# covers that scheduler, and tests kept here still compute on it (test_from_sequence,
# test_flatten, test_std, test_var, test_lambdas, ...).
_BAG_FAST = (
    "test_Bag", "test_keys", "test_filter", "test_remove", "test_repr", "test_pluck_with_default",
    "test_fold_bag", "test_distinct_with_key", "test_frequencies_sorted", "test_topk_with_multiarg_lambda",
    "test_lambdas", "test_reduction_names", "test_aggregation", "test_non_splittable_reductions", "test_std",
    "test_var", "test_map_partitions_args_kwargs", "test_map_partitions_blockwise", "test_random_sample_size",
    "test_random_sample_prob_range", "test_lazify_task", "test_lazify_task_legacy", "test_lazify",
    "test_take_npartitions_warn", "test_map_is_lazy", "test_can_use_dict_to_make_concrete", "test_from_url",
    "test_from_s3", "test_from_sequence", "test_from_long_sequence", "test_from_empty_sequence",
    "test_partition_collect", "test_groupby_with_scheduler_func", "test_concat", "test_flatten",
    "test_to_dataframe", "test_to_textfiles", "test_to_textfiles_encoding", "test_string_namespace_with_unicode",
    "test_str_empty_split", "test_ensure_compute_output_is_concrete", "test_gh715",
    "test_bag_compute_forward_kwargs", "test_to_delayed", "test_to_delayed_optimize_graph",
    "test_from_delayed_iterator", "test_repartition_npartitions", "test_repartition_names",
    "test_repartition_input_errors", "test_groupby_tasks_names", "test_groupby_tasks_3",
    "test_to_textfiles_empty_partitions", "test_reduction_empty", "test_reduction_empty_aggregate",
    "test_reduction_with_non_comparable_objects", "test_reduction_with_sparse_matrices", "test_empty",
    "test_msgpack_unicode", "test_bag_with_single_callable", "test_optimize_fuse_keys",
    "test_reductions_are_lazy", "test_temporary_directory", "test_empty_bag", "test_map_partitions_arg",
    "test_map_keynames", "test_map_releases_element_references_as_soon_as_possible", "test_dask_layers",
    "test_dask_layers_to_delayed", "test_to_dataframe_optimize_graph", "test_default_partitioning_worker_saturation",
    "test_npartitions_saturation", "test_reify_empty_iterator", "test_reify_iterator_of_iterators",
    "test_empty_safe_apply_with_fake_sparse", "test_empty_safe_apply_numpy", "test_empty_safe_apply_with_scipy_sparse",
)

#: The CI subset: Dask's own tests of its local schedulers (local, threaded,
#: multiprocessing), base, callbacks, bag and array core, as shipped in the installed
#: dask wheel. Left out: the slow bag tests (above), two array tests (a
#: processes-scheduler store with a lock, about 9 s; cumulative reductions over many
#: chunk sizes, about 3 s), and the threaded scheduler's ``test_interrupt``: it sends
#: SIGINT to the main thread from a task and, where the signal lands after ``get``
#: has returned, its thread pool's exit waits forever on 19 tasks that the skipped
#: ``tasks_can_end.set()`` was to release. It hung so with asafe off (Dask alone) in a
#: clean-clone CI run on the 2-core machine; pytest-timeout's signal did not end it.
CI_SUITE: tuple[SuiteEntry, ...] = (
    SuiteEntry("dask.tests.test_local"),
    SuiteEntry("dask.tests.test_threaded", deselect=("test_interrupt",)),
    SuiteEntry("dask.tests.test_multiprocessing"),
    SuiteEntry("dask.tests.test_base"),
    SuiteEntry("dask.tests.test_callbacks"),
    SuiteEntry("dask.bag.tests.test_bag", select=_BAG_FAST),
    SuiteEntry("dask.array.tests.test_array_core", deselect=("test_store_multiprocessing_lock", "test_cumulative")),
)

SUITES = {"ci": CI_SUITE}

#: Differences that asafe cannot avoid, each with the reason; reported as ``explained``, not failed.
#: asafe observes Dask's local schedulers through one Dask callback, as
#: ``dask.diagnostics.ProgressBar`` and ``Profiler`` do, so inside ``asafe.adaptive()``
#: ``Callback.active`` holds it; these two tests assert that no callback is registered.
EXPLAINED: dict[str, str] = {
    "dask/tests/test_callbacks.py::test_nested_schedulers":
        "asserts Callback.active is empty after a run; asafe.adaptive() registers one callback for its block, "
        "as ProgressBar does",
    "dask/tests/test_callbacks.py::test_add_remove_mutates_not_replaces":
        "asserts Callback.active is empty at its start; asafe.adaptive() registers one callback for its block, "
        "as ProgressBar does",
}


@dataclasses.dataclass
class Group:
    """Test targets that run in one pytest process per mode.

    ``args`` are pytest arguments (targets, ``--deselect`` options); ``pyargs``
    runs them as module names from ``rootdir`` (the site-packages folder), else
    from ``cwd`` with its own configuration.
    """

    label: str
    args: list[str]
    cwd: str
    pyargs: bool = False
    rootdir: str | None = None


def _site_root(module: str) -> tuple[str, str]:
    """The folder that holds ``module``'s top package, and the module file relative to it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise SystemExit(f"peer_run: module {module!r} is not importable here (a target must be a module name or a path)")
    top = importlib.util.find_spec(module.split(".")[0])
    root = Path(next(iter(top.submodule_search_locations))).parent
    return str(root), Path(spec.origin).relative_to(root).as_posix()


def _is_module(target: str, cwd: str) -> bool:
    """A dotted module name, not a path, a node id or pytest's ``@file`` of arguments."""
    return (not target.startswith("@") and "/" not in target and "::" not in target and not target.endswith(".py")
            and not os.path.exists(os.path.join(cwd, target)))


def build_groups(targets: Sequence[str], suite: Sequence[SuiteEntry], cwd: str, per_target: bool) -> list[Group]:
    """Split the targets into the groups that run in one process each."""
    modules: list[tuple[str, list[str]]] = []
    for entry in suite:
        root, relpath = _site_root(entry.module)
        selected = [f"{entry.module}::{name}" for name in entry.select] or [entry.module]
        deselect = [f"--deselect={relpath}::{name}" for name in entry.deselect]
        modules.append((entry.module, [*selected, *deselect]))
    paths: list[tuple[str, list[str]]] = []
    for target in targets:
        (modules if _is_module(target, cwd) else paths).append((target, [target]))
    groups: list[Group] = []
    for pyargs, items in ((True, modules), (False, paths)):
        if not items:
            continue
        rootdir = _site_root(items[0][0].split("::")[0])[0] if pyargs else None
        if pyargs and any(_site_root(label)[0] != rootdir for label, _ in items):
            raise SystemExit("peer_run: module targets must live in one site-packages folder")
        if per_target:
            groups.extend(Group(_label(label), args, cwd, pyargs, rootdir) for label, args in items)
        else:
            label = _label(items[0][0]) if len(items) == 1 else ("modules" if pyargs else "paths")
            groups.append(Group(label, [a for _, args in items for a in args], cwd, pyargs, rootdir))
    return groups


def _label(target: str) -> str:
    return target.lstrip("@").replace("/", ".").replace("::", ".").removesuffix(".py").removesuffix(".txt")


def _pytest_command(group: Group, mode: str, out: Path, name: str, extra: Sequence[str],
                    timeout: float | None, targets: Sequence[str] | None = None) -> list[str]:
    runs = out / "runs"
    command = [
        sys.executable, "-m", "pytest", "-p", "asafe.testing.peer", f"--asafe={mode}",
        f"--asafe-outcomes={runs / (name + '.jsonl')}", f"--junitxml={runs / (name + '.xml')}",
        "-p", "no:cacheprovider", "-q", "-rA",
    ]
    if timeout and importlib.util.find_spec("pytest_timeout") is not None:  # pytest-timeout: asafe's [test] extra
        command.append(f"--timeout={timeout:g}")
    if group.pyargs:
        command += ["-c", str(out / "pytest.ini"), f"--rootdir={group.rootdir}"]
    if targets is None:
        command += (["--pyargs"] if group.pyargs else []) + list(group.args)
    else:  # node ids, relative to the rootdir the first run had
        base = group.rootdir if group.pyargs else None
        command += [str(Path(base) / t) if base else t for t in targets]
    return command + list(extra)


def _run(command: list[str], cwd: str, log: Path, limit: float | None) -> tuple[int, float]:
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as stream:
        stream.write("$ " + shlex.join(command) + f"\n# cwd: {cwd}\n")
        stream.flush()
        process = subprocess.Popen(command, cwd=cwd, stdout=stream, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            stream.write(f"\n# peer_run: killed after {limit:g} s (--run-timeout)\n")
            code = -9
    return code, time.perf_counter() - start


def read_outcomes(path: Path) -> dict[str, dict]:
    """The test records of one ``--asafe-outcomes`` file, by node id."""
    records: dict[str, dict] = {}
    if not path.exists():
        return records
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a line cut by a killed process
            continue
        if "nodeid" in record:
            records[record["nodeid"]] = record
    return records


def read_servers(path: Path) -> dict | None:
    """The census of one cluster-mode run (:mod:`asafe.testing.census`), from its outcomes' last line."""
    if not path.exists():
        return None
    servers = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        servers = record.get("servers", servers)
    return servers


def verdict(off: Sequence[str], on: Sequence[str]) -> str:
    """``same``, ``flaky`` or ``differs`` for the outcomes one test had in each mode over its runs.

    Examples
    --------
    >>> verdict(["passed"], ["passed"])
    'same'
    >>> verdict(["passed", "passed"], ["failed", "failed"])
    'differs'
    >>> verdict(["passed", "failed"], ["failed", "failed"])
    'flaky'
    """
    if list(off[:1]) == list(on[:1]) and len(set(off)) == len(set(on)) == 1:
        return "same"
    return "flaky" if set(off) & set(on) else "differs"


def compare(off: dict[str, dict], on: dict[str, dict]) -> dict[str, tuple[str, str]]:
    """Node id -> (off outcome, on outcome) for every test either run reported."""
    ids = list(off) + [nodeid for nodeid in on if nodeid not in off]
    return {i: (off.get(i, {}).get("outcome", "missing"), on.get(i, {}).get("outcome", "missing")) for i in ids}


def _environment() -> dict:
    versions = {"python": platform.python_version()}
    for name in ("asafe", "dask", "distributed", "numpy", "pytest"):
        try:
            versions[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 - a package that is not there is reported as such
            versions[name] = None
    commit = dirty = None
    try:  # where asafe is an editable install of a checkout
        here = Path(__file__).resolve().parent
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
        if commit:
            dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                                        capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return {"versions": versions, "asafe_commit": commit, "asafe_tree_dirty": dirty, "platform": platform.platform(),
            "cpus": os.cpu_count()}


def run_peer(groups: Sequence[Group], out: Path, mode: str = "both", reruns: int = 2,
             extra: Sequence[str] = (), timeout: float | None = 300, run_timeout: float | None = None,
             command: str = "", log=print) -> dict:
    """Run every group with asafe off and on, rerun the differences, and write the tables.

    Returns the report that ``peer-outcomes.json`` holds.
    """
    if mode not in MODES or mode == "off":
        raise ValueError(f"peer_run: mode must be one of {', '.join(m for m in MODES if m != 'off')}; got {mode!r}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs").mkdir(exist_ok=True)
    (out / "pytest.ini").write_text("[pytest]\n# blank: the targets run with pytest's defaults\n", encoding="utf-8")
    report: dict = {"command": command, "mode": mode, "reruns": reruns, "environment": _environment(),
                    "groups": [], "tests": {}, "differences": []}
    for group in groups:
        entry = {"label": group.label, "args": group.args, "cwd": group.cwd, "pyargs": group.pyargs,
                 "wall_s": {}, "exit": {}, "rerun_wall_s": {"off": 0.0, "on": 0.0}}
        results = {}
        for label, asafe_mode in (("off", "off"), ("on", mode)):
            name = f"{group.label}-{label}"
            cmd = _pytest_command(group, asafe_mode, out, name, extra, timeout)
            log(f"peer_run: {group.label}: asafe {label} ...")
            code, wall = _run(cmd, group.cwd, out / "runs" / f"{name}.log", run_timeout)
            results[label] = read_outcomes(out / "runs" / f"{name}.jsonl")
            if label == "on" and mode != "local":
                entry["servers"] = read_servers(out / "runs" / f"{name}.jsonl")
            entry["wall_s"][label], entry["exit"][label] = round(wall, 2), code
            log(f"peer_run: {group.label}: asafe {label}: exit {code}, {len(results[label])} tests, {wall:.1f} s")
        pairs = compare(results["off"], results["on"])
        history = {nodeid: ([o], [n]) for nodeid, (o, n) in pairs.items()}
        differing = [nodeid for nodeid, (o, n) in pairs.items() if o != n]
        for attempt in range(1, reruns + 1):
            if not differing:
                break
            targets = [t for t in differing if "::" in t]  # a collection error has no test to rerun
            if not targets:
                break
            log(f"peer_run: {group.label}: rerun {attempt}: {len(targets)} tests whose outcomes differ")
            for label, asafe_mode in (("off", "off"), ("on", mode)):
                name = f"{group.label}-{label}-rerun{attempt}"
                cmd = _pytest_command(group, asafe_mode, out, name, extra, timeout, targets)
                _, wall = _run(cmd, group.cwd, out / "runs" / f"{name}.log", run_timeout)
                entry["rerun_wall_s"][label] = round(entry["rerun_wall_s"][label] + wall, 2)
                again = read_outcomes(out / "runs" / f"{name}.jsonl")
                for nodeid in targets:
                    history[nodeid][0 if label == "off" else 1].append(again.get(nodeid, {}).get("outcome", "missing"))
            differing = [t for t in differing if verdict(*history[t]) == "differs"]
        for nodeid, (off_seen, on_seen) in history.items():
            first_off, first_on = results["off"].get(nodeid, {}), results["on"].get(nodeid, {})
            record = {
                "group": group.label, "off": off_seen[0], "on": on_seen[0],
                "off_s": first_off.get("duration"), "on_s": first_on.get("duration"),
            }
            if off_seen[0] != on_seen[0]:
                record.update(off_runs=off_seen, on_runs=on_seen, verdict=verdict(off_seen, on_seen),
                              off_message=first_off.get("message", ""), on_message=first_on.get("message", ""))
                if record["verdict"] == "differs" and nodeid in EXPLAINED:
                    record.update(verdict="explained", reason=EXPLAINED[nodeid])
                report["differences"].append({"nodeid": nodeid, **record})
            report["tests"][nodeid] = record
        for label in ("off", "on"):
            entry.setdefault("counts", {})[label] = dict(Counter(r[label] for r in report["tests"].values()
                                                                 if r["group"] == group.label))
        report["groups"].append(entry)
    differs = [d for d in report["differences"] if d["verdict"] == "differs"]
    report["summary"] = {
        "tests": len(report["tests"]),
        "same": len(report["tests"]) - len(report["differences"]),
        "differs": len(differs),
        "flaky": sum(d["verdict"] == "flaky" for d in report["differences"]),
        "explained": sum(d["verdict"] == "explained" for d in report["differences"]),
        "reported_off": sum(r["off"] != "missing" for r in report["tests"].values()),
    }
    (out / "peer-outcomes.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    (out / "peer-outcomes.md").write_text(markdown(report), encoding="utf-8")
    return report


def _cell(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text.replace("|", "\\|")


def _servers(servers: dict | None) -> str:
    if not servers:
        return "n/a"
    return "; ".join(f"{kind}s {n['asafe']} of {n['asafe'] + n['without']}" for kind, n in servers.items())


def _counts(counts: dict) -> str:
    return ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts.get(o)) or "none"


def markdown(report: dict) -> str:
    """The report as a markdown page: runs, per-file counts, differences, every test."""
    env = report["environment"]
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items())
    s = report["summary"]
    lines = [
        "# Dask's own tests with asafe off and on",
        "",
        f"Command: `{report['command']}`" if report["command"] else "",
        "",
        f"asafe mode when on: `--asafe={report['mode']}`; reruns of differing tests: {report['reruns']}. "
        f"{versions}; asafe commit {env['asafe_commit']}{' (tree with changes)' if env.get('asafe_tree_dirty') else ''}; "
        f"{env['platform']}, {env['cpus']} cpus.",
        "",
        f"**{s['tests']} tests: {s['same']} with the same outcome, {s['differs']} that differ after the reruns, "
        f"{s['flaky']} flaky, {s.get('explained', 0)} explained (a difference asafe cannot avoid; the reason "
        "is in the table).**",
        "",
        "## Runs",
        "",
        "| group | wall s, off | wall s, on | reruns s, off / on | exit off / on | outcomes off | outcomes on "
        "| servers with asafe, on run |",
        "|---|---:|---:|---:|---|---|---|---|",
    ]
    for g in report["groups"]:
        lines.append(
            f"| {g['label']} | {g['wall_s']['off']:.1f} | {g['wall_s']['on']:.1f} | "
            f"{g['rerun_wall_s']['off']:.1f} / {g['rerun_wall_s']['on']:.1f} | {g['exit']['off']} / {g['exit']['on']} | "
            f"{_counts(g['counts']['off'])} | {_counts(g['counts']['on'])} | {_servers(g.get('servers'))} |"
        )
    files: dict[str, dict] = {}
    for nodeid, r in report["tests"].items():
        f = files.setdefault(nodeid.split("::")[0], {"off": Counter(), "on": Counter(), "off_s": 0.0, "on_s": 0.0,
                                                     "differ": 0})
        f["off"][r["off"]] += 1
        f["on"][r["on"]] += 1
        f["off_s"] += r["off_s"] or 0.0
        f["on_s"] += r["on_s"] or 0.0
        f["differ"] += r["off"] != r["on"]
    lines += ["", "## Per file (test time: the tests' own setup, call and teardown, summed)", "",
              "| file | test s, off | test s, on | outcomes off | outcomes on | differ |", "|---|---:|---:|---|---|---:|"]
    for name, f in files.items():
        lines.append(f"| `{name}` | {f['off_s']:.1f} | {f['on_s']:.1f} | {_counts(f['off'])} | {_counts(f['on'])} "
                     f"| {f['differ']} |")
    lines += ["", "## Tests whose outcome differs", ""]
    if report["differences"]:
        lines += ["| test | off (all runs) | on (all runs) | verdict | error line (on; off where on passed) |",
                  "|---|---|---|---|---|"]
        for d in report["differences"]:
            message = d["on_message"] if d["on"] not in ("passed", "missing") else d["off_message"]
            if d["on"] == "missing":
                message = "not reported with asafe on (the run stopped before it, or collection differed)"
            verdict_text = f"explained: {d['reason']}" if d["verdict"] == "explained" else d["verdict"]
            lines.append(f"| `{_cell(d['nodeid'], 200)}` | {', '.join(d['off_runs'])} | {', '.join(d['on_runs'])} | "
                         f"{_cell(verdict_text)} | {_cell(message)} |")
    else:
        lines.append("None.")
    lines += ["", "## Every test", "", "<details><summary>" f"{len(report['tests'])} tests</summary>", "",
              "| test | off | on |", "|---|---|---|"]
    for nodeid, r in report["tests"].items():
        lines.append(f"| `{_cell(nodeid, 300)}` | {r['off']} | {r['on']} |")
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m asafe.testing.peer_run",
        description="Run test targets with asafe off and on (pytest -p asafe.testing.peer) and table the outcomes.",
    )
    parser.add_argument("targets", nargs="*", help="module names (run with --pyargs) or paths/node ids under --cwd")
    parser.add_argument("--suite", choices=sorted(SUITES), help="a predefined list of targets (ci: Dask's own tests)")
    parser.add_argument("--mode", default="both", help="asafe mode when on: local, cluster or both (default both)")
    parser.add_argument("--out", required=True, help="folder for the tables and the runs' files")
    parser.add_argument("--cwd", default=".", help="folder the path targets are relative to (default: here)")
    parser.add_argument("--per-target", action="store_true", help="one pytest process per target (default: one for all)")
    parser.add_argument("--reruns", type=int, default=2, help="reruns of the tests whose outcomes differ (default 2)")
    parser.add_argument("--timeout", type=float, default=300,
                        help="pytest-timeout seconds per test, where it is installed (default 300; 0: pytest's "
                        "configuration)")
    parser.add_argument("--run-timeout", type=float, default=None, help="seconds after which one pytest process is killed")
    parser.add_argument("--pytest-arg", action="append", default=[], dest="pytest_args",
                        help="an extra pytest argument for every run (repeatable), e.g. --pytest-arg=-x")
    args = parser.parse_args(argv)
    if args.mode not in MODES or args.mode == "off":
        parser.error(f"--mode must be one of local, cluster, both; got {args.mode!r}")
    if args.reruns < 0:
        parser.error(f"--reruns must be 0 or more; got {args.reruns}")
    if not args.targets and not args.suite:
        parser.error("give test targets or --suite")
    cwd = str(Path(args.cwd).resolve())
    groups = build_groups(args.targets, SUITES.get(args.suite, ()), cwd, args.per_target)
    command = shlex.join(["python", "-m", "asafe.testing.peer_run", *(argv if argv is not None else sys.argv[1:])])
    out = Path(args.out).resolve()
    report = run_peer(groups, out, args.mode, args.reruns, args.pytest_args, args.timeout or None,
                      args.run_timeout, command, log=lambda m: print(m, flush=True))
    s = report["summary"]
    print(f"peer_run: {s['tests']} tests, {s['same']} same, {s['differs']} differ, {s['flaky']} flaky, "
          f"{s['explained']} explained; "
          f"tables in {out / 'peer-outcomes.md'}")
    for d in report["differences"]:
        print(f"  {d['verdict']}: {d['nodeid']}: off {d['off_runs']} on {d['on_runs']}: "
              f"{_cell(d['on_message'] or d['off_message'], 300)}")
    if s["reported_off"] == 0:
        print("peer_run: no test reported with asafe off: the runs did not work (see the logs in runs/)")
        return 2
    return 1 if s["differs"] else 0


if __name__ == "__main__":
    sys.exit(main())
