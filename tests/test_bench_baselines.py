"""The kernels suite's baselines section (benchmarks/kernels.py, benchmarks/_sparse_libs.py).

No timing is asserted: the tests check the plumbing -- skip reasons, thread
settings applied and restored, the reference and its check rejecting a wrong
result, asafe's kernel path recorded -- on tiny problems.
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import scipy.sparse as sp

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import _sparse_libs, kernels  # noqa: E402
from benchmarks.harness import Results, measure  # noqa: E402


def _problem(seed=0, n=50):
    rng = np.random.default_rng(seed)
    S = sp.random_array((n, n), density=0.2, rng=rng, format="csr")
    return S, rng.random(n)


def test_reference_is_independent_and_check_rejects_a_wrong_result():
    S, x = _problem()
    ref, bound = kernels.baseline_reference(S, x)
    np.testing.assert_allclose(ref, S.toarray() @ x, rtol=1e-13)
    assert np.all(bound > 0)
    check = kernels.baseline_checker(ref, bound, {"lib": lambda y: y["v"]})
    check("plain", S @ x)
    check("lib", {"v": S @ x})  # a library's own result type goes through its converter
    wrong = S @ x
    wrong[3] += 1e-6 * abs(wrong[3]) + 1e-9
    with pytest.raises(AssertionError, match="row 3"):
        check("plain", wrong)
    with pytest.raises(AssertionError):
        check("plain", np.full_like(wrong, np.nan))
    with pytest.raises(AssertionError, match="shape"):
        check("plain", wrong[:-1])
    m = measure({"right": lambda: S @ x, "wrong": lambda: wrong}, check=check, max_seconds=0.05, min_samples=3)
    assert m["right"].ok and not m["wrong"].ok and "row 3" in m["wrong"].failed
    assert m["wrong"].samples == []  # a wrong variant is never timed


def test_load_reports_a_reason_for_every_library_it_skips(monkeypatch):
    def broken():
        raise ImportError("No module named 'not_installed'")

    monkeypatch.setitem(_sparse_libs._LOADERS, "Missing", broken)
    libs, skipped = _sparse_libs.load()
    assert "Missing" in skipped and "ImportError" in skipped["Missing"] and "not_installed" in skipped["Missing"]
    assert set(libs) | set(skipped) == set(_sparse_libs._LOADERS)
    for name, reason in skipped.items():
        assert reason, name


def test_load_rejects_a_library_that_multiplies_wrongly(monkeypatch):
    def wrong():
        return _sparse_libs.Library("Wrong", "0", lambda S, x: (lambda: 2 * (S @ x)), lambda n: None,
                                    lambda: 1, np.asarray)

    monkeypatch.setitem(_sparse_libs._LOADERS, "Wrong", wrong)
    libs, skipped = _sparse_libs.load(["Wrong"])
    assert not libs and "wrong product" in skipped["Wrong"]


@pytest.mark.parametrize("name", [_sparse_libs.GRAPHBLAS, _sparse_libs.MKL])
def test_installed_library_threads_are_set_and_restored(name):
    libs, skipped = _sparse_libs.load([name])
    if name not in libs:
        pytest.skip(f"{name} not usable here: {skipped[name]}")
    lib = libs[name]
    S, x = _problem(1)
    before = lib.get_threads()
    seen = []
    call = lib.prepare(S, x)
    for t in (1, 2):
        y = lib.with_threads(lambda: (seen.append(lib.get_threads()), call())[1], t)()
        np.testing.assert_allclose(lib.to_numpy(y), S @ x, rtol=1e-12)
        assert lib.get_threads() == before
    assert seen == [1, 2]


def test_mkl_threads_hold_after_threadpoolctl_set_them_for_numpy():
    """threadpoolctl (the numpy variants) sets MKL's thread-local count, which overrides the global one."""
    libs, skipped = _sparse_libs.load([_sparse_libs.MKL])
    if _sparse_libs.MKL not in libs:
        pytest.skip(f"MKL not usable here: {skipped[_sparse_libs.MKL]}")
    lib = libs[_sparse_libs.MKL]
    blas = kernels.BlasThreads()
    if not any(b.internal_api == "mkl" for b in blas.libs):
        pytest.skip("threadpoolctl does not see MKL here")
    D, v = np.ones((4, 4)), np.ones(4)
    S, x = _problem(2)
    call = lib.prepare(S, x)
    for numpy_threads in (1, 2):
        blas.limited(lambda: D @ v, threads=numpy_threads)()  # leaves MKL's local count set
        seen = []
        for t in (1, 2):
            lib.with_threads(lambda: (seen.append(lib.get_threads()), call())[1], t)()
        assert seen == [1, 2]


def test_asafe_variant_threads_and_path_counter(monkeypatch):
    import numba

    from asafe.compression import TiledMatrix, kernels as k

    S, x = _problem(2, n=64)
    A = TiledMatrix.from_scipy(S, 16)
    calls = [0]
    seen = []
    original = k._matvec_parallel_call

    def spy(*args, **kw):
        seen.append((k.settings().threads, numba.get_num_threads()))
        return original(*args, **kw)

    monkeypatch.setattr(k, "_matvec_parallel_call", spy)
    old = k.configure(serial_work=0)  # every product above the serial threshold: the chooser decides
    try:
        with kernels.PathCounter() as counter:
            for threads in (1, 2):
                run = kernels.asafe_variant(A, x, threads, calls)
                np.testing.assert_allclose(run(), S @ x, rtol=1e-12)
        assert k._matvec_parallel_call is spy
        after = k.settings()
    finally:
        k.configure(serial_work=old.serial_work)
    assert calls == [2]
    # 1 thread: the serial kernel, never the parallel one; 2 threads: the chooser's first pick is parallel
    assert counter.parallel == 1 and seen == [(2, min(2, numba.config.NUMBA_NUM_THREADS))]
    assert after.threads == old.threads


def test_baselines_section_records_threads_paths_and_skips(tmp_path, monkeypatch):
    def missing():
        raise ImportError("wheel not installed")

    monkeypatch.setitem(_sparse_libs._LOADERS, "Missing", missing)
    args = argparse.Namespace(scales=[6], fractions=[0.0, 0.5], threads=[1, 2], tile=16, dense_max_scale=6,
                              max_dense_entries=1000.0)
    results = Results("kernels", tmp_path)
    ctx = kernels.Context(args, results, quick=True, max_seconds=0.05, rel_ci=0.5)
    kernels.SECTIONS["baselines"].run(ctx)
    path = results.save()
    rec = json.loads(path.read_text())["records"]["baselines"]
    assert rec["skipped"]["Missing"].startswith("ImportError")
    assert rec["threads"] == [1, 2] and "single-threaded" in rec["thread_control"]["scipy CSR"]
    done = [p for p in rec["points"] if "skipped" not in p]
    skipped = [p for p in rec["points"] if "skipped" in p]
    assert len(done) == 1 and len(skipped) == 1 and "max-dense-entries" in skipped[0]["skipped"]
    point = done[0]
    names = set(point["measurements"])
    assert {"numpy dense 1t", "numpy dense 2t", "scipy CSR 1t", "asafe tiled 1t", "asafe tiled 2t",
            "convert scipy -> tiled"} <= names
    assert "Missing 1t" not in names
    assert set(point["comparisons"]) == {"1", "2"}
    assert point["asafe_path"]["path_2t"]
    assert point["asafe_path"]["calls_2t_and_more"] > 0


def test_iso_section_times_both_paths_of_one_layout_and_checks_them(tmp_path):
    args = argparse.Namespace(scales=[7], tile=16)
    results = Results("kernels", tmp_path)
    ctx = kernels.Context(args, results, quick=True, max_seconds=0.05, rel_ci=0.5)
    kernels.SECTIONS["iso"].run(ctx)
    rec = json.loads(results.save().read_text())["records"]["iso"]
    (point,) = rec["points"]
    assert set(point["measurements"]) == {"values read", "iso (one value)", "scipy CSR"}
    assert all(m["failed"] is None and m["checks"] for m in point["measurements"].values())  # checked, none failed
    assert point["bytes"]["iso (one value)"] < point["bytes"]["values read"]
    assert "iso_vs_values read" in point and "iso_vs_scipy CSR" in point
