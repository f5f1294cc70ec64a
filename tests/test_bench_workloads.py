"""The public-workloads suite (benchmarks/workloads.py): its data kinds, result checks, targets and a --quick run.

No timing is asserted anywhere: the run on a real LocalCluster checks that the
harness runs every variant on every data kind, compares every result with plain
Dask's, records what it must, and that a variant returning a wrong result is
reported as failed and never timed.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import _workloads_cluster as wl_cluster
from benchmarks import _workloads_defs as wl_defs
from benchmarks import workloads as wl

shapes = st.tuples(st.integers(1, 40), st.integers(1, 40))


# --------------------------------------------------------------------------- data kinds
@settings(max_examples=60, deadline=None)
@given(shape=shapes, fraction=st.floats(0.0, 1.0), seed=st.integers(0, 2**31 - 1))
def test_the_zeros_kind_has_exactly_its_fraction_of_zeros_and_no_other(shape, fraction, seed):
    block = wl.zeros_block(np.random.default_rng(seed), shape, fraction)
    assert block.shape == shape and block.dtype == np.float64
    assert int((block == 0.0).sum()) == round(fraction * block.size)


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 500), fraction=st.sampled_from([0.1, 0.5, 0.9]), seed=st.integers(0, 1000))
def test_every_partition_of_a_zeros_frame_has_the_fraction(rows, fraction, seed):
    df = wl.kind_frame("zeros", rows, 2, 8, seed=seed, zero_fraction=fraction).compute(scheduler="sync")
    for column in ("x", "y"):
        for part in (df[column].to_numpy()[:rows], df[column].to_numpy()[rows:]):
            assert int((part == 0.0).sum()) == round(fraction * rows)


def test_a_zero_fraction_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match=r"zero fraction must be in \[0, 1\], got 1.5"):
        wl.zeros_block(np.random.default_rng(0), (4,), 1.5)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, i=st.integers(0, 10_000), j=st.integers(0, 10_000), seed=st.integers(0, 1000))
def test_the_smooth_kind_is_low_precision_bounded_smooth_and_one_field(shape, i, j, seed):
    block = wl.smooth_block(seed, (i, j), shape)
    steps = block / wl.SMOOTH_STEP
    assert np.array_equal(steps, np.round(steps))  # multiples of 1/1024
    assert np.abs(block).max() <= 1.5 + wl.SMOOTH_STEP
    # neighbours differ by at most the field's slope plus one rounding step
    for axis in (0, 1):
        if block.shape[axis] > 1:
            assert np.abs(np.diff(block, axis=axis)).max() <= 0.025 + wl.SMOOTH_STEP
    # a block is the same part of the field wherever it is cut
    whole = wl.smooth_block(seed, (i, j), (shape[0] + 3, shape[1] + 2))
    assert np.array_equal(wl.smooth_block(seed, (i + 3, j + 2), shape), whole[3:, 2:])


def test_the_smooth_kind_has_few_distinct_values():
    block = wl.make_block("smooth", (600, 600), (0, 0), seed=3)
    assert len(np.unique(block)) <= 3 * 1024 + 1


@settings(max_examples=30, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**31 - 1))
def test_the_ints_kind_is_int64_ids_with_few_distinct_values(shape, seed):
    block = wl.make_block("ints", shape, (0, 0), seed)
    assert block.dtype == np.int64 and block.min() >= 0 and block.max() < wl.INT_DISTINCT


def test_a_block_depends_only_on_its_seed_and_position():
    for kind in wl.DATA_KINDS:
        a = wl.make_block(kind, (50, 40), (100, 0), seed=7)
        assert np.array_equal(a, wl.make_block(kind, (50, 40), (100, 0), seed=7)), kind
        assert not np.array_equal(a, wl.make_block(kind, (50, 40), (150, 0), seed=7)), kind
        assert not np.array_equal(a, wl.make_block(kind, (50, 40), (100, 0), seed=8)), kind
    with pytest.raises(ValueError, match="unknown data kind 'sparse'; allowed: random, zeros, smooth, ints"):
        wl.kind_array("sparse", (4, 4), (2, 2), seed=0)


def test_an_array_is_its_blocks_made_where_they_are():
    x = wl.kind_array("zeros", (30, 20), (10, 20), seed=5, zero_fraction=0.25)
    values = x.compute(scheduler="sync")
    for start in (0, 10, 20):
        assert np.array_equal(values[start:start + 10], wl.make_block("zeros", (10, 20), (start, 0), 5, 0.25))
    assert int((values == 0).sum()) == 3 * round(0.25 * 200)


def test_frames_of_each_kind_have_their_dtypes_and_the_unique_table_every_id_once():
    for kind in wl.DATA_KINDS:
        df = wl.kind_frame(kind, 50, 3, 40, seed=1).compute(scheduler="sync")
        assert list(df.columns) == ["id", "x", "y"] and len(df) == 150
        if kind == "ints":
            assert pd.api.types.is_string_dtype(df["id"]) and df["x"].dtype == np.int64
            assert df["id"].str.startswith("id-").all() and df["x"].nunique() <= wl.INT_DISTINCT
        else:
            assert df["id"].dtype == np.int64 and df["x"].dtype == np.float64
            assert df["id"].between(0, 39).all()
    right = wl.kind_frame("random", 10, 4, 40, seed=1, unique=True).compute(scheduler="sync")
    assert sorted(right["id"]) == list(range(40)) and list(right.columns) == ["id", "z"]
    with pytest.raises(ValueError, match="n_ids == rows \\* partitions"):
        wl.kind_frame("random", 10, 4, 41, seed=1, unique=True)


# --------------------------------------------------------------------------- result checks
def test_array_digests_compare_bits_or_segment_sums():
    x = np.random.default_rng(0).standard_normal((64, 32))
    ref = [wl.array_digest(x)]
    assert wl.compare_digests(ref, [wl.array_digest(x.copy())], exact=True) is None
    nudged = x.copy()
    nudged[5, 5] = np.nextafter(nudged[5, 5], np.inf)
    assert wl.compare_digests(ref, [wl.array_digest(nudged)], exact=True) == "part 0: sha1 differs"
    assert wl.compare_digests(ref, [wl.array_digest(nudged)], exact=False) is None  # within rtol
    wrong = x.copy()
    wrong[5, 5] += 1e-3
    assert "segment sum" in wl.compare_digests(ref, [wl.array_digest(wrong)], exact=False)
    assert "dtype differs" in wl.compare_digests(ref, [wl.array_digest(x.astype(np.float32))], exact=False)


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 200), seed=st.integers(0, 1000))
def test_a_frame_digest_ignores_row_order_and_sees_one_changed_value(rows, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"id": rng.integers(0, 50, rows), "x": rng.standard_normal(rows)})
    shuffled = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    assert wl.compare_digests([wl.frame_digest(df)], [wl.frame_digest(shuffled)], exact=True) is None
    changed = shuffled.copy()
    changed.loc[0, "x"] += 1.0
    assert wl.compare_digests([wl.frame_digest(df)], [wl.frame_digest(changed)], exact=True) == "part 0: hash differs"
    fewer = wl.frame_digest(shuffled.iloc[1:])
    assert wl.compare_digests([wl.frame_digest(df)], [fewer], exact=True).startswith("part 0: rows differs")


def test_a_sorted_frame_digest_allows_float_reordering_but_not_wrong_keys():
    agg = pd.DataFrame({"x": [0.1 + 0.2, 3.0], "y": [1.0, 2.0]}, index=pd.Index([2, 1], name="id"))
    reordered = pd.DataFrame({"x": [3.0, 0.3], "y": [2.0, 1.0]}, index=pd.Index([1, 2], name="id"))
    ref = [wl.frame_digest(agg, "id")]
    assert wl.compare_digests(ref, [wl.frame_digest(reordered, "id")], exact=False) is None
    other_keys = reordered.rename(index={1: 5})
    assert wl.compare_digests(ref, [wl.frame_digest(other_keys, "id")], exact=False) == "part 0: keys differs"


# --------------------------------------------------------------------------- targets
EXACT = {"ratio": 1.0, "exact": True}


@pytest.mark.parametrize("ci,expected", [
    ((0.99, 1.05), "met"),          # clears 0.98
    ((0.985, 0.995), "not met"),    # clears 0.98 but lies wholly below 1
    ((0.90, 0.97), "not met"),
    ((0.96, 1.01), "not shown"),    # straddles 0.98
])
def test_target_a_needs_the_interval_to_clear_098_and_not_lie_below_one(ci, expected):
    assert wl.target_a({**EXACT, "ci95": list(ci)}) == expected
    assert wl.target_a({**EXACT, "ci95": list(ci), "exact": False}) == "not shown"


@pytest.mark.parametrize("speedup,of_best,expected", [
    ((1.35, 1.6), (0.95, 1.05), "met"),
    ((1.2, 1.6), (0.95, 1.05), "not shown"),    # straddles 1.3
    ((1.35, 1.6), (0.80, 0.90), "not met"),     # more than 10% slower than the best static codec
    ((1.0, 1.2), (0.95, 1.05), "not met"),
])
def test_target_b_needs_both_intervals_clear(speedup, of_best, expected):
    got = wl.target_b({**EXACT, "ci95": list(speedup)}, {**EXACT, "ci95": list(of_best)}, kind="smooth",
                      link_bits=1e9, transfer_bound=True)
    assert got == expected


def test_target_b_applies_only_behind_1gbit_to_transfer_bound_compressible_data():
    good = {**EXACT, "ci95": [1.4, 1.5]}
    assert wl.target_b(good, good, kind="smooth", link_bits=None, transfer_bound=None).startswith("n/a")
    assert wl.target_b(good, good, kind="smooth", link_bits=1e10, transfer_bound=True).startswith("n/a")
    assert wl.target_b(good, good, kind="random", link_bits=1e9, transfer_bound=True) == "n/a: random data"
    assert wl.target_b(good, good, kind="ints", link_bits=1e9, transfer_bound=False) == "n/a: not transfer-bound"


def _samples(seconds: dict[str, list[float]], link_bytes: int | None = None) -> dict:
    return {"samples": [{"variant": v, "seconds": s, "link_bytes": link_bytes}
                        for v, values in seconds.items() for s in values], "failed": {}}


def test_the_summary_pairs_rounds_picks_the_best_static_codec_and_measures_transfer_bound():
    variants = ["dask", "asafe", "static-lz4", "static-zstd"]
    asafe = [1.4, 1.5, 1.4, 1.45, 1.4, 1.5]
    result = _samples({"dask": [2.0] * 6, "asafe": asafe, "static-lz4": [1.6] * 6, "static-zstd": [1.4] * 6},
                      link_bytes=200_000_000)
    s = wl.summarize_workload(result, variants, kind="zeros", link_bits=1e9)
    assert s["best_static"] == "static-zstd"
    assert s["vs_dask"]["static-zstd"]["ratio"] == pytest.approx(2.0 / 1.4)
    assert s["vs_dask"]["asafe"]["exact"] and s["vs_dask"]["asafe"]["ci95"][0] >= 1.3
    assert s["asafe_vs_best"]["ratio"] == pytest.approx(np.median(1.4 / np.array(asafe)))  # per round
    assert s["transfer_share"] == pytest.approx(0.8)  # 1.6 s of link time in 2 s
    assert s["transfer_bound"] is True
    assert s["targets"] == {"a": "met", "b": "met"}
    # the same samples on the loopback: nothing is called transfer-bound, (b) does not apply
    lo = wl.summarize_workload(_samples({"dask": [2.0] * 6, "asafe": [2.0] * 6}), ["dask", "asafe"], kind="zeros",
                               link_bits=None)
    assert lo["transfer_bound"] is None and lo["targets"]["b"].startswith("n/a")
    assert lo["targets"]["a"] == "met" and lo["best_static"] is None


def test_the_table_says_where_no_static_codec_reaches_target_b(tmp_path):
    from benchmarks.analysis import workloads_table

    variants = ["dask", "asafe", "static-lz4", "static-zstd"]
    unreachable = _samples({"dask": [2.0] * 6, "asafe": [2.0] * 6, "static-lz4": [2.2] * 6,
                            "static-zstd": [2.4] * 6}, link_bytes=200_000_000)
    reachable = _samples({"dask": [2.0] * 6, "asafe": [1.9] * 6, "static-lz4": [1.2] * 6,
                          "static-zstd": [1.4] * 6}, link_bytes=200_000_000)
    workloads = {}
    for name, result in (("hard", unreachable), ("easy", reachable)):
        result["analysis"] = wl.summarize_workload(result, variants, kind="zeros", link_bits=1e9)
        workloads[name] = result
    assert workloads["hard"]["analysis"]["targets"]["b"] == workloads["easy"]["analysis"]["targets"]["b"] == "not met"
    (tmp_path / "workloads-1gbit-zeros.json").write_text(json.dumps({
        "started": "2026-11-25T00:00:00Z", "wall_s": 60.0, "load_average": {"start": [1.0], "end": [1.0]},
        "workloads": workloads}))
    text = workloads_table.table(tmp_path, "1gbit")
    hard = next(line for line in text.splitlines() if line.startswith("| hard |"))
    easy = next(line for line in text.splitlines() if line.startswith("| easy |"))
    assert "no codec reaches 1.3x" in hard and "no codec" not in easy
    assert "either: hard/zeros" in text


def test_a_failed_variant_is_left_out_of_the_summary():
    result = _samples({"dask": [2.0] * 6, "asafe": [1.0] * 6})
    result["failed"] = {"asafe": "wrong result on round 0: part 0: sha1 differs"}
    s = wl.summarize_workload(result, ["dask", "asafe"], kind="zeros", link_bits=None)
    assert "asafe" not in s["summary"] and s["targets"]["a"] == "no result"


def _rows(ratios_per_row, rounds=9):
    return [{"samples": [{"variant": v, "round": i, "seconds": t} for i in range(rounds)
                         for v, t in (("dask", 1.0), ("asafe", 1.0 / ratios[i % len(ratios)]))]}
            for ratios in ratios_per_row]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(0.5, 2.0), min_size=1, max_size=9), min_size=1, max_size=12),
       st.floats(0.5, 2.0))
def test_the_pooled_speedup_is_the_geometric_mean_of_row_medians_and_scales_with_them(ratios_per_row, factor):
    pooled = wl.pooled_speedup(_rows(ratios_per_row))
    medians = [np.median(np.log([r[i % len(r)] for i in range(9)])) for r in ratios_per_row]
    assert pooled["ratio"] == pytest.approx(math.exp(np.mean(medians)))
    # every resample's median lies between its row's smallest and largest ratio: so does the interval
    lowest = math.exp(np.mean([math.log(min(r)) for r in ratios_per_row]))
    highest = math.exp(np.mean([math.log(max(r)) for r in ratios_per_row]))
    low, high = pooled["ci95"]
    assert lowest * (1 - 1e-9) <= low <= high <= highest * (1 + 1e-9)
    scaled = wl.pooled_speedup(_rows([[x * factor for x in r] for r in ratios_per_row]))
    assert scaled["ratio"] == pytest.approx(pooled["ratio"] * factor)  # one common factor moves it by that factor
    assert wl.pooled_speedup(_rows(ratios_per_row)) == pooled  # seeded: the same interval every time


def test_the_pooled_speedup_counts_rows_on_either_side_and_skips_unpaired_rows():
    rows = _rows([[0.9], [1.1], [1.0]]) + [{"samples": [{"variant": "dask", "round": 0, "seconds": 1.0}]}]
    pooled = wl.pooled_speedup(rows)
    assert (pooled["rows"], pooled["rows_below_1"], pooled["rows_above_1"]) == (3, 1, 1)
    assert wl.pooled_speedup(rows, "static-lz4") is None
    for row in rows:  # the same rows against another base: plain Dask's samples renamed
        for sample in row["samples"]:
            sample["variant"] = {"dask": "dask-control"}.get(sample["variant"], sample["variant"])
    assert wl.pooled_speedup(rows, base="dask-control")["ratio"] == pytest.approx(pooled["ratio"])
    assert wl.pooled_speedup(rows) is None  # no plain Dask samples left


def test_the_control_variant_is_plain_dask_and_asked_for_by_name():
    assert wl_cluster.CONTROL not in wl_cluster.variant_names()  # not in the default variants
    assert wl_cluster._install(None, wl_cluster.CONTROL) is None  # nothing installed: plain Dask again
    assert wl_cluster._expected_state(wl_cluster.CONTROL) is None  # and checked to find no asafe state


def test_the_options_refuse_unknown_names_with_the_allowed_ones(capsys):
    for option, value, allowed in (("--variants", "dask,gzip", "static-"), ("--data", "sparse", "random, zeros"),
                                   ("--workloads", "fft", "rechunk-tasks"), ("--zero-fraction", "1.5", "[0, 1]")):
        with pytest.raises(SystemExit) as info:
            wl.main([option, value])
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert option in err and allowed in err


# --------------------------------------------------------------------------- on a cluster
def _add_one_when_compressing(block):
    import asafe

    return block + 1 if asafe.is_on("wire-compression") else block


@pytest.fixture(scope="module")
def client():
    import cloudpickle
    from distributed import Client, LocalCluster

    from asafe.schedulers import wire

    wire.disable()  # an earlier test of this process may have left asafe's serializers in place
    cloudpickle.register_pickle_by_value(wl)
    cloudpickle.register_pickle_by_value(__import__(__name__))
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
                Client(cluster) as c:
            c.wait_for_workers(2)
            yield c
    finally:
        cloudpickle.unregister_pickle_by_value(wl)
        cloudpickle.unregister_pickle_by_value(__import__(__name__))


def test_a_variant_with_a_wrong_result_is_failed_never_timed_and_leaves_nothing_behind(client):
    codec = wl.codec_states()[0]
    wrong = wl.Workload(
        "wrong-when-compressing", "array", "adds 1 where wire-compression is on",
        prepare=lambda c, spec: wl_defs._persist(c, x=wl.kind_array(spec.kind, (64, 64), (16, 64), 1)),
        run=lambda c, inputs, spec: [inputs["x"].map_blocks(_add_one_when_compressing, dtype=np.float64)])
    variants = ["dask", f"static-{codec}"]
    result = wl.run_workload(client, wrong, wl.Spec("random", 1), variants, rounds=2, log=lambda line: None)
    assert list(result["failed"]) == [f"static-{codec}"], result["failed"]
    assert result["failed"][f"static-{codec}"].startswith("wrong result on warm-up: part 0: sha1 differs")
    assert [s["variant"] for s in result["samples"]] == ["dask", "dask"]
    assert f"static-{codec}" not in result["warmup"]
    # every worker is back to plain Dask: no serializers wrapped, no state
    for state in client.run(wl_cluster._worker_wire_state).values():
        assert state == {"enabled": False, "on": False, "state": None}
    assert wl_cluster._check_state(client, "dask") is None
    # the outputs and inputs are forgotten
    assert not client.run_on_scheduler(lambda dask_scheduler: [k for k in dask_scheduler.tasks if "add_one" in str(k)])


def test_plain_dask_refuses_to_run_after_a_variant_left_its_state(client):
    import asafe

    codec = wl.codec_states()[0]
    handle = asafe.install(client, asafe.AdaptiveRuntime(
        [asafe.Optimization("wire-compression", asafe.Fixed(codec), initial=codec)]))
    try:
        assert wl_cluster._check_state(client, f"static-{codec}") is None
        with pytest.raises(RuntimeError, match="the dask variant would see asafe left by the previous variant"):
            wl_cluster._check_state(client, "dask")
    finally:
        wl_cluster._uninstall(client, handle)
    assert wl_cluster._check_state(client, "dask") is None


def test_quick_run_of_two_workloads_on_every_data_kind(tmp_path, capsys):
    codec = wl.codec_states()[0]
    variants = ["dask", "asafe", f"static-{codec}"]
    workloads = ["rechunk-tasks", "groupby"]  # bits compared, and frames compared sorted with a tolerance
    status = wl.main(["--quick", "--mib", "1", "--rounds", "1", "--workloads", ",".join(workloads),
                      "--variants", ",".join(variants), "--out", str(tmp_path)])
    assert status == 0
    out = capsys.readouterr().out
    assert "asafe speedup" in out and "(a) asafe >= 0.98x plain Dask" in out
    for kind in wl.DATA_KINDS:
        data = json.loads((tmp_path / "workloads" / f"workloads-loopback-{kind}.json").read_text())
        assert data["data"] == kind and data["link"] == "loopback" and data["options"]["variants"] == variants
        env = data["environment"]
        assert env["load_average_at_start"] is not None and data["load_average"]["end"] is not None
        assert "commit" in env["git"] and env["workers"] == 2
        assert list(data["workloads"]) == workloads
        for name in workloads:
            result = data["workloads"][name]
            assert result["failed"] == {}, (kind, name, result["failed"])
            assert sorted(result["warmup"]) == sorted(variants)
            assert sorted(s["variant"] for s in result["samples"]) == sorted(variants)  # one round
            for sample in result["samples"]:
                assert sample["seconds"] > 0 and "compressed_frames" in sample["wire"]
                assert len(sample["wire_per_worker"]) == 2 and sample["spread_inputs"] >= 0
                if name != "groupby":  # the others must give plain Dask's bits
                    assert sample["identical"], (kind, name, sample["variant"])
                if sample["variant"] != "dask":
                    assert "state_at_end" in sample
            analysis = result["analysis"]
            assert set(analysis["vs_dask"]) == set(variants) - {"dask"}
            assert not analysis["vs_dask"]["asafe"]["exact"]  # one round: no 95% interval, nothing claimed
            assert analysis["targets"]["a"] == "not shown" and analysis["targets"]["b"].startswith("n/a")
            assert not math.isnan(analysis["summary"]["dask"]["median_s"])


def test_doctests_of_the_suite():
    import doctest

    from benchmarks import _workloads_data, _workloads_targets

    failures = tried = 0
    for module in (wl, _workloads_data, wl_defs, wl_cluster, _workloads_targets):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        failures, tried = failures + result.failed, tried + result.attempted
    assert failures == 0 and tried >= 30
