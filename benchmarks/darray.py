"""dask.array with tiled chunks against dask.array with sparse.COO chunks and scipy CSR blocks, on a LocalCluster.

``python -m benchmarks darray [--quick] [--section NAME ...] [--points 14:0.1,16:0.01] [--out DIR]``

Everything runs on one ``LocalCluster`` of 2 worker processes x 1 thread
(dashboard off), the matrices persisted on the workers. Matrices are
``graph500.mixed_matrix(scale, tile=256, dense_fraction, edgefactor=16,
seed=0)``; every chunking is the same for every variant: 8 full-width row
panels of whole tiles. Every measured result is checked against scipy's
``S @ x`` on the driver (``rtol=1e-10``); a wrong variant is FAILED, not timed.

Sections
--------
``matvec``
    ``y = A @ x`` (x a fresh numpy vector, y back on the driver) on the same
    persisted matrix, interleaved (:func:`benchmarks.harness.measure`):

    * ``dask.array (sparse.COO chunks)`` -- ``da.from_array(COO, chunks)``,
      ``(A @ x).compute()``: what a Dask user writes today;
    * ``dask.array (scipy CSR chunks, A.dot(x[:, None]))`` -- ``csr_matrix``
      chunks (dask's ``A @ x`` and ``A.dot(x)`` with a 1-D ``x`` fail on them:
      ``np.matmul`` does not take scipy, dask's scipy ``tensordot`` wants 2-D);
    * ``scipy CSR blocks (submit)`` -- the CSR row panels scattered, one
      ``client.submit(block @ x)`` each, gathered and concatenated;
    * ``asafe TiledArray`` -- ``asafe.compression.from_scipy(S, tile=256,
      chunks, reuse=R, compress=True)``, ``(A @ x).compute()``;
    * ``Dask floor (asafe's graph, no-op kernel)`` -- the same graph as
      asafe's product, computed the same way, whose chunk tasks return zeros
      without reading the matrix: what a product costs on this cluster before
      any kernel runs (graph, scheduling, ``x`` in, ``y`` out). Not a product,
      so not checked against scipy. No kernel can make asafe faster than this:
      ``base / floor`` is printed as the largest ratio reachable here.

    Targets: asafe >= 4x the sparse.COO route and >= 1.3x the CSR blocks.
    Build times (one sample each, after the products' warm-up: from scipy on
    the driver, from the generator on the workers, and the baselines' own) are
    reported as the number of asafe products they are worth.
``iterative``
    Power iteration (``k`` products, ``v <- A v / |A v|``) on a Graph500 graph
    written the dask.array way, end to end: generation, distribution,
    iterations, the result checked against scipy's power iteration.
    ``asafe (generated on the workers)`` uses ``from_graph500``;
    ``dask.array + pydata/sparse`` generates on the driver, converts to
    ``sparse.COO`` and persists ``da.from_array`` chunks. Target: asafe >= 2x.
``memory``
    Driver peak RSS (psutil, sampled every 2 ms in a thread) while building
    and persisting: ``from_scipy`` (target: peak growth <= 2x the CSR input's
    bytes; the input itself is already resident and not counted),
    ``from_graph500`` (no matrix on the driver) and, for context, the
    sparse.COO route.

``--quick``: scale 10-12 points, small budgets (a smoke run, not a result).
Output: console tables and ``<out>/darray/results.json``.
"""
from __future__ import annotations

import argparse
import sys
import gc
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import harness
from .harness import Results, format_seconds, format_table, measure, speedup, summary_table

__all__ = ["main", "SECTIONS"]

TILE = 256
PANELS = 8
RTOL = 1e-10
TARGET_COO = 4.0
TARGET_CSR = 1.3
TARGET_ITERATIVE = 2.0
TARGET_MEMORY = 2.0

ASAFE = "asafe TiledArray"
FLOOR = "Dask floor (asafe's graph, no-op kernel)"
COO = "dask.array (sparse.COO chunks)"
DACSR = "dask.array (scipy CSR chunks, A.dot(x[:, None]))"
CSR = "scipy CSR blocks (submit)"


class Scaled:
    """Fresh vectors ``c * x`` (c = 1, 2, ...) per call, so that no call can reuse a key of the last.

    ``check`` compares ``y / c`` with the reference.
    """

    def __init__(self, x: np.ndarray) -> None:
        self.x = x
        self.c = 0.0

    def next(self) -> np.ndarray:
        self.c += 1.0
        return self.x * self.c


def _unique(prefix: str) -> str:
    import uuid

    return f"{prefix}-{uuid.uuid4().hex}"

SECTIONS = ("matvec", "iterative", "memory")


def _csr_matvec(block, x):
    return block @ x


def _no_product(block, x):
    """The floor's chunk task: a result of the right shape, the matrix not read."""
    return np.zeros(block.shape[:1] + x.shape[1:])


def _cluster():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    return cluster, Client(cluster)


def _rows(n: int) -> int:
    grid = -(-n // TILE)
    return TILE * -(-grid // min(grid, PANELS))


def _release_generated(client) -> None:
    """Drop the graphs from_graph500 cached in the worker processes."""
    def clear():
        from asafe.compression import graph500

        graph500.clear_cache()
        gc.collect()

    client.run(clear)


def _verdict(ratio: float, ci, target: float) -> str:
    if ci[0] >= target:
        return "met"
    if ratio >= target:
        return "met (median; interval reaches below)"
    return "not met"


# --------------------------------------------------------------------------- matvec
def section_matvec(ctx: dict[str, Any], client, scale: int, fraction: float) -> None:
    import dask.array as da
    import sparse
    from distributed import wait

    import asafe.compression as ac
    from asafe.compression import graph500
    from asafe.compression.array import matmul_graph

    results: Results = ctx["results"]
    label = f"scale {scale}, dense fraction {fraction}"
    print(f"\n== matvec: {label}, tile {TILE}, {PANELS} row panels, 2 workers x 1 thread ==", flush=True)
    t0 = time.perf_counter()
    S = graph500.mixed_matrix(scale, TILE, fraction, seed=0)
    gen_s = time.perf_counter() - t0
    n = S.shape[0]
    rows = _rows(n)
    rng = np.random.default_rng(1)
    x = rng.random(n)
    reference = S @ x
    reuse = ctx["reuse"]

    def build_asafe():
        A = ac.from_scipy(S, tile=TILE, chunks=(rows, -1), reuse=reuse, compress=True, name=_unique("tiled")).persist()
        wait(A)
        return A

    def build_graph500():
        A = ac.from_graph500(scale, TILE, fraction, seed=0, chunks=(rows, -1), reuse=reuse, compress=True,
                             name=_unique("g500")).persist()
        wait(A)
        _release_generated(client)
        return A

    def build_coo():
        A = da.from_array(sparse.COO.from_scipy_sparse(S), chunks=(rows, -1), asarray=False,
                          name=_unique("coo")).persist()
        wait(A)
        return A

    def build_dacsr():
        A = da.from_array(S, chunks=(rows, -1), asarray=False, name=_unique("csr")).persist()
        wait(A)
        return A

    def build_csr():
        blocks = client.scatter([S[i:i + rows] for i in range(0, n, rows)])
        wait(blocks)
        return blocks

    builds = {}
    built = {}
    for name, fn in ((ASAFE, build_asafe), ("asafe from_graph500", build_graph500), (COO, build_coo),
                     (DACSR, build_dacsr), (CSR, build_csr)):
        t = time.perf_counter()
        built[name] = fn()
        builds[name] = time.perf_counter() - t
        print(f"  build {name}: {format_seconds(builds[name])}", flush=True)
    A, Acoo, Adacsr, blocks = built[ASAFE], built[COO], built[DACSR], built[CSR]
    G = built["asafe from_graph500"]
    np.testing.assert_allclose((G @ x).compute(), reference, rtol=RTOL)
    del built["asafe from_graph500"], G

    xs = {name: Scaled(x) for name in (COO, DACSR, CSR, ASAFE, FLOOR)}

    def check(name, y):
        if name == FLOOR:  # not a product: only its shape
            assert y.shape == reference.shape, y.shape
            return
        np.testing.assert_allclose(y / xs[name].c, reference, rtol=RTOL, atol=0)

    variants = {
        COO: lambda: (Acoo @ xs[COO].next()).compute(),
        DACSR: lambda: Adacsr.dot(xs[DACSR].next()[:, None]).compute().ravel(),
        CSR: lambda: np.concatenate(client.gather(
            [client.submit(_csr_matvec, b, v, pure=False) for v in [xs[CSR].next()] for b in blocks])),
        ASAFE: lambda: (A @ xs[ASAFE].next()).compute(),
        FLOOR: lambda: matmul_graph(A, xs[FLOOR].next(), kernel=_no_product).compute(),
    }
    m = measure(variants, check=check, rel_ci=ctx["rel_ci"], max_seconds=ctx["max_seconds"], min_samples=7,
                warmup=2)
    print(summary_table(m))
    key = f"matvec_scale{scale}_dense{fraction}"
    summary = {"scale": scale, "dense_fraction": fraction, "tile": TILE, "panels": PANELS, "nnz": int(S.nnz),
               "generation_driver_s": gen_s, "reuse": reuse, "build_s": builds}
    blocks_info = client.gather(client.map(lambda b: b.tile_summary()["total"], [f for f in
                                                                                   _futures(A)]))
    summary["asafe_stored_bytes"] = int(sum(b["nbytes"] for b in blocks_info))
    summary["csr_bytes"] = int(S.data.nbytes + S.indices.nbytes + S.indptr.nbytes)
    rows_out = []
    if m[ASAFE].ok:
        for base, target in ((COO, TARGET_COO), (CSR, TARGET_CSR), (DACSR, None)):
            if not m[base].ok:
                rows_out.append({"comparison": f"asafe vs {base}", "verdict": "baseline FAILED"})
                continue
            s = speedup(m[base], m[ASAFE])
            results.add(f"{key}_vs_{base}", s)
            rows_out.append({
                "comparison": f"asafe vs {base}", "base median": format_seconds(s.base_median),
                "asafe median": format_seconds(s.new_median), "speedup": f"{s.ratio:.2f}x",
                "95% CI": f"[{s.ci95[0]:.2f}, {s.ci95[1]:.2f}]", "target": f">= {target}x" if target else "-",
                "verdict": _verdict(s.ratio, s.ci95, target) if target else "-",
            })
        if m[FLOOR].ok:
            floor = m[FLOOR].median
            summary["floor_s"] = floor
            summary["reachable"] = {}
            for base, target in ((COO, TARGET_COO), (CSR, TARGET_CSR)):
                if m[base].ok:
                    reach = m[base].median / floor
                    summary["reachable"][base] = reach
                    rows_out.append({"comparison": f"reachable vs {base} (its time / the floor)",
                                     "base median": format_seconds(m[base].median),
                                     "asafe median": format_seconds(floor), "speedup": f"{reach:.2f}x",
                                     "target": f">= {target}x",
                                     "verdict": "reachable" if reach >= target else "not reachable here"})
        per = m[ASAFE].median
        rows_out.append({"comparison": "build from scipy (driver) / asafe product",
                         "speedup": f"{builds[ASAFE] / per:.1f} products"})
        rows_out.append({"comparison": "build from generator (workers) / asafe product",
                         "speedup": f"{builds['asafe from_graph500'] / per:.1f} products"})
        summary["build_in_products"] = {k: v / per for k, v in builds.items()}
    # after the comparisons: the record holds what they added to the summary (floor, build in products)
    results.add(key, {"measurements": m, "summary": summary})
    print(format_table(rows_out, ["comparison", "base median", "asafe median", "speedup", "95% CI", "target",
                                  "verdict"]))
    ctx["summary"].setdefault("matvec", {})[key] = rows_out
    del A, Acoo, Adacsr, blocks, built
    gc.collect()


def _futures(A):
    from distributed import futures_of

    return futures_of(A)


# --------------------------------------------------------------------------- iterative
def _power_scipy(S, k):
    v = np.ones(S.shape[1]) / np.sqrt(S.shape[1])
    for _ in range(k):
        v = S @ v
        v /= np.linalg.norm(v)
    return v


def section_iterative(ctx: dict[str, Any], client, scale: int, fraction: float, k: int) -> None:
    import dask.array as da
    import sparse
    from distributed import wait

    import asafe.compression as ac
    from asafe.compression import graph500

    results: Results = ctx["results"]
    print(f"\n== iterative: power iteration, {k} products, scale {scale}, dense fraction {fraction}, end to end ==",
          flush=True)
    S = graph500.mixed_matrix(scale, TILE, fraction, seed=0)
    reference = _power_scipy(S, k)
    n = S.shape[0]
    rows = _rows(n)
    del S
    gc.collect()

    def power(A):
        v = np.ones(n) / np.sqrt(n)
        for _ in range(k):
            v = (A @ v).compute()
            v /= np.linalg.norm(v)
        return v

    def asafe_run():
        _release_generated(client)
        A = ac.from_graph500(scale, TILE, fraction, seed=0, chunks=(rows, -1), reuse=k, compress=True,
                             name=_unique("g500")).persist()
        wait(A)
        _release_generated(client)
        return power(A)

    def coo_run():
        S = graph500.mixed_matrix(scale, TILE, fraction, seed=0)
        A = da.from_array(sparse.COO.from_scipy_sparse(S), chunks=(rows, -1), asarray=False, name=_unique("coo"))
        del S
        A = A.persist()
        wait(A)
        return power(A)

    def check(name, v):
        np.testing.assert_allclose(v, reference, rtol=1e-8, atol=1e-12)

    m = measure({"dask.array + pydata/sparse": coo_run, "asafe (generated on the workers)": asafe_run},
                check=check, rel_ci=ctx["rel_ci"], max_seconds=ctx["max_seconds_iter"], min_samples=3,
                max_samples=7, warmup=1)
    print(summary_table(m))
    key = f"iterative_scale{scale}_dense{fraction}_k{k}"
    results.add(key, m)
    base, new = m["dask.array + pydata/sparse"], m["asafe (generated on the workers)"]
    if base.ok and new.ok:
        s = speedup(base, new)
        results.add(key + "_speedup", s)
        row = {"comparison": "asafe vs dask.array + pydata/sparse (end to end)",
               "base median": format_seconds(s.base_median), "asafe median": format_seconds(s.new_median),
               "speedup": f"{s.ratio:.2f}x", "95% CI": f"[{s.ci95[0]:.2f}, {s.ci95[1]:.2f}]",
               "target": f">= {TARGET_ITERATIVE}x", "verdict": _verdict(s.ratio, s.ci95, TARGET_ITERATIVE)}
        print(format_table([row], list(row)))
        ctx["summary"]["iterative"] = row


# --------------------------------------------------------------------------- memory
class PeakRSS:
    """Peak resident memory of this process while the block runs (sampled every 2 ms)."""

    def __init__(self, period: float = 0.002) -> None:
        import psutil

        self.proc = psutil.Process()
        self.period = period

    def __enter__(self):
        gc.collect()
        self.start = self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.period)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)

    @property
    def growth(self) -> int:
        return self.peak - self.start


def section_memory(ctx: dict[str, Any], client, scale: int, fraction: float) -> None:
    import dask.array as da
    import sparse
    from distributed import wait

    import asafe.compression as ac
    from asafe.compression import graph500

    print(f"\n== memory: driver peak RSS while building, scale {scale}, dense fraction {fraction} ==", flush=True)
    S = graph500.mixed_matrix(scale, TILE, fraction, seed=0)
    csr_bytes = S.data.nbytes + S.indices.nbytes + S.indptr.nbytes
    rows = _rows(S.shape[0])
    out = {}
    with PeakRSS() as p:
        A = ac.from_scipy(S, tile=TILE, chunks=(rows, -1), compress=True, name=_unique("tiled")).persist()
        wait(A)
    out["asafe from_scipy"] = p.growth
    del A
    with PeakRSS() as p:
        A = ac.from_graph500(scale, TILE, fraction, seed=0, chunks=(rows, -1), compress=True,
                             name=_unique("g500")).persist()
        wait(A)
    _release_generated(client)
    out["asafe from_graph500"] = p.growth
    del A
    with PeakRSS() as p:
        A = da.from_array(sparse.COO.from_scipy_sparse(S), chunks=(rows, -1), asarray=False,
                          name=_unique("coo")).persist()
        wait(A)
    out[COO] = p.growth
    del A
    gc.collect()
    table = [{"build": k, "driver peak growth": f"{v / 2**20:.1f} MiB", "x CSR input": f"{v / csr_bytes:.2f}",
              "target": f"<= {TARGET_MEMORY}x" if k == "asafe from_scipy" else "-",
              "verdict": ("met" if v <= TARGET_MEMORY * csr_bytes else "not met") if k == "asafe from_scipy" else "-"}
             for k, v in out.items()]
    print(f"CSR input: {csr_bytes / 2**20:.1f} MiB ({S.nnz} non-zeros); dense would be "
          f"{S.shape[0] * S.shape[1] * 8 / 2**30:.1f} GiB")
    print(format_table(table, ["build", "driver peak growth", "x CSR input", "target", "verdict"]))
    ctx["results"].add(f"memory_scale{scale}_dense{fraction}",
                       {"csr_bytes": csr_bytes, "peak_growth_bytes": out, "sampling_period_s": 0.002})
    ctx["summary"]["memory"] = table


def _warm_workers(client) -> float:
    """One small build and product of every route on both workers (imports, JIT cache loads)."""
    import dask.array as da
    import sparse

    import asafe.compression as ac
    from asafe.compression import graph500

    t = time.perf_counter()
    S = graph500.mixed_matrix(10, TILE, 0.1, seed=5)
    x = np.ones(S.shape[0])
    for _ in range(2):
        A = ac.from_scipy(S, tile=TILE, chunks=(TILE, -1), compress=True, name=_unique("warm"))
        (A @ x).compute()
        (A.T @ x).compute()
        G = ac.from_graph500(10, TILE, 0.1, seed=5, chunks=(TILE, -1), name=_unique("warm"))
        (G @ x).compute()
        C = da.from_array(sparse.COO.from_scipy_sparse(S), chunks=(TILE, -1), asarray=False, name=_unique("warm"))
        (C @ x).compute()
    _release_generated(client)
    return time.perf_counter() - t


# --------------------------------------------------------------------------- main
def _points(text: str) -> list[tuple[int, float]]:
    out = []
    for item in text.split(","):
        s, f = item.split(":")
        out.append((int(s), float(f)))
    return out


def _missing_baseline() -> str | None:
    """Why the suite cannot run its baselines here, or None (pydata/sparse is the sparse.COO route)."""
    try:
        import sparse  # noqa: F401
    except ImportError as exc:
        return (f"the sparse.COO baseline needs pydata/sparse ({exc}); install the benchmark extra: "
                "pip install -e \".[bench]\" (or pip install sparse)")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks darray", description=__doc__.splitlines()[0])
    harness.add_common_arguments(parser, max_seconds=30.0)
    parser.add_argument("--section", action="append", choices=SECTIONS, help="run only these sections")
    parser.add_argument("--points", default=None, help="matvec points scale:dense_fraction,... "
                                                       "(default 14:0.1,16:0.01,18:0.001)")
    parser.add_argument("--iter-point", default=None, help="iterative point scale:dense_fraction (default 16:0.01)")
    parser.add_argument("--iterations", type=int, default=None, help="power iterations (default 30)")
    parser.add_argument("--memory-point", default=None, help="memory point scale:dense_fraction (default 16:0.01)")
    parser.add_argument("--reuse", type=float, default=100.0, help="the cost model's reuse R for matvec (default 100)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    missing = _missing_baseline()
    if missing:
        print(f"darray: {missing}", file=sys.stderr)
        return 2
    quick = args.quick
    points = _points(args.points or ("10:0.1,12:0.01" if quick else "14:0.1,16:0.01,18:0.001"))
    iter_point = _points(args.iter_point or ("11:0.05" if quick else "16:0.01"))[0]
    mem_point = _points(args.memory_point or ("11:0.05" if quick else "16:0.01"))[0]
    k = args.iterations or (5 if quick else 30)
    results = Results("darray", args.out)
    results.set_environment(scheduler="distributed LocalCluster", workers=2, threads_per_worker=1, tile=TILE,
                            panels=PANELS, reuse=args.reuse)
    ctx = {"results": results, "rel_ci": args.rel_ci, "max_seconds": 3.0 if quick else args.max_seconds,
           "max_seconds_iter": 10.0 if quick else 4 * args.max_seconds, "summary": {}, "reuse": args.reuse}
    sections = args.section or list(SECTIONS)
    cluster, client = _cluster()
    try:
        client.wait_for_workers(2)
        ctx["summary"]["worker_warmup_s"] = _warm_workers(client)
        print(f"worker warm-up (imports, numba cache load; not in any figure below): "
              f"{format_seconds(ctx['summary']['worker_warmup_s'])}")
        if "memory" in sections:
            section_memory(ctx, client, *mem_point)
        if "matvec" in sections:
            for scale, fraction in points:
                section_matvec(ctx, client, scale, fraction)
        if "iterative" in sections:
            section_iterative(ctx, client, *iter_point, k)
    finally:
        client.close()
        cluster.close()
    results.add("summary", ctx["summary"])
    print(f"\nresults: {results.save()}")
    return 0
