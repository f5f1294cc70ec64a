"""The competing jobs of phases under load (asafe.app.load).

Each job must really run while the ``with`` block does (bytes copied, bytes
moved), be gone when it is left (also when the block raises), and a ``link``
job behind a shaped link must take a share of that link from a flow beside it.
No timing is asserted beyond "the flow beside it got clearly less than the
link": the share is measured by the benchmarks.
"""
from __future__ import annotations

import os
import textwrap
import time

import pytest

from asafe.app import link
from asafe.app.load import LOADS, STOP_SECONDS, check_load, external_load, main

pytestmark = pytest.mark.timeout(120)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie is gone for our purposes only once reaped; communicate() reaps it
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] == "Z"


@pytest.mark.parametrize("kind,did", [("memory", "bytes_copied"), ("link", "bytes_moved"),
                                      ("cpu", "elements_computed")])
def test_the_job_runs_inside_the_block_and_is_gone_after(kind, did):
    with external_load(kind) as job:
        assert job.pid is not None and not _gone(job.pid)
        assert job.report is None  # still running
        time.sleep(0.3)
    assert _gone(job.pid)
    assert job.report["kind"] == kind and job.report["seconds"] > 0.2
    assert job.report[did] > 10_000_000, job.report  # it did something: 10 MB (10 M elements) in 0.3 s at least


def test_the_job_stops_when_the_block_raises():
    with pytest.raises(KeyError), external_load("memory") as job:
        raise KeyError("boom")
    assert _gone(job.pid) and job.report["kind"] == "memory"  # it stopped and said so (maybe before a copy)


def test_no_load_starts_nothing():
    with external_load(None) as job:
        pass
    assert job.pid is None and job.report is None


@pytest.mark.parametrize("bad", ["disk", "", "Memory", 1, True])
def test_bad_loads_say_what_is_allowed(bad):
    with pytest.raises(ValueError, match=r"load must be None or one of \('memory', 'link', 'cpu'\)"):
        check_load(bad)
    with pytest.raises(ValueError, match="load must be"), external_load(bad):
        pass


def test_the_child_rejects_a_bad_kind(capsys):
    assert main(["disk"]) == 2
    assert "usage: python -m asafe.app.load {memory,link,cpu}" in capsys.readouterr().err
    assert set(LOADS) == {"memory", "link", "cpu"}


def test_a_phase_names_its_load():
    from asafe.app import workload as wl
    from benchmarks import phase_sets

    assert wl.Phase("p", scale=8, load="link").load == "link"
    with pytest.raises(ValueError, match="load must be"):
        wl.Phase("p", scale=8, load="disk")
    assert {p.load for p in phase_sets.phases_for("loaded")} == {None, "memory", "link"}
    assert {p.load for p in phase_sets.phases_for("loaded2")} == {None, *LOADS}
    for size in ("loaded", "loaded2"):
        loaded = phase_sets.phases_for(size)
        # each quiet phase is followed by the same graph under load: the environment alone changes
        for quiet, busy in zip(loaded, loaded[1:]):
            if quiet.load is None:
                assert busy.load is not None
                assert quiet.scaled(name=busy.name, description=busy.description, load=busy.load) == busy


# --------------------------------------------------------------------------- behind a shaped link
SCRIPT = textwrap.dedent("""
    import json, time
    from asafe.app import link
    from asafe.app.load import external_load

    link.enter("100mbit")  # re-executes this script inside a shaped namespace, then goes on
    alone = link.measure_throughput(2_500_000)
    with external_load("link") as job:
        time.sleep(0.2)
        beside = link.measure_throughput(2_500_000)
    print(json.dumps({"alone": alone["gbit_per_s"], "beside": beside["gbit_per_s"], "job": job.report}))
""")


def test_a_link_job_takes_a_share_of_a_shaped_link(run_behind_link):
    report, out = run_behind_link(SCRIPT, timeout=90)
    # alone, the flow gets the link (tbf's initial burst included); beside the job, clearly less of it
    assert report["beside"] < 0.8 * report["alone"], report
    # the job's own flow crossed the same link: at most the link's rate over its life, plus the burst
    job = report["job"]
    assert job is not None, f"the link job did not report (killed after {STOP_SECONDS} s?): {out.stderr[-2000:]}"
    assert 0 < job["bytes_moved"] <= 100e6 / 8 * job["seconds"] + 2 * link.parse_link("100mbit").burst_bytes
