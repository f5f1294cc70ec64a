"""Shared set-up of the test suite.

``benchmarks`` is not installed: the tests of the benchmark harness load it from
the checkout by file location, so the repository root never goes on
``sys.path`` (it would shadow the installed ``asafe`` with the source folder,
which lacks ``asafe.compression``).
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


@pytest.fixture(scope="session")
def hotpath():
    """``asafe.schedulers._hotpath``, the compiled hooks: skipped where it was not built.

    ``ASAFE_TEST_REQUIRE_COMPILED=1`` (set by ``.ci/run``) makes a missing build a
    failure instead, so that CI cannot pass on the fallback alone.
    """
    from asafe.schedulers import local

    if local._hotpath is None:
        message = "asafe.schedulers._hotpath was not built (no C compiler at install time?)"
        if os.environ.get("ASAFE_TEST_REQUIRE_COMPILED") == "1":
            pytest.fail(message + "; ASAFE_TEST_REQUIRE_COMPILED=1 requires it")
        pytest.skip(message)
    return local._hotpath
