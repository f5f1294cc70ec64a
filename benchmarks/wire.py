"""Adaptive wire compression against Dask's default on a transfer-heavy dask.array rechunk.

A float64 array (``--size`` rows x columns, row chunks) is persisted across two
worker processes; the timed step rechunks it to column chunks and persists the
result (every block moves between the workers, about half of the bytes cross
the link) and checks it bit for bit against the sync scheduler's reference.

Variants, interleaved in rotating order on one cluster (rule 5):

* ``dask``: asafe not installed (Dask's default: no compression between
  processes on one host, ``distributed.comm.compression`` off);
* ``adaptive``: ``asafe.install(client)`` with the default configuration (a fresh
  runtime per sample: it starts off and must find the mode within the run);
* ``always``: wire-compression forced on (the best static setting on a slow link);
* ``ratio-only``: the default ratio hysteresis without the cpu and bandwidth
  parts (what those gates cost or save);
* ``host-cpu``: the ratio part with the host's whole cpu load as the cpu part,
  the default domain before 2026-11 (the load then counted the run's own work,
  compressing included, and switched the optimization off on busy hosts);
* ``shared-cpus``: the default domain with its ``external_cpu`` part at (0.1,
  0.3) instead of (0.5, 0.8), for ``--burn-host`` on a topology whose hosts
  share one machine's cpus: there a loaded host reads at most about half the
  machine (two burners on two shared cores read 0.5-0.7), below the default's
  0.8, so the default would never show how soon a loaded host switches it off.

Before the rounds each variant runs once, not as a sample (``warmup`` in the
results; ``--no-warmup`` counts it as round 0 instead, as runs before
2026-11-26 did): a cluster's first rechunk pays Dask's own cold start (4.1 s
against 2.7-2.9 s after it, behind 1 Gbit/s), and asafe's first installation
starts from the durations that cold run measured (and, before 2026-11-26, read
the worker hosts unknown until their first heartbeat). The warm-up's record
keeps what that costs.

``python -m benchmarks wire --link 1gbit`` runs behind a loopback shaped by tc
in a private network namespace (:mod:`asafe.app.link`); without it, the loopback
as it is. ``--hosts 3 --link 1gbit`` runs on three hosts instead
(:mod:`asafe.app.hosts`): network namespaces on a bridge, each host's link shaped
to 1 Gbit/s, the scheduler and this suite in host 0 and one worker in each of
hosts 1 and 2, so every transfer between the workers crosses two shaped links.

``--data random`` uses incompressible uniform random values; ``--burn N`` runs N
cpu-spinning processes during the timed steps (a competing compute phase) and
reports whether adaptive turned on. Results: ``OUT/wire/wire-<link>-<data>.json``.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from asafe.app import stats

from . import harness

#: The default wire-compression gate's off threshold of external_cpu (asafe.yaml): a host this busy is "seen".
_EXTERNAL_CPU_OFF = 0.8
#: The shared-cpus variant's external_cpu thresholds (on below, off above).
_SHARED_CPUS = (0.1, 0.3)
VARIANTS = ("dask", "adaptive", "always", "ratio-only", "host-cpu", "shared-cpus")
#: ``--hosts N`` runs this suite's cluster on a multi-host topology (benchmarks.__main__, asafe.app.hosts).
SUPPORTS_HOSTS = True


def smooth_block(block: np.ndarray) -> np.ndarray:
    """Low-entropy float64: a smooth field quantized to 1/1024 (sensor-like data)."""
    return np.round(np.sin(np.cumsum(block, axis=1) / 50.0) * 1024.0) / 1024.0


def _spin(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x += i


@contextlib.contextmanager
def burners(n: int, host: int | None = None):
    """``n`` processes spinning on a cpu each, stopped on exit.

    Here (``host`` None) they start a second before the step, so that the cpu
    signal sees them; in host ``host`` of a ``--hosts`` topology they start with
    the step, so that the run measures how soon the mode sees a loaded worker
    host (yields the wall time they started).
    """
    if n <= 0:
        yield None
        return
    if host is not None:
        from asafe.app.hosts import popen_in_host

        started = time.time()
        procs = [popen_in_host(host, [sys.executable, "-c", "while True: pass"]) for _ in range(n)]
        try:
            yield started
        finally:
            for p in procs:
                p.kill()
                p.wait(10)
        return
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    procs = [ctx.Process(target=_spin, args=(stop,), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        time.sleep(1.0)  # let the cpu signal see them
        yield None
    finally:
        stop.set()
        for p in procs:
            p.join(5)


def burn_latency(detail: dict, started: float, t0_wall: float, beta: float) -> dict[str, Any]:
    """Seconds from a loaded host's burners starting until the mode saw it, and until wire-compression was off.

    ``seen`` is the first timeline point whose ``external_cpu`` reached ``beta``
    (the gate's off threshold); ``off`` the first transition to off after the
    burners started, or 0.0 when the state was already off and stayed off.
    ``None`` where it did not happen in the run's timeline, which goes on a
    little past the step (the handle is read after it): a reading there may
    show burners that were stopped with the step, since the reports lag.

    >>> burn_latency({"timeline": [[0.1, 1.0, 0.2, 0.1, 1e8], [1.2, 0.3, 0.9, 0.85, 1e8]],
    ...               "transitions": [[0.5, "wire-compression", False, 120], [1.3, "wire-compression", 120, False]]},
    ...              started=100.0, t0_wall=100.0, beta=0.8)
    {'seen_s': 1.2, 'off_s': 1.3, 'on_while_burning_s': 0.8}
    """
    offset = started - t0_wall
    seen = next((p[0] - offset for p in detail.get("timeline") or []
                 if p[0] >= offset and p[3] is not None and p[3] >= beta), None)
    moves = [t for t in detail.get("transitions") or [] if t[0] >= offset]
    before = [t for t in detail.get("transitions") or [] if t[0] < offset]
    on_at_start = bool(before[-1][3]) if before else False
    off = 0.0 if not on_at_start and not moves else next((t[0] - offset for t in moves if not t[3]), None)
    on_since, on_time = (offset if on_at_start else None), 0.0
    for t in moves:
        if t[3] and on_since is None:
            on_since = t[0]
        elif not t[3] and on_since is not None:
            on_time += t[0] - on_since
            on_since = None
    return {"seen_s": None if seen is None else round(seen, 3), "off_s": None if off is None else round(off, 3),
            "on_while_burning_s": None if on_since is not None else round(on_time, 3)}


def shared_cpus_runtime() -> Any:
    """The default runtime with the wire gate's ``external_cpu`` part at :data:`_SHARED_CPUS`.

    >>> shared_cpus_runtime().optimizations["wire-compression"].domain.gate.domains[1]
    Hysteresis(alpha=0.1, beta=0.3, metric='external_cpu')
    """
    import dask

    import asafe

    optimizations = copy.deepcopy(dask.config.get("asafe.optimizations"))
    parts = [part for o in optimizations if o["name"] == "wire-compression"
             for part in o["kwargs"]["gate"]["kwargs"]["domains"] if part["kwargs"].get("metric") == "external_cpu"]
    if len(parts) != 1:
        raise ValueError("the default wire-compression domain has no external_cpu part to set (asafe.optimizations)")
    parts[0]["kwargs"].update(alpha=_SHARED_CPUS[0], beta=_SHARED_CPUS[1])
    with dask.config.set({"asafe.optimizations": optimizations}):
        return asafe.AdaptiveRuntime()


def codec_throughput(data: np.ndarray) -> dict[str, Any]:
    """Compression ratio and single-core throughput of the configured codec on one block."""
    from asafe.schedulers import wire

    wire.enable()
    buf = memoryview(np.ascontiguousarray(data)).cast("B")
    best_c = best_d = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        compressed = wire.compress_frame(buf, 8)
        best_c = min(best_c, time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = wire.decompress_frame(compressed)
        best_d = min(best_d, time.perf_counter() - t0)
    assert bytes(out) == bytes(buf)
    return {"bytes": buf.nbytes, "ratio": buf.nbytes / len(compressed),
            "compress_MBps_per_core": buf.nbytes / best_c / 1e6,
            "decompress_MBps_per_core": buf.nbytes / best_d / 1e6, "settings": wire.check_settings()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks wire", description=__doc__.splitlines()[0])
    harness.add_common_arguments(parser, max_seconds=600.0, hosts=True)
    parser.add_argument("--data", choices=("smooth", "random"), default="smooth")
    parser.add_argument("--size", type=int, default=4096, help="rows = columns / 2 of the float64 array")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="time each variant's first run on the cluster too (default: one warm-up run of each "
                             "variant before the rounds, recorded apart)")
    parser.add_argument("--burn", type=int, default=0, help="cpu-spinning processes during the timed steps")
    parser.add_argument("--burn-host", type=int, default=None,
                        help="with --hosts: run the --burn processes in this worker host (1 to N-1), started with "
                             "each step, and report how soon the mode saw the host and switched compression off")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--rechunk-method", choices=("tasks", "p2p"), default="tasks",
                        help="dask's array.rechunk.method: tasks (transfers the scheduler sees, default) or p2p "
                             "(the shuffle extension's own comms: compressed when on, but not seen as communication)")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.rounds = 1024, 3
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown or not variants:
        parser.error(f"--variants: unknown {unknown or 'none given'}; choose from {', '.join(VARIANTS)}")
    link = args.link.rate if args.link is not None else "loopback"
    if args.burn_host is not None:
        n_hosts = getattr(args, "hosts", None)
        if not n_hosts:
            parser.error("--burn-host: needs --hosts N (a worker host to load)")
        if not 1 <= args.burn_host < n_hosts:
            parser.error(f"--burn-host: {args.burn_host} is not a worker host; allowed: 1 to {n_hosts - 1}")
        if args.burn <= 0:
            parser.error("--burn-host: needs --burn N (how many processes to start there), N >= 1")

    import dask
    import dask.array as da
    from distributed import wait

    import asafe
    from asafe.app.hosts import cluster_client
    from asafe.schedulers import wire

    git_at_start = stats.git_state()  # the code that runs (see harness.credit_git_at_start)
    dask.config.set({"array.rechunk.method": args.rechunk_method})
    rows, cols = args.size, 2 * args.size
    chunk = max(rows // 8, 1)
    x = da.random.RandomState(0).random_sample((rows, cols), chunks=(chunk, cols))
    if args.data == "smooth":
        x = x.map_blocks(smooth_block)
    reference = x.compute(scheduler="threads")
    codec = codec_throughput(reference[:chunk])
    print(f"codec {codec['settings'].get('codec', 'blosc2, chosen per frame')} on one {codec['bytes'] / 2**20:.0f} MiB block: "
          f"ratio {codec['ratio']:.2f}, compress {codec['compress_MBps_per_core']:.0f} MB/s, "
          f"decompress {codec['decompress_MBps_per_core']:.0f} MB/s per core")

    samples: dict[str, list[float]] = {v: [] for v in variants}
    details: dict[str, list[dict]] = {v: [] for v in variants}
    warmup: dict[str, dict] = {}
    always = asafe.AdaptiveRuntime(
        [asafe.Optimization("wire-compression", asafe.Hysteresis(math.inf, math.inf), initial=True)], signals=False)
    ratio_only = asafe.AdaptiveRuntime(
        [asafe.Optimization("wire-compression", asafe.Hysteresis(0.5, 2.0), initial=False)], signals=False)
    host_cpu = asafe.AdaptiveRuntime([asafe.Optimization("wire-compression", asafe.AllOf(
        [asafe.Hysteresis(0.5, 2.0), asafe.Hysteresis(0.5, 0.8, metric="cpu")]), initial=False)])
    with cluster_client(n_workers=2, threads_per_worker=1) as client:  # or the --hosts topology's
        xp = client.persist(x)
        wait(xp)

        def run(variant: str, label: str) -> tuple[float, dict]:
            handle = None
            if variant == "adaptive":
                handle = asafe.install(client)
            elif variant == "always":
                handle = asafe.install(client, always)
            elif variant == "ratio-only":
                handle = asafe.install(client, copy.deepcopy(ratio_only))
            elif variant == "shared-cpus":
                handle = asafe.install(client, shared_cpus_runtime())
            elif variant == "host-cpu":
                handle = asafe.install(client, copy.deepcopy(host_cpu))
            client.run(wire.reset_stats)
            with burners(args.burn, args.burn_host) as burn_started:
                t0_wall, t0 = time.time(), time.perf_counter()
                y = client.persist(xp.rechunk((rows, chunk)))
                wait(y)
                elapsed = time.perf_counter() - t0
            result = y.compute()
            if result.tobytes() != reference.tobytes():
                raise AssertionError(f"{variant}: the rechunked array differs from the reference")
            counters: dict[str, float] = {}
            for c in client.run(wire.stats).values():
                for k, v in c.items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        counters[k] = counters.get(k, 0) + v
            detail = {"seconds": elapsed, "wire": counters}
            if handle is not None:
                detail["transitions"] = [
                    [round(t.time - t0_wall, 3), t.optimization, t.old, t.new, t.mode.ratio,
                     t.mode.signals.get("cpu"), t.mode.signals.get("external_cpu"), t.mode.signals.get("bandwidth")]
                    for t in handle.history if t.optimization == "wire-compression"]
                detail["state_at_end"] = handle.state("wire-compression")
                timeline = handle.timeline
                step = max(1, len(timeline) // 300)
                detail["timeline"] = [[round(t - t0_wall, 4), _num(m.ratio), m.signals.get("cpu"),
                                       m.signals.get("external_cpu"), m.signals.get("bandwidth")]
                                      for t, m in timeline[::step] if t >= t0_wall - 0.5]
                handle.uninstall()
                if burn_started is not None:
                    off_above = _SHARED_CPUS[1] if variant == "shared-cpus" else _EXTERNAL_CPU_OFF
                    detail["burn_host"] = burn_latency(detail, burn_started, t0_wall, off_above)
            del y, result
            print(f"{label} {variant:9s} {elapsed:7.3f}s compressed "
                  f"{counters.get('compressed_logical_bytes', 0) / 2**20:7.1f} MiB -> "
                  f"{counters.get('compressed_wire_bytes', 0) / 2**20:6.1f} MiB"
                  + (f", transitions {[(t[2], t[3]) for t in detail.get('transitions', [])]}" if handle else "")
                  + (f", burners in host {args.burn_host}: {detail['burn_host']}" if "burn_host" in detail else ""))
            return elapsed, detail

        if args.warmup:
            for variant in variants:  # not samples: the first run of each on this cluster (see the docstring)
                warmup[variant] = run(variant, "warm-up")[1]
        for rnd, order in enumerate(stats.rotations(variants, args.rounds)):
            for variant in order:
                elapsed, detail = run(variant, f"round {rnd}")
                samples[variant].append(elapsed)
                details[variant].append(detail)

    summary = {v: stats.summarize(samples[v]) for v in variants}
    rows_out = []
    comparisons = {}
    for v in variants:
        s = summary[v]
        row = {"variant": v, "median s": f"{s.median:.3f}", "95% CI": f"[{s.ci95[0]:.3f}, {s.ci95[1]:.3f}]",
               "n": s.n}
        if v != "dask" and "dask" in samples:
            ratio, ci, exact = stats.paired_ratio(samples["dask"], samples[v])
            comparisons[v] = {"speedup_vs_dask": ratio, "ci95": ci, "exact": exact,
                              "boot_ci95": stats.ratio_ci(samples["dask"], samples[v])}
            row["dask / variant"] = f"{ratio:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
        rows_out.append(row)
    print(f"link {link}, data {args.data}, {rows}x{cols} float64 ({rows * cols * 8 / 2**20:.0f} MiB), "
          f"burn {args.burn}" + (f" in host {args.burn_host}" if args.burn_host is not None else ""))
    print(harness.format_table(rows_out, list(rows_out[0].keys()) + (["dask / variant"] if comparisons else [])))
    out = Path(args.out) / "wire"
    out.mkdir(parents=True, exist_ok=True)
    burn = (f"-burn{args.burn}" if args.burn else "") + (f"-host{args.burn_host}" if args.burn_host is not None else "")
    where = f"{args.hosts}hosts-" if getattr(args, "hosts", None) else ""
    path = out / f"wire-{where}{link}-{args.data}{burn}.json"
    path.write_text(json.dumps(harness.to_jsonable({
        "suite": "wire", "link": link, "data": args.data, "shape": [rows, cols], "chunks": [chunk, cols],
        "burn": args.burn, "burn_host": args.burn_host, "rechunk_method": args.rechunk_method, "codec": codec, "samples": samples, "summary": summary, "comparisons": comparisons,
        "details": details, "warmup": warmup, "environment": harness.credit_git_at_start(
            stats.environment(workers=2, threads_per_worker=1), git_at_start),
        "thresholds": dask.config.get("asafe.optimizations"),
    }), indent=1))
    print(f"results: {path}")
    try:
        print(f"figure: {plot(json.loads(path.read_text()), path.with_suffix('.png'))}")
    except Exception as exc:  # the JSON is the result; the figure is a view of it
        print(f"no figure: {exc!r}")
    return 0


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def plot(result: dict, path: Path) -> Path:
    """Per-variant sample times, and the median adaptive run's ratio, cpu load and transitions."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4))
    names = list(result["samples"])
    for i, name in enumerate(names):
        ys = result["samples"][name]
        ax.plot([i] * len(ys), ys, "o", alpha=0.6)
        ax.plot([i - 0.2, i + 0.2], [result["summary"][name]["median"]] * 2, "k-")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("seconds per rechunk (samples, median)")
    ax.set_title(f"link {result['link']}, {result['data']} data, burn {result['burn']}", fontsize=9)
    runs = result["details"].get("adaptive") or []
    if runs:
        times = [r["seconds"] for r in runs]
        run = runs[sorted(range(len(times)), key=times.__getitem__)[len(times) // 2]]
        tl = run.get("timeline") or []
        ts = [p[0] for p in tl]
        ratio = [min(1e3, 1e3 if p[1] in ("inf", "nan") else max(float(p[1]), 1e-3)) for p in tl]
        bx.step(ts, ratio, where="post", label="compute/communication")
        bx.set_yscale("log")
        bx.axhline(0.5, color="tab:green", ls="--", lw=1, label="ratio alpha 0.5 / cpu alpha 0.5")
        bx.axhline(2.0, color="tab:red", ls="--", lw=1, label="ratio beta 2.0")
        cx = bx.twinx()
        cx.step(ts, [p[2] if p[2] is not None else float("nan") for p in tl], where="post", color="tab:orange",
                alpha=0.4, label="host cpu load")
        if any(len(p) > 3 for p in tl):
            cx.step(ts, [p[3] if len(p) > 3 and p[3] is not None else float("nan") for p in tl], where="post",
                    color="tab:orange", label="external cpu load (the domain's)")
        cx.axhline(0.8, color="tab:orange", ls=":", lw=1, label="cpu beta 0.8")
        cx.set_ylim(0, 1.05)
        cx.set_ylabel("cpu load")
        for t in run.get("transitions") or []:
            bx.axvline(t[0], color="tab:green" if t[3] else "tab:red", alpha=0.7)
            bx.annotate(f"wire {'on' if t[3] else 'off'}", (t[0], 1e2), rotation=90, fontsize=7)
        bx.set_xlabel("seconds since the rechunk started (median adaptive run)")
        bx.set_ylabel("ratio")
        h1, l1 = bx.get_legend_handles_labels()
        h2, l2 = cx.get_legend_handles_labels()
        bx.legend(h1 + h2, l1 + l2, fontsize=7, loc="lower right")
        bx.set_title(f"wire-compression transitions: {len(run.get('transitions') or [])}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
