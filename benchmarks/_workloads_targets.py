"""The public-workloads suite's statistics and the issue's targets (a) and (b), judged by interval.

See :mod:`benchmarks.workloads` and ``docs/results/workloads/PLAN.md``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from asafe.app import stats


__all__ = [
    "TRANSFER_BOUND_SHARE",
    "TARGET_A",
    "TARGET_B_SPEEDUP",
    "TARGET_B_OF_BEST",
    "TARGET_B_LINK_BITS",
    "COMPRESSIBLE_KINDS",
    "EXACT_ROUNDS",
    "verdict",
    "combine_verdicts",
    "target_a",
    "target_b",
    "transfer_share",
    "summarize_workload",
    "pooled_speedup",
]

#: A workload is transfer-bound when the link is busy at least this share of plain Dask's time.
TRANSFER_BOUND_SHARE = 0.5
#: Target (a): asafe's paired ratio against plain Dask, every workload, kind and link.
TARGET_A = 0.98
#: Target (b): asafe's paired ratio on transfer-bound workloads, compressible kinds, behind 1 Gbit/s ...
TARGET_B_SPEEDUP = 1.3
#: ... and at least this share of the best static codec's speed (within 10%).
TARGET_B_OF_BEST = 1 / 1.1
#: The link rate (bits/s) at which target (b) applies.
TARGET_B_LINK_BITS = 1e9
#: Kinds that target (b) counts as compressible.
COMPRESSIBLE_KINDS = ("zeros", "smooth", "ints")
#: Rounds needed for an exact 95% order-statistic interval of a median.
EXACT_ROUNDS = 6


# --------------------------------------------------------------------------- statistics and targets
def verdict(ci: Sequence[float], target: float, exact: bool = True) -> str:
    """``"met"`` when the interval clears ``target``, ``"not met"`` when it lies wholly below, else ``"not shown"``.

    An interval that does not reach 95% (``exact=False``, fewer than 6 rounds) shows
    nothing either way.

    >>> verdict((1.02, 1.10), 0.98), verdict((0.90, 0.97), 0.98), verdict((0.95, 1.05), 0.98)
    ('met', 'not met', 'not shown')
    >>> verdict((1.02, 1.10), 0.98, exact=False), verdict((0.90, 0.97), 0.98, exact=False)
    ('not shown', 'not shown')
    """
    low, high = float(ci[0]), float(ci[1])
    if not exact:
        return "not shown"
    if high < target:
        return "not met"
    if low >= target:
        return "met"
    return "not shown"


def combine_verdicts(*verdicts: str) -> str:
    """All parts met: "met"; any not met: "not met"; else "not shown".

    >>> combine_verdicts("met", "not shown"), combine_verdicts("met", "not met"), combine_verdicts("met", "met")
    ('not shown', 'not met', 'met')
    """
    if any(v == "not met" for v in verdicts):
        return "not met"
    if verdicts and all(v == "met" for v in verdicts):
        return "met"
    return "not shown"


def target_a(speedup: Mapping[str, Any] | None) -> str:
    """Target (a) from asafe's paired ratio against plain Dask (``ratio``, ``ci95``, ``exact``).

    Met when the interval clears :data:`TARGET_A`; not met when it lies wholly
    below 1 (so also when wholly below :data:`TARGET_A`); an interval of fewer
    than 6 rounds shows neither.

    >>> target_a({"ratio": 1.0, "ci95": [0.99, 1.02], "exact": True})
    'met'
    >>> target_a({"ratio": 0.97, "ci95": [0.95, 0.99], "exact": True})
    'not met'
    >>> target_a({"ratio": 0.99, "ci95": [0.985, 0.995], "exact": True})
    'not met'
    >>> target_a({"ratio": 0.99, "ci95": [0.97, 1.01], "exact": True})
    'not shown'
    >>> target_a(None)
    'no result'
    """
    if not speedup:
        return "no result"
    if speedup["ci95"][1] < 1.0 and speedup["exact"]:  # wholly below 1 (so also whenever wholly below 0.98)
        return "not met"
    return verdict(speedup["ci95"], TARGET_A, speedup["exact"])


def target_b(speedup: Mapping[str, Any] | None, of_best: Mapping[str, Any] | None, *, kind: str,
             link_bits: float | None, transfer_bound: bool | None) -> str:
    """Target (b): behind 1 Gbit/s, transfer-bound, compressible kind -> >= 1.3x Dask and within 10% of the best static.

    ``"n/a"`` (with the reason) where it does not apply.

    >>> good = {"ratio": 1.5, "ci95": [1.4, 1.6], "exact": True}
    >>> near = {"ratio": 0.97, "ci95": [0.95, 0.99], "exact": True}
    >>> target_b(good, near, kind="zeros", link_bits=1e9, transfer_bound=True)
    'met'
    >>> target_b(good, {"ratio": 0.8, "ci95": [0.7, 0.85], "exact": True}, kind="zeros", link_bits=1e9,
    ...          transfer_bound=True)
    'not met'
    >>> target_b(good, near, kind="random", link_bits=1e9, transfer_bound=True)
    'n/a: random data'
    >>> target_b(good, near, kind="zeros", link_bits=1e9, transfer_bound=False)
    'n/a: not transfer-bound'
    """
    if link_bits is None or not math.isclose(link_bits, TARGET_B_LINK_BITS):
        return "n/a: not behind 1 Gbit/s"
    if kind not in COMPRESSIBLE_KINDS:
        return f"n/a: {kind} data"
    if transfer_bound is None:
        return "n/a: transfer share not measured"
    if not transfer_bound:
        return "n/a: not transfer-bound"
    if not speedup or not of_best:
        return "no result"
    return combine_verdicts(verdict(speedup["ci95"], TARGET_B_SPEEDUP, speedup["exact"]),
                            verdict(of_best["ci95"], TARGET_B_OF_BEST, of_best["exact"]))


def transfer_share(record: Mapping[str, Any], link_bits: float | None) -> float | None:
    """Share of a sample's wall time the link was busy: its bytes on the shaped loopback at the link's rate.

    None on the loopback as it is (its counters are shared with the whole host).

    >>> transfer_share({"seconds": 2.0, "link_bytes": 125_000_000}, 1e9)
    0.5
    >>> transfer_share({"seconds": 2.0, "link_bytes": 125_000_000}, None) is None
    True
    """
    if link_bits is None or record.get("link_bytes") is None or not record.get("seconds"):
        return None
    return record["link_bytes"] * 8 / link_bits / record["seconds"]


def _paired(base: Sequence[float], new: Sequence[float]) -> dict[str, Any]:
    ratio, ci, exact = stats.paired_ratio(base, new)
    return {"ratio": ratio, "ci95": [ci[0], ci[1]], "exact": exact, "n": len(base)}


def summarize_workload(result: Mapping[str, Any], variants: Sequence[str], *, kind: str,
                       link_bits: float | None, rel_ci: float = 0.05) -> dict[str, Any]:
    """Medians, paired ratios, best static codec, transfer share and the targets of one workload's samples.

    Returns a dict with ``summary`` (variant -> :func:`asafe.app.stats.describe`),
    ``vs_dask`` (variant -> paired ratio dask / variant), ``best_static``,
    ``asafe_vs_best`` (best static / asafe per round), ``transfer_share`` and
    ``transfer_bound``, and ``targets`` (``a``, ``b``).
    """
    by_variant: dict[str, list[float]] = {}
    for s in result.get("samples", []):
        by_variant.setdefault(s["variant"], []).append(s["seconds"])
    live = [v for v in variants if by_variant.get(v) and v not in result.get("failed", {})]
    out: dict[str, Any] = {"summary": {v: stats.describe(by_variant[v], rel_ci) for v in live},
                           "vs_dask": {}, "best_static": None, "asafe_vs_best": None}
    base = by_variant.get("dask") if "dask" in live else None
    if base is not None:
        for v in live:
            if v != "dask" and len(by_variant[v]) == len(base):
                out["vs_dask"][v] = _paired(base, by_variant[v])
    statics = [v for v in out["vs_dask"] if v.startswith("static-")]
    if statics:
        best = max(statics, key=lambda v: out["vs_dask"][v]["ratio"])
        out["best_static"] = best
        if "asafe" in live and len(by_variant["asafe"]) == len(by_variant[best]):
            out["asafe_vs_best"] = _paired(by_variant[best], by_variant["asafe"])
    shares = [transfer_share(s, link_bits) for s in result.get("samples", []) if s["variant"] == "dask"]
    shares = [s for s in shares if s is not None]
    out["transfer_share"] = float(np.median(shares)) if shares else None
    out["transfer_bound"] = None if out["transfer_share"] is None else out["transfer_share"] >= TRANSFER_BOUND_SHARE
    asafe_speedup = out["vs_dask"].get("asafe")
    out["targets"] = {
        "a": target_a(asafe_speedup),
        "b": target_b(asafe_speedup, out["asafe_vs_best"], kind=kind, link_bits=link_bits,
                      transfer_bound=out["transfer_bound"]),
    }
    return out


def pooled_speedup(results: Sequence[Mapping[str, Any]], variant: str = "asafe", *, base: str = "dask",
                   reps: int = 2000, seed: int = 0) -> dict[str, Any] | None:
    """One number for many rows: the geometric mean over rows of ``variant``'s median paired speedup.

    Each row (a workload on a data kind) gives the per-round ratios ``base``
    seconds (plain Dask's by default) / ``variant`` seconds of the rounds where
    both ran; the pooled value
    is the geometric mean over the rows of each row's median ratio. Its 95%
    interval is a bootstrap of the rounds within every row (each row's rounds
    resampled with replacement, ``reps`` times, seeded): what the run's
    measurement noise leaves of the pooled value, for these workloads. Also
    counted: the rows whose own interval lies wholly below 1 and wholly above.

    Why: target (a) asks every row's interval to stay off the wrong side of 1,
    and with dozens of rows some land there by chance alone (plain Dask timed
    against itself, the ``dask-control`` variant, shows how many), so the
    per-row verdicts cannot say whether asafe costs anything on the whole.

    Returns None where no row has two paired rounds.

    >>> rows = [{"samples": [{"variant": v, "round": i, "seconds": t}
    ...                      for i in range(6) for v, t in (("dask", 1.0), ("asafe", 1.0 / r))]}
    ...         for r in (1.1, 0.9)]
    >>> pooled = pooled_speedup(rows)
    >>> round(pooled["ratio"], 4), pooled["rows"], pooled["ci95"][0] == pooled["ci95"][1]
    (0.995, 2, True)
    """
    logs = []
    below = above = 0
    for result in results:
        old, new = _by_round(result, base), _by_round(result, variant)
        rounds = sorted(set(old) & set(new))
        if len(rounds) < 2:
            continue
        logs.append(np.log([old[i] / new[i] for i in rounds]))
        ratio = _paired([old[i] for i in rounds], [new[i] for i in rounds])  # the row's own verdict interval
        if ratio["exact"]:
            below += ratio["ci95"][1] < 1.0
            above += ratio["ci95"][0] > 1.0
    if not logs:
        return None
    rng = np.random.default_rng(seed)
    total = np.zeros(reps)
    for row in logs:
        total += np.median(row[rng.integers(0, row.size, size=(reps, row.size))], axis=1)
    point = float(np.exp(np.mean([np.median(row) for row in logs])))
    low, high = np.exp(np.percentile(total / len(logs), [2.5, 97.5]))
    return {"variant": variant, "base": base, "ratio": point, "ci95": [float(low), float(high)], "rows": len(logs),
            "rows_below_1": int(below), "rows_above_1": int(above), "reps": reps, "seed": seed}


def _by_round(result: Mapping[str, Any], variant: str) -> dict[int, float]:
    """``variant``'s seconds by round (a sample without one counts by its place among the variant's samples).

    >>> _by_round({"samples": [{"variant": "a", "seconds": 2.0}, {"variant": "b", "seconds": 1.0},
    ...                        {"variant": "a", "seconds": 3.0}]}, "a")
    {0: 2.0, 1: 3.0}
    """
    samples = [s for s in result.get("samples", ()) if s["variant"] == variant]
    return {s.get("round", i): s["seconds"] for i, s in enumerate(samples)}
