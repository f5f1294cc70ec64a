"""Shared set-up of the test suite.

``benchmarks`` is not installed: the tests of the benchmark harness load it from
the checkout by file location, so the repository root never goes on
``sys.path`` (it would shadow the installed ``asafe`` with the source folder,
which lacks ``asafe.compression``).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

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
