"""The peer-suite check: Dask's own tests with asafe off and on (asafe.testing.peer, peer_run).

* the harness itself, on a small suite written here whose outcomes are known: every
  outcome kind is recorded alike off and on, a test that sees asafe's states differs
  under ``--asafe=local``, a ``gen_cluster`` test sees the scheduler plugin only under
  ``--asafe=cluster`` (the preload survives ``reset_config``, as in distributed's own
  suite, whose conftest imports ``distributed.utils_test`` before the plugin
  configures) and the census counts its servers, and a test that fails once is
  called flaky after a rerun;
* the CI subset of Dask's own tests (``peer_run --suite ci``), marked ``peer`` so
  that ``-m "not peer"`` leaves it out: every outcome must be the same off and on.
"""
from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap

import pytest

from asafe.testing import peer, peer_run

SMALL_SUITE = '''
import os
from pathlib import Path

import pytest
from distributed.utils_test import gen_cluster


def test_pass():
    pass


def test_fail():
    assert 1 == 2, "one is not two"


@pytest.mark.skip(reason="skipped on purpose")
def test_skip():
    pass


@pytest.mark.xfail(reason="fails on purpose", strict=True)
def test_xfail():
    assert False


@pytest.mark.xfail(reason="passes anyway", strict=False)
def test_xpass():
    pass


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_setup_error(broken):
    pass


def test_sees_no_states():
    # asafe.adaptive publishes its runtime's states for asafe.is_on: by design
    # they are visible inside an adaptive run (--asafe=local) and empty outside
    from asafe.schedulers import board

    assert board.snapshot() == {}, "asafe is active"


def test_fails_on_second_call():
    counter = Path(os.environ["PEER_COUNTER"])
    calls = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(calls))
    assert calls != 2, "second call"


@gen_cluster(client=True, nthreads=[("127.0.0.1", 1)])
async def test_scheduler_runs_asafe(c, s, a):
    assert "asafe" in s.plugins, sorted(s.plugins)
    assert await c.submit(sum, [1, 2]) == 3
'''

# distributed's conftest imports distributed.utils_test (whose original_config is the
# copy reset_config restores) before any -p plugin's pytest_configure runs
CONFTEST = "from distributed.utils_test import *  # noqa: F401,F403\n"


def test_small_suite_outcomes_off_and_on(tmp_path, monkeypatch):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_small.py").write_text(SMALL_SUITE, encoding="utf-8")
    (suite / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (suite / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    monkeypatch.setenv("PEER_COUNTER", str(tmp_path / "counter"))
    out = tmp_path / "out"

    code = peer_run.main(["--mode", "both", "--reruns", "1", "--cwd", str(suite), "--out", str(out), "test_small.py"])

    report = json.loads((out / "peer-outcomes.json").read_text(encoding="utf-8"))
    tests = {nodeid.split("::")[-1]: record for nodeid, record in report["tests"].items()}
    expected_same = {"test_pass": "passed", "test_fail": "failed", "test_skip": "skipped",
                     "test_xfail": "xfailed", "test_xpass": "xpassed", "test_setup_error": "error"}
    for name, outcome in expected_same.items():
        assert (tests[name]["off"], tests[name]["on"]) == (outcome, outcome), name
    differences = {d["nodeid"].split("::")[-1]: d for d in report["differences"]}
    assert set(differences) == {"test_sees_no_states", "test_scheduler_runs_asafe", "test_fails_on_second_call"}
    assert differences["test_sees_no_states"]["verdict"] == "differs"
    assert differences["test_sees_no_states"]["on_runs"] == ["failed", "failed"]
    assert "asafe is active" in differences["test_sees_no_states"]["on_message"]
    assert differences["test_scheduler_runs_asafe"]["off_runs"] == ["failed", "failed"]
    assert differences["test_scheduler_runs_asafe"]["on_runs"] == ["passed", "passed"]
    flaky = differences["test_fails_on_second_call"]
    assert (flaky["off_runs"], flaky["on_runs"], flaky["verdict"]) == (["passed", "passed"], ["failed", "passed"], "flaky")
    assert report["summary"] == {"tests": 9, "same": 6, "differs": 2, "flaky": 1, "explained": 0, "reported_off": 9}
    assert code == 1
    # the census preload saw the gen_cluster test's scheduler and worker, both with asafe's plugin
    servers = report["groups"][0]["servers"]
    assert servers["scheduler"]["asafe"] >= 1 and servers["worker"]["asafe"] >= 1, servers
    assert servers["scheduler"]["without"] == servers["worker"]["without"] == 0, servers

    page = (out / "peer-outcomes.md").read_text(encoding="utf-8")
    assert "| `test_small.py::test_sees_no_states` | failed, failed |" not in page  # off passed
    assert "| `test_small.py::test_sees_no_states` | passed, passed | failed, failed | differs | " in page
    assert "AssertionError: asafe is active" in page
    runs = {p.name for p in (out / "runs").iterdir()}
    assert {"test_small-off.xml", "test_small-on.xml", "test_small-off.log", "test_small-on-rerun1.jsonl"} <= runs
    assert "-p asafe.testing.peer --asafe=both" in (out / "runs" / "test_small-on.log").read_text(encoding="utf-8")


def test_runner_exit_zero_when_nothing_differs(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_plain.py").write_text(
        "import dask\n\ndef test_compute():\n    assert dask.compute(dask.delayed(sum)([1, 2]))[0] == 3\n",
        encoding="utf-8",
    )
    (suite / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "asafe.testing.peer_run", "--mode", "cluster", "--cwd", str(suite),
         "--out", str(tmp_path / "out"), "test_plain.py"],
        capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 tests, 1 same, 0 differ, 0 flaky" in done.stdout


def test_runner_rejects_bad_options(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        peer_run.main(["--mode", "off", "--out", str(tmp_path), "x"])
    assert exc.value.code == 2
    assert "--mode must be one of local, cluster, both; got 'off'" in capsys.readouterr().err


def test_plugin_rejects_a_bad_mode(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "asafe.testing.peer", "--asafe=on", "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 4
    assert "--asafe (or $ASAFE_PEER) must be one of off, local, cluster, both; got 'on'" in done.stderr


def test_add_preload_keeps_other_preloads():
    conf = {"distributed": {"scheduler": {"preload": "mine"}, "worker": {}}}
    assert peer.add_preload(conf)
    assert conf["distributed"]["scheduler"]["preload"] == ["mine", "asafe.preload"]
    assert conf["distributed"]["worker"]["preload"] == ["asafe.preload"]
    before = copy.deepcopy(conf)
    assert not peer.add_preload(conf)
    assert conf == before


def test_importing_asafe_changes_only_its_own_config_key():
    """The "off" run imports the package (the plugin lives in it): that adds the ``asafe`` key, nothing else."""
    code = textwrap.dedent(
        """
        import copy, json, dask, dask.callbacks
        before = copy.deepcopy(dask.config.config)
        import asafe
        after = dask.config.config
        print(json.dumps({
            "added": sorted(set(after) - set(before)),
            "changed": sorted(k for k in before if before[k] != after.get(k)),
            "callbacks": len(dask.callbacks.Callback.active),
        }))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"added": ["asafe"], "changed": [], "callbacks": 0}


@pytest.mark.peer
@pytest.mark.timeout(1200)
def test_dask_ci_subset_same_outcomes_with_asafe(tmp_path):
    """Dask's own tests (``peer_run --suite ci``) have the same outcomes with asafe off and on."""
    out = tmp_path / "peer"
    done = subprocess.run(
        [sys.executable, "-m", "asafe.testing.peer_run", "--suite", "ci", "--mode", "both", "--reruns", "1",
         "--out", str(out)],
        capture_output=True, text=True, timeout=1100,
    )
    report = json.loads((out / "peer-outcomes.json").read_text(encoding="utf-8"))
    assert report["summary"]["reported_off"] > 700, done.stdout + done.stderr  # the subset ran
    differences = [f"{d['nodeid']}: off {d['off_runs']} on {d['on_runs']}: {d['on_message'] or d['off_message']}"
                   for d in report["differences"] if d["verdict"] == "differs"]
    assert not differences, "outcomes differ with asafe on:\n" + "\n".join(differences)
    assert done.returncode == 0, done.stdout + done.stderr
