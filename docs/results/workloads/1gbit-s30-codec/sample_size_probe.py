"""Cost per byte by candidate on samples of 64 KiB and 256 KiB vs the whole 12 MiB frame; and one _sample's time."""
import time, numpy as np, blosc2, sys
sys.path.insert(0, "/work/main")
from benchmarks import _workloads_data as D
from asafe.schedulers import wire
import dask
wire.enable(); lib = wire._library(); wire._warm_up()
clock = time.thread_time
rng = np.random.default_rng(0)
def tmed(data, codec, flt, reps):
    cs, ds = [], []
    for _ in range(reps):
        t = clock(); c = wire.compress_frame(data, 8, codec, flt); cs.append(clock() - t)
        t = clock(); blosc2.decompress2(c, nthreads=1); ds.append(clock() - t)
    return len(c), np.median(cs), np.median(ds)
kinds = {"ints": lambda: D.ints_block(rng, (1536, 1024)), "zeros": lambda: D.zeros_block(rng, (1536, 1024), 0.5),
         "smooth": lambda: D.smooth_block(0, (0, 0), (1536, 1024)), "random": lambda: D.random_block(rng, (1536, 1024))}
for kname, make in kinds.items():
    x = np.ascontiguousarray(make()); buf = memoryview(x).cast("B"); N = buf.nbytes
    for link in (60e6, 125e6, 240e6):
        rows = []
        for cname, codec in lib["codecs"].items():
            for fname in ("none", "shuffle", "bitshuffle"):
                flt = lib["filters"][fname]; r = [f"{cname}-{fname[:3]}"]
                for n, reps in ((65536, 15), (262144, 7), (N, 3)):
                    m, c, d = tmed(buf[:n], codec, flt, reps)
                    r.append(((c + d) / n + m / n / link) * 1e9 if n / m >= 1.2 else float("inf"))
                rows.append(r)
        best = [min(rows, key=lambda r: r[i])[0] for i in (1, 2, 3)]
        asis = 1e9 / link
        print(f"{kname:6} {link/1e6:4.0f} MB/s as-is {asis:5.2f}  best: 64K {best[0]:12} 256K {best[1]:12} frame {best[2]:12} | " +
              " ".join(f"{r[0]}:{r[1]:.2f}/{r[2]:.2f}/{r[3]:.2f}" for r in rows))
    for ss in ("64 KiB", "256 KiB"):
        with dask.config.set({"asafe.wire.sample-size": ss}):
            wire.enable()
            ts = []
            for _ in range(7):
                wire._choices.clear(); t = time.perf_counter()
                wire._sample(buf, 8, (125, "dask", "ndarray", x.dtype.str, 8, 0, True)); ts.append(time.perf_counter() - t)
            print(f"   {kname} one sample at 125 MB/s, {ss}: {np.median(ts)*1e3:.2f} ms")
