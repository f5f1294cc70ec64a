"""Adaptive precision: a numba kernel runs in float32 while the cpu is busy.

A complete asafe optimization other than compression:

* the domain, ``precision_domain.Busy``: on above a cpu load, off below
  another;
* the optimization ``float32``, configured by dotted path under
  ``asafe.optimizations``, as a Dask YAML file would configure it;
* the library code: a typed task that asks :func:`asafe.is_on` which
  kernel to run, float32 (half the memory traffic, twice the SIMD width)
  or float64;
* the run on Dask's threaded scheduler under :func:`asafe.adaptive`, with
  every block checked against a float64 numpy reference.

Run it from anywhere: ``python docs/examples/adaptive_precision.py``.
Which blocks run in float32 depends on how busy the machine is.
"""
from __future__ import annotations

import collections

import dask
import numba
import numpy as np
import yaml

import asafe

# What ~/.config/dask/asafe.yaml (or any Dask YAML file) would hold. The
# domain is named by dotted path: precision_domain.py sits beside this
# script, so it imports as ``precision_domain``; in a project it would be
# a module such as ``myproject.domains``.
CONFIG = """
asafe:
  optimizations:
    - name: float32
      domain: precision_domain.Busy
      kwargs: {high: 0.85, low: 0.6, signal: cpu}
      initial: false
"""

BLOCKS = 32
SAMPLES = 200_000
# relative error allowed against float64 numpy on the same samples
TOLERANCE = {"float32": 1e-4, "float64": 1e-12}


@numba.njit(nogil=True, cache=False)
def sum_of_squares(values):
    """Sum of squares, accumulated in the precision of ``values``."""
    total = values[0] - values[0]  # a zero of the input's dtype
    for v in values:
        total += v * v
    return total


def draw(seed, dtype):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(SAMPLES, dtype=dtype)


@asafe.typed(asafe.COMPUTE)
def mean_square(seed):
    """One block of the estimate, in the precision the runtime asks for."""
    dtype = np.float32 if asafe.is_on("float32") else np.float64
    samples = draw(seed, dtype)
    return float(sum_of_squares(samples)) / SAMPLES, np.dtype(dtype).name


def check(seed, value, dtype):
    """Correct first: compare a block with float64 numpy."""
    samples = draw(seed, dtype).astype(np.float64)
    reference = float(np.mean(samples**2))
    error = abs(value - reference) / reference
    if error > TOLERANCE[dtype]:
        raise AssertionError(
            f"block {seed} ({dtype}): relative error {error:.2e}")


def main():
    entries = yaml.safe_load(CONFIG)["asafe"]["optimizations"]
    with dask.config.set({"asafe.optimizations": entries}):
        # no optimizations given: they are built from the configuration
        runtime = asafe.AdaptiveRuntime()
    print("optimizations:", list(runtime.optimizations.values()))

    blocks = [dask.delayed(mean_square)(seed) for seed in range(BLOCKS)]
    with asafe.adaptive(runtime, scheduler="threads"):
        results = dask.compute(*blocks)

    for seed, (value, dtype) in enumerate(results):
        check(seed, value, dtype)
    estimate = sum(value for value, _ in results) / BLOCKS
    kernels = collections.Counter(dtype for _, dtype in results)
    print(f"E[x^2] ~= {estimate:.4f} (exact: 1), {BLOCKS} blocks "
          f"of {SAMPLES} samples, all checked against numpy")
    print("blocks per precision:", dict(sorted(kernels.items())))
    print(f"last mode: {runtime.mode!r}")
    for t in runtime.history:
        cpu = t.mode.signals.get("cpu", float("nan"))
        print(f"  {t.optimization}: {'on' if t.old else 'off'} -> "
              f"{'on' if t.new else 'off'} at cpu={cpu:.2f}")
    print("ok")
    return runtime


if __name__ == "__main__":
    main()
