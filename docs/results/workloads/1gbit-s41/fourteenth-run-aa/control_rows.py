"""Per row: asafe against the plain-Dask control, and the control against plain Dask (paired by round).

python control_rows.py [FOLDER]  (the fourteenth run's JSONs by default). Medians and the order-statistic 95%
interval of 9 rounds (the second smallest to the second largest ratio), as the suite reports them; a ratio is
the reference's seconds over the variant's (above 1: the variant ran faster).
"""
import json
import os
import statistics
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "json")


def paired(samples, variant, reference):
    v = {x["round"]: x["seconds"] for x in samples if x["variant"] == variant}
    r = {x["round"]: x["seconds"] for x in samples if x["variant"] == reference}
    return sorted(r[k] / v[k] for k in v if k in r)


below = {"asafe/control": [], "control/dask": [], "asafe/dask": []}
for kind in ("random", "zeros", "ints", "smooth"):
    data = json.load(open(os.path.join(folder, f"workloads-1gbit-{kind}.json")))
    workloads = data["workloads"]
    for workload in (workloads.values() if isinstance(workloads, dict) else workloads):
        samples = workload["samples"]
        for label, (variant, reference) in {"asafe/control": ("asafe", "dask-control"),
                                            "control/dask": ("dask-control", "dask"),
                                            "asafe/dask": ("asafe", "dask")}.items():
            ratios = paired(samples, variant, reference)
            low, high = ratios[1], ratios[-2]
            if high < 1:
                below[label].append(f"{workload['workload']}/{kind} {statistics.median(ratios):.3f} [{low:.3f}, {high:.3f}]")
        a, c = paired(samples, "asafe", "dask-control"), paired(samples, "dask-control", "dask")
        print(f"{kind:6s} {workload['workload']:14s} asafe vs control {statistics.median(a):.3f} [{a[1]:.3f}, {a[-2]:.3f}]"
              f"   control vs dask {statistics.median(c):.3f} [{c[1]:.3f}, {c[-2]:.3f}]")
for label, rows in below.items():
    print(f"intervals wholly below 1, {label}: {len(rows)} of 52: {rows}")
