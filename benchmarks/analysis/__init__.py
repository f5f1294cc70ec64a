"""The analysis of committed evaluation results: scripts that read ``docs/results/`` and print what follows.

Each module runs from a checkout as ``python -m benchmarks.analysis.NAME``:

* :mod:`benchmarks.analysis.decide_arrivals` -- the default of
  ``asafe.controller.arrivals-skip-dwell`` from the ``arrivals2`` plan's runs, by
  the rule fixed before them (``python -m benchmarks.analysis.decide_arrivals DIR``);
* :mod:`benchmarks.analysis.summarize_loaded` -- the ``loaded`` set's runs of the
  ``load`` plan, re-read: paired ratios over the phases run beside a competing
  job (``python -m benchmarks.analysis.summarize_loaded [DIR]``);
* :mod:`benchmarks.analysis.pertask_cost` -- the per-task rule's estimate before
  and after 74db8be, on the same panels, interleaved
  (``python -m benchmarks.analysis.pertask_cost BEFORE.py``).
"""
