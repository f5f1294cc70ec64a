"""Pool the device's scheduler-suite consoles (two calls, paired rounds in the suite's order) by hand.

The suite writes its own ratios only when a call reaches 6 rounds; each call here stopped at its budget
(fan-in: 3 rounds in the first call, 5 in the second; many-small: 4 and 0). Pairs are the suite's: samples
2k and 2k+1 of one call. Prints each pair's ratio (asafe / dask scheduler cpu per task, asafe / dask
throughput), the median and the order-statistic interval [x(2), x(n-1)] with its coverage.
"""
import math
import re
import sys

LINE = re.compile(r"\]\s+(dask|asafe):\s+(\d+) tasks/s, scheduler ([\d.]+) (us|ms) cpu/task")


def pairs(path):
    samples = []
    for line in open(path):
        m = LINE.search(line)
        if m:
            cpu = float(m.group(3)) * (1e-3 if m.group(4) == "us" else 1.0)
            samples.append((m.group(1), int(m.group(2)), cpu))
    out = []
    for a, b in zip(samples[0::2], samples[1::2]):
        d, s = (a, b) if a[0] == "dask" else (b, a)
        out.append((s[2] / d[2], s[1] / d[1]))
    return out


def coverage(n, k=2):
    # P(x(k) <= median <= x(n+1-k)) for a continuous distribution
    return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n


for name, files in (("fan-in", ["fanin-call1.txt", "fanin.txt"]), ("many-small", ["small-call1.txt", "small.txt"])):
    rounds = [r for f in files for r in pairs(f)]
    if not rounds:
        continue
    cpu = sorted(r[0] for r in rounds)
    tput = sorted(r[1] for r in rounds)
    n = len(rounds)
    med = lambda xs: (xs[(n - 1) // 2] + xs[n // 2]) / 2
    print(f"{name}: {n} rounds; cpu per task asafe/dask " + ", ".join(f"{r[0]:.3f}" for r in rounds))
    print(f"  cpu per task: median {med(cpu):.3f}" + (f", [{cpu[1]:.3f}, {cpu[-2]:.3f}] ({coverage(n):.1%})" if n >= 4 else ""))
    print(f"  throughput:   median {med(tput):.3f}" + (f", [{tput[1]:.3f}, {tput[-2]:.3f}] ({coverage(n):.1%})" if n >= 4 else ""))
