"""The shared state board is scoped to the run that made it.

Only processes handed the board's name (``ASAFE_BOARD``, inherited by the
processes scheduler's workers) read it; nothing is left in the temporary
directory after the run, after exit, or (on the next run) after a SIGKILL.
"""
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap

import dask

import asafe

ENV = "ASAFE_BOARD"  # ENV


def make_runtime():
    rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", asafe.Hysteresis(0.5, 2.0), initial=True)],
                               dwell=0, dwell_tasks=0, interval=0, signals=False)
    return rt


def python(code, env=None, **kwargs):
    """Run ``code`` in a fresh interpreter that is a child of this process."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=120, **kwargs)


IS_ON = "import asafe; print(asafe.is_on('compression'))"


def leftovers(pid=None):
    """Board files or directories of process ``pid`` (default: this one) in the temporary directory."""
    pid = os.getpid() if pid is None else pid
    return sorted(name for name in os.listdir(tempfile.gettempdir())
                  if name == f"asafe-board-{pid}.bin" or name.startswith(f"asafe-board-{pid}-"))


def test_processes_workers_see_the_states_and_the_board_is_private():
    @asafe.typed(asafe.COMMUNICATION)
    def seen(i):
        import asafe as a
        return a.is_on("compression"), os.environ.get(ENV)

    with asafe.adaptive(make_runtime(), scheduler="processes"):
        path = os.environ[ENV]
        (results,) = dask.compute([dask.delayed(seen, pure=False)(i) for i in range(4)], num_workers=2)
        assert all(on for on, _ in results) and {p for _, p in results} == {path}
        # an unguessable name, in a directory only this user can enter
        directory = os.path.dirname(path)
        assert os.path.basename(directory).startswith(f"asafe-board-{os.getpid()}-")
        assert len(os.path.basename(directory)) > len(f"asafe-board-{os.getpid()}-") + 4
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert not os.path.exists(os.path.join(tempfile.gettempdir(), f"asafe-board-{os.getpid()}.bin"))


def test_a_process_not_handed_the_board_reads_nothing():
    with asafe.adaptive(make_runtime(), scheduler="processes"):
        assert asafe.is_on("compression") is True
        env = {k: v for k, v in os.environ.items() if k != ENV}
        # a child of the controller, as a worker of an unrelated cluster started here would be
        assert python(IS_ON, env=env).stdout.strip() == "False"
        # handed the name, the same child reads the states
        assert python(IS_ON).stdout.strip() == "True"


def test_no_board_file_is_left_after_the_run():
    with asafe.adaptive(make_runtime(), scheduler="processes"):
        assert leftovers() != []
    assert leftovers() == []
    assert ENV not in os.environ
    # a child started after the run reads nothing either
    assert python(IS_ON).stdout.strip() == "False"


def test_nested_runs_keep_the_board_until_the_outer_one_ends():
    with asafe.adaptive(make_runtime(), scheduler="processes"):
        path = os.environ[ENV]
        with asafe.adaptive(make_runtime(), scheduler="processes"):
            pass
        assert os.environ[ENV] == path and os.path.exists(path)
        assert python(IS_ON).stdout.strip() == "True"
    assert not os.path.exists(path)


def test_the_board_is_removed_at_exit():
    out = python("""
        import os
        from asafe.schedulers import board
        board.publish({"compression": True}, shared=True)
        print(os.getpid())
    """)
    assert out.returncode == 0, out.stderr
    assert leftovers(int(out.stdout)) == []


def test_a_board_left_by_a_killed_controller_is_swept_by_the_next_one():
    code = """
        import os, signal, sys
        from asafe.schedulers import board
        board.publish({"compression": True}, shared=True)
        print(os.getpid(), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """
    out = python(code)
    assert out.returncode == -signal.SIGKILL
    killed = int(out.stdout)
    assert leftovers(killed) != []  # atexit did not run
    sweep = python("""
        from asafe.schedulers import board
        board.publish({"x": True}, shared=True)
    """)
    assert sweep.returncode == 0, sweep.stderr
    assert leftovers(killed) == []


def test_forked_workers_read_the_board_too():
    @asafe.typed(asafe.COMMUNICATION)
    def seen(i):
        import asafe as a
        from asafe.schedulers import board as b
        b._local = {}  # a forked child inherits the parent's in-process states: read the shared board
        return a.is_on("compression")

    with dask.config.set({"multiprocessing.context": "fork"}):
        with asafe.adaptive(make_runtime(), scheduler="processes"):
            (results,) = dask.compute([dask.delayed(seen, pure=False)(i) for i in range(4)], num_workers=2)
    assert all(results)
