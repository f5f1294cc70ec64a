"""Where task events enter asafe and where its states reach tasks.

Each integration turns one Dask scheduler's events into the core's task events
(scheduled, started, finished with durations and bytes) and pushes the
controller's states to where tasks run:

* :mod:`~asafe.schedulers.local` -- Dask's local schedulers (threads,
  synchronous, processes) through a :class:`dask.callbacks.Callback`; its
  per-task hooks exist twice, in Python (the reference) and in C
  (``_hotpath.c``, built when a compiler is found), and the tests compare both;
* :mod:`~asafe.schedulers.plugins` -- a Dask cluster's scheduler plugin (it
  sees a graph when it is submitted, its transfers and durations) and worker
  plugin (it holds the states on each worker);
* :mod:`~asafe.schedulers.distributed` -- :func:`asafe.install` and
  :func:`asafe.attach`, from a client;
* :mod:`~asafe.schedulers.preload` -- ``--preload asafe.preload``, for
  deployments configured without a client;
* :mod:`~asafe.schedulers.board` -- the state board that :func:`asafe.is_on`
  reads inside a task, wherever it runs.
"""
