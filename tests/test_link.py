"""Real links (asafe.app.link): rates, what is needed, the options, and one shaped run.

The unit tests need no privileges. The shaped runs make a network namespace whose
loopback is rate-limited by ``tc tbf`` (root, or unprivileged user namespaces, and
``unshare``, ``ip``, ``tc``); where none can be made they skip and say why, except
under ``ASAFE_TEST_REQUIRE_NETNS=1`` (set by ``.ci/run``, which runs as root on
Linux), where that is a failure.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from asafe.app import link
from asafe.app.cli import main as cli

import benchmarks.__main__ as bench_main
from benchmarks import harness


@pytest.fixture
def fresh_probe():
    """Forget the cached namespace trial before and after a test that fakes its inputs."""
    link._probe.cache_clear()
    yield
    link._probe.cache_clear()


def _fake_probe():
    return ("unshare", "--net"), "/sbin/ip", "/sbin/tc"


# --------------------------------------------------------------------------- rates
@pytest.mark.parametrize("text, rate, bits", [
    ("1gbit", "1gbit", 1e9), ("100mbit", "100mbit", 1e8), ("10Gbit", "10gbit", 1e10),
    (" 2.5gbit ", "2.5gbit", 2.5e9), ("1e9bit", "1gbit", 1e9), ("1E9bit", "1gbit", 1e9), ("125MBps", "1gbit", 1e9),
    ("1000kbit", "1mbit", 1e6), ("1gibit", "1073741.824kbit", 2.0**30),
])
def test_rates_in_tc_units(text, rate, bits):
    spec = link.parse_link(text)
    assert (spec.rate, spec.bits_per_s) == (rate, bits)
    assert link.parse_link(spec.rate) == spec  # the canonical form reads back the same


@pytest.mark.parametrize("text", [None, "", "loopback", "LOOPBACK", "none", "off"])
def test_the_loopback_as_it_is(text):
    assert link.parse_link(text) is None


def test_burst_is_512kib_or_1ms_of_the_rate():
    assert link.parse_link("100mbit").burst_bytes == 512 * 1024
    assert link.parse_link("1gbit").burst_bytes == 512 * 1024
    assert link.parse_link("10gbit").burst_bytes == 1_250_000
    spec = link.parse_link("1gbit")
    assert spec.tc_arguments() == ["tbf", "rate", "1000000000bit", "burst", "524288", "latency", "50ms"]
    assert spec.as_dict()["qdisc"].startswith("tc qdisc add dev lo root tbf rate 1000000000bit")


@pytest.mark.parametrize("text, words", [
    ("fast", ["cannot read", "1gbit", "100mbit", "loopback"]),
    ("1 gbit/s", ["cannot read"]),
    ("-1gbit", ["cannot read"]),
    ("100", ["no unit", "100mbit"]),
    ("1gbps", ["ambiguous", "BYTES", "1gbit", "1GBps"]),
    ("10furlongs", ["unknown unit", "furlongs"]),
    ("1kbit", ["1 Mbit/s to 100 Gbit/s"]),
    ("1tbit", ["1 Mbit/s to 100 Gbit/s"]),
    ("0gbit", ["1 Mbit/s to 100 Gbit/s"]),
])
def test_bad_rates_say_what_is_accepted(text, words):
    with pytest.raises(ValueError) as info:
        link.parse_link(text)
    for word in words:
        assert word in str(info.value)


def test_a_rate_is_a_string():
    with pytest.raises(ValueError, match="string such as '1gbit'"):
        link.parse_link(1e9)


# --------------------------------------------------------------------------- what is needed
def test_not_linux_says_what_is_needed(fresh_probe, monkeypatch):
    monkeypatch.setattr(link.platform, "system", lambda: "Darwin")
    with pytest.raises(link.LinkUnavailable) as info:
        link.check_available()
    text = str(info.value)
    assert "Darwin" in text and "Linux" in text and "Leave --link out" in text


def test_missing_tools_are_named(fresh_probe, monkeypatch):
    monkeypatch.setattr(link.platform, "system", lambda: "Linux")
    monkeypatch.setattr(link, "_tool", lambda name: None if name == "tc" else f"/usr/bin/{name}")
    with pytest.raises(link.LinkUnavailable, match=r"missing on PATH .*: tc\. .*iproute2"):
        link.check_available()


def test_a_failed_trial_reports_the_real_error(fresh_probe, monkeypatch):
    monkeypatch.setattr(link.platform, "system", lambda: "Linux")
    monkeypatch.setattr(link, "_tool", lambda name: f"/usr/bin/{name}")

    def refuse(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "unshare: unshare failed: Operation not permitted\n")

    monkeypatch.setattr(link.subprocess, "run", refuse)
    with pytest.raises(link.LinkUnavailable) as info:
        link.check_available()
    text = str(info.value)
    assert "Operation not permitted" in text and "--map-root-user" in text
    assert "user namespaces" in text and "root" in text


def test_the_command_line(monkeypatch):
    monkeypatch.setattr(link, "_probe", _fake_probe)
    cmd = link.link_command("100mbit", ["python", "-c", "print('hi there')"])
    assert cmd[:4] == ["unshare", "--net", "sh", "-c"]
    script = cmd[4]
    assert "/sbin/ip link set lo up" in script
    assert "/sbin/tc qdisc add dev lo root tbf rate 100000000bit burst 524288 latency 50ms" in script
    assert 'exec "$@"' in script and link.ENV_NETNS in script
    assert cmd[5:] == ["asafe-link", "python", "-c", "print('hi there')"]  # argv passed as is, not re-quoted
    env = link._child_env(link.parse_link("100mbit"), {"PATH": "/bin", link.ENV_NETNS: "stale"})
    assert env == {"PATH": "/bin", link.ENV_LINK: "100mbit"}
    with pytest.raises(ValueError, match="needs a shaped link"):
        link.link_command("loopback", ["true"])
    with pytest.raises(ValueError, match="needs a command"):
        link.link_command("1gbit", [])


def test_enter_the_loopback_does_nothing():
    assert link.enter(None) is None and link.enter("loopback") is None


def test_a_leaked_variable_is_not_a_link(monkeypatch):
    monkeypatch.setenv(link.ENV_LINK, "1gbit")
    monkeypatch.setenv(link.ENV_NETNS, "net:[1]")  # not this process's namespace
    assert link.current() is None
    assert link.describe() == {"shaped": False, "kind": "loopback", "note": link.describe()["note"]}


def test_environment_records_the_link():
    from asafe.app.stats import environment

    env = environment()
    assert env["link"]["shaped"] is False and env["link"]["kind"] == "loopback"
    assert link.summary(env["link"]) == "link: the loopback as it is (unshaped)"


def test_measure_throughput_on_the_loopback():
    m = link.measure_throughput(2_000_000)
    assert m["bytes"] == 2_000_000 and m["seconds"] > 0 and m["gbit_per_s"] > 0
    with pytest.raises(ValueError):
        link.measure_throughput(0)


# --------------------------------------------------------------------------- the options
def test_demo_rejects_a_bad_rate():
    result = CliRunner().invoke(cli, ["demo", "--link", "fast"])
    assert result.exit_code == 2
    assert "cannot read the link rate 'fast'" in result.output and "1gbit" in result.output


def test_demo_link_needs_the_embedded_cluster():
    result = CliRunner().invoke(cli, ["demo", "--link", "1gbit", "--scheduler-address", "tcp://127.0.0.1:1"])
    assert result.exit_code == 2
    assert "--scheduler-address" in result.output


def test_demo_link_says_what_is_needed(monkeypatch):
    def unavailable():
        raise link.LinkUnavailable("cannot make a network namespace here: no. " + link._needs())

    monkeypatch.setattr(link, "_probe", unavailable)
    result = CliRunner().invoke(cli, ["demo", "--link", "1gbit"])
    assert result.exit_code == 1
    assert "--link 1gbit" in result.output and "unprivileged user namespaces" in result.output


def test_link_command_rejects_bad_rates():
    result = CliRunner().invoke(cli, ["link", "1gbps", "--", "true"])
    assert result.exit_code == 2 and "ambiguous" in result.output
    result = CliRunner().invoke(cli, ["link", "loopback"])
    assert result.exit_code == 2 and "needs a rate" in result.output


def test_benchmarks_reject_a_bad_rate(capsys):
    assert bench_main.main(["kernels", "--link", "fast"]) == 2
    assert "cannot read the link rate" in capsys.readouterr().err


def test_benchmarks_say_what_is_needed(monkeypatch, capsys):
    def unavailable():
        raise link.LinkUnavailable("not here. " + link._needs())

    monkeypatch.setattr(link, "_probe", unavailable)
    assert bench_main.main(["kernels", "--link", "1gbit"]) == 2
    err = capsys.readouterr().err
    assert "--link 1gbit" in err and "not here" in err


def test_common_link_option():
    parser = harness.add_common_arguments(argparse.ArgumentParser(prog="suite"))
    assert parser.parse_args([]).link is None
    assert parser.parse_args(["--link", "loopback"]).link is None
    with pytest.raises(SystemExit):  # outside the link: run through python -m benchmarks
        parser.parse_args(["--link", "1gbit"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--link", "1gbps"])


# --------------------------------------------------------------------------- a shaped run
# (the fixtures `namespaces` and `run_behind_link` are in tests/conftest.py)
RATE = "100mbit"
PAYLOAD = 20_000_000  # bytes moved from worker A to worker B: 1.6 s at 100 Mbit/s

SCRIPT = textwrap.dedent(f"""
    import json, os, sys, time
    import numpy as np
    from asafe.app import link

    spec = link.enter({RATE!r})  # re-executes this script inside a shaped namespace, then goes on
    from distributed import Client, LocalCluster, wait

    def make(n):
        return np.arange(n // 8, dtype=np.float64)

    def total(a):
        return float(a.sum()), int(a.nbytes)

    if __name__ == "__main__":
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
                Client(cluster) as client:
            a, b = sorted(client.nthreads())
            x = client.submit(make, {PAYLOAD}, workers=[a], pure=False)
            wait(x)  # made on worker A; the timed part below is its transfer to worker B
            start = time.perf_counter()
            y = client.submit(total, x, workers=[b], pure=False)
            s, nbytes = y.result()
            seconds = time.perf_counter() - start
            print(json.dumps({{"pid": os.getpid(), "netns": os.readlink("/proc/self/ns/net"),
                               "workers": [a, b], "sum": s, "nbytes": nbytes, "seconds": seconds,
                               "link": link.describe()}}))
""")


def test_a_cluster_behind_a_shaped_link(run_behind_link):
    report, _ = run_behind_link(SCRIPT, timeout=120)
    # inside a namespace of its own, shaped as asked, the cluster on its loopback
    assert report["netns"] != os.readlink("/proc/self/ns/net")
    info = report["link"]
    assert info["shaped"] and info["rate"] == RATE and "tbf" in info["kernel_qdisc"]
    assert all(w.startswith("tcp://127.0.0.1:") for w in report["workers"])
    # the data arrived whole and right
    n = PAYLOAD // 8
    assert report["nbytes"] == PAYLOAD and report["sum"] == n * (n - 1) / 2
    # shaping was in force: well below the loopback's ~25 Gbit/s, near the rate (generous bounds:
    # a correctness check of the shaping, not a performance test)
    bits = 100e6
    moved = PAYLOAD * 8 / report["seconds"]
    assert 0.3 * bits <= moved <= 1.5 * bits, f"{moved / 1e6:.1f} Mbit/s between workers on a {RATE} link"
    measured = info["measured"]["gbit_per_s"] * 1e9
    assert 0.3 * bits <= measured <= 1.5 * bits, f"{measured / 1e6:.1f} Mbit/s between two sockets"


def test_asafe_link_measures_the_link(namespaces):
    out = subprocess.run([sys.executable, "-m", "asafe.app.cli", "link", "1gbit"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "link: tbf 1gbit" in out.stdout and "measured" in out.stdout
