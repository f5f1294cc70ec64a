import sys, time, numpy as np
sys.path.insert(0, "/work/main")
from benchmarks._workloads_data import ints_block
from asafe.schedulers import wire
import dask; dask.config.set({"asafe.wire.sample-size": sys.argv[2]}); wire.enable()
warm = sys.argv[1] == "warm"
if warm:
    wire._library(); wire._warm_up()
x = ints_block(np.random.default_rng(0), (1536, 1024))
lib = wire._library()
names = {v: k for k, v in lib["codecs"].items()}; fn = {v: k for k, v in lib["filters"].items()}
out = []
for state in (120, 240, 120, 120, 120):
    wire._choices.clear()
    c = wire._sample(memoryview(x).cast("B"), 8, (state, "dask", "ndarray", "<i8", 8, 0, True))
    out.append(f"{state}:{names.get(c[0], c[0])}-{fn.get(c[1], c[1])}")
print(sys.argv[1], " ".join(out))
