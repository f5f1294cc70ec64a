"""Where task events enter asafe and where its states reach tasks.

Each integration turns one Dask scheduler's events into the core's task events
(scheduled, started, finished with durations and bytes) and pushes the
controller's states to where tasks run:

* :mod:`~asafe.schedulers.local` -- Dask's local schedulers (threads,
  synchronous, processes) through a :class:`dask.callbacks.Callback`; its
  per-task hooks exist twice, in Python (the reference) and in C
  (``_hotpath.c``, built when a compiler is found), and the tests compare both;
* :mod:`~asafe.schedulers.scheduler_plugin` -- a Dask cluster's scheduler
  plugin (it sees a graph when it is submitted, its transfers and durations),
  with :mod:`~asafe.schedulers.forecast` (the transfers a graph will make) and
  :mod:`~asafe.schedulers.bandwidth` (the link's measured bandwidth);
* :mod:`~asafe.schedulers.worker_plugin` -- the worker plugin (it holds the
  states on each worker and reports the sizes of what a worker made and
  received); :mod:`~asafe.schedulers.protocol` holds what the two plugins share;
* :mod:`~asafe.schedulers.hosts` -- per-host signals: each worker host reports
  its cpu and memory load in its heartbeats, the scheduler plugin combines the
  busiest host into the mode;
* :mod:`~asafe.schedulers.wire` -- wire-compression's codec in the
  serialization of every process where asafe is enabled;
* :mod:`~asafe.schedulers.distributed` -- :func:`asafe.install` and
  :func:`asafe.attach`, from a client;
* :mod:`~asafe.schedulers.preload` -- ``--preload asafe.preload``, for
  deployments configured without a client;
* :mod:`~asafe.schedulers.board` -- the state board that :func:`asafe.is_on`
  reads inside a task, wherever it runs;
* :mod:`~asafe.schedulers.observe` -- what a user watches on a scheduler, added
  by the scheduler plugin's start: the dashboard page
  (:mod:`~asafe.schedulers.dashboard`) and the Prometheus metrics
  (:mod:`~asafe.schedulers.metrics`).
"""
