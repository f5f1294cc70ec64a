"""Shared set-up of the test suite.

``benchmarks`` is not installed: the tests of the benchmark harness load it from
the checkout by file location. The repository root goes at the *end* of
``sys.path``, never the front (there it would shadow the installed ``asafe`` with
the source folder, which lacks ``asafe.compression`` and the compiled hooks): at
the end it shadows nothing and makes ``benchmarks`` importable in the worker
processes a ``LocalCluster`` spawns, which inherit this process's ``sys.path``.
distributed pickles a graph with plain pickle first, so a benchmark's function
reaches a worker by reference (``benchmarks.workloads._array_block``); under the
``pytest`` script (unlike ``python -m pytest``, which puts the working directory
first) nothing else makes the checkout importable there, and a worker that cannot
unpickle a task loses its connection to the scheduler.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_benchmarks() -> None:
    existing = sys.modules.get("benchmarks")
    if existing is not None and str(getattr(existing, "__file__", "")).startswith(str(ROOT / "benchmarks")):
        return
    package = ROOT / "benchmarks"
    spec = importlib.util.spec_from_file_location(
        "benchmarks", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks"] = module
    spec.loader.exec_module(module)


_load_benchmarks()
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))


def _compiled(module, name):
    """``module`` if it was built, else a skip (a failure under ``ASAFE_TEST_REQUIRE_COMPILED=1``)."""
    if module is None:
        message = f"{name if '.' in name else 'asafe.schedulers.' + name} was not built (no C compiler at install time?)"
        if os.environ.get("ASAFE_TEST_REQUIRE_COMPILED") == "1":
            pytest.fail(message + "; ASAFE_TEST_REQUIRE_COMPILED=1 requires it")
        pytest.skip(message)
    return module


@pytest.fixture(scope="session")
def hotpath():
    """``asafe.schedulers._hotpath``, the compiled hooks: skipped where it was not built.

    ``ASAFE_TEST_REQUIRE_COMPILED=1`` (set by ``.ci/run``) makes a missing build a
    failure instead, so that CI cannot pass on the fallback alone.
    """
    from asafe.schedulers import local

    return _compiled(local._hotpath, "_hotpath")


@pytest.fixture(scope="session")
def zeros_compiled():
    """``asafe.schedulers._zeros``, zero elision compiled: skipped where it was not built (as :func:`hotpath`)."""
    from asafe.schedulers import wire

    return _compiled(wire._zeros_c, "_zeros")


@pytest.fixture(scope="session")
def typewalk():
    """``asafe.core._typewalk``, the compiled type walk: skipped where it was not built (as :func:`hotpath`)."""
    from asafe.core import types

    return _compiled(types._typewalk, "asafe.core._typewalk")


@pytest.fixture(scope="session")
def taskpath():
    """``asafe.schedulers._taskpath``, the scheduler plugin's compiled per-task path: skipped where it was not built."""
    from asafe.schedulers import scheduler_plugin

    return _compiled(scheduler_plugin._taskpath, "_taskpath")


@pytest.fixture
def namespaces():
    """Skips where no shaped link can be made (a network namespace with tc on its loopback).

    ``ASAFE_TEST_REQUIRE_NETNS=1`` (set by ``.ci/run``, which runs as root on
    Linux) makes that a failure instead, so that CI cannot pass without one.
    """
    from asafe.app import link

    try:
        link.check_available()
    except link.LinkUnavailable as exc:
        if os.environ.get("ASAFE_TEST_REQUIRE_NETNS") == "1":
            pytest.fail(f"{exc} (ASAFE_TEST_REQUIRE_NETNS=1 requires a shaped link)")
        pytest.skip(f"no network namespace can be made here: {exc}")


@pytest.fixture
def run_behind_link(namespaces, tmp_path):
    """``run_behind_link(script, timeout) -> (report, completed)``: run a script that enters a link.

    The script calls :func:`asafe.app.link.enter` and prints one JSON line last;
    it runs from ``tmp_path`` with this process's link variables removed, so
    that it makes a namespace of its own. It must exit 0.
    """
    import json
    import subprocess

    from asafe.app import link

    def run(script: str, timeout: float):
        path = tmp_path / "behind_link.py"
        path.write_text(script, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in (link.ENV_LINK, link.ENV_NETNS)}
        done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout, env=env)
        assert done.returncode == 0, done.stderr[-4000:]
        return json.loads(done.stdout.strip().splitlines()[-1]), done

    return run
