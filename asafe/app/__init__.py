"""The application: what uses the core and the integrations.

* :mod:`~asafe.app.cli` -- the ``asafe`` command (``asafe demo``, ``asafe info``);
* :mod:`~asafe.app.info` -- ``asafe info``: the settings and their sources, and
  what a scheduler runs and why;
* :mod:`~asafe.app.demo` -- the demo: variants run side by side, a table, a
  JSON result and a figure (:mod:`~asafe.app.console` prints it, plain text
  without rich);
* :mod:`~asafe.app.workload` -- the demo's phased Graph500 workload: its phases,
  matrices and typed tasks, shared with the ``phased`` benchmark suite;
* :mod:`~asafe.app.runner` -- running phases on a Dask cluster;
* :mod:`~asafe.app.variants` -- what each variant does (the adaptive runtime,
  the per-task rule, the static settings) and one run of one variant;
* :mod:`~asafe.app.comparison` -- the variants measured side by side, and the
  per-phase oracle;
* :mod:`~asafe.app.pertask` -- the per-task cost rule, the baseline the global
  mode is measured against (and the hybrid of the two);
* :mod:`~asafe.app.load` -- competing jobs (a memory stream, a bulk flow on the
  link) that a phase of the workload can run beside: phases that change under load;
* :mod:`~asafe.app.link` -- a command behind a loopback shaped by tc in a network
  namespace of its own (``--link RATE``);
* :mod:`~asafe.app.hosts` -- a cluster of several hosts on one machine: network
  namespaces on a bridge, each host's link shaped (``--hosts N``);
* :mod:`~asafe.app.stats` -- the one statistics module (medians,
  order-statistic intervals, paired ratios, stop rule) of the demo and of every
  benchmark suite;
* :mod:`~asafe.app.environment` -- the machine and software a result was
  measured on.
"""
