"""The two many-small runs' rounds pooled by hand: paired ratios per round from the consoles, median and
order-statistic 95% interval (n = 12: the 3rd and 10th smallest, 96.1% coverage).

    python pool_many_small.py small.txt small2.txt
"""
import re
import statistics
import sys
from math import comb

rows = []
for path in sys.argv[1:]:
    samples = [(m.group(1), float(m.group(2)), float(m.group(3)) * (1000.0 if m.group(4) == "ms" else 1.0))
               for m in re.finditer(r"\]\s+(dask|asafe):\s+([\d.]+) tasks/s, scheduler ([\d.]+) (ms|us) cpu/task",
                                    open(path).read())]
    for a, b in zip(samples[0::2], samples[1::2]):  # a round: one sample of each, in either order
        d, s = (a, b) if a[0] == "dask" else (b, a)
        rows.append((s[1] / d[1], s[2] / d[2]))


def interval(values):
    xs, n = sorted(values), len(values)
    k = max(j for j in range(n // 2) if sum(comb(n, i) for i in range(j)) / 2**n <= 0.025)
    cover = 1 - 2 * sum(comb(n, i) for i in range(k)) / 2**n
    return statistics.median(xs), xs[k - 1], xs[n - k], cover


for label, col in (("throughput asafe/dask", 0), ("scheduler cpu per task asafe/dask", 1)):
    m, lo, hi, cover = interval([r[col] for r in rows])
    print(f"{label}: {m:.3f} [{lo:.3f}, {hi:.3f}] ({len(rows)} rounds, {cover:.1%} interval)")
