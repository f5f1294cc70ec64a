"""Cost per byte (compress + decompress into fresh memory, thread cpu) of each candidate by sample size, and the
choice each size makes at 60, 120 and 240 MB/s. Run as a Dask worker runs: MALLOC_TRIM_THRESHOLD_=65536 python sizeprobe.py
"""
import sys, time
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[4]))  # the repository
import numpy as np
from benchmarks._workloads_data import ints_block, zeros_block, smooth_block
from asafe.schedulers import wire
wire.enable(); wire._library(); wire._warm_up()
lib = wire._library(); blosc2 = lib["blosc2"]
clock = time.thread_time
names = {v: k for k, v in lib["codecs"].items()}
sizes = [65536, 131072, 262144, 524288, 1 << 20, None]
for kname, x in (("ints", ints_block(np.random.default_rng(1), (624, 4992))), ("zeros", zeros_block(np.random.default_rng(1), (624, 4992), 0.5)), ("smooth", smooth_block(0, (0,0), (624, 4992)))):
    frame = memoryview(np.ascontiguousarray(x)).cast("B")
    table = {}
    for codec_id in lib["codecs"].values():
        for name in ("none", "shuffle", "bitshuffle"):
            f = lib["filters"][name]
            row = []
            for n in sizes:
                s = frame if n is None else frame[:n]
                cs, ds = [], []
                for _ in range(3 if n is None else 5):
                    b = clock(); c = wire.compress_frame(s, 8, codec_id, f); cs.append(clock() - b)
                    b = clock(); out = bytearray(s.nbytes); blosc2.decompress2(c, dst=out, nthreads=1); ds.append(clock() - b)
                row.append(((np.median(cs) + np.median(ds)) / s.nbytes * 1e9, s.nbytes / len(c)))
            table[f"{names[codec_id]}-{name[:3]}"] = row
    print(kname, "cpu ns/B c+d by size", [ (s or frame.nbytes) >> 10 for s in sizes])
    for k, row in table.items():
        print(f"  {k:9}", " ".join(f"{c:5.2f}" for c, r in row), " ratio", f"{row[-1][1]:.2f}")
    for link in (60, 120, 240):
        best = []
        for i in range(len(sizes)):
            costs = {k: row[i][0] + 1e3 / link / row[i][1] for k, row in table.items() if row[i][1] >= 1.2}
            b = min(costs, key=costs.get)
            best.append(f"{b}({costs[b]:.2f})")
        print(f"   best at {link}:", " ".join(best))
