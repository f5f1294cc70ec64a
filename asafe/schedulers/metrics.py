"""asafe's Prometheus metrics on the scheduler's ``/metrics``.

Dask serves ``/metrics`` from ``prometheus_client``'s default registry where
that package is installed (``distributed/http/scheduler/prometheus``); its
collectors subclass ``distributed.http.prometheus.PrometheusCollector`` and
build names as ``<namespace>_<subsystem>_<name>`` (namespace
``distributed.dashboard.prometheus.namespace``, ``dask`` by default).
:class:`AsafeCollector` does the same with the subsystem ``asafe``:

========================================== ======= ==========================================================
metric                                     kind    what
========================================== ======= ==========================================================
``dask_asafe_installed``                   gauge   1 while asafe runs on this scheduler
``dask_asafe_state{optimization,value}``   gauge   1 while on (not off); ``value`` is the state for a state
                                                   that is not on/off (a codec, a count), empty otherwise
``dask_asafe_transitions_total``           counter state changes per optimization
``dask_asafe_mode_ratio``                  gauge   the mode's compute/communication ratio (+Inf, NaN allowed)
``dask_asafe_mode_signal{signal}``         gauge   each signal of the mode (cpu, bandwidth, reuse, ...)
``dask_asafe_mode_share{type}``            gauge   each task type's share of the work
``dask_asafe_transfers_total``             counter transfers between workers measured
``dask_asafe_transferred_bytes_total``     counter their bytes, ``kind="wire"`` (as sent) and ``"logical"``
                                                   (uncompressed-equivalent)
``dask_asafe_saved_bytes_total``           counter bytes saved on them per ``compression`` (see
                                                   :func:`asafe.schedulers.observe.savings`)
``dask_asafe_rejected_events_total``       counter events the mode tracker ignored, per ``problem``
``dask_asafe_plugin_errors_total``         counter scheduler plugin hooks that raised, per ``hook``
``dask_asafe_domain_errors_total``         counter domains that raised, per ``optimization`` (the
                                                   recorded ones, up to ``history-size``)
``dask_asafe_view_errors_total``           counter parts of the page or of these metrics that failed
========================================== ======= ==========================================================

One collector serves the process, for the scheduler that registered last (as
Dask's own collectors follow the latest scheduler of a process). A collection
that fails is logged once, counted in ``view_errors``, and yields what it had.
"""
from __future__ import annotations

import importlib.util
import math
import weakref
from collections.abc import Iterator
from typing import Any

from distributed.http.prometheus import PrometheusCollector

from .observe import FAILURES, installed, savings

__all__ = ["AsafeCollector", "register"]

_COLLECTOR: list = []  # the process's collector, once registered


def register(scheduler: Any) -> bool:
    """Export asafe's metrics for ``scheduler`` on ``/metrics``; False where prometheus_client is missing."""
    if importlib.util.find_spec("prometheus_client") is None:
        return False
    if _COLLECTOR:
        _COLLECTOR[0].follow(scheduler)
        return True
    import prometheus_client

    collector = AsafeCollector(scheduler)
    prometheus_client.REGISTRY.register(collector)
    _COLLECTOR.append(collector)
    return True


class AsafeCollector(PrometheusCollector):
    """The ``prometheus_client`` collector of asafe's metrics (see the module docstring)."""

    def __init__(self, server: Any) -> None:
        super().__init__(None)  # the scheduler is held weakly instead: a closed one is let go
        self.subsystem = "asafe"
        self._scheduler: Any = lambda: None
        self.follow(server)

    def follow(self, server: Any) -> None:
        """Collect from ``server`` from now on."""
        self._scheduler = weakref.ref(server)

    def describe(self) -> list:
        return []  # no fixed names: the registry does not collect at registration

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        families: list = []
        with FAILURES.guard("metrics"):
            self._families(families, GaugeMetricFamily, CounterMetricFamily)
        yield from families
        errors = CounterMetricFamily(self.build_name("view_errors"), "Parts of asafe's dashboard page or metrics "
                                     "that failed (logged once each)", labels=["part"])
        for part, count in sorted(FAILURES.counts.items()):
            errors.add_metric([part], count)
        yield errors

    def _families(self, out: list, Gauge: Any, Counter: Any) -> None:
        scheduler = self._scheduler()
        plugin = installed(scheduler) if scheduler is not None else None
        out.append(Gauge(self.build_name("installed"), "1 while asafe runs on this scheduler",
                         value=1.0 if plugin is not None else 0.0))
        if plugin is None:
            return
        runtime = plugin.runtime
        states = Gauge(self.build_name("state"), "1 while an optimization is on (not off); value: a state that is "
                       "not on/off", labels=["optimization", "value"])
        for name, state in runtime.states.items():
            value = "" if isinstance(state, bool) else str(state)
            states.add_metric([name, value], 0.0 if (state is False or state == 0 or state == "") else 1.0)
        out.append(states)
        transitions = Counter(self.build_name("transitions"), "State changes per optimization",
                              labels=["optimization"])
        counts = runtime.transition_counts
        for name in runtime.optimizations:
            transitions.add_metric([name], counts.get(name, 0))
        out.append(transitions)
        mode = runtime.mode
        out.append(Gauge(self.build_name("mode_ratio"), "The mode's compute/communication ratio",
                         value=_float(mode.ratio)))
        signals = Gauge(self.build_name("mode_signal"), "Signals of the mode", labels=["signal"])
        for name, value in sorted(mode.signals.items()):
            signals.add_metric([name], _float(value))
        out.append(signals)
        shares = Gauge(self.build_name("mode_share"), "Share of the work per task type", labels=["type"])
        for name, value in sorted(mode.shares.items()):
            shares.add_metric([name], _float(value))
        out.append(shares)
        saved = savings(scheduler, plugin)
        out.append(Counter(self.build_name("transfers"), "Transfers between workers measured",
                           value=saved["transfers"]))
        transferred = Counter(self.build_name("transferred"), "Bytes of the transfers between workers: as sent "
                              "(wire) and uncompressed-equivalent (logical)", labels=["kind"], unit="bytes")
        transferred.add_metric(["wire"], saved["wire_bytes"])
        transferred.add_metric(["logical"], saved["logical_bytes"])
        out.append(transferred)
        by = Counter(self.build_name("saved"), "Bytes saved on transfers per compression", labels=["compression"],
                     unit="bytes")
        for name, value in saved["by"].items():
            by.add_metric([name], value)
        out.append(by)
        rejected = Counter(self.build_name("rejected_events"), "Events the mode tracker ignored for a bad value",
                           labels=["problem"])
        for problem, count in sorted(dict(runtime.tracker.rejected).items()):
            rejected.add_metric([problem], count)
        out.append(rejected)
        hooks = Counter(self.build_name("plugin_errors"), "Scheduler plugin hooks that raised (scheduling went on)",
                        labels=["hook"])
        for hook, count in sorted(dict(getattr(plugin, "error_counts", {})).items()):
            hooks.add_metric([hook], count)
        out.append(hooks)
        domains = Counter(self.build_name("domain_errors"), "Domains that raised (the state was kept)",
                          labels=["optimization"])
        per_domain: dict[str, int] = {}
        for error in runtime.errors:
            per_domain[error.optimization] = per_domain.get(error.optimization, 0) + 1
        for name, count in sorted(per_domain.items()):
            domains.add_metric([name], count)
        out.append(domains)


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
