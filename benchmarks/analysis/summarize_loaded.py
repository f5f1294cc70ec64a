"""The loaded set's results, re-read: paired ratios over the phases run beside a competing job.

``python -m benchmarks.analysis.summarize_loaded [DIR]`` (from the repository root, asafe installed)
prints, for each link, adaptive against every other variant over the loaded phases only (their seconds
summed per round and paired, ``benchmarks.phased.under_load``, which the phased suite prints itself from
the commit after the one these runs measured), and per phase the medians of adaptive and the per-task
rule. ``DIR`` holds ``loaded-loopback/``, ``loaded-10gbit/`` and ``loaded-1gbit/`` (each ``results.json``,
or ``phased/results.json`` as the suite writes it); default ``docs/results/load-eval``, the ``load``
plan's committed run. It was ``docs/results/load-eval/summarize.py``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from benchmarks import phased

#: The committed run it was written for.
DEFAULT = Path(__file__).resolve().parents[2] / "docs" / "results" / "load-eval"


def _record(folder: Path) -> dict:
    path = folder / "phased" / "results.json"
    return json.loads((path if path.is_file() else folder / "results.json").read_text())["records"]["phases"]


def summarize(root: str | Path = DEFAULT) -> None:
    """Print the paired ratios under load and the per-phase medians of every link's run under ``root``."""
    for link in ("loopback", "10gbit", "1gbit"):
        rec = _record(Path(root) / f"loaded-{link}")
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


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.analysis.summarize_loaded [DIR]``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        print("usage: python -m benchmarks.analysis.summarize_loaded [DIR]", file=sys.stderr)
        return 2
    summarize(args[0] if args else DEFAULT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
