"""The phased Graph500 workload (asafe.app.workload): matrices, tasks, and every phase on a LocalCluster.

No timing assertions: the workload's performance is measured by ``asafe demo``
and ``python -m benchmarks phased``. Here every phase must give scipy's answer
with compression on, off and adaptive, and the placement must move (or not
move) the panels between worker processes as it says.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import asafe
from asafe.app import comparison, runner, variants
from asafe.app import workload as wl
from asafe.core.types import type_of_callable
from benchmarks import phase_sets
from benchmarks import variants as evaluation_variants

pytestmark = pytest.mark.timeout(180)


# ----------------------------------------------------------------------------- in process
def test_phase_validation():
    with pytest.raises(ValueError, match="placement"):
        wl.Phase("p", scale=8, placement="remote")
    with pytest.raises(ValueError, match="fill"):
        wl.Phase("p", scale=8, fill=0.0)
    with pytest.raises(ValueError, match="steps"):
        wl.Phase("p", scale=8, steps=0)
    with pytest.raises(ValueError, match="dense_fraction"):
        wl.Phase("p", scale=8, dense_fraction=1.5)
    with pytest.raises(ValueError, match="name"):
        wl.Phase("", scale=8)
    with pytest.raises(ValueError, match="load"):
        wl.Phase("p", scale=8, load="disk")
    with pytest.raises(ValueError, match="size"):
        wl.phases_for("huge")


@pytest.mark.parametrize("size", ["default", "quick", "test", "calibration", "heldout", "heldout2", "heldout3",
                                  "heldout4", "heldout5", "calibration2", "loaded", "loaded2"])
def test_presets_have_four_phases_of_both_placements(size):
    phases = phase_sets.phases_for(size)
    assert len(phases) >= 4
    assert {p.placement for p in phases} == {"shipped", "local"}
    assert len({p.name for p in phases}) == len(phases)
    # the balance changes for several reasons: scale, density, reuse
    assert len({p.scale for p in phases}) > 1 or size == "test"
    assert len({(p.dense_fraction, p.fill) for p in phases}) > 1
    assert len({p.vectors for p in phases}) > 1


def test_tasks_are_typed():
    assert type_of_callable(wl.produce_panel) == asafe.COMPUTE
    assert type_of_callable(wl.multiply_panel) == asafe.COMPUTE
    assert type_of_callable(wl.produce_and_multiply) == asafe.COMPUTE
    assert type_of_callable(wl.normalize) == asafe.COMMUNICATION


@pytest.mark.parametrize("fill", [1.0, 0.3])
def test_matrix_and_slabs(fill):
    source = wl.PhaseMatrix(scale=8, tile=32, dense_fraction=0.5, fill=fill, seed=3)
    S = source.matrix()
    assert S.shape == (256, 256) and sp.isspmatrix_csr(S)
    assert source.matrix() is S  # cached in the process
    assert np.all(S.data > 0)
    dense = S.toarray()
    for lo, hi in wl.panel_bounds(8, 3):
        np.testing.assert_array_equal(source.slab(lo, hi), dense[lo * 32:hi * 32])
    blocks = asafe.compression.graph500.dense_tiles(8, 32, 0.5, seed=3)
    i, j = blocks[0]
    block = dense[i * 32:(i + 1) * 32, j * 32:(j + 1) * 32]
    if fill == 1.0:
        assert np.count_nonzero(block) == 32 * 32
    else:
        assert 0.2 < np.count_nonzero(block) / block.size < 0.4
    again = wl.PhaseMatrix(8, 32, 0.5, fill, seed=3)
    wl.clear_cache()
    np.testing.assert_array_equal(again.matrix().toarray(), dense)  # deterministic


@pytest.mark.parametrize("compress", [False, True])
def test_panels_are_independent_of_the_work_buffer(compress):
    # the producer's dense block is a reused per-thread buffer: panels must own their data
    source = wl.PhaseMatrix(scale=8, tile=32, dense_fraction=0.3, fill=0.3)
    dense = source.matrix().toarray()
    first = wl.produce_panel(source, 0, 2, compress)
    second = wl.produce_panel(source, 2, 4, compress)
    np.testing.assert_array_equal(first.to_dense(), dense[:64])
    np.testing.assert_array_equal(second.to_dense(), dense[64:128])


def test_compression_decides_the_panel_form():
    sparse = wl.PhaseMatrix(scale=9, tile=64, dense_fraction=0.0)
    off = wl.produce_panel(sparse, 0, 2, False)
    on = wl.produce_panel(sparse, 0, 2, True)
    assert off.tile_summary()["dense"]["tiles"] == off.grid[0] * off.grid[1]
    assert on.tile_summary()["dense"]["tiles"] == 0
    assert on.nbytes < off.nbytes / 10 and on.logical_nbytes == off.logical_nbytes
    denseish = wl.PhaseMatrix(scale=8, tile=64, dense_fraction=1.0, fill=0.3)
    assert wl.produce_panel(denseish, 0, 1, True).tile_summary()["sparse"]["tiles"] == 4  # candidates
    full = wl.PhaseMatrix(scale=8, tile=64, dense_fraction=1.0, fill=1.0)
    assert wl.produce_panel(full, 0, 1, True).tile_summary()["dense"]["tiles"] == 4  # inspected, kept dense


def test_reference_is_the_power_iteration():
    phase = wl.Phase("p", scale=7, tile=32, dense_fraction=0.2, steps=3, vectors=2, panels=2)
    D = phase.source().matrix().toarray()
    X = wl.initial_vectors(phase.n, 2)
    assert np.allclose(np.linalg.norm(X, axis=0), 1.0) and not np.allclose(X[:, 0], X[:, 1])
    for _ in range(3):
        X = D @ X
        X /= np.linalg.norm(X, axis=0)
    np.testing.assert_allclose(wl.reference(phase), X, rtol=1e-12)
    wl.check_result(phase, X)
    with pytest.raises(AssertionError, match="differs from scipy"):
        wl.check_result(phase, X * 1.001)
    with pytest.raises(AssertionError, match="shape"):
        wl.check_result(phase, X[:, 0])


def test_placement_needs_two_workers_to_ship():
    with pytest.raises(ValueError, match="at least 2 workers"):
        wl.placement_plan("shipped", 4, ["a"])
    assert wl.placement_plan("local", 2, ["a"]) == [("a", "a"), ("a", "a")]


def test_measure_statistics_agree_with_the_definition():
    from asafe.app.stats import describe, median_ci, paired_ratio

    ci = median_ci(range(1, 21))
    assert (ci.low, ci.high, ci.exact) == (6.0, 15.0, True) and ci.coverage >= 0.95
    assert describe([1.0])["ci95"] == [1.0, 1.0]
    assert describe([1.0, 2.0, 3.0])["unstable"]  # 3 samples cannot give 95%
    ratio, (low, high), _ = paired_ratio([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    assert ratio == low == high == 2.0


# ----------------------------------------------------------------------------- on a cluster
@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      env={"NUMBA_NUM_THREADS": "1"}) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        yield client


@pytest.fixture(scope="module")
def expected():
    return {p.name: wl.reference(p) for p in wl.TEST_PHASES}


@pytest.mark.parametrize("compress", [False, True], ids=["off", "on"])
@pytest.mark.parametrize("phase", wl.TEST_PHASES, ids=[p.name for p in wl.TEST_PHASES])
def test_every_phase_is_correct_static(client, expected, phase, compress):
    steps = []
    run = runner.run_phase(client, phase, compress, expected=expected[phase.name],
                       on_step=lambda step, steps_: steps.append((step, steps_)))
    assert run.correct, run.error
    assert steps == [(s, phase.steps) for s in range(1, phase.steps + 1)]
    assert len(run.step_seconds) == phase.steps and run.seconds > 0 and run.stop >= run.start
    np.testing.assert_allclose(run.x, expected[phase.name], rtol=wl.RTOL, atol=wl.ATOL)


def test_placement_moves_panels_only_when_shipped(client, expected):
    # a frozen runtime observes the transfers without switching anything
    class Frozen(asafe.EfficiencyDomain):
        def decide(self, mode, state):
            return state

    import cloudpickle

    cloudpickle.register_pickle_by_value(__import__(__name__))
    rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", Frozen(), initial=False)], signals=False)
    handle = asafe.install(client, rt)
    try:
        moved = {}
        for phase in wl.TEST_PHASES[:2]:
            before = handle.info("plugin")["plugin"]["transfers"]["logical_bytes"]
            run = runner.run_phase(client, phase, False, expected=expected[phase.name])
            assert run.correct, run.error
            moved[phase.placement] = handle.info("plugin")["plugin"]["transfers"]["logical_bytes"] - before
        shipped, local = wl.TEST_PHASES[0], wl.TEST_PHASES[1]
        # every panel of every step crosses: n*n*8 bytes per step
        assert moved["shipped"] >= shipped.steps * shipped.n * shipped.n * 8
        # only vectors move in a local phase
        assert moved["local"] < local.n * local.n * 8 / 4
    finally:
        handle.uninstall()
        cloudpickle.unregister_pickle_by_value(__import__(__name__))


@pytest.mark.parametrize("load,did", [("memory", "bytes_copied"), ("link", "bytes_moved")])
def test_a_phase_under_load_is_correct_and_reports_its_competing_job(client, expected, load, did):
    phase = wl.TEST_PHASES[0]
    run = runner.run_phase(client, phase.scaled(load=load), True, expected=expected[phase.name])
    assert run.correct, run.error
    # the job ran for the whole phase, and the record says what it did
    assert run.load["kind"] == load and run.load["seconds"] >= run.seconds and run.load[did] > 0
    assert run.as_dict()["load"] == run.load
    quiet = runner.run_phase(client, phase, True, expected=expected[phase.name])
    assert quiet.load is None and quiet.as_dict()["load"] is None


def test_a_comparison_reports_the_competing_jobs_of_its_loaded_phases(client, expected):
    quiet, busy = wl.TEST_PHASES[1], wl.TEST_PHASES[1].scaled(name="busy", load="memory")
    cmp = comparison.compare(client, [quiet, busy], repetitions=2, expected=[expected[quiet.name]] * 2, warmup=False,
                     variants=("static-on", "static-off"))
    reports = cmp.load_reports()
    assert list(reports) == ["busy"]  # the quiet phase ran beside nothing
    assert sorted((r["variant"], r["repetition"]) for r in reports["busy"]) == [
        ("static-off", 0), ("static-off", 1), ("static-on", 0), ("static-on", 1)]
    assert all(r["kind"] == "memory" and r["bytes_copied"] > 0 for r in reports["busy"])


def test_adaptive_variant_is_correct_and_records_its_transitions(client, expected):
    phases = list(wl.TEST_PHASES)
    run = variants.run_variant(client, phases, "adaptive", expected=[expected[p.name] for p in phases])
    assert run.correct, [p.error for p in run.phases]
    assert [p.phase for p in run.phases] == [p.name for p in phases]
    for t in run.transitions:
        assert t["optimization"] == "compression" and t["from"] != t["to"]
    assert run.timeline and all(isinstance(r, float) for _, r in run.timeline)
    assert run.states[0][1] is False
    # the runtime is gone afterwards: is_on answers False on every worker again
    assert all(not s for s in client.run(lambda: asafe.is_on("compression")).values())


def test_adaptive_sampling_is_correct_and_samples_only_where_the_mode_lets_it(client, expected):
    from asafe.app import pertask

    phases = list(wl.TEST_PHASES)
    run = variants.run_variant(client, phases, evaluation_variants.KNOWN["adaptive-sampling"],
                               expected=[expected[p.name] for p in phases])
    assert run.correct, [p.error for p in run.phases]
    # every panel's decision is logged: by the mode, or by the rule's payoff where the mode let it decide
    assert len(run.decisions) == sum(p.steps * p.panels for p in phases)
    assert {d["why"] for d in run.decisions} <= {"mode", "payoff"}
    low = variants.DEFAULT_THRESHOLDS.per_task_reuse
    assert all(d["reads"] >= low for d in run.decisions if d["why"] == "payoff")
    assert all(d["on_s"] is None for d in run.decisions if d["why"] == "mode")  # no sample taken
    # the figure's transitions are compression's; the second optimization is the runtime's business
    assert {t["optimization"] for t in run.transitions} <= {"compression"}
    assert all(not s for s in client.run(lambda: asafe.is_on(pertask.PER_TASK)).values())


def test_the_tuning_evaluation_and_held_out_sets_share_no_phase():
    def body(phase):  # a phase's content, without its name
        d = phase.as_dict()
        d.pop("name"), d.pop("description")
        return tuple(sorted(d.items()))

    sets = {size: phase_sets.phases_for(size)
            for size in ("default", "calibration", "heldout", "heldout2", "heldout3", "heldout4", "heldout5",
                         "calibration2", "loaded", "loaded2")}
    for a in sets:
        for b in sets:
            if a < b:
                assert not {p.name for p in sets[a]} & {p.name for p in sets[b]}, (a, b)
                assert not {body(p) for p in sets[a]} & {body(p) for p in sets[b]}, (a, b)
    # the second held-out set puts declared reuse below, at and above the threshold
    reads = {p.vectors for p in sets["heldout2"] if p.placement == "local"}
    threshold = variants.DEFAULT_THRESHOLDS.reuse
    assert min(reads) < threshold < max(reads)
    # the third: local reuse below, inside and above the band the per-task rule decides in
    reads = {p.vectors for p in sets["heldout3"] if p.placement == "local"}
    low = variants.DEFAULT_THRESHOLDS.per_task_reuse
    assert min(reads) < low and any(low <= r < threshold for r in reads) and max(reads) >= threshold
    # the fourth: short local phases (a toggle within a dwell of the last) followed by shipped ones
    fourth = sets["heldout4"]
    turns = [(a, b) for a, b in zip(fourth, fourth[1:]) if a.placement == "local" and b.placement == "shipped"]
    assert sum(a.steps <= 3 for a, _ in turns) >= 2
    # calibration2, where that rule's default is chosen: short phases before ones of the other placement
    second = sets["calibration2"]
    turns = [(a, b) for a, b in zip(second, second[1:]) if a.placement != b.placement and a.steps <= 3]
    assert len(turns) >= 2
