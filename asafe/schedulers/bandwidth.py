"""The link's measured bandwidth: one estimate that the scheduler plugin, the forecast and the mode share.

:class:`LinkEstimate` is a moving average of the wire bytes per second of
measured inter-worker transfers. The scheduler plugin feeds it
(:meth:`LinkEstimate.observe`), the forecast prices planned transfers with it,
the transfer correction converts saved bytes into seconds with it, and the mode
reads it as the ``bandwidth`` signal (calling the estimate returns its value).

Before the first measured transfer it answers, in order: what an earlier
installation on the same scheduler measured (kept in the scheduler's
:class:`~asafe.schedulers.forecast.PrefixMemory`, as Dask keeps per-prefix
durations), then the scheduler's own estimate (the configured
``distributed.scheduler.bandwidth``, 100 MB/s by default, until the workers'
heartbeats report theirs). The workers' figure counts logical bytes and the
codec's time, which is why a measured figure comes first.

The ``bandwidth`` signal reads the same, except that it reads ``nan`` (unknown,
which switches nothing) while the only figure is the scheduler's configured
default: before anything was measured, Dask's 100 MB/s would read as a slow
link and switch wire compression on where the link may be 25 Gbit/s.
:meth:`LinkEstimate.signal` is that view; the forecast prices planned
transfers with the estimate itself.

The link is measured without the wire codec's time: a compressed batch's time
includes compressing and decompressing, so its wire bytes per second would
read low and keep wire-compression on by its own effect.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["LinkEstimate", "probe", "configured_bandwidth"]


class LinkEstimate:
    """Wire bytes per second of the link, measured first, remembered, else the scheduler's estimate.

    Parameters
    ----------
    min_bytes : int
        Smallest transfer (wire bytes) that updates the average; smaller ones
        measure latency rather than bandwidth.
    memory : object with a ``bandwidth`` attribute, optional
        Where the estimate is remembered across installations on one scheduler.
    fallback : callable, optional
        The scheduler's own estimate, called until a transfer is measured;
        ``None`` from it means there is none (the estimate then reads 0.0).

    Examples
    --------
    >>> link = LinkEstimate(min_bytes=1000, fallback=lambda: 1e8)
    >>> link()  # nothing measured: the scheduler's estimate
    100000000.0
    >>> link.observe(wire_bytes=2e8, seconds=1.0)
    >>> link(), link.measured
    (200000000.0, 200000000.0)
    >>> link.observe(wire_bytes=1e8, seconds=1.0)  # the average weighs a new transfer 0.25
    >>> link()
    175000000.0
    >>> link.observe(wire_bytes=10, seconds=1.0)  # below min_bytes: latency, not bandwidth
    >>> link()
    175000000.0
    """

    #: Weight of a new transfer in the moving average.
    weight = 0.25

    def __init__(self, min_bytes: int = 0, memory: Any = None,
                 fallback: Callable[[], float | None] | None = None, configured: float | None = None) -> None:
        self.min_bytes = int(min_bytes)
        self.memory = memory
        self.fallback = fallback
        #: The scheduler's configured default (``distributed.scheduler.bandwidth``): a fallback equal to it
        #: is no measurement.
        self.configured = configured
        #: The moving average of this installation's measured transfers (None before the first).
        self.measured: float | None = None

    def observe(self, wire_bytes: float, seconds: float) -> None:
        """Count one transfer of ``wire_bytes`` that took ``seconds``, none of them in a codec.

        The caller leaves out transfers that a codec ran on (the scheduler
        plugin's ``_transfer_seconds``): their link time would be their time
        less an estimate of the codec's seconds, and that estimate errs both
        ways. Read high, it closed the next run's gate behind 1 Gbit/s (the
        compressed transfers of a rechunk of int ids read 240-480 MB/s, and
        every other run sent its data as it was, ``docs/results/workloads/``);
        read low, it would keep compression on over a link where it does not
        pay. Either way compression would switch itself by its own effect.
        """
        if wire_bytes < self.min_bytes or not seconds > 0:
            return
        sample = wire_bytes / seconds
        self.measured = sample if self.measured is None else (1 - self.weight) * self.measured + self.weight * sample
        if self.memory is not None:
            self.memory.bandwidth = self.measured

    def __call__(self) -> float:
        """The current estimate in bytes per second (0.0 when nothing is known)."""
        if self.measured:
            return self.measured
        remembered = getattr(self.memory, "bandwidth", None)
        if remembered:
            return remembered
        fallback = self.fallback() if self.fallback is not None else None
        return float(fallback or 0.0)

    def signal(self) -> float:
        """The estimate where something measured it, else ``nan`` (the ``bandwidth`` signal).

        >>> link = LinkEstimate(fallback=lambda: 1e8, configured=1e8)
        >>> link(), link.signal()
        (100000000.0, nan)
        >>> link.observe(wire_bytes=2e8, seconds=1.0)
        >>> link.signal()
        200000000.0
        """
        value = self()
        if not self.measured and not getattr(self.memory, "bandwidth", None) and (
                self.configured is not None and value == self.configured):
            return math.nan
        return value if value > 0 else math.nan

    @property
    def known(self) -> bool:
        """Whether something measured the link (this installation, an earlier one, or the workers)."""
        return not math.isnan(self.signal())

    def reset(self) -> None:
        """Forget this installation's measurements (the remembered figure stays)."""
        self.measured = None

    def __repr__(self) -> str:
        return f"<LinkEstimate {self():.3g} B/s measured={self.measured}>"


async def probe(scheduler: Any, nbytes: int, timeout: float) -> dict[str, Any]:
    """Measure the link once: one worker fetches ``nbytes`` of random bytes from another (the faster of two).

    Random bytes, so that no compression shortens them; the faster of two
    fetches, so that a connection's set-up is left out. Workers on different
    hosts are preferred (the link between hosts is the one that matters). The
    worker plugin serves the handlers (``asafe_probe``, ``asafe_probe_payload``).
    Returns ``{"from", "to", "bytes", "seconds"}``; raises where it cannot.
    """
    import asyncio

    workers = list(scheduler.workers.values())
    if len(workers) < 2:
        raise ValueError("a link probe needs two workers")
    first = workers[0]
    second = next((ws for ws in workers[1:] if ws.host != first.host), workers[1])
    seconds = await asyncio.wait_for(scheduler.rpc(first.address).asafe_probe(peer=second.address, nbytes=nbytes),
                                     timeout=timeout)
    if not seconds or not seconds > 0:
        raise ValueError(f"the probe took {seconds!r} seconds")
    return {"from": second.address, "to": first.address, "bytes": nbytes, "seconds": float(seconds)}


def configured_bandwidth() -> float | None:
    """``distributed.scheduler.bandwidth`` in bytes per second (the scheduler's estimate before any report)."""
    import dask.config
    from dask.utils import parse_bytes

    try:
        return float(parse_bytes(dask.config.get("distributed.scheduler.bandwidth")))
    except Exception:
        return None
