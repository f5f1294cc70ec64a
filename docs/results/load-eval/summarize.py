"""The loaded set's results, re-read: paired ratios over the phases run beside a competing job.

``python docs/results/load-eval/summarize.py`` (from the repository root, asafe installed) prints, for
each link, adaptive against every other variant over the loaded phases only (their seconds summed per
round and paired, ``benchmarks.phased.under_load``, which the phased suite prints itself from the commit
after the one these runs measured), and per phase the medians of adaptive and the per-task rule.
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def _phased():
    """``benchmarks.phased`` from this checkout, without putting the checkout on sys.path."""
    package = ROOT / "benchmarks"
    spec = importlib.util.spec_from_file_location("benchmarks", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks"] = module
    spec.loader.exec_module(module)
    from benchmarks import phased

    return phased


def main() -> None:
    phased = _phased()
    for link in ("loopback", "10gbit", "1gbit"):
        path = HERE / f"loaded-{link}" / "results.json"
        rec = json.loads(path.read_text())["records"]["phases"]
        phases = [SimpleNamespace(**p) for p in rec["phases"]]
        names = [p.name for p in phases]
        variants = list(rec["per_phase"][names[0]])
        rounds = len(rec["per_phase"][names[0]]["adaptive"]["samples"])
        samples = {v: [[rec["per_phase"][n][v]["samples"][r] for n in names] for r in range(rounds)]
                   for v in variants}
        out = phased.under_load(phases, samples)
        print(f"{link}: under load ({', '.join(out['phases'])})")
        for v, x in out["vs"].items():
            print(f"  adaptive vs {v}: {x['ratio']:.3f}x [{x['ci95'][0]:.3f}, {x['ci95'][1]:.3f}]")
        for n in names:
            med = {v: rec["per_phase"][n][v]["median"] for v in ("adaptive", "per-task", "static-on", "static-off")}
            print(f"  {n:<32} " + "  ".join(f"{v} {s:.3f}" for v, s in med.items()))


if __name__ == "__main__":
    main()
