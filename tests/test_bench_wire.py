"""The wire suite's command line: it builds its parser beside the common options and refuses bad variants."""
from __future__ import annotations

import pytest

from benchmarks import wire


def test_help_lists_the_suite_options_with_the_common_link(capsys):
    with pytest.raises(SystemExit) as info:
        wire.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--link", "--data", "--burn", "--variants", "--rounds"):
        assert option in out


def test_unknown_variant_is_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit) as info:
        wire.main(["--variants", "adaptive,zip"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown ['zip']" in err and "dask, adaptive, always, ratio-only, host-cpu" in err


def test_burn_host_needs_a_topology_and_burners(capsys):
    with pytest.raises(SystemExit) as info:
        wire.main(["--burn", "2", "--burn-host", "1"])
    assert info.value.code == 2
    assert "--burn-host: needs --hosts N" in capsys.readouterr().err


def test_doctests_of_the_suite():
    import doctest

    result = doctest.testmod(wire, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 1 and result.failed == 0


@pytest.mark.parametrize("transitions, expected_off, expected_on", [
    ([], 0.0, 0.0),  # off before the burners, off after: it stayed off
    ([[0.2, "wire-compression", False, 120]], None, None),  # switched on and never off again
    ([[-0.5, "wire-compression", False, 120], [0.7, "wire-compression", 120, False]], 0.7, 0.7),  # on already
])
def test_burn_latency_reads_the_switch_off_after_the_burners_started(transitions, expected_off, expected_on):
    timeline = [[0.1, 1.0, 0.1, 0.05, 1e8], [0.6, 0.4, 0.9, 0.9, 1e8]]
    got = wire.burn_latency({"timeline": timeline, "transitions": transitions}, started=10.0, t0_wall=10.0, beta=0.8)
    assert got == {"seen_s": 0.6, "off_s": expected_off, "on_while_burning_s": expected_on}


def test_a_host_outside_a_topology_is_refused(monkeypatch):
    from asafe.app import hosts

    monkeypatch.delenv(hosts.ENV_HOSTS, raising=False)
    with pytest.raises(RuntimeError, match="does not run in host 0 of a topology"):
        hosts.popen_in_host(1, ["true"])
    monkeypatch.setattr(hosts, "current", lambda: {"topology": {"hosts": [{"netns": "a"}, {"netns": "b"}]}})
    with pytest.raises(ValueError, match="allowed: 0 to 1"):
        hosts.popen_in_host(2, ["true"])


def test_each_variant_warms_up_once_and_is_not_a_sample(tmp_path, capsys):
    import json

    assert wire.main(["--size", "128", "--rounds", "2", "--variants", "dask,adaptive", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("warm-up ") == 2 and out.count("round ") == 4
    result = json.loads((tmp_path / "wire" / "wire-loopback-smooth.json").read_text())
    assert sorted(result["warmup"]) == ["adaptive", "dask"]
    assert "transitions" in result["warmup"]["adaptive"] and result["warmup"]["dask"]["seconds"] > 0
    assert [len(result["samples"][v]) for v in ("dask", "adaptive")] == [2, 2]


def test_no_warmup_times_every_run(tmp_path, capsys):
    import json

    assert wire.main(["--size", "128", "--rounds", "1", "--variants", "dask", "--no-warmup",
                      "--out", str(tmp_path)]) == 0
    assert "warm-up" not in capsys.readouterr().out
    assert json.loads((tmp_path / "wire" / "wire-loopback-smooth.json").read_text())["warmup"] == {}
