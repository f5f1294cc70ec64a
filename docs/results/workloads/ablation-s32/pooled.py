"""Per-row and pooled paired ratios of ablate.py's JSON files, against a base variant.

Each row: the median of the rounds' paired ratios (base time / variant time: above 1, the variant is
faster), a 95% interval from a seeded bootstrap of the rounds; pooled: the geometric mean of the rows'
medians, its interval the same bootstrap of every row at once (as benchmarks._workloads_targets.pooled_speedup).

    python pooled.py ablate3.json nosched asafe
    python pooled.py ablate2.json dask asafe nosched
"""
import json
import math
import random
import statistics
import sys


def main(path, base, *variants):
    data = json.load(open(path))
    rows = data.get("secs", data)
    rng = random.Random(1)
    for variant in variants:
        ratios = [[b / v for b, v in zip(secs[base], secs[variant])] for secs in rows.values()]
        for name, r in zip(rows, ratios):
            boots = sorted(statistics.median(rng.choices(r, k=len(r))) for _ in range(2000))
            print(f"{name:12s} {variant} vs {base}: {statistics.median(r):.3f} [{boots[50]:.3f}, {boots[1949]:.3f}]"
                  f" ({len(r)} rounds)")

        def pooled(rs):
            return math.exp(sum(math.log(statistics.median(r)) for r in rs) / len(rs))

        boots = sorted(pooled([rng.choices(r, k=len(r)) for r in ratios]) for _ in range(2000))
        print(f"pooled {variant} vs {base}: {pooled(ratios):.3f} [{boots[50]:.3f}, {boots[1949]:.3f}] "
              f"({len(ratios)} rows)")


if __name__ == "__main__":
    main(*sys.argv[1:])
