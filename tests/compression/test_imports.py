"""Importing the tile engine from two threads at once, as a worker does.

A worker unpickles a TiledMatrix that arrives from a peer on a communication
thread (importing ``asafe.compression.matrix``) while a task on its executor
thread imports ``asafe.compression``. Each run starts a fresh interpreter, where
nothing of the engine is imported yet.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

RACE = textwrap.dedent(
    """
    import importlib, threading
    import asafe  # a worker has imported the runtime before its first task
    errors = []
    barrier = threading.Barrier(2)

    def unpickle_path():
        barrier.wait()
        try:
            importlib.import_module("asafe.compression.matrix")  # what pickle does for a TiledMatrix
        except Exception as exc:
            errors.append(repr(exc))

    def task_path():
        barrier.wait()
        try:
            from asafe.compression import TiledMatrix  # noqa: F401  (what a task does)
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=unpickle_path), threading.Thread(target=task_path)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(errors)
    """
)


@pytest.mark.parametrize("attempt", range(3))
def test_concurrent_first_imports_do_not_deadlock(attempt, tmp_path):
    # from an empty folder: ``python -c`` puts the working folder first on sys.path, and a
    # checkout's asafe/ folder there is not the installed package
    done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_public_names_resolve_and_are_listed():
    import asafe.compression as c

    for name in c.__all__:
        assert getattr(c, name) is not None
    assert set(c.__all__) <= set(dir(c))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        c.nope  # noqa: B018
