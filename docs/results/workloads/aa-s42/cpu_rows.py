"""Per row and pooled: asafe's and the control's wall time and cpu (workers; scheduler and client) over plain Dask's.

python cpu_rows.py JSON_FOLDER  -- the workloads suite's JSON files (variants dask, dask-control, asafe).
Per row the median over rounds of the paired ratio (variant / dask, same round); pooled the geometric mean of
the rows' medians, with a seeded bootstrap over rounds within rows (2,000 resamples, 95%)."""
import glob, json, math, os, random, statistics, sys

MEASURES = {"wall": lambda s: s["seconds"], "workers_cpu": lambda s: s["cpu_s"]["workers"],
            "sched_client_cpu": lambda s: s["cpu_s"]["scheduler_and_client"]}


def rows(folder):
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        doc = json.load(open(path))
        for name, w in doc["workloads"].items():
            by_round = {}
            for s in w["samples"]:
                by_round.setdefault(s["round"], {})[s["variant"]] = s
            yield f"{name}/{doc['data']}", [r for r in by_round.values() if "dask" in r]


def ratios(rounds, variant, measure):
    f = MEASURES[measure]
    out = []
    for r in rounds:
        if variant in r and f(r["dask"]) > 0 and f(r[variant]) > 0:
            out.append(f(r[variant]) / f(r["dask"]))
    return out


def pooled(table, rng, n=2000):
    logs = [math.log(statistics.median(v)) for v in table if v]
    point = math.exp(sum(logs) / len(logs))
    boots = []
    for _ in range(n):
        ls = [math.log(statistics.median(rng.choices(v, k=len(v)))) for v in table if v]
        boots.append(math.exp(sum(ls) / len(ls)))
    boots.sort()
    return point, boots[int(0.025 * n)], boots[int(0.975 * n) - 1]


def main(folder):
    data = list(rows(folder))
    rng = random.Random(0)
    print(f"{'row':28s} " + " ".join(f"{v[:7]}:{m:>16s}" for v in ("control", "asafe") for m in MEASURES))
    for name, rounds in data:
        cells = []
        for v in ("dask-control", "asafe"):
            for m in MEASURES:
                r = ratios(rounds, v, m)
                cells.append(f"{statistics.median(r):24.3f}" if r else f"{'-':>24s}")
        print(f"{name:28s} " + " ".join(cells))
    for v in ("dask-control", "asafe"):
        for m in MEASURES:
            p, lo, hi = pooled([ratios(r, v, m) for _, r in data], rng)
            print(f"pooled {v:13s} {m:17s} {p:.3f} [{lo:.3f}, {hi:.3f}] over {len(data)} rows")


if __name__ == "__main__":
    main(sys.argv[1])
