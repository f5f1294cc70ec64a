"""A pytest plugin that runs any test suite with asafe active: ``pytest -p asafe.testing.peer``.

asafe promises to be invisible to everyone who does not ask (docs/reliability.rst,
"Dask's own tests with asafe active"): it observes Dask and never changes which
scheduler a collection uses, what a client must import to read a result, or what a
worker's data store sees. The proof is Dask's own test suites, run once with asafe
off and once with it on, with identical outcomes. This plugin is the "on" switch;
:mod:`asafe.testing.peer_run` runs both and tables the outcomes.

Options (each also read from an environment variable, for runs that cannot add
command-line options)::

    --asafe=off|local|cluster|both   (ASAFE_PEER; default off)
    --asafe-outcomes=PATH            (ASAFE_PEER_OUTCOMES; default: none written)

``local``
    Every test's body (``pytest_runtest_call``, so after its fixtures are set up
    and before they are torn down, as a user would wrap the computations of a
    program) runs inside ``with asafe.adaptive(asafe.AdaptiveRuntime()):``, so
    every ``dask.compute`` on Dask's local schedulers (threads, sync, processes)
    is tracked, with the runtime that ``asafe.yaml`` configures. An error that
    ``asafe.adaptive`` raises on entry or exit fails the test: that is asafe
    changing an outcome, which is what the check looks for.
``cluster``
    Every distributed ``Scheduler`` and ``Worker`` the tests create runs asafe,
    as with ``--preload asafe.preload``: ``asafe.preload`` is appended to the
    ``distributed.scheduler.preload`` and ``distributed.worker.preload`` settings
    at three depths, because distributed's tests reset their configuration:

    1. ``dask.config.config`` itself, for the session (re-added before each test
       if a previous test removed it);
    2. ``distributed.utils_test.original_config``, the copy that
       ``distributed.utils_test.reset_config()`` restores (``gen_cluster``,
       ``gen_test``, the ``loop`` fixture and ``config_for_cluster_tests`` call it),
       patched once that module is imported and checked again before each test:
       without it every ``gen_cluster`` test would run without asafe;
    3. the environment variables ``DASK_DISTRIBUTED__SCHEDULER__PRELOAD`` and
       ``DASK_DISTRIBUTED__WORKER__PRELOAD``, which ``dask.config.refresh()`` reads
       again and which processes started by the tests (``dask scheduler`` and
       ``dask worker`` command lines, a nanny's worker) inherit.

    A test that sets the preload keys itself (``gen_cluster(config=...)``,
    ``dask.config.set``) replaces the list for its duration, as it would for a
    user. Where outcomes are recorded, :mod:`asafe.testing.census` is preloaded
    after ``asafe.preload``: it counts the schedulers and workers (in any
    process) that have asafe's plugin, in the outcomes' last line.
``both``
    ``local`` and ``cluster`` together.
``off``
    Nothing is activated: the plugin only records outcomes, so that the "off"
    run loads the same plugins as the "on" run. The ``asafe`` package is
    imported all the same, since this module lives in it; its import registers
    asafe's ``dask.config`` defaults (the ``asafe`` key) and changes nothing
    else of Dask's (tests/test_peer_suite.py checks this).

The plugin never changes a test's outcome by itself: it adds no fixture, marker,
skip or warning filter, and in ``off`` mode it only records. ``--asafe-outcomes=PATH`` writes one JSON line per test
as it finishes (so a run that crashes keeps what it had): the node id, its
outcome (``passed``, ``failed``, ``error`` for a failed setup or teardown,
``skipped``, ``xfailed``, ``xpassed``), the message of its failure, skip or
xfail, and its duration; a collection error is a line with outcome ``error``.
The first line names the run: ``{"rootdir": ..., "mode": ...}``.

Example (the outcomes of one of Dask's test files, with asafe on Dask's local
schedulers)::

    $ pytest -p asafe.testing.peer --asafe=local --asafe-outcomes=on.jsonl \\
          -p no:cacheprovider -q --pyargs dask.tests.test_threaded
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

__all__ = ["MODES", "PRELOAD", "PRELOAD_KEYS", "PeerPlugin", "add_preload", "outcome_of"]

#: The values of ``--asafe``.
MODES = ("off", "local", "cluster", "both")
#: The preload module a cluster's servers are given.
PRELOAD = "asafe.preload"
#: The settings that name the preloads of a scheduler and a worker.
PRELOAD_KEYS = ("distributed.scheduler.preload", "distributed.worker.preload")

_ENV_MODE = "ASAFE_PEER"
_ENV_OUTCOMES = "ASAFE_PEER_OUTCOMES"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("asafe", "asafe peer-suite check (asafe.testing.peer)")
    group.addoption(
        "--asafe",
        dest="asafe_peer_mode",
        default=None,
        help=f"run every test with asafe active: one of {', '.join(MODES)} "
        f"(default: ${_ENV_MODE}, else off)",
    )
    group.addoption(
        "--asafe-outcomes",
        dest="asafe_peer_outcomes",
        default=None,
        metavar="PATH",
        help=f"write each test's outcome as a JSON line to PATH (default: ${_ENV_OUTCOMES}, else none)",
    )


def _mode(config: pytest.Config) -> str:
    value = config.getoption("asafe_peer_mode") or os.environ.get(_ENV_MODE) or "off"
    if value not in MODES:
        raise pytest.UsageError(
            f"--asafe (or ${_ENV_MODE}) must be one of {', '.join(MODES)}; got {value!r}"
        )
    return value


def pytest_configure(config: pytest.Config) -> None:
    mode = _mode(config)
    path = config.getoption("asafe_peer_outcomes") or os.environ.get(_ENV_OUTCOMES) or None
    config.pluginmanager.register(PeerPlugin(config, mode, path), "asafe-peer")


def add_preload(config: dict, names: tuple[str, ...] = (PRELOAD,)) -> bool:
    """Append preload modules (default :data:`PRELOAD`) to the preload settings in a nested dask config dict.

    Parameters
    ----------
    config : dict
        ``dask.config.config`` or a copy of it (changed in place).
    names : tuple of str
        The modules, appended in this order where missing.

    Returns
    -------
    bool
        Whether anything was added (``False`` where both lists already had it).

    Examples
    --------
    >>> conf = {"distributed": {"scheduler": {"preload": []}, "worker": {"preload": ["x"]}}}
    >>> add_preload(conf), conf["distributed"]["worker"]["preload"]
    (True, ['x', 'asafe.preload'])
    >>> add_preload(conf)
    False
    """
    added = False
    for key in PRELOAD_KEYS:
        node = config
        *parents, leaf = key.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        current = node.get(leaf)
        if current is None:
            current = []
        elif isinstance(current, str):  # distributed accepts one module name as a string
            current = [current]
        else:
            current = list(current)
        missing = [name for name in names if name not in current]
        if missing:
            node[leaf] = current + missing
            added = True
    return added


def _env_name(key: str) -> str:
    return "DASK_" + key.upper().replace(".", "__").replace("-", "_")


def outcome_of(reports: list) -> tuple[str, str]:
    """One test's outcome and message from its setup, call and teardown reports.

    ``error`` where setup or teardown failed (whatever the call did), else the
    call's outcome: ``passed``, ``failed``, ``skipped``, ``xfailed`` (a skip that
    carries ``wasxfail``) or ``xpassed``; a test skipped at setup is ``skipped``
    (or ``xfailed``). The message is the failure's first line (its crash
    message), or the skip or xfail reason.
    """
    outcome, message = "passed", ""
    by_phase = {report.when: report for report in reports}
    setup, call, teardown = (by_phase.get(when) for when in ("setup", "call", "teardown"))
    for report in (setup, call):
        if report is None:
            continue
        if report.failed:
            if report.when == "call":
                outcome = "failed"  # a strict xpass fails too ("[XPASS(strict)] ...")
                message = _message(report)
            else:
                return "error", "setup: " + _message(report)
            break
        if report.skipped:
            outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
            message = _message(report)
            break
        if report.when == "call":
            outcome = "xpassed" if hasattr(report, "wasxfail") else "passed"
            message = getattr(report, "wasxfail", "") or ""
    if teardown is not None and teardown.failed:
        first = f" (call {outcome}: {message})" if outcome != "passed" else ""
        return "error", "teardown: " + _message(teardown) + first
    return outcome, message


def _message(report: Any) -> str:
    if hasattr(report, "wasxfail") and report.skipped:
        return str(report.wasxfail or "xfail")
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, lineno, reason)
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None and crash.message else str(longrepr)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[0][:500]


class PeerPlugin:
    """What ``--asafe`` switched on for this session, and the outcome recorder.

    Registered by :func:`pytest_configure` under the name ``asafe-peer``.
    """

    def __init__(self, config: pytest.Config, mode: str, outcomes: str | None) -> None:
        self.mode = mode
        self.local = mode in ("local", "both")
        self.cluster = mode in ("cluster", "both")
        self._reports: dict[str, list] = {}
        self._file = None
        self._original_config_patched = False
        self._census = outcomes + ".census" if outcomes and self.cluster else None
        self._preloads = (PRELOAD, "asafe.testing.census") if self._census else (PRELOAD,)
        if self.cluster:
            self._start_cluster_mode()
        if outcomes:
            self._file = open(outcomes, "w", encoding="utf-8")  # noqa: SIM115 - closed at unconfigure
            self._write({"rootdir": str(config.rootpath), "mode": mode, "pid": os.getpid()})

    # -- cluster mode ------------------------------------------------------
    def _start_cluster_mode(self) -> None:
        if self._census:
            from .census import ENV

            open(self._census, "w").close()
            os.environ[ENV] = self._census
        for key in PRELOAD_KEYS:
            name = _env_name(key)
            listed: list = []
            if os.environ.get(name):
                try:
                    listed = list(json.loads(os.environ[name]))
                except (ValueError, TypeError):
                    listed = [os.environ[name]]
            missing = [preload for preload in self._preloads if preload not in listed]
            if missing:
                os.environ[name] = json.dumps(listed + missing)
        self._patch_original_config()

    def _patch_original_config(self) -> None:
        import sys

        import dask

        add_preload(dask.config.config, self._preloads)
        utils_test = sys.modules.get("distributed.utils_test")
        if utils_test is not None and isinstance(getattr(utils_test, "original_config", None), dict):
            add_preload(utils_test.original_config, self._preloads)
            self._original_config_patched = True

    # -- hooks -------------------------------------------------------------
    def pytest_report_header(self, config: pytest.Config) -> str:
        what = {
            "off": "asafe off (outcomes recorded only)",
            "local": "asafe.adaptive(AdaptiveRuntime()) around every test",
            "cluster": f"{PRELOAD} preloaded on every distributed scheduler and worker",
            "both": f"asafe.adaptive around every test and {PRELOAD} on every scheduler and worker",
        }[self.mode]
        return f"asafe peer-suite check: --asafe={self.mode}: {what}"

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.cluster:
            self._patch_original_config()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        if not self.local:
            return (yield)
        import asafe

        with asafe.adaptive(asafe.AdaptiveRuntime()):
            return (yield)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self._file is not None:
            self._reports.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple) -> None:
        reports = self._reports.pop(nodeid, None)
        if self._file is None or not reports:
            return
        outcome, message = outcome_of(reports)
        duration = sum(getattr(report, "duration", 0.0) for report in reports)
        self._write({"nodeid": nodeid, "outcome": outcome, "message": message, "duration": round(duration, 4)})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if self._file is not None and report.failed:
            self._write({"nodeid": report.nodeid or "<collection>", "outcome": "error",
                         "message": "collection: " + _message(report), "duration": 0.0})

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._file is not None:
            end = {"end": time.time(), "original_config_patched": self._original_config_patched}
            if self._census:
                from .census import count

                end["servers"] = count(self._census)
            self._write(end)
            self._file.close()
            self._file = None

    def _write(self, record: dict) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
