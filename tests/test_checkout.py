"""A checkout works where a user stands: ``import asafe.compression`` from the repository root.

From the root, ``python -c`` puts the current folder first on ``sys.path``, so
``asafe`` is the source folder, which has no ``compression/`` inside (setup.py
installs the top-level ``compression/`` as ``asafe.compression``). asafe's
``__init__`` finds it there (``asafe._CheckoutCompression``). The second test
takes the installed package's finders away (``python -S``: no ``.pth`` files,
so no editable install either, site-packages on ``PYTHONPATH`` for the
dependencies), which is what a regular install shadowed by the source folder
looks like, whatever kind of install runs the suite.
"""
from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _checkout() -> Path:
    if not (ROOT / "compression" / "__init__.py").is_file() or not (ROOT / "asafe" / "__init__.py").is_file():
        pytest.skip("the tests run outside a checkout of the repository")
    return ROOT


PROBE = ("import asafe, asafe.compression, asafe.compression.graph500 as g, sys; "
         "print(asafe.__file__); print(asafe.compression.__file__); "
         "print(sorted(n for n in sys.modules if n.startswith('asafe.') and n.split('.')[1] in "
         "('benchmarks', 'tests', 'docs')))")


def _run(args: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, *args, "-c", PROBE], cwd=_checkout(), env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_import_compression_from_the_repository_root() -> None:
    lines = _run([], dict(os.environ))
    assert lines[1].endswith(os.path.join("compression", "__init__.py")), lines
    assert lines[2] == "[]"


def test_the_source_folder_finds_compression_without_the_installed_finders() -> None:
    root = _checkout()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(site.getsitepackages()))
    lines = _run(["-S"], env)
    # the source folder is asafe (nothing installed is visible), and compression comes from beside it
    assert Path(lines[0]).resolve() == root / "asafe" / "__init__.py", lines
    assert Path(lines[1]).resolve() == root / "compression" / "__init__.py", lines


def test_the_finder_answers_for_compression_only() -> None:
    import asafe

    finder = asafe._CheckoutCompression(str(_checkout() / "compression"))
    assert finder.find_spec("asafe.benchmarks") is None
    assert finder.find_spec("compression") is None
    spec = finder.find_spec("asafe.compression")
    assert spec.submodule_search_locations == [str(ROOT / "compression")]
