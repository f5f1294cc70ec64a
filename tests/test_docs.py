"""The documentation's examples run, and so do the doctests of every public module.

* ``>>>`` examples in ``docs/**/*.rst`` run with :mod:`doctest`, one test per file
  (the examples of one file share their names, as ``doctest.testfile`` does);
* ``.. code-block:: python`` blocks are not run (they need a cluster or a large
  input) but must compile, and ``.. code-block:: yaml`` blocks must parse;
* the example programs in ``docs/examples/`` run, and their doctests too;
* the doctests of every public module of the *installed* asafe run, one test per
  module, modules found with :func:`pkgutil.walk_packages` so that new ones are
  included;
* every key of ``asafe/asafe.yaml`` has a comment (the configuration table of the
  docs shows them), and the figure script of the Concepts page draws.

The docs tests skip, with a reason, only when ``docs/`` is absent because the
suite runs outside a checkout.
"""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import io
import os
import pkgutil
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

DOCS = Path(__file__).resolve().parent.parent / "docs"
SKIP_DIRS = {"_build", "_generated", "generated", "results"}
FLAGS = doctest.ELLIPSIS
NO_DOCS = "docs/ is absent: the tests run outside a checkout of the repository"

# Public packages: their modules are walked; compression is walked on its own since an
# editable install keeps it outside asafe/ (setup.py package_dir).
PACKAGES = ("asafe", "asafe.compression")
CORE_MODULES = {
    "asafe", "asafe.core.types", "asafe.core.mode", "asafe.core.tracker", "asafe.core.domains", "asafe.core.runtime",
    "asafe.schedulers.board", "asafe.schedulers.local", "asafe.core.config", "asafe.core.signals", "asafe.compression",
}


def _rst_files() -> list[Path]:
    if not DOCS.is_dir():
        return []
    return sorted(
        p for p in DOCS.rglob("*.rst")
        if not SKIP_DIRS.intersection(p.relative_to(DOCS).parts[:-1])
    )


def _example_files() -> list[Path]:
    folder = DOCS / "examples"
    return sorted(folder.glob("*.py")) if folder.is_dir() else []


def _example_programs() -> list[Path]:
    return [p for p in _example_files() if '__name__ == "__main__"' in p.read_text(encoding="utf-8")]


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(DOCS)) for p in paths]


def _docs_params(paths: list[Path]) -> list:
    if paths:
        return [pytest.param(p, id=i) for p, i in zip(paths, _ids(paths))]
    return [pytest.param(None, id="no-docs")]


def _need_docs(path: Path | None) -> Path:
    if path is None:
        if DOCS.is_dir():
            pytest.fail(f"{DOCS} exists but holds none of the files this test expects")
        pytest.skip(NO_DOCS)
    return path


def _run(tests: list[doctest.DocTest]) -> tuple[int, int, str]:
    """Run doctests; return (failed, attempted, report)."""
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out = io.StringIO()
    for test in tests:
        runner.run(test, out=out.write)
    return runner.failures, runner.tries, out.getvalue()


# ---------------------------------------------------------------------------
# docs/**/*.rst
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", _docs_params(_rst_files()))
def test_rst_examples(path: Path | None) -> None:
    """The ``>>>`` examples of one page, as ``doctest.testfile`` runs them."""
    path = _need_docs(path)
    text = path.read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(text, {"__name__": "__docs__"}, path.name, str(path), 0)
    failed, _, report = _run([test])
    assert failed == 0, f"{path.relative_to(DOCS)}: {failed} example(s) failed\n{report}"


_DIRECTIVE = re.compile(r"^(?P<indent>\s*)\.\. code-block::\s*(?P<lang>\S+)\s*$")


def code_blocks(text: str) -> list[tuple[int, str, str]]:
    """``(line, language, code)`` of every ``.. code-block::`` in reStructuredText."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not match:
            i += 1
            continue
        indent = len(match.group("indent"))
        start, i = i + 1, i + 1
        body = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            body.append(lines[i])
            i += 1
        while body and re.match(r"^\s*:[\w-]+:", body[0]):  # directive options
            body.pop(0)
        blocks.append((start, match.group("lang"), textwrap.dedent("\n".join(body)).strip("\n") + "\n"))
    return blocks


def test_code_blocks_are_found() -> None:
    blocks = code_blocks(".. code-block:: python\n   :caption: x\n\n   a = 1\n\n   b = 2\nafter\n")
    assert blocks == [(1, "python", "a = 1\n\nb = 2\n")]


@pytest.mark.parametrize("path", _docs_params(_rst_files()))
def test_rst_code_blocks_parse(path: Path | None) -> None:
    """Python code blocks compile and YAML blocks parse (neither is run)."""
    path = _need_docs(path)
    for line, language, code in code_blocks(path.read_text(encoding="utf-8")):
        where = f"{path.relative_to(DOCS)}:{line}"
        if language in {"python", "py", "python3"}:
            try:
                compile(code, where, "exec")
            except SyntaxError as exc:
                pytest.fail(f"{where}: the python block does not compile: {exc}\n{code}")
        elif language == "yaml":
            try:
                yaml.safe_load(code)
            except yaml.YAMLError as exc:
                pytest.fail(f"{where}: the yaml block does not parse: {exc}\n{code}")


# ---------------------------------------------------------------------------
# docs/examples/*.py
# ---------------------------------------------------------------------------
def _load_example(path: Path):
    sys.path.insert(0, str(path.parent))  # an example imports its neighbours
    try:
        spec = importlib.util.spec_from_file_location(f"docs_example_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


@pytest.mark.parametrize("path", _docs_params(_example_files()))
def test_example_doctests(path: Path | None) -> None:
    path = _need_docs(path)
    module = _load_example(path)
    tests = doctest.DocTestFinder().find(module, path.stem)
    failed, _, report = _run(tests)
    assert failed == 0, f"{path.relative_to(DOCS)}: {failed} example(s) failed\n{report}"


@pytest.mark.parametrize("path", _docs_params(_example_programs()))
def test_example_programs_run(path: Path | None, tmp_path: Path) -> None:
    """Every example with a ``__main__`` block runs to its end, as a reader would run it."""
    path = _need_docs(path)
    env = dict(os.environ, MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"{path.name} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.rstrip().endswith("ok"), f"{path.name} did not finish:\n{done.stdout}"


# ---------------------------------------------------------------------------
# doctests of the installed package
# ---------------------------------------------------------------------------
def public_modules() -> tuple[list[str], list[str]]:
    """Public modules of the installed asafe, and packages that failed to import."""
    found, failed = [], []
    for package in PACKAGES:
        try:
            pkg = importlib.import_module(package)
        except Exception:
            failed.append(package)
            continue
        found.append(package)
        for info in pkgutil.walk_packages(pkg.__path__, package + ".", onerror=failed.append):
            if not any(part.startswith("_") for part in info.name.split(".")):
                found.append(info.name)
    return sorted(set(found)), failed


MODULES, BROKEN = public_modules()


def test_public_modules_are_found() -> None:
    assert not BROKEN, f"packages that failed to import while listing modules: {BROKEN}"
    missing = CORE_MODULES - set(MODULES)
    assert not missing, f"modules not found by pkgutil.walk_packages: {sorted(missing)}"


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name: str) -> None:
    """The examples in the docstrings of one module, as ``doctest.testmod`` runs them."""
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder().find(module, name)
    failed, attempted, report = _run(tests)
    assert failed == 0, f"{name}: {failed} of {attempted} docstring example(s) failed\n{report}"


# ---------------------------------------------------------------------------
# what the docs build reads
# ---------------------------------------------------------------------------
def _docs_helper(name: str):
    path = DOCS / "_ext" / f"{name}.py"
    if not path.exists():
        pytest.skip(NO_DOCS if not DOCS.is_dir() else f"{path} is absent")
    return _load_example(path)


def test_every_configuration_key_has_a_comment() -> None:
    """The configuration table of the docs shows each key's comment: none may be missing."""
    helper = _docs_helper("asafe_yaml")
    from importlib.resources import files

    text = (files("asafe") / "asafe.yaml").read_text(encoding="utf-8")
    comments = helper.yaml_comments(text)
    keys = [key for key, _ in helper.yaml_leaves(yaml.safe_load(text))]
    assert keys, "no keys found in asafe.yaml"
    undocumented = [key for key in keys if not comments.get(key)]
    assert not undocumented, f"keys of asafe.yaml without a comment: {undocumented}"
    assert helper.environment_variable("asafe.controller.dwell-tasks") == "DASK_ASAFE__CONTROLLER__DWELL_TASKS"


def test_concepts_figures_draw(tmp_path: Path) -> None:
    """The build draws these with the installed asafe; a failure would break the docs build."""
    script = DOCS / "_scripts" / "hysteresis_figure.py"
    if not script.exists():
        pytest.skip(NO_DOCS if not DOCS.is_dir() else f"{script} is absent")
    import runpy

    paths = runpy.run_path(str(script))["main"](str(tmp_path))
    for path in paths:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", path
