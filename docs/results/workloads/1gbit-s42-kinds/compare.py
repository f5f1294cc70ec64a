"""Per row: asafe's speedup over plain Dask (median of paired ratios, order-statistic 95% interval) and the frames
it compressed (c) and sent as it was (s), per run. python compare.py DIR [DIR ...] (each a folder of the suite's JSONs,
or the --out folder that holds them in workloads/)."""
import glob, json, os, statistics, sys
sys.path.insert(0, os.environ.get("TREE", os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))))
from asafe.app.stats import median_ci

runs = sys.argv[1:]
table = {}
for run in runs:
    for path in sorted(glob.glob(os.path.join(run, "*.json")) + glob.glob(os.path.join(run, "workloads", "*.json"))):
        doc = json.load(open(path))
        for name, w in doc["workloads"].items():
            rounds = {}
            for s in w["samples"]:
                rounds.setdefault(s["round"], {})[s["variant"]] = s
            ratios = sorted(r["dask"]["seconds"] / r["asafe"]["seconds"] for r in rounds.values() if "dask" in r and "asafe" in r)
            frames = statistics.median(r["asafe"]["wire"].get("compressed_frames", 0) + r["asafe"]["wire"].get("elided_frames", 0)
                                       for r in rounds.values() if "asafe" in r)
            skipped = statistics.median(r["asafe"]["wire"].get("skipped_frames", 0) for r in rounds.values() if "asafe" in r)
            med = statistics.median(ratios)
            ci = median_ci(ratios)
            lo, hi = ci.low, ci.high
            table.setdefault(f"{name}/{doc['data']}", {})[run] = (med, lo, hi, frames, skipped)
print(f"{'row':24s} " + " ".join(f"{os.path.basename(r.rstrip('/')):>34s}" for r in runs))
logs = {r: [] for r in runs}
for row, cells in sorted(table.items()):
    out = []
    for r in runs:
        if r in cells:
            med, lo, hi, fr, sk = cells[r]
            logs[r].append(med)
            out.append(f"{med:6.3f} [{lo:.3f}, {hi:.3f}] c{fr:4.0f} s{sk:4.0f}")
        else:
            out.append(" " * 34)
    print(f"{row:24s} " + " ".join(f"{c:>34s}" for c in out))
print("geometric mean of the rows' medians: " + ", ".join(f"{os.path.basename(r.rstrip('/'))} {statistics.geometric_mean(v):.3f}" for r, v in logs.items() if v))
