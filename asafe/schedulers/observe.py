"""What a user watches on a scheduler: the data the views share, and their failures.

:func:`asafe.schedulers.views.register` is the one call the scheduler plugin
makes when it starts (``asafe.install`` and ``--preload asafe.preload`` alike).
It adds, each where its library is installed, as Dask adds its own:

* the dashboard page ``/individual-asafe`` on the scheduler's Bokeh server
  (:mod:`asafe.schedulers.dashboard`), listed in ``/individual-plots.json``
  for dask-labextension;
* asafe's collector on the scheduler's ``/metrics``
  (:mod:`asafe.schedulers.metrics`, prometheus_client);
* a small worker plugin that puts wire-compression's counters of each worker
  (:func:`asafe.schedulers.wire.stats`) in the metrics its heartbeat already
  sends, so the scheduler knows the bytes each compression saved without
  asking the workers.

The views read the running installation at each refresh (:func:`installed`),
so a page opened before a reinstall shows the new one. Nothing here may
raise inside the scheduler: every part runs under :data:`FAILURES`, which logs
the first failure of each part with its traceback and counts them all (shown
on the page and exported as ``dask_asafe_view_errors_total``).
"""
from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from ..core.explain import explain_domain
from . import hosts
from .protocol import NAME

__all__ = ["installed", "plugin_info", "savings", "thresholds", "Failures", "FAILURES", "WireCounters",
           "WIRE_COUNTERS"]

logger = logging.getLogger("asafe")

#: Name of the worker plugin, and key of its entry in each worker's heartbeat metrics.
WIRE_COUNTERS = "asafe-wire-counters"


class Failures:
    """Failures of the views, per part: the first of each part is logged with its traceback, all are counted.

    Examples
    --------
    >>> failures = Failures()
    >>> with failures.guard("example"):
    ...     raise ValueError("a broken part")
    >>> failures.counts
    {'example': 1}
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def guard(self, part: str) -> Iterator[None]:
        """Run the block; an exception is counted under ``part``, logged the first time, and swallowed."""
        try:
            yield
        except Exception:
            with self._lock:
                first = part not in self.counts
                self.counts[part] = self.counts.get(part, 0) + 1
            if first:
                logger.exception("asafe: the %s part of the views failed; the scheduler goes on (counted in "
                                 "dask_asafe_view_errors_total)", part)


#: The views' failures in this process.
FAILURES = Failures()


def installed(scheduler: Any) -> Any:
    """The running :class:`~asafe.schedulers.scheduler_plugin.AdaptiveSchedulerPlugin` of ``scheduler``, or None.

    Known by its name and what it holds (a ``runtime``, attached), so that this
    module, which the scheduler plugin's views import, does not import the plugin.
    """
    plugin = getattr(scheduler, "plugins", {}).get(NAME)
    if getattr(plugin, "_attached", False) and hasattr(plugin, "runtime"):
        return plugin
    return None


class WireCounters(WorkerPlugin):
    """Puts :func:`wire_counters` in the worker's heartbeat metrics (``ws.metrics[WIRE_COUNTERS]`` on the scheduler)."""

    name = WIRE_COUNTERS
    idempotent = True

    def setup(self, worker: Any) -> None:
        worker.metrics[WIRE_COUNTERS] = wire_counters

    def teardown(self, worker: Any) -> None:
        worker.metrics.pop(WIRE_COUNTERS, None)


def wire_counters(worker: Any = None) -> dict[str, float]:
    """This process's wire-compression counters: bytes saved on the frames it received, frames by fate.

    >>> sorted(wire_counters())
    ['compressed_frames', 'decompressed_frames', 'saved_bytes', 'skipped_frames']
    """
    from . import wire

    stats = wire.stats()
    return {
        "saved_bytes": int(stats.get("decompressed_logical_bytes", 0) - stats.get("decompressed_wire_bytes", 0)),
        "compressed_frames": int(stats.get("compressed_frames", 0)),
        "decompressed_frames": int(stats.get("decompressed_frames", 0)),
        "skipped_frames": int(stats.get("skipped_frames", 0)),
    }


def savings(scheduler: Any, plugin: Any) -> dict[str, Any]:
    """Bytes that each compression saved on the transfers between workers.

    The scheduler plugin counts every measured transfer as wire bytes and
    logical (uncompressed-equivalent) bytes, both compressions together
    (``transfer_stats``). wire-compression's share is what the receiving
    workers' codecs counted (their heartbeats carry it); tile compression's is
    the rest. The workers' counters arrive a heartbeat late (about a second),
    so the split may lag the total by that much.

    Returns
    -------
    dict
        ``transfers``, ``wire_bytes``, ``logical_bytes``, ``saved_bytes`` (all
        compressions), ``by`` (``{"wire-compression": bytes, "compression":
        bytes}``), ``frames`` (wire-compression's frames compressed,
        decompressed, skipped, summed over the workers) and ``workers_reporting``.
    """
    stats = dict(plugin.transfer_stats)
    saved = max(int(stats["logical_bytes"] - stats["wire_bytes"]), 0)
    wire_saved = 0
    frames = {"compressed_frames": 0, "decompressed_frames": 0, "skipped_frames": 0}
    reporting = 0
    for ws in list(getattr(scheduler, "workers", {}).values()):
        counters = (getattr(ws, "metrics", None) or {}).get(WIRE_COUNTERS)
        if not isinstance(counters, dict):
            continue
        reporting += 1
        wire_saved += int(counters.get("saved_bytes", 0))
        for key in frames:
            frames[key] += int(counters.get(key, 0))
    wire_saved = min(wire_saved, saved)
    return {
        "transfers": int(stats["count"]),
        "wire_bytes": int(stats["wire_bytes"]),
        "logical_bytes": int(stats["logical_bytes"]),
        "saved_bytes": saved,
        "by": {"wire-compression": wire_saved, "compression": saved - wire_saved},
        "frames": frames,
        "workers_reporting": reporting,
    }


def thresholds(runtime: Any) -> list[tuple[str, str, str, float]]:
    """``(metric, optimization, threshold name, value)`` of every part of every domain that reads a metric.

    Read from the domains' explanations, so a user domain that explains its
    thresholds is drawn too.

    Examples
    --------
    >>> import asafe
    >>> rt = asafe.AdaptiveRuntime([asafe.Optimization("c", asafe.AnyOf([asafe.Hysteresis(0.5, 2.0),
    ...                                                                  asafe.AtLeast("reuse", on=16)]))],
    ...                            signals=False)
    >>> thresholds(rt)
    [('ratio', 'c', 'alpha', 0.5), ('ratio', 'c', 'beta', 2.0), ('reuse', 'c', 'on', 16.0), ('reuse', 'c', 'off', 16.0)]
    """
    found: list[tuple[str, str, str, float]] = []
    mode = runtime.mode
    for name, opt in runtime.optimizations.items():
        stack = [explain_domain(opt.domain, mode, runtime.state(name))]
        while stack:
            part = stack.pop(0)
            metric = part.get("metric")
            if isinstance(metric, str):
                for key, value in (part.get("thresholds") or {}).items():
                    if key == "margin":  # a fraction of each edge, not a value of the metric
                        continue
                    values = value if isinstance(value, list) else [value]
                    for i, item in enumerate(values):
                        if isinstance(item, (int, float)) and not isinstance(item, bool):
                            label = key if len(values) == 1 and not isinstance(value, list) else f"{key}[{i}]"
                            found.append((metric, name, label, float(item)))
            stack.extend(part.get("parts") or ())
    return found


def plugin_info(plugin: Any, what: Any = None) -> dict[str, Any]:
    """What a :class:`~asafe.schedulers.distributed.RuntimeHandle` reads of a scheduler plugin, as plain data.

    ``what`` names the parts: ``states``, ``mode`` (the default two),
    ``history``, ``timeline``, ``errors``, ``explain``, ``tracker``,
    ``fallbacks``, ``plugin``.
    """
    what = set(what or ("states", "mode"))
    rt = plugin.runtime
    out: dict[str, Any] = {"token": plugin.token}
    if "states" in what:
        out["states"] = rt.states
    if "mode" in what:
        out["mode"] = _mode_data(rt.mode)
    if "history" in what:
        out["history"] = [[t.time, t.optimization, t.old, t.new, *_mode_data(t.mode)] for t in rt.history]
    if "timeline" in what:
        out["timeline"] = [[when, *_mode_data(mode)] for when, mode in rt.timeline]
    if "errors" in what:
        out["errors"] = [list(e) for e in rt.errors]
    if "explain" in what:
        out["explain"] = {name: dict(rt.explain(name)) for name in rt.optimizations}
    if "tracker" in what:
        tracker = rt.tracker
        out["tracker"] = {
            "finished": tracker.finished,
            "scheduled": tracker.scheduled_work(),
            "measured": tracker.measured_work(),
            "tasks": plugin.scheduled_count()[0],
            "next_wave": plugin.scheduled_count()[1],
            "rejected": dict(tracker.rejected),
        }
    if "hosts" in what:  # per-host signals (asafe.schedulers.hosts)
        out["hosts"] = hosts.info(plugin)
    if "fallbacks" in what:
        out["fallbacks"] = dict(plugin.fallbacks)
    if "plugin" in what:
        out["plugin"] = {
            "workers": sorted(plugin.receivers),
            "version": plugin.version,
            "bandwidth": plugin.link.measured,
            "link_capacity": plugin.link.capacity,
            "transfer_correction": plugin.transfer_correction,
            "expected_transfers": plugin.expected_transfers,
            "compiled": getattr(plugin, "compiled", False),  # the per-task path in C (asafe.schedulers._taskpath)
            "transfers": dict(plugin.transfer_stats),
            "forecast": {"planned_seconds": plugin.forecast.planned, "outputs": len(plugin.forecast),
                         "output_bytes": dict(plugin.forecast.output_bytes),
                         "shipped": dict(plugin.forecast.shipped)},
            "errors": [list(e) for e in plugin.plugin_errors],
            "fallbacks": dict(plugin.fallbacks),
            "repairs": plugin.repairs,
            "reuse": {"value": plugin.reuse.value, "scheduled": plugin.reuse.scheduled,
                      "ignored_annotations": plugin.ignored_annotations},
            "p2p": {"planned_bytes": plugin.p2p.planned_bytes, "measured_bytes": plugin.p2p.measured_bytes,
                    "pending": plugin.p2p.pending},
            "probes": list(plugin.probes),
            "arrivals": dict(getattr(plugin, "arrivals", {})),  # evaluated at once, and coalesced (update_graph)
        }
    return out


def _mode_data(mode: Any) -> list:
    return [mode.shares, mode.signals]
