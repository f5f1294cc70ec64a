"""Installed on workers: wrap wire.compress_frame and decompress2 timing within _sample to log candidates."""
import time
LOG = []

def install():
    from asafe.schedulers import wire
    if getattr(wire, "_orig_sample", None) is None:
        wire._orig_sample = wire._sample
        def logged(frame, typesize, kind):
            lib = wire._library(); blosc2 = lib["blosc2"]
            names = {v: k for k, v in lib["codecs"].items()}; fn = {v: k for k, v in lib["filters"].items()}
            rows = []
            orig_c = wire.compress_frame; orig_d = blosc2.decompress2
            def c(data, typesize=8, codec=None, filter=None):
                b = time.thread_time(); out = orig_c(data, typesize, codec, filter); rows.append([f"{names.get(codec)}-{fn.get(filter)}", time.thread_time() - b, None, len(out), memoryview(data).nbytes]); return out
            def d(data, **kw):
                b = time.thread_time(); out = orig_d(data, **kw); rows[-1][2] = time.thread_time() - b; return out
            wire.compress_frame = c; blosc2.decompress2 = d
            try:
                choice = wire._orig_sample(frame, typesize, kind)
            finally:
                wire.compress_frame = orig_c; blosc2.decompress2 = orig_d
            LOG.append({"kind": kind, "choice": [names.get(choice[0], choice[0]), fn.get(choice[1])], "rows": rows,
                        "warm": wire._warm, "nbytes": frame.nbytes})
            return choice
        wire._sample = logged
    return True

def take():
    out = list(LOG); LOG.clear(); return out
