"""The asafe console script: --help everywhere, the demo, bad options."""
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from asafe.cli import main


def commands():
    return sorted(main.commands)


@pytest.mark.parametrize("args", [["--help"]] + [[name, "--help"] for name in sorted(main.commands)])
def test_help_on_every_command(args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_console_script_is_installed():
    exe = shutil.which("asafe")
    assert exe is not None, "the asafe console script is not on PATH"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True)
    assert "demo" in out.stdout


def test_demo_runs_and_prints_the_mode_and_transitions():
    result = CliRunner().invoke(main, ["demo", "--tasks", "30", "--scheduler", "sync"])
    assert result.exit_code == 0, result.output
    assert "ModeVector(" in result.output
    assert "transitions:" in result.output


def test_demo_rejects_bad_thresholds():
    result = CliRunner().invoke(main, ["demo", "--alpha", "3", "--beta", "1"])
    assert result.exit_code == 2
    assert "alpha <= beta" in result.output
