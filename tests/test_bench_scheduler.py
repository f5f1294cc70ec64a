"""The scheduler suite (benchmarks/scheduler.py): every graph on tiny sizes, results checked; no timing asserted.

These check the harness only (the graphs compute the right thing, a wrong
result fails the run, the file has what the docs promise), never its numbers.
"""
from __future__ import annotations

import json
import math

import pytest
from distributed import Client, LocalCluster

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import scheduler


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        yield c


@pytest.mark.parametrize("name", scheduler.GRAPHS)
def test_every_graph_computes_what_its_check_expects(client, name):
    graph = scheduler.build_graph(name, 120, prefixes=7, fan_in=25, graphs=3)
    graph.check(client, graph.run(client))
    graph.check(client, graph.run(client))  # fresh keys each run: nothing served from memory
    assert graph.tasks >= (120 if name == "array-reduction" else 30)


def test_a_wrong_result_fails_the_check(client):
    graph = scheduler.build_graph("map-one-prefix", 50)
    futures = graph.run(client)
    with pytest.raises(AssertionError, match="results summing to"):
        graph.check(client, futures[:-1])
    fan = scheduler.build_graph("fan-in", 60, fan_in=9)
    with pytest.raises(AssertionError, match="group sums"):
        fan.check(client, list(reversed(fan.run(client))))


def test_many_prefixes_are_many_key_prefixes(client):
    from dask.utils import key_split

    graph = scheduler.build_graph("map-many-prefixes", 60, prefixes=12)
    futures = graph.run(client)
    assert len({key_split(f.key) for f in futures}) == 12
    one = scheduler.build_graph("map-one-prefix", 60).run(client)
    assert {key_split(f.key) for f in one} == {"inc"}


def test_bad_options_say_what_is_accepted(capsys):
    with pytest.raises(SystemExit):
        scheduler.main(["--tasks", "lots"])
    assert "comma-separated whole numbers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        scheduler.main(["--graph", "ring"])
    assert "invalid choice: 'ring'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown graph 'ring'; choose from map-one-prefix"):
        scheduler.build_graph("ring", 10)


def test_quick_run_of_every_graph_writes_checked_results(tmp_path, capsys):
    status = scheduler.main(["--quick", "--tasks", "150", "--prefixes", "10", "--fan-in", "30", "--graphs", "3",
                             "--min-rounds", "1", "--max-rounds", "1", "--pushes", "5", "--out", str(tmp_path)])
    assert status == 0
    data = json.loads((tmp_path / "scheduler" / "scheduler-2w-processes.json").read_text())
    records = data["records"]
    assert data["environment"]["cluster"]["worker_processes"] == 2
    assert data["environment"]["load_average"] and data["environment"]["load_average_at_end"]
    for graph in scheduler.GRAPHS:
        (key,) = [k for k in records if k.startswith(graph + "-")]
        r = records[key]
        for variant in ("dask", "asafe"):
            (sample,) = r["samples"][variant]
            assert sample["wall_s"] > 0 and sample["cpu_s"] > 0 and sample["tasks_per_s"] > 0
            assert r["measurements"][variant]["failed"] is None
        assert set(r["ratios"]) == {"throughput", "cpu_per_task", "rss_per_task"}
        assert r["ratios"]["throughput"]["asafe_over_dask"] > 0
        assert r["tracemalloc"]["bytes_per_task"]["dask"] > 0
    push = records["state_push"]
    assert push["lost"] == 0 and not math.isnan(float(push["p99_s"]))
    assert push["measurement"]["n"] == 5 * 2  # every transition reached both workers


def test_in_process_workers(tmp_path):
    status = scheduler.main(["--quick", "--workers", "6", "--in-process", "--graph", "map-one-prefix", "--tasks",
                             "100", "--min-rounds", "1", "--max-rounds", "1", "--tracemalloc-rounds", "0",
                             "--pushes", "3", "--out", str(tmp_path)])
    assert status == 0
    data = json.loads((tmp_path / "scheduler" / "scheduler-6w-inprocess.json").read_text())
    assert data["environment"]["cluster"]["worker_processes"] == 1
    push = data["records"]["state_push"]
    assert push["measurement"]["n"] == 3 * 6
    assert push["baseline"]["n"] == 3 * 6 and push["baseline_lost"] == 0  # Dask's own message, to every worker
    assert "tracemalloc" not in data["records"]["map-one-prefix-100"]


def test_push_only_runs_no_graph_and_refuses_one(tmp_path, capsys):
    status = scheduler.main(["--push-only", "--workers", "4", "--in-process", "--pushes", "4", "--out", str(tmp_path)])
    assert status == 0
    records = json.loads((tmp_path / "scheduler" / "scheduler-4w-inprocess.json").read_text())["records"]
    assert set(records) == {"scheduler_idle_cpu_per_s", "state_push"}
    assert records["state_push"]["measurement"]["n"] == records["state_push"]["baseline"]["n"] == 4 * 4
    with pytest.raises(SystemExit):
        scheduler.main(["--push-only", "--graph", "fan-in"])
    assert "--push-only runs no graphs" in capsys.readouterr().err


def test_doctests_of_the_scheduler_suite():
    import doctest

    failures, _ = doctest.testmod(scheduler, optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_a_run_never_writes_over_an_earlier_runs_results(tmp_path):
    folder = tmp_path / "scheduler"
    folder.mkdir()
    names = []
    for _ in range(3):
        path = scheduler.result_path(folder, "2w-processes")
        path.write_text("{}")
        names.append(path.name)
    assert names == ["scheduler-2w-processes.json", "scheduler-2w-processes-2.json", "scheduler-2w-processes-3.json"]
