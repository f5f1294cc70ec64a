"""Candidates on int ids: speeds on the 64 KiB sample (as wire._sample) vs a whole 12 MiB frame into fresh memory."""
import time, numpy as np, blosc2, sys
sys.path.insert(0, "/work/main")
from benchmarks._workloads_data import ints_block
from asafe.schedulers import wire
rng = np.random.default_rng(0)
x = ints_block(rng, (1536, 1024))  # 12 MiB int64
buf = memoryview(x).cast("B")
wire.enable()
lib = wire._library()
clock = time.thread_time
def timeit(data, codec, flt, reps):
    cs, ds = [], []
    for _ in range(reps):
        t = clock(); c = wire.compress_frame(data, 8, codec, flt); cs.append(clock() - t)
        t = clock(); blosc2.decompress2(c, nthreads=1); ds.append(clock() - t)
    return len(c), min(cs), min(ds), np.median(cs), np.median(ds)
for cname, codec in lib["codecs"].items():
    for fname in ("none", "shuffle", "bitshuffle"):
        flt = lib["filters"][fname]
        n1, c1, d1, mc1, md1 = timeit(buf[:65536], codec, flt, 30)
        n2, c2, d2, mc2, md2 = timeit(buf, codec, flt, 5)
        link = 125e6
        cost1 = (mc1 + md1) / 65536 * 1e9 + 1e9 / (65536 / n1 * link)
        cost2 = (mc2 + md2) / buf.nbytes * 1e9 + 1e9 / (buf.nbytes / n2 * link)
        print(f"{cname:5} {fname:10} sample: ratio {65536/n1:5.2f} c {65536/mc1/1e6:6.0f} MB/s d {65536/md1/1e6:6.0f} MB/s cost {cost1:5.2f} ns/B | frame: ratio {buf.nbytes/n2:5.2f} c {buf.nbytes/mc2/1e6:6.0f} d {buf.nbytes/md2/1e6:6.0f} cost {cost2:5.2f} ns/B")
