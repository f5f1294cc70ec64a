"""What the scheduler plugin and the worker plugin share: names, metadata keys, sizes, failures.

The two plugins of a cluster (:mod:`asafe.schedulers.scheduler_plugin`,
:mod:`asafe.schedulers.worker_plugin`) speak through distributed's own messages:
a finished task's ``metadata`` and ``startstops`` (worker -> scheduler) and one
stream op (scheduler -> worker). The names of those keys and ops live here, with
the size helpers both sides use and the one way both report a distributed
internal that is missing. How the plugins use them is told on the Architecture
page ("The cluster plugins").
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

import dask.config
from dask.sizeof import sizeof

from ..core import validate

__all__ = [
    "NAME",
    "METADATA_KEY",
    "STATES_OP",
    "TRANSFER_PREFIX",
    "STARTSTOP_BYTES",
    "STARTSTOP_EXTRA",
    "STARTSTOP_TASKS",
    "STARTSTOP_CODEC",
    "PluginError",
    "output_nbytes",
    "uncompressed_seconds",
    "plugin_settings",
    "count_fallback",
    "last_items",
    "logical_size",
]

logger = logging.getLogger("asafe")

#: Name of both plugins (one asafe installation per cluster).
NAME = "asafe"
#: Key of ``[logical, wire]`` output sizes in a task's metadata.
METADATA_KEY = "asafe-nbytes"
#: Stream op of state pushes (scheduler -> worker).
STATES_OP = "asafe-states"
#: Group prefix of transfers in the tracker: ("communication", "transfer-<prefix>").
TRANSFER_PREFIX = "transfer-"
#: Keys the worker plugin adds to a ``transfer`` startstop: the batch's bytes as
#: the worker counted them, and the bytes compression saved in it.
STARTSTOP_BYTES = "asafe-bytes"
STARTSTOP_EXTRA = "asafe-extra"
#: ... and the number of tasks on that worker the batch served.
STARTSTOP_TASKS = "asafe-tasks"
#: ... and, when wire-compression decoded frames of the batch, the codec's seconds
#: in the batch's time (both ends), which the link's measure leaves out.
STARTSTOP_CODEC = "asafe-codec"

# Outputs that are containers are looked through up to this many items.
_MAX_ITEMS = 4096


class PluginError(NamedTuple):
    """A plugin hook that raised: logged, recorded, and scheduling went on."""

    time: float
    hook: str
    error: str


def output_nbytes(value: object) -> tuple[int, int] | None:
    """``(logical, wire)`` bytes of a task output that reports them, else ``None``.

    An object reports them with the attributes ``logical_nbytes`` (dense-equivalent
    size) and ``nbytes`` (size on the wire). Lists, tuples and dicts (values) are
    looked through one level deep; their items without ``logical_nbytes`` count
    their :func:`dask.sizeof.sizeof` for both.

    Examples
    --------
    >>> class Tile:
    ...     def __init__(self, logical, wire):
    ...         self.logical_nbytes, self.nbytes = logical, wire
    >>> output_nbytes(Tile(8000, 120))
    (8000, 120)
    >>> output_nbytes([Tile(8000, 120), Tile(8000, 8000)])
    (16000, 8120)
    >>> output_nbytes(b"plain bytes") is None
    True
    """
    logical = getattr(value, "logical_nbytes", None)
    if logical is not None:
        wire = getattr(value, "nbytes", None)
        return int(logical), int(logical if wire is None else wire)
    if isinstance(value, Mapping):
        items = value.values() if type(value) is dict else ()
    elif type(value) in (list, tuple):
        items = value
    else:
        return None
    if not items or len(items) > _MAX_ITEMS:
        return None
    total_logical = total_wire = 0
    reported = False
    for item in items:
        item_logical = getattr(item, "logical_nbytes", None)
        if item_logical is None:
            size = sizeof(item)
            total_logical += size
            total_wire += size
        else:
            reported = True
            item_wire = getattr(item, "nbytes", None)
            total_logical += int(item_logical)
            total_wire += int(item_logical if item_wire is None else item_wire)
    return (total_logical, total_wire) if reported else None


def uncompressed_seconds(seconds: float, logical: float, wire: float, bandwidth: float) -> float:
    """The time a transfer would have taken with the data uncompressed.

    ``seconds + (logical - wire) / bandwidth``: the measured time plus the bytes
    that compression saved, at the measured bandwidth. Uncompressed data
    (``logical <= wire``) or an unknown bandwidth leave ``seconds`` unchanged.

    Examples
    --------
    >>> uncompressed_seconds(0.001, logical=8_000_000, wire=80_000, bandwidth=1e9)
    0.00892
    >>> uncompressed_seconds(0.010, logical=5_000, wire=5_000, bandwidth=1e9)
    0.01
    """
    if logical <= wire or not bandwidth > 0:
        return seconds
    return seconds + (logical - wire) / bandwidth


def plugin_settings() -> dict[str, Any]:
    """``asafe.distributed.*``, parsed and validated (errors name the key).

    Examples
    --------
    >>> with dask.config.set({"asafe.distributed.next-wave": "off"}):
    ...     plugin_settings()["next_wave"]
    False
    """
    get = dask.config.get
    settings = {
        name.replace("-", "_"): validate.boolean(get(f"asafe.distributed.{name}", True), f"asafe.distributed.{name}")
        for name in ("transfer-correction", "expected-transfers", "next-wave", "record-sizes")
    }
    raw = get("asafe.distributed.bandwidth-min-bytes", "64 KiB")
    settings["bandwidth_min_bytes"] = validate.size(raw, "asafe.distributed.bandwidth-min-bytes", minimum=0)
    settings["forecast_min_bytes"] = validate.size(get("asafe.distributed.forecast-min-bytes", "1 KiB"),
                                                   "asafe.distributed.forecast-min-bytes", minimum=0)
    settings["evaluate_interval"] = validate.duration(get("asafe.distributed.evaluate-interval", "50ms"),
                                                      "asafe.distributed.evaluate-interval")
    settings["coalesce_arrivals"] = validate.integer(get("asafe.distributed.coalesce-arrivals", 1),
                                                     "asafe.distributed.coalesce-arrivals", minimum=0)
    return settings


def count_fallback(plugin: Any, name: str, what: str) -> None:
    """A distributed internal a plugin reads is missing: count it in ``plugin.fallbacks``, warn once per name.

    The plugins read some private parts of distributed (the tested range is
    pinned in setup.py; the Reliability page lists them); where one is gone
    they take a less exact path instead of failing, and this makes that
    visible (``handle.fallbacks``, ``handle.info("fallbacks")``).
    """
    seen = plugin.fallbacks.get(name, 0)
    plugin.fallbacks[name] = seen + 1
    if not seen:
        import distributed

        logger.warning("asafe: %s (distributed %s; %s). Counted in the %s's fallbacks[%r].",
                       what, distributed.__version__, name, type(plugin).__name__, name)


def last_items(items: Any, n: int) -> list:
    """The last ``n`` items of a list or deque, newest first.

    >>> last_items([1, 2, 3, 4], 2)
    [4, 3]
    """
    out = []
    for item in reversed(items):
        out.append(item)
        if len(out) == n:
            break
    return out


def logical_size(ts: Any) -> float:
    """Logical (uncompressed-equivalent) bytes of a task output in memory: its reported sizes, else its ``nbytes``."""
    metadata = ts.metadata
    sizes = metadata.get(METADATA_KEY) if metadata else None
    return float(sizes[0]) if sizes else float(max(ts.nbytes, 0))
