"""Public workloads: asafe on the dask.array, dask.dataframe and futures workloads Dask users run.

``python -m benchmarks workloads [--link 1gbit] [options]`` measures plain Dask
against asafe on workloads the project did not design for it (issue 29, item 4),
each of which moves data between worker processes -- where wire compression
can help or hurt.

Workloads (``--workloads``; ``--mib`` sets the size of one input array of float64:
96 MiB by default, 16 MiB with ``--quick``; frames are a quarter of it)
    ``rechunk-tasks``, ``rechunk-p2p``
        A (R, 2R) array in row chunks rechunked to column chunks, by tasks and
        by P2P (``rechunk(method=...)``, what ``array.rechunk.method`` selects).
        Every block moves; about half of the bytes cross between two workers.
    ``transpose``
        ``x.T`` of a square array in row chunks, persisted into row chunks again
        (Dask's own rechunk method choice): all-to-all.
    ``reduce``
        ``x.sum(axis=0)`` and ``x.mean(axis=1)`` of a grid of chunks: partial
        results move, little data (a low-traffic control).
    ``map-overlap``
        A Gaussian filter (sigma 1, ``depth`` 4) of a square array in 4 x 4
        chunks by ``map_overlap``: halos move.
    ``stencil``
        A five-point Laplacian written with shifted slices
        (``x[2:, 1:-1] + x[:-2, 1:-1] + ... - 4 * x[1:-1, 1:-1]``) of a square
        array in row slabs: chunks that do not line up, slivers move. (In 4 x 4
        chunks the same expression makes over 1,300 tasks and costs several
        seconds of scheduling per run here, whatever the size.)
    ``matmul``
        ``A @ B``, A (N, 128) in chunks (N/16, 64), B (128, 128) float64
        weights: the two partial products of each row of blocks are summed
        where one of them lives.
    ``diff``
        ``x[1:, 1:] - y[:-1, :-1]`` of two independent arrays (after the
        ``double_diff`` benchmark of coiled/benchmarks): chunks that do not line
        up, and half of the pairs of blocks live apart (``x[1:] - x[:-1]`` of one
        array would pair blocks that mostly live together).
    ``anomaly``
        ``x - rolling_mean(x)`` along the chunked time axis (a centred window of
        33 steps by ``map_overlap``; the anomaly of climate data).
    ``shuffle``
        ``df.shuffle("id", shuffle_method="p2p")`` of a frame of an id and two
        value columns (24 MiB and 1M rows at the default size, 16 partitions).
    ``groupby``
        ``df.groupby("id").agg({"x": "sum", "y": "mean"}, split_out=P)`` with
        about four rows per id: the partial aggregates are shuffled (Dask's
        default method, P2P on a cluster).
    ``merge``
        ``left.merge(right, on="id")``, right a table of the unique ids (a
        quarter of left's rows): both sides shuffled (Dask's default).
    ``futures``
        ``client.map`` over 16 blocks, then a tree of pairwise sums by
        ``client.submit``, gathering blocks across workers.

    The inputs are made on the workers (``map_blocks``, ``from_map``,
    ``client.map`` of generator functions; nothing is shipped from the client)
    and persisted once per workload; each sample times building the graph,
    persisting the output and waiting for it (outputs stay on the workers; no
    gather to the client is timed).

Data kinds (``--data``; deterministic seeds, every block from ``(seed, its position)``)
    ``random``
        ``rng.standard_normal``: incompressible floats.
    ``zeros``
        Standard normal floats of which exactly ``round(zero_fraction * size)``
        elements of every block, at random places, are ``0.0`` (``--zero-fraction``,
        default 0.5; the other elements are never zero).
    ``smooth``
        A smooth field (sums of sines of the global position, seeded phases)
        rounded to 1/1024: low-precision sensor-like floats, at most 3073
        distinct values.
    ``ints``
        int64 ids with 1000 distinct values (arrays; ``matmul`` multiplies them
        by float64 weights). Frames: string ids (``"id-123"``, pyarrow strings)
        and int64 value columns with 1000 distinct values.

    Frames of the float kinds have an int64 ``id`` and two float64 value
    columns ``x``, ``y`` of the kind.

Variants (``--variants``), interleaved on one cluster per (link, data kind)
    ``dask``
        Plain Dask: asafe not installed, its serializers unwrapped on every
        worker and in the client.
    ``asafe``
        ``asafe.install(client)`` with its defaults: a fresh
        ``AdaptiveRuntime()`` per sample, so it must find its mode within the run.
    ``static-<codec>``
        ``wire-compression`` forced to ``codec`` for each codec of
        ``asafe.schedulers.wire.CODEC_STATES`` (``lz4``, ``zstd`` where that name
        is missing): ``asafe.install(client, AdaptiveRuntime([Optimization(
        "wire-compression", Fixed(codec), initial=codec)]))``.

    Each workload first runs every variant once (the warm-up: first P2P run,
    imports and first touch on the workers; timed, recorded apart, never in
    the samples), then rounds of one sample per variant in balanced orders
    (:func:`asafe.app.stats.balanced_orders`, rule 5). Between two samples the
    installation is removed (``handle.uninstall()``, then
    :func:`asafe.schedulers.wire.disable` on every worker and in the client), the
    output is released until the scheduler has forgotten its keys, and every
    input is put back on the worker that made it, one replica each (the
    scheduler's housekeeping requests that the Active Memory Manager uses), so
    that every sample starts from the same placement. Before each sample, every worker is asked for its
    wire state: a ``dask`` sample that finds asafe's serializers or a state
    still in place stops the run (a harness bug); a static variant whose state
    did not arrive is reported as failed. ``asafe.schedulers.wire.stats()`` of
    every worker is recorded per sample (frames compressed and skipped, bytes,
    codec seconds).

Results checked equal (rule 1)
    The ``dask`` variant's warm-up result is the reference. Array blocks are
    compared by digest (shape, dtype, SHA-1 of the bytes) where the same graph
    must give the same bits (every workload but ``reduce`` and ``matmul``);
    ``reduce`` and ``matmul`` compare 256 segment sums of every block with
    ``rtol=1e-9`` and ``atol=1e-9 x`` the largest segment (the digest recording
    whether they were also bit-identical). Frame partitions (``shuffle``,
    ``merge``: rows arrive in any order) compare the row count, the dtypes and
    the wrapping sum of pandas' 64-bit row hashes, which does not depend on
    row order; ``groupby`` (sums of floats in the arrival order) compares each
    partition sorted by id: the ids exactly and the value columns by segment
    sums at the same tolerance. A variant whose result differs, or that raises,
    is reported as failed with the first difference and never timed again.

Statistics (``asafe.app.stats``)
    Per workload and variant, the median seconds and its order-statistic 95%
    interval; the *paired ratio* of a variant, plain Dask's time / the variant's
    time in each round (> 1: faster than Dask), its median with the
    distribution-free interval (exact from 6 rounds); the *best static codec*,
    the static variant with the highest median paired ratio; and asafe against
    it (best static's time / asafe's time per round). Rounds stop at
    ``--rounds`` (default 6, the fewest for an exact 95% interval) or earlier
    when every median's interval is within ``--rel-ci``, or when a workload's
    sampling passes ``--max-seconds`` (then the file says so). Over every row,
    each variant's *pooled* speedup (:func:`~benchmarks._workloads_targets.pooled_speedup`:
    the geometric mean of the rows' median paired ratios, with a seeded
    bootstrap of the rounds within rows for its 95% interval, and the count of
    rows wholly below and above 1). ``--variants dask,dask-control,asafe`` adds
    plain Dask timed again as a variant of its own, an A/A control: how many
    rows the statistics put on either side of 1 with no code changed.

Transfer-bound, measured
    Behind a shaped link (``--link``) the suite runs in a network namespace
    whose only interface is the shaped loopback, so its byte counters count
    exactly the cluster's traffic. A workload is *transfer-bound* on a data
    kind when, in plain Dask's samples, the bytes over the link at the link's
    rate take at least half of the wall time (median over the samples;
    :data:`TRANSFER_BOUND_SHARE`). On the loopback as it is the counters are
    shared with every process of the host, and nothing is called transfer-bound.

Targets (issue 29; "met" only where the 95% interval clears the target, "not
met" where it lies wholly on the wrong side, else "not shown"; intervals from
fewer than 6 rounds are never "met")
    (a) every workload, data kind and link: asafe's paired ratio at least 0.98
        and no interval wholly below 1;
    (b) behind 1 Gbit/s, every transfer-bound workload on the ``zeros``,
        ``smooth`` and ``ints`` kinds: asafe's paired ratio at least 1.3, and
        within 10% of the best static codec (best static / asafe at least 1/1.1).

Output
    ``OUT/workloads/workloads-<link>-<data>.json`` per data kind (every sample,
    warm-up, wire counters, CPU seconds, asafe's transitions with the ratio and
    signals each read, the environment and git commit at the start, the load
    average at the start and the end),
    rewritten after every workload; and a console table per (workload, data kind) with the targets'
    summary.

Sizes, rounds and wall time (this project's 2-core machine)
    The default, ``--mib 96`` and 6 rounds (the fewest for an exact 95% interval),
    is 13 workloads x 4 kinds x 4 variants (two codecs) x 7 runs (a warm-up and 6
    rounds), 1,456 runs per link. Per run of plain Dask at that size, the
    rechunks and the transpose send about 150 MB over the loopback, the matrix
    product 260 MB, the frames and the futures 40-80 MB, the others less (0.3-2 s
    behind 1 Gbit/s; about 1 GB, 8.5 s, for one run of each workload). The
    frames are a quarter of ``--mib`` because Dask's P2P shuffle costs about
    0.05 CPU seconds per MiB here (pyarrow, disk), ten times what 1 Gbit/s costs
    per MiB: they are CPU-bound at any size, and at the arrays' size they alone
    would take about half of the run. Estimated wall time: about 30 minutes on
    the loopback and at 10 Gbit/s, about 40 minutes behind 1 Gbit/s. The
    estimate comes from the CPU seconds that every sample records (``cpu_s``)
    in a ``--quick`` run (16 MiB) and a one-round 64 MiB run of the ``zeros``
    kind, extrapolated linearly to 96 MiB (about 20 CPU seconds for one run of
    each of the 13 workloads), as wall = 1.3 x CPU / 2 cores, plus 0.3 s per run
    of installing, checking and cleaning up, plus the link time where it does
    not overlap the computing (47 minutes if it never did). Wall times measured
    here are no guide: the machine was shared; the whole ``--quick`` suite on
    the loopback took 15 minutes at a load average of 4-5 (about 10 on a quiet
    machine by the same estimate). Every results file records its ``wall_s``.

Run the full suite, one link per invocation (``docs/benchmarking.rst``)::

    python -m benchmarks workloads --out docs/results/workloads
    python -m benchmarks workloads --link 10gbit --out docs/results/workloads
    python -m benchmarks workloads --link 1gbit --out docs/results/workloads

The suite's parts: data kinds and result digests in ``_workloads_data``, the
workloads in ``_workloads_defs``, the variants, the cluster's housekeeping and
one sample in ``_workloads_cluster``, statistics and targets in
``_workloads_targets``; this module runs workloads, prints and writes.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from asafe.app import stats

from . import harness
from ._workloads_cluster import (CONTROL, _holders, _install, _keys_of, _run_once, _uninstall, _wait_forgotten,
                                 codec_states, variant_names)
from ._workloads_data import (DATA_KINDS, DEFAULT_ZERO_FRACTION, INT_DISTINCT, RTOL, SMOOTH_STEP, array_digest,
                              compare_digests, frame_digest, ints_block, kind_array, kind_frame, make_block,
                              random_block, smooth_block, zeros_block)
from ._workloads_defs import WORKLOADS, Spec, Workload
from ._workloads_targets import (COMPRESSIBLE_KINDS, EXACT_ROUNDS, TARGET_A, TARGET_B_OF_BEST, TARGET_B_SPEEDUP,
                                 TRANSFER_BOUND_SHARE, combine_verdicts, pooled_speedup, summarize_workload, target_a,
                                 target_b, transfer_share, verdict)

__all__ = [
    "DATA_KINDS",
    "WORKLOADS",
    "DEFAULT_ZERO_FRACTION",
    "INT_DISTINCT",
    "SMOOTH_STEP",
    "RTOL",
    "TRANSFER_BOUND_SHARE",
    "TARGET_A",
    "TARGET_B_SPEEDUP",
    "TARGET_B_OF_BEST",
    "Spec",
    "Workload",
    "codec_states",
    "variant_names",
    "random_block",
    "zeros_block",
    "smooth_block",
    "ints_block",
    "make_block",
    "kind_array",
    "kind_frame",
    "array_digest",
    "frame_digest",
    "compare_digests",
    "verdict",
    "combine_verdicts",
    "target_a",
    "target_b",
    "transfer_share",
    "summarize_workload",
    "run_workload",
    "table",
    "target_summary",
    "main",
]

#: Default input size (MiB of one input array) and the ``--quick`` one.
DEFAULT_MIB, QUICK_MIB = 96, 16
#: Default rounds and the ``--quick`` ones.
DEFAULT_ROUNDS, QUICK_ROUNDS = EXACT_ROUNDS, 3


# --------------------------------------------------------------------------- one workload
def run_workload(client: Any, workload: Workload, spec: Spec, variants: Sequence[str], *,
                 rounds: int, rel_ci: float = 0.05, max_seconds: float = math.inf,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
    """Warm up, then time ``variants`` of ``workload`` in balanced rounds on the cluster behind ``client``.

    The ``dask`` variant must be among ``variants``: its warm-up result is the
    reference every result is compared with (:func:`compare_digests`).

    Returns
    -------
    dict
        ``samples`` (one record per timed run: round, position, variant, seconds,
        wire counters, link bytes, asafe's state and transitions, whether the
        result was bit-identical), ``warmup``, ``failed`` (variant -> why),
        ``stop_reason``, ``rounds``, and :func:`summarize_workload`'s fields.
    """
    if "dask" not in variants:
        raise ValueError(f"the variants must include 'dask' (the reference and the base of every ratio), "
                         f"got {list(variants)}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds!r}")
    started = time.perf_counter()
    inputs = workload.prepare(client, spec)
    prepare_s = time.perf_counter() - started
    placement = {k: h[0] for k, h in client.run_on_scheduler(_holders, keys=_keys_of(list(inputs.values()))).items()
                 if h}
    result: dict[str, Any] = {"workload": workload.name, "family": workload.family,
                              "description": workload.description, "exact": workload.exact,
                              "inputs": _describe_inputs(inputs), "prepare_s": prepare_s, "warmup": {},
                              "failed": {}, "samples": []}
    reference: list | None = None
    failed: dict[str, str] = result["failed"]

    def attempt(variant: str, what: str) -> dict[str, Any] | None:
        nonlocal reference
        try:
            handle = _install(client, variant)
        except Exception as exc:
            failed[variant] = f"install raised on {what}: {type(exc).__name__}: {exc}"
            _uninstall(client, None)  # whatever it left in the serializers
            return None
        record = _run_once(client, workload, spec, inputs, placement, variant, handle)
        if "error" in record:
            failed[variant] = f"{what}: {record.pop('error')}"
            return None
        digest = record.pop("digest")
        if reference is None:
            reference = digest
        problem = compare_digests(reference, digest, workload.exact)
        if problem:
            failed[variant] = f"wrong result on {what}: {problem}"
            return None
        record["identical"] = digest == reference  # every bit (or segment sum) the same as plain Dask's
        return record

    try:
        for variant in ["dask"] + [v for v in variants if v != "dask"]:
            record = attempt(variant, "warm-up")
            if record is not None:
                result["warmup"][variant] = record
                log(f"  warm-up {variant:<12} {record['seconds']:7.3f} s{_wire_note(record)}")
            elif variant == "dask":
                log(f"  {workload.name}: the dask variant failed ({failed['dask']}); workload skipped")
                return result
        live = [v for v in variants if v not in failed]
        samples: dict[str, list[float]] = {v: [] for v in live}
        sampling = time.perf_counter()
        decision = None
        for rnd, order in enumerate(stats.balanced_orders(list(variants), rounds)):
            for position, variant in enumerate(order):
                if variant in failed:
                    continue
                record = attempt(variant, f"round {rnd}")
                if record is None:
                    log(f"  FAILED {variant}: {failed[variant]}")
                    samples.pop(variant, None)
                    result["samples"] = [s for s in result["samples"] if s["variant"] != variant]
                    continue
                record.update(round=rnd, position=position)
                samples[variant].append(record["seconds"])
                result["samples"].append(record)
                log(f"  round {rnd} {variant:<12} {record['seconds']:7.3f} s{_wire_note(record)}")
            if "dask" in failed or not samples:
                break
            decision = stats.stop_decision(samples, rel_ci=rel_ci, min_samples=min(EXACT_ROUNDS, rounds),
                                           max_samples=rounds, elapsed=time.perf_counter() - sampling,
                                           max_seconds=max_seconds)
            if decision.stop:
                break
        result["stop_reason"] = decision.reason if decision is not None else "no round completed"
        result["rounds"] = min((len(s) for s in samples.values()), default=0)
    finally:
        keys = _keys_of(list(inputs.values()))
        del inputs
        _wait_forgotten(client, keys)
    return result


def _describe_inputs(inputs: dict) -> dict[str, Any]:
    out = {}
    for name, value in inputs.items():
        if hasattr(value, "chunks") and hasattr(value, "dtype"):
            out[name] = {"shape": list(value.shape), "chunks": [list(c) for c in value.chunks],
                         "dtype": str(value.dtype), "nbytes": int(value.nbytes)}
        elif hasattr(value, "npartitions"):
            out[name] = {"partitions": int(value.npartitions), "columns": [str(c) for c in value.columns],
                         "dtypes": [str(t) for t in value.dtypes]}
        else:
            out[name] = {"type": type(value).__name__}
    return out


def _wire_note(record: Mapping[str, Any]) -> str:
    wire = record.get("wire") or {}
    logical = wire.get("compressed_logical_bytes", 0)
    note = ""
    if logical:
        note = (f", compressed {logical / 2**20:.1f} MiB -> {wire.get('compressed_wire_bytes', 0) / 2**20:.1f} MiB"
                f" in {int(wire.get('compressed_frames', 0))} frames")
    if record.get("link_bytes") is not None:
        note += f", {record['link_bytes'] / 2**20:.1f} MiB on lo"
    if record.get("transitions"):
        note += f", transitions {[tuple(t[1:]) for t in record['transitions']]}"
    return note


# --------------------------------------------------------------------------- console
def _fmt_ratio(r: Mapping[str, Any] | None) -> str:
    if not r:
        return "-"
    flag = "" if r["exact"] else "*"
    return f"{r['ratio']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]{flag}"


def table(results: Sequence[Mapping[str, Any]], variants: Sequence[str]) -> str:
    """The console table: one row per (workload, data kind)."""
    rows = []
    for r in results:
        s = r.get("analysis", {})
        row: dict[str, Any] = {"workload": r["workload"], "data": r["kind"]}
        for v in variants:
            d = s.get("summary", {}).get(v)
            row[f"{v} s"] = "FAILED" if v in r.get("failed", {}) else (f"{d['median_s']:.3f}" if d else "-")
        row["asafe speedup"] = _fmt_ratio(s.get("vs_dask", {}).get("asafe"))
        best = s.get("best_static")
        row["best static"] = f"{best.removeprefix('static-')} {s['vs_dask'][best]['ratio']:.3f}" if best else "-"
        row["asafe/best"] = _fmt_ratio(s.get("asafe_vs_best"))
        share = s.get("transfer_share")
        row["link share"] = "-" if share is None else f"{share:.2f}"
        row["(a)"] = s.get("targets", {}).get("a", "-")
        row["(b)"] = s.get("targets", {}).get("b", "-")
        rows.append(row)
    columns = (["workload", "data"] + [f"{v} s" for v in variants]
               + ["asafe speedup", "best static", "asafe/best", "link share", "(a)", "(b)"])
    return harness.format_table(rows, columns)


def target_summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts of each verdict of targets (a) and (b), and the (workload, kind) pairs not met or failed."""
    summary: dict[str, Any] = {}
    for name in ("a", "b"):
        counts: dict[str, int] = {}
        not_met = []
        for r in results:
            v = r.get("analysis", {}).get("targets", {}).get(name, "no result")
            key = "n/a" if v.startswith("n/a") else v
            counts[key] = counts.get(key, 0) + 1
            if v in ("not met", "no result"):
                not_met.append(f"{r['workload']}/{r['kind']}")
        summary[name] = {"counts": counts, "not_met_or_no_result": not_met}
    summary["failed"] = {f"{r['workload']}/{r['kind']}": r["failed"] for r in results if r.get("failed")}
    return summary


# --------------------------------------------------------------------------- command line
def _csv(allowed: Sequence[str], what: str) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        unknown = [t for t in items if t not in allowed]
        if unknown or not items:
            raise argparse.ArgumentTypeError(f"{what}: unknown {unknown or 'none given'}; choose from "
                                             f"{', '.join(allowed)}")
        return list(dict.fromkeys(items))
    return parse


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    variants = variant_names()
    parser = argparse.ArgumentParser(prog="python -m benchmarks workloads", description=__doc__.splitlines()[0])
    harness.add_common_arguments(parser, max_seconds=600.0)
    parser.add_argument("--workloads", type=_csv(list(WORKLOADS), "--workloads"), default=list(WORKLOADS),
                        help=f"comma-separated (default: all): {', '.join(WORKLOADS)}")
    parser.add_argument("--data", type=_csv(DATA_KINDS, "--data"), default=list(DATA_KINDS),
                        help=f"data kinds, comma-separated (default: all): {', '.join(DATA_KINDS)}")
    parser.add_argument("--variants", type=_csv([*variants, CONTROL], "--variants"), default=variants,
                        help=f"comma-separated, dask always included (default: all): {', '.join(variants)}; "
                             f"{CONTROL}: plain Dask again, an A/A control (not in the default)")
    parser.add_argument("--rounds", type=harness.positive_int, default=None,
                        help=f"most rounds per workload (default {DEFAULT_ROUNDS}, --quick {QUICK_ROUNDS}; "
                             f"{EXACT_ROUNDS} or more for an exact 95%% interval)")
    parser.add_argument("--mib", type=harness.positive_float, default=None,
                        help=f"MiB of one input array (default {DEFAULT_MIB}, --quick {QUICK_MIB})")
    parser.add_argument("--zero-fraction", type=_fraction, default=DEFAULT_ZERO_FRACTION,
                        help="share of exact zeros of the zeros kind (default: %(default)s)")
    parser.add_argument("--workers", type=harness.positive_int, default=2,
                        help="worker processes (default: %(default)s)")
    parser.add_argument("--threads", type=harness.positive_int, default=1,
                        help="threads per worker (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="base seed of the data (default: %(default)s)")
    return parser


def _load() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def _write(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(harness.to_jsonable(data), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite on one link: one cluster per data kind, every workload, variants interleaved."""
    import cloudpickle
    import dask
    from distributed import Client, LocalCluster

    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    variants = list(dict.fromkeys(["dask"] + args.variants))
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else DEFAULT_ROUNDS)
    mib = args.mib or (QUICK_MIB if args.quick else DEFAULT_MIB)
    link = args.link.rate if args.link is not None else "loopback"
    link_bits = args.link.bits_per_s if args.link is not None else None
    if "dataframe" in {WORKLOADS[w].family for w in args.workloads}:
        try:
            import dask.dataframe  # noqa: F401  (needs pandas and pyarrow)
        except ImportError as exc:
            print(f"workloads: the dataframe workloads need pandas and pyarrow ({exc}); "
                  f'pip install -e ".[bench]", or leave them out with --workloads', file=sys.stderr)
            return 2
    git_at_start = harness.environment()["git"]  # the code that runs (see harness.credit_git_at_start)
    out_dir = Path(args.out) / "workloads"
    options = {"workloads": args.workloads, "data": args.data, "variants": variants, "codecs": list(codec_states()),
               "rounds": rounds, "mib": mib, "zero_fraction": args.zero_fraction, "workers": args.workers,
               "threads_per_worker": args.threads, "seed": args.seed, "quick": args.quick, "rel_ci": args.rel_ci,
               "max_seconds_per_workload": args.max_seconds}
    definitions = {
        "paired_ratio": "median over rounds of dask seconds / variant seconds (> 1: faster than plain Dask), "
                        "order-statistic 95% interval (exact from 6 rounds)",
        "best_static": "the static-<codec> variant with the highest median paired ratio against dask",
        "asafe_vs_best": "median over rounds of best static seconds / asafe seconds",
        "transfer_share": "plain Dask's bytes over the shaped loopback x 8 / link bits per s / wall seconds, median",
        "transfer_bound": f"transfer_share >= {TRANSFER_BOUND_SHARE}",
        "target_a": f"asafe vs dask interval >= {TARGET_A} (met), wholly below {TARGET_A} or 1 (not met)",
        "target_b": f"behind 1 Gbit/s, transfer-bound, kinds {COMPRESSIBLE_KINDS}: asafe vs dask interval >= "
                    f"{TARGET_B_SPEEDUP} and asafe vs best static interval >= 1/1.1",
        "tolerance": f"reduce, matmul, groupby: segment sums within rtol {RTOL:g}, atol {RTOL:g} x largest; "
                     "others: identical bytes (arrays) or row-hash sums (frames)",
    }
    def describe(load_at_start: list[float] | None) -> dict[str, Any]:
        return harness.credit_git_at_start(harness.environment(
            load_average_at_start=load_at_start, workers=args.workers, threads_per_worker=args.threads,
            cluster="distributed LocalCluster",
            dask_config={k: dask.config.get(k, None) for k in (
                "array.rechunk.method", "dataframe.shuffle.method", "distributed.p2p.storage.disk",
                "distributed.scheduler.active-memory-manager.start", "asafe.wire")}), git_at_start)

    print(f"workloads on {link}: {len(args.workloads)} workloads x {len(args.data)} data kinds, variants "
          f"{', '.join(variants)}; {mib:g} MiB per input, up to {rounds} rounds"
          + (" (--quick: a smoke run)" if args.quick else ""))
    all_results: list[dict[str, Any]] = []
    from asafe.schedulers import wire

    wire.disable()  # plain Dask in this process too, whatever ran in it before
    module = sys.modules[__name__]  # the workers cannot import benchmarks (not installed): send it by value
    registered = module.__name__ not in cloudpickle.list_registry_pickle_by_value()
    if registered:
        cloudpickle.register_pickle_by_value(module)
    # distributed logs every P2P run's start and end at WARNING from the scheduler (in this process)
    shuffle_log = logging.getLogger("distributed.shuffle")
    shuffle_level = shuffle_log.level
    shuffle_log.setLevel(logging.ERROR)
    try:
        for kind in args.data:
            spec = Spec(kind, mib, args.zero_fraction, args.seed)
            load_at_start = _load()
            started = time.perf_counter()
            started_utc = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            path = out_dir / f"workloads-{link}-{kind}.json"
            file: dict[str, Any] = {"suite": "workloads", "link": link, "data": kind, "started": started_utc,
                                    "command": [Path(sys.argv[0]).name] + sys.argv[1:], "options": options,
                                    "definitions": definitions, "workloads": {}}
            with LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                              dashboard_address=":0") as cluster, Client(cluster) as client:
                client.wait_for_workers(args.workers)
                file["environment"] = describe(load_at_start)  # with the shaped link's measured check
                file["cluster_start_s"] = time.perf_counter() - started
                print(f"\n== data {kind}: cluster of {args.workers} workers x {args.threads} threads up in "
                      f"{file['cluster_start_s']:.1f} s")
                for name in args.workloads:
                    print(f"-- {name} / {kind}")
                    result = run_workload(client, WORKLOADS[name], spec, variants, rounds=rounds, rel_ci=args.rel_ci,
                                          max_seconds=args.max_seconds)
                    result["kind"] = kind
                    result["analysis"] = summarize_workload(result, variants, kind=kind, link_bits=link_bits,
                                                            rel_ci=args.rel_ci)
                    file["workloads"][name] = result
                    all_results.append(result)
                    file["wall_s"] = time.perf_counter() - started
                    file["targets"] = target_summary([r for r in all_results if r["kind"] == kind])
                    file["pooled"] = {v: pooled_speedup([r for r in all_results if r["kind"] == kind], v)
                                      for v in variants if v != "dask"}
                    file["load_average"] = {"start": load_at_start, "end": _load()}
                    _write(path, file)
            print(f"results: {path} ({time.perf_counter() - started:.0f} s)")
    finally:
        if registered:
            cloudpickle.unregister_pickle_by_value(module)
        shuffle_log.setLevel(shuffle_level)
    print()
    print(table(all_results, variants))
    print("speedup: dask / asafe seconds per round, median [95% interval]; asafe/best: best static / asafe; "
          "* fewer than 6 rounds (interval below 95%); link share: plain Dask's bytes on the shaped link / its time")
    summary = target_summary(all_results)
    for name, label in (("a", f"(a) asafe >= {TARGET_A}x plain Dask, no interval below 1"),
                        ("b", f"(b) transfer-bound, compressible, 1 Gbit/s: >= {TARGET_B_SPEEDUP}x and within 10% "
                              "of the best static codec")):
        counts = ", ".join(f"{k} {v}" for k, v in sorted(summary[name]["counts"].items()))
        missing = summary[name]["not_met_or_no_result"]
        print(f"{label}: {counts}" + (f"; not met or no result: {', '.join(missing)}" if missing else ""))
    for variant, base in (("asafe", "dask"), (CONTROL, "dask"), ("asafe", CONTROL)):
        pooled = pooled_speedup(all_results, variant, base=base)
        if pooled:
            print(pooled_line(pooled))
    for pair, why in summary["failed"].items():
        print(f"FAILED {pair}: {why}")
    return 0


def pooled_line(pooled: Mapping[str, Any]) -> str:
    """:func:`pooled_speedup`'s result as one line of text.

    >>> pooled_line({"variant": "asafe", "base": "dask", "ratio": 0.99, "ci95": [0.98, 1.0], "rows": 52,
    ...              "rows_below_1": 3, "rows_above_1": 1})
    'pooled asafe: 0.990x [0.980, 1.000] plain Dask (geometric mean of 52 rows; intervals wholly below 1: 3, wholly above: 1)'
    """
    low, high = pooled["ci95"]
    base = "plain Dask" if pooled.get("base", "dask") == "dask" else pooled["base"]
    return (f"pooled {pooled['variant']}: {pooled['ratio']:.3f}x [{low:.3f}, {high:.3f}] {base} (geometric mean "
            f"of {pooled['rows']} rows; intervals wholly below 1: {pooled['rows_below_1']}, wholly above: "
            f"{pooled['rows_above_1']})")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
