"""The one registration of what a user watches on a scheduler: the dashboard page, /metrics, the codec counters.

The scheduler plugin calls :func:`register` when it starts. Each part is added
where its library is installed, under :data:`~asafe.schedulers.observe.FAILURES`
(a part that fails is logged once and counted; the scheduler goes on). The
views themselves live in :mod:`asafe.schedulers.dashboard` and
:mod:`asafe.schedulers.metrics`, on the data of :mod:`asafe.schedulers.observe`.
"""
from __future__ import annotations

from typing import Any

from .observe import FAILURES, WIRE_COUNTERS, WireCounters

__all__ = ["register"]


async def register(scheduler: Any) -> None:
    """Add the dashboard page, the Prometheus collector and the workers' codec counters (never raises)."""
    with FAILURES.guard("dashboard"):
        from . import dashboard  # bokeh, where it is installed: imported only here

        dashboard.add_page(scheduler)
    with FAILURES.guard("metrics"):
        from . import metrics

        metrics.register(scheduler)
    with FAILURES.guard("wire-counters"):
        if WIRE_COUNTERS not in getattr(scheduler, "worker_plugins", {WIRE_COUNTERS: None}):
            from distributed.protocol.pickle import dumps

            await scheduler.register_worker_plugin(comm=None, plugin=dumps(WireCounters()), name=WIRE_COUNTERS,
                                                   idempotent=True)
