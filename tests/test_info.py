"""``asafe info`` without a scheduler: every setting's value and source, unknown keys, bad input.

The scheduler side (``asafe info ADDRESS``) runs on a real LocalCluster in
tests/distributed/test_cluster_views.py.
"""
from __future__ import annotations

import os
import subprocess
import sys

import dask
from click.testing import CliRunner

from asafe.app.cli import main
from asafe.app.info import render, report, settings_report


def _by_key(found):
    return {s["key"]: s for s in found["settings"]}


def test_each_setting_says_where_it_came_from(tmp_path):
    folder = tmp_path / "dask"
    folder.mkdir()
    (folder / "a.yaml").write_text("asafe:\n  tracker:\n    window: 32\n    blend: 0.25\n")
    (folder / "b.yaml").write_text("asafe:\n  tracker:\n    window: 64\n")  # a later file overrides
    env = {"DASK_ASAFE__TRACKER__BLEND": "0.75", "DASK_ASAFE__CONTROLLER__DWELL_TASKS": "4", "HOME": "/x"}
    found = _by_key(settings_report(env=env, paths=[str(folder)]))
    assert found["asafe.tracker.window"] == {"key": "asafe.tracker.window", "value": 64,
                                             "source": f"YAML file {folder / 'b.yaml'}"}
    assert found["asafe.tracker.blend"]["value"] == 0.75
    assert found["asafe.tracker.blend"]["source"] == "environment variable DASK_ASAFE__TRACKER__BLEND"
    assert found["asafe.controller.dwell-tasks"]["source"] == "environment variable DASK_ASAFE__CONTROLLER__DWELL_TASKS"
    assert found["asafe.controller.dwell"] == {"key": "asafe.controller.dwell", "value": "250ms", "source": "default"}
    assert found["asafe.optimizations"]["source"] == "default"


def test_unknown_keys_are_flagged_with_their_source_and_the_nearest_key(tmp_path):
    (tmp_path / "typo.yaml").write_text("asafe:\n  tracker:\n    windw: 8\n")
    found = settings_report(env={"DASK_ASAFE__CONTROLER__DWELL": "1s"}, paths=[str(tmp_path)])
    unknown = {entry["key"]: entry for entry in found["unknown"]}
    assert unknown["asafe.controler"]["source"] == "environment variable DASK_ASAFE__CONTROLER__DWELL"
    assert unknown["asafe.controler"]["did_you_mean"] == "asafe.controller"
    assert unknown["asafe.tracker.windw"]["source"] == f"YAML file {tmp_path / 'typo.yaml'}"
    assert unknown["asafe.tracker.windw"]["did_you_mean"] == "asafe.tracker.window"
    text = render({"where": "this process", **found})
    assert "asafe.controler (environment variable DASK_ASAFE__CONTROLER__DWELL); did you mean asafe.controller?" in text


def test_a_value_set_in_the_process_says_so():
    with dask.config.set({"asafe.controller.dwell": "2s", "asafe.controlr": {"dwell": 1}}):
        found = report()
    assert _by_key(found)["asafe.controller.dwell"] == {"key": "asafe.controller.dwell", "value": "2s",
                                                        "source": "set in this process (dask.config.set)"}
    assert [u["key"] for u in found["unknown"]] == ["asafe.controlr"]


def test_the_command_prints_the_settings_and_json():
    runner = CliRunner()
    done = runner.invoke(main, ["info"])
    assert done.exit_code == 0, done.output
    assert done.output.startswith("asafe settings (this process):")
    done = runner.invoke(main, ["info", "--json"])
    assert done.exit_code == 0 and '"key": "asafe.tracker.window"' in done.output


def test_a_scheduler_that_does_not_answer_gets_one_line():
    done = CliRunner().invoke(main, ["info", "tcp://127.0.0.1:1", "--timeout", "0.5"])
    assert done.exit_code == 1
    assert done.output.count("\n") == 1 and "no Dask scheduler answered at tcp://127.0.0.1:1" in done.output


def test_dask_asafe_info_through_the_dask_cli_entry_point(tmp_path):
    env = dict(os.environ, DASK_ASAFE__TRACKER__WINDOW="16")
    done = subprocess.run([sys.executable, "-m", "dask", "asafe", "info"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    line = [l for l in done.stdout.splitlines() if "tracker.window" in l][0]
    assert line.split() == ["asafe.tracker.window", "=", "16", "(environment", "variable",
                            "DASK_ASAFE__TRACKER__WINDOW)"]
