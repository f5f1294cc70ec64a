"""The public-workloads suite's results as Markdown tables, one per link (``docs/results/workloads/``).

``python -m benchmarks.analysis.workloads_table DIR LINK`` (from the repository root) reads
``DIR/workloads-LINK-<kind>.json`` for each data kind the suite wrote and prints, per (workload,
kind): plain Dask's median seconds, asafe's paired speedup with its 95% interval, the best static
codec and its speedup, asafe against that codec, the link share and the targets' verdicts (a (b) "not
met" says so where no static codec reaches the 1.3x either), then the verdict counts and the rows whose
interval lies wholly below 1, and each variant's pooled speedup over every row
(:func:`benchmarks._workloads_targets.pooled_speedup`). Asterisked intervals cover less than
95% (fewer than 6 rounds).
"""
from __future__ import annotations

import collections
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks._workloads_cluster import CONTROL
from benchmarks._workloads_targets import TARGET_B_SPEEDUP, pooled_speedup
from benchmarks.workloads import pooled_line

__all__ = ["table"]

KINDS = ("random", "zeros", "smooth", "ints")


def _ratio(r: dict[str, Any] | None) -> str:
    if not r:
        return "-"
    low, high = r["ci95"]
    return f"{r['ratio']:.3f} [{low:.3f}, {high:.3f}]" + ("" if r.get("exact", True) else "*")


def table(folder: Path, link: str) -> str:
    """The Markdown of one link's results in ``folder``."""
    lines, rows = [f"### {link}", ""], []
    counts_a: collections.Counter = collections.Counter()
    counts_b: collections.Counter = collections.Counter()
    below, unreachable = [], []
    results = []
    for kind in KINDS:
        path = folder / f"workloads-{link}-{kind}.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        load = data["load_average"]
        lines.append(f"- {kind}: started {data['started']}, {data['wall_s'] / 60:.0f} min, load average (1 min) "
                     f"{load['start'][0]:.2f} at the start, {load['end'][0]:.2f} at the end")
        for name, result in data["workloads"].items():
            results.append(result)
            analysis = result.get("analysis", {})
            vs = analysis.get("vs_dask", {})
            best = analysis.get("best_static")
            verdict_a = analysis.get("targets", {}).get("a", "-")
            verdict_b = analysis.get("targets", {}).get("b", "-")
            counts_a[verdict_a] += 1
            counts_b["n/a" if verdict_b.startswith("n/a") else verdict_b] += 1
            if verdict_b == "not met" and best and vs[best]["ci95"][1] < TARGET_B_SPEEDUP:
                # the speedup part is beyond every codec the mechanism has: say so beside the verdict
                verdict_b += f" (no codec reaches {TARGET_B_SPEEDUP}x here: the best static's interval ends at " \
                             f"{vs[best]['ci95'][1]:.2f}x)"
                unreachable.append(f"{name}/{kind}")
            if vs.get("asafe") and vs["asafe"]["ci95"][1] < 1:
                below.append(f"{name}/{kind}")
            dask = analysis.get("summary", {}).get("dask")
            share = analysis.get("transfer_share")
            rows.append(f"| {name} | {kind} | {dask['median_s']:.3f} | " if dask else f"| {name} | {kind} | FAILED | ")
            rows[-1] += " | ".join([
                _ratio(vs.get("asafe")), f"{best.removeprefix('static-')} {vs[best]['ratio']:.3f}" if best else "-",
                _ratio(analysis.get("asafe_vs_best")), "-" if share is None else f"{share:.2f}", verdict_a, verdict_b,
            ]) + " |" + (f" failed: {result['failed']}" if result.get("failed") else "")
    lines += ["", "| workload | data | dask s | asafe speedup [95%] | best static | asafe / best [95%] | link share "
              "| (a) | (b) |", "|---|---|---:|---|---|---|---:|---|---|", *rows, "",
              f"target (a): {dict(counts_a)}; target (b): {dict(counts_b)}; asafe's interval wholly below 1: "
              f"{', '.join(below) or 'none'}; (b) not met where no static codec reaches {TARGET_B_SPEEDUP}x either: "
              f"{', '.join(unreachable) or 'none'}", ""]
    variants = sorted({s["variant"] for r in results for s in r.get("samples", ())} - {"dask"})
    pairs = [(variant, "dask") for variant in variants]
    if CONTROL in variants and "asafe" in variants:
        pairs.append(("asafe", CONTROL))  # against plain Dask's other half of an A/A run
    for variant, base in pairs:
        pooled = pooled_speedup(results, variant, base=base)
        if pooled:
            lines += [pooled_line(pooled), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m benchmarks.analysis.workloads_table DIR LINK")
    print(table(Path(sys.argv[1]), sys.argv[2]))
