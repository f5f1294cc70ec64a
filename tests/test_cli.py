"""The asafe console script: --help everywhere, the demo, bad options."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from asafe.app.cli import main


@pytest.mark.parametrize("args", [["--help"]] + [[name, "--help"] for name in sorted(main.commands)])
def test_help_on_every_command(args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_console_script_is_installed():
    # beside this interpreter (a venv used without activating it), else on PATH
    beside = Path(sys.executable).with_name("asafe")
    exe = str(beside) if beside.exists() else shutil.which("asafe")
    assert exe is not None, f"the asafe console script is neither beside {sys.executable} nor on PATH"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True)
    assert "demo" in out.stdout


def test_demo_runs_and_prints_the_mode_and_transitions(tmp_path):
    # test-sized phases on a real LocalCluster of 2 worker processes, one measured round
    result = CliRunner().invoke(main, ["demo", "--size", "test", "--repetitions", "1", "--verbose",
                                       "--plot", str(tmp_path / "d.png"), "--json", str(tmp_path / "d.json")])
    assert result.exit_code == 0, result.output
    assert "ModeVector(" in result.output  # the mode vector after each adaptive phase
    assert "Total time" in result.output and "targets:" in result.output
    # --verbose: how the thresholds were chosen and what each phase is
    assert "chosen on CALIBRATION_PHASES only" in result.output and "window 16 measurements" in result.output
    assert "phase shipped-sparse" in result.output and "scipy references computed" in result.output
    # one round: each interval is a single point, and says it covers nothing
    assert "(0%)" in result.output
    assert (tmp_path / "d.png").read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "d.json").exists()


def test_demo_rejects_bad_thresholds():
    result = CliRunner().invoke(main, ["demo", "--alpha", "3", "--beta", "1"])
    assert result.exit_code == 2
    assert "alpha <= beta" in result.output
