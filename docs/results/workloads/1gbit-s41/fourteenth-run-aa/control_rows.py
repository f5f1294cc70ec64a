"""Per row: asafe against the plain-Dask control, and the control against plain Dask (paired by round).

python control_rows.py [FOLDER]  (the fourteenth run's JSONs by default). Medians and the order-statistic 95%
interval of the median (``asafe.app.stats.median_ci``), as the suite reports them; a ratio is
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


def interval(ratios):
    # the order-statistic 95% interval of the median, as the suite computes it
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")))
    from asafe.app import stats

    ci = stats.median_ci(ratios)
    return ci.low, ci.high


below = {"asafe/control": [], "control/dask": [], "asafe/dask": []}
for kind in ("random", "zeros", "ints", "smooth"):
    path = os.path.join(folder, f"workloads-1gbit-{kind}.json")
    if not os.path.exists(path):
        continue
    data = json.load(open(path))
    workloads = data["workloads"]
    for workload in (workloads.values() if isinstance(workloads, dict) else workloads):
        samples = workload["samples"]
        for label, (variant, reference) in {"asafe/control": ("asafe", "dask-control"),
                                            "control/dask": ("dask-control", "dask"),
                                            "asafe/dask": ("asafe", "dask")}.items():
            ratios = paired(samples, variant, reference)
            low, high = interval(ratios)
            if high < 1:
                below[label].append(f"{workload['workload']}/{kind} {statistics.median(ratios):.3f} [{low:.3f}, {high:.3f}]")
        a, c = paired(samples, "asafe", "dask-control"), paired(samples, "dask-control", "dask")
        (al, ah), (cl, ch) = interval(a), interval(c)
        print(f"{kind:6s} {workload['workload']:14s} asafe vs control {statistics.median(a):.3f} [{al:.3f}, {ah:.3f}]"
              f"   control vs dask {statistics.median(c):.3f} [{cl:.3f}, {ch:.3f}]")
for label, rows in below.items():
    print(f"intervals wholly below 1, {label}: {len(rows)} of the rows: {rows}")
