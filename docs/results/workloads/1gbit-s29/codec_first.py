"""What wire._sample sees in a fresh process: each candidate timed once, in its order, then again."""
import time, numpy as np, sys
sys.path.insert(0, "/work/main")
from benchmarks._workloads_data import ints_block
from asafe.schedulers import wire
wire.enable()
x = ints_block(np.random.default_rng(0), (1536, 1024))
buf = memoryview(x).cast("B")[:65536]
lib = wire._library(); blosc2 = lib["blosc2"]
clock = time.thread_time
for rep in range(3):
    row = []
    for cname, codec in lib["codecs"].items():
        for fname in ("none", "shuffle", "bitshuffle"):
            t = clock(); c = wire.compress_frame(buf, 8, codec, lib["filters"][fname]); ct = clock() - t
            t = clock(); blosc2.decompress2(c, nthreads=1); dt = clock() - t
            cost = (ct + dt + len(c) / 125e6) / 65536 * 1e9
            row.append(f"{cname}-{fname[:3]} {cost:5.2f}")
    print(rep, " | ".join(row))
