"""Enable asafe on a Dask cluster from configuration alone: ``--preload asafe.preload``.

distributed's preload protocol imports this module in the scheduler and worker
processes and calls :func:`dask_setup` with the server. On the scheduler it
installs :class:`~asafe.schedulers.scheduler_plugin.AdaptiveSchedulerPlugin` with an
``AdaptiveRuntime()`` built from ``dask.config`` (optimizations, thresholds,
dwell; see ``asafe.yaml``), and the scheduler registers the worker plugin for
every worker, present and future. On a worker it installs the worker plugin
early (before the worker registers); the worker says hello to the scheduler once
registered and receives the current states. Workers started without the preload
still get the plugin from the scheduler, provided they can import asafe.

Two terminals (any ``DASK_ASAFE__...`` variable, or a ``~/.config/dask/*.yaml``
file, configures the runtime exactly as for local runs)::

    # terminal 1: the scheduler runs the controller
    $ export DASK_ASAFE__CONTROLLER__DWELL=500ms
    $ export DASK_ASAFE__OPTIMIZATIONS='[{"name": "compression", "domain": "asafe.Hysteresis", "kwargs": {"alpha": 0.5, "beta": 2.0}}]'
    $ dask scheduler --preload asafe.preload
    ... - asafe - INFO - asafe: scheduler plugin installed (<AdaptiveRuntime compression=off ...>)
    ... - asafe - INFO - asafe: compression off -> on (ratio=0.21)

    # terminal 2: workers read the states pushed to them
    $ dask worker tcp://127.0.0.1:8786 --nthreads 1 --preload asafe.preload

and in the client::

    from dask.distributed import Client
    import asafe
    client = Client("tcp://127.0.0.1:8786")
    handle = asafe.attach(client)   # the running installation
    ... compute ...
    handle.state("compression"), handle.history

Tasks call :func:`asafe.is_on` as anywhere else. The module can also be named in
``distributed.scheduler.preload`` / ``distributed.worker.preload`` configuration.
Transitions are logged by the ``asafe`` logger at INFO next to the server's own
log lines (``DASK_LOGGING__ASAFE=warning`` quiets them).
"""
from __future__ import annotations

import logging
from typing import Any

__all__ = ["dask_setup", "dask_teardown"]

logger = logging.getLogger("asafe")


async def dask_setup(server: Any) -> None:
    """Install asafe on ``server``: a ``Scheduler`` or a ``Worker`` (a ``Nanny`` is left alone)."""
    from distributed import Nanny, Scheduler, Worker

    from .protocol import NAME
    from .scheduler_plugin import AdaptiveSchedulerPlugin
    from .worker_plugin import AdaptiveWorkerPlugin
    from ..core.runtime import AdaptiveRuntime

    _log_like_distributed()
    if isinstance(server, Scheduler):
        # add_plugin, not register: the scheduler calls the plugin's start() right
        # after the preloads (its own start), which registers the worker plugin
        plugin = AdaptiveSchedulerPlugin(AdaptiveRuntime(), register_worker_plugin=True)
        server.add_plugin(plugin, name=NAME)
    elif isinstance(server, Worker):
        await server.plugin_add(plugin=AdaptiveWorkerPlugin(), name=NAME)
    elif isinstance(server, Nanny):
        logger.info("asafe.preload: nothing to do on a nanny; preload the worker (--preload asafe.preload)")
    else:
        raise TypeError(f"asafe.preload runs on a dask Scheduler or Worker, got {type(server).__name__}")


def _log_like_distributed() -> None:
    """Show asafe's INFO lines (transitions) where the server prints its own log.

    ``dask scheduler`` and ``dask worker`` attach a handler to the ``distributed``
    logger only, so the ``asafe`` logger's INFO lines would be dropped. Unless the
    ``asafe`` logger was configured (``DASK_LOGGING__ASAFE=warning``, a handler),
    it gets distributed's handlers at INFO.
    """
    ours = logging.getLogger("asafe")
    if ours.handlers or ours.level != logging.NOTSET:
        return
    handlers = logging.getLogger("distributed").handlers
    if handlers:
        ours.setLevel(logging.INFO)
        for handler in handlers:
            ours.addHandler(handler)
        ours.propagate = False


async def dask_teardown(server: Any) -> None:
    """Nothing to undo: the plugins close with their server."""
