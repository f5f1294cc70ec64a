"""Does a blosc2 call hold the GIL? A thread compresses (then decompresses) a 38 MiB frame of the smooth
field three times while the main thread ticks every millisecond; the longest gap between two ticks and
their count, with blosc2's GIL setting as found (held) and released (what asafe's wire sets).

    python docs/results/hosts-s36/gil_probe.py > docs/results/hosts-s36/gil_probe.txt
"""
import threading
import time

import blosc2
import numpy as np

frame = memoryview(np.round(np.sin(np.arange(5_000_000, dtype=np.float64) / 1000), 3)).cast("B")


def probe(name, work):
    gaps, thread = [], threading.Thread(target=work)
    thread.start()
    last = time.perf_counter()
    while thread.is_alive():
        time.sleep(0.001)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    print(f"  {name:12s} longest gap {max(gaps) * 1e3:5.1f} ms, {len(gaps)} ticks")


def compress():
    return blosc2.compress2(frame, typesize=8, clevel=1, codec=blosc2.Codec.LZ4,
                            filters=[blosc2.Filter.SHUFFLE], nthreads=1)


packed = compress()
for release in (False, True):
    blosc2.set_releasegil(release)
    print(f"blosc2 {blosc2.__version__}, set_releasegil({release}), {frame.nbytes / 2**20:.0f} MiB frame:")
    probe("compress2", lambda: [compress() for _ in range(3)])
    probe("decompress2", lambda: [blosc2.decompress2(packed, nthreads=1) for _ in range(3)])
