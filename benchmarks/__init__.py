"""asafe benchmark suites, run from a checkout as ``python -m benchmarks SUITE``.

Modules:

* :mod:`benchmarks.harness`: :func:`~benchmarks.harness.measure`,
  :func:`~benchmarks.harness.speedup`, :class:`~benchmarks.harness.Results` and
  table/figure helpers, used by every suite; the statistics themselves (median
  CI from order statistics, percentiles, spread, bootstrap ratio interval,
  Mann-Whitney, stop rule, environment capture) are :mod:`asafe.app.stats`,
  shared with ``asafe demo``;
* one module per suite (``overhead``; ``kernels``, ``phased``, ``paper`` as they are
  added), each with ``main(argv) -> int``; :mod:`benchmarks.__main__` dispatches.

The rules every number follows are in ``docs/benchmarking.rst`` of the project.
"""
