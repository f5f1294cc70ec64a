"""What a user watches on a real LocalCluster: the dashboard page, /metrics, handle.explain.

The cluster's dashboard runs on a free port (bokeh and prometheus_client are in
the ``test`` extra); the page is fetched over HTTP as a browser would, and its
Bokeh document is pulled over the page's websocket to check what it holds.
"""
from __future__ import annotations

import json
import logging
import time
import urllib.request

import numpy as np
import pytest

import asafe

pytest.importorskip("bokeh")
pytest.importorskip("prometheus_client")
pytestmark = pytest.mark.timeout(180)


def _get(base, path):
    with urllib.request.urlopen(base + path, timeout=30) as reply:
        return reply.status, reply.read().decode()


def _base(cluster):
    return cluster.dashboard_link.rsplit("/", 1)[0]


def _metrics(base):
    """``{name{labels}: value}`` of the asafe lines of /metrics."""
    _, body = _get(base, "/metrics")
    out = {}
    for line in body.splitlines():
        if line.startswith("dask_asafe_"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def _pull(base):
    from bokeh.client import pull_session
    from bokeh.models import ColumnDataSource, Div

    with pull_session(url=base + "/individual-asafe") as session:
        doc = session.document
        divs = " ".join(div.text for div in doc.select({"type": Div}))
        sources = list(doc.select({"type": ColumnDataSource}))
        return divs, sources


def _shipped(i):
    time.sleep(0.02)  # communication dominates the measured work: compression switches on
    return np.full(20_000, float(i))


def _ship_phase(client):
    with asafe.task_type(asafe.COMMUNICATION):
        panels = client.map(_shipped, range(12), pure=False)
    return client.gather(client.map(np.sum, panels, pure=False))


def _wait(predicate, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_the_page_metrics_and_explanations_of_an_installation(cluster, client, installed, make_runtime):
    base = _base(cluster)
    rt = make_runtime(alpha=0.5, beta=2.0)
    with installed(client, rt) as handle:
        _ship_phase(client)
        assert _wait(lambda: handle.state("compression") is True), handle.explain("compression")
        # listed for dask-labextension, served as a Bokeh page
        status, plots = _get(base, "/individual-plots.json")
        assert status == 200 and json.loads(plots)["Individual Asafe"] == "/individual-asafe"
        status, body = _get(base, "/individual-asafe")
        assert status == 200 and "Dask: asafe" in body and "Bokeh" in body
        time.sleep(1.2)  # one refresh of the page
        divs, sources = _pull(base)
        assert "asafe" in divs and "<b>compression</b> on" in divs
        assert "Why each optimization is in its state" in divs and "Hysteresis: ratio =" in divs
        transitions = [s for s in sources if "optimization" in s.data and "to" in s.data]
        assert transitions and transitions[0].data["to"][-1] == "on"
        ratio = [s for s in sources if set(s.data) == {"time", "value"}]
        assert ratio and len(ratio[0].data["time"]) > 0
        # /metrics: the state, the transitions, the mode
        found = _metrics(base)
        assert found['dask_asafe_installed'] == 1.0
        assert found['dask_asafe_state{optimization="compression",value=""}'] == 1.0
        assert found['dask_asafe_transitions_total{optimization="compression"}'] == len(handle.history)
        assert 0 <= found["dask_asafe_mode_ratio"] < 0.5
        assert 'dask_asafe_saved_bytes_total{compression="wire-compression"}' in found
        # explain from the scheduler: plain data and text
        explained = handle.explain("compression")
        assert explained["state"] is True and explained["domain"]["metric"] == "ratio"
        assert str(explained).splitlines()[1].strip().startswith("Hysteresis: ratio = ")
        with pytest.raises(KeyError, match="known: \\['compression'\\]"):
            handle.explain("compresion")
    # uninstalled: the page says so, the metrics too, the workers' counters are gone
    divs, _ = _pull(base)
    assert "asafe is not installed on this scheduler" in divs
    assert _metrics(base)["dask_asafe_installed"] == 0.0
    assert not any(client.run(lambda dask_worker: "asafe-wire-counters" in dask_worker.metrics).values())


class _Malformed(asafe.EfficiencyDomain):
    """A user domain whose explain returns what no view can read."""

    def decide(self, mode, state):
        return False

    def explain(self, mode, state):
        return {"domain": "Malformed", "asks": False, "parts": 5}


def test_a_failing_part_is_counted_and_the_views_still_answer(cluster, client, installed):
    from asafe.schedulers.observe import FAILURES

    base = _base(cluster)
    before = dict(FAILURES.counts)
    rt = asafe.AdaptiveRuntime([asafe.Optimization("odd", _Malformed())], signals=False)
    with installed(client, rt):
        _ship_phase(client)
        status, _ = _get(base, "/individual-asafe")
        assert status == 200
        time.sleep(1.2)
        divs, _ = _pull(base)
        assert "asafe" in divs
        found = _metrics(base)  # the scheduler's own metrics and the view errors still come
        assert found["dask_asafe_installed"] == 1.0
    grown = {part for part, count in FAILURES.counts.items() if count > before.get(part, 0)}
    assert {"dashboard-thresholds", "dashboard-why"} <= grown, FAILURES.counts
    assert found['dask_asafe_view_errors_total{part="dashboard-why"}'] >= 1


def test_the_default_runtime_warns_nothing_on_a_cluster(cluster, client, installed, caplog):
    # the scheduler runs in this process (LocalCluster): its asafe log lines are captured here
    with caplog.at_level(logging.WARNING, logger="asafe"):
        with installed(client, asafe.AdaptiveRuntime()) as handle:
            _ship_phase(client)
            assert handle.timeline
    assert [r.getMessage() for r in caplog.records if r.name.startswith("asafe")] == []


def test_asafe_info_on_a_scheduler_with_and_without_asafe(cluster, client, installed, make_runtime):
    from click.testing import CliRunner

    from asafe.app.cli import main

    address = cluster.scheduler_address
    without = CliRunner().invoke(main, ["info", address])
    assert without.exit_code == 1 and without.output.count("\n") == 1
    assert f"asafe is not installed on the scheduler at {address}" in without.output
    with installed(client, make_runtime(alpha=0.5, beta=2.0)) as handle:
        _ship_phase(client)
        assert _wait(lambda: handle.state("compression") is True)
        done = CliRunner().invoke(main, ["info", address])
        assert done.exit_code == 0, done.output
        text = done.output
        assert "asafe settings (scheduler " + address in text
        assert "compression = on, 1 transitions; Hysteresis(alpha=0.5, beta=2.0, metric='ratio')" in text
        assert "dashboard page: /individual-asafe" in text and "2 holding the states" in text
        why = text.split("why:\n", 1)[1].splitlines()
        assert why[0].startswith("  compression: on") and why[1].strip().startswith("Hysteresis: ratio = ")
        as_json = CliRunner().invoke(main, ["info", address, "--json"])
        assert '"holding_states": 2' in as_json.output
