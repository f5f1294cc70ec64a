"""The link's measured bandwidth: one estimate that the scheduler plugin, the forecast and the mode share.

:class:`LinkEstimate` holds two views of the wire bytes per second of measured
inter-worker transfers, fed by the scheduler plugin
(:meth:`LinkEstimate.observe`):

* the *throughput*, a moving average of every transfer (calling the estimate
  returns it): what a transfer takes, contention included. The forecast prices
  planned transfers with it and the transfer correction converts saved bytes
  into seconds with it;
* the *capacity*, the upper envelope of the transfers (a faster transfer sets
  it at once, a slower one pulls it down by :attr:`LinkEstimate.fall` of the
  gap): what the link itself carries. The mode reads it as the ``bandwidth``
  signal, which decides whether the link is slower than the codecs.

Why two. A transfer is timed from the request to the last byte received, so a
busy cpu (the sender's event loop serializing, the receiver's running tasks)
makes it read slow, never fast. On this project's 2-core machine the loopback
(about 25 Gbit/s) read 66-1400 MB/s per 6 MB transfer of the workloads suite's
futures, and its moving average 100-500 MB/s: below the gate's 250 MB/s often
enough to switch wire compression on, whose codec then took the cpu that was
the bottleneck (``docs/results/workloads/loopback``). Behind a tc-shaped
1 Gbit/s link the same transfers read 27-124 MB/s: the link caps them, so the
envelope reads the link (124 MB/s) where the average reads its share under
contention. The envelope is only as good as its fastest transfers: a run whose
every transfer waits on a saturated cpu still reads low.

Before the first measured transfer it answers, in order: what an earlier
installation on the same scheduler measured (kept in the scheduler's
:class:`~asafe.schedulers.forecast.PrefixMemory`, as Dask keeps per-prefix
durations), then the scheduler's own estimate (the configured
``distributed.scheduler.bandwidth``, 100 MB/s by default, until the workers'
heartbeats report theirs). The workers' figure counts logical bytes and the
codec's time, which is why a measured figure comes first.

The ``bandwidth`` signal (:meth:`LinkEstimate.signal`) reads only what asafe
measured: the capacity (this installation's, then the remembered one), then
the throughput (likewise), and ``nan`` (unknown, which switches nothing)
before anything was measured; the scheduler plugin then probes the link at the
first graph that will move data over it. Not the scheduler's estimate: before
the workers report, that is Dask's configured 100 MB/s, which would read as a
slow link and switch wire compression on where the link may be 25 Gbit/s; after,
it is the workers' moving average of *logical* bytes per second, which
compression raises. Behind a 1 Gbit/s link whose transfers asafe compressed (and
so did not measure, below), the workers' figure crept up by 4-5% a run, from
101 to 151 MB/s over ten runs of a P2P rechunk, and past the gate's 250 MB/s
on three hosts, where it closed the gate at a graph's arrival and the run went
uncompressed (docs/results/hosts-s36): compression switching itself off by its
own effect.

The link is measured without the wire codec's time: a compressed batch's time
includes compressing and decompressing, so its wire bytes per second would
read low and keep wire-compression on by its own effect.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["LinkEstimate", "PROBE_FETCHES", "probe"]

#: How many times a link probe fetches its bytes (the worker plugin keeps the fastest fetch).
PROBE_FETCHES = 2


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
    >>> link(), link.measured, link.capacity
    (200000000.0, 200000000.0, 200000000.0)
    >>> link.observe(wire_bytes=1e8, seconds=1.0)  # the average weighs a new transfer 0.25
    >>> link(), link.capacity  # the envelope falls by 0.1 of the gap
    (175000000.0, 190000000.0)
    >>> link.observe(wire_bytes=4e8, seconds=1.0)  # a faster transfer sets the envelope at once
    >>> link.capacity
    400000000.0
    >>> link.observe(wire_bytes=10, seconds=1.0)  # below min_bytes: latency, not bandwidth
    >>> link.capacity
    400000000.0
    """

    #: Weight of a new transfer in the moving average (the throughput).
    weight = 0.25
    #: Share of the gap by which a slower transfer pulls the capacity down. About 16 transfers take an
    #: envelope of 900 MB/s below 250 MB/s where the link really slowed to 100 MB/s; one transfer that
    #: waited on a busy cpu moves it by a tenth of its error.
    fall = 0.1

    def __init__(self, min_bytes: int = 0, memory: Any = None,
                 fallback: Callable[[], float | None] | None = None) -> None:
        self.min_bytes = int(min_bytes)
        self.memory = memory
        self.fallback = fallback
        #: The moving average of this installation's measured transfers (None before the first).
        self.measured: float | None = None
        #: The upper envelope of this installation's measured transfers (None before the first).
        self.capacity: float | None = None

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
        # the envelope starts from what an earlier installation on this scheduler saw: one slow first
        # transfer of a new installation (its tasks all starting at once) does not read as a slow link
        capacity = self.capacity if self.capacity is not None else getattr(self.memory, "capacity", None)
        self.capacity = sample if capacity is None or sample >= capacity else capacity + self.fall * (sample - capacity)
        if self.memory is not None:
            self.memory.bandwidth = self.measured
            self.memory.capacity = self.capacity

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
        """The link's capacity where asafe measured it, else ``nan`` (the ``bandwidth`` signal).

        The capacity of this installation, else the one an earlier installation
        remembered, else either's throughput; never the scheduler's own
        estimate, which counts the logical bytes of compressed transfers (see
        the module docstring).

        >>> link = LinkEstimate(fallback=lambda: 3e8)  # the workers report 300 MB/s
        >>> link(), link.signal()  # the throughput falls back on it; the signal does not
        (300000000.0, nan)
        >>> link.observe(wire_bytes=2e8, seconds=1.0)
        >>> link.observe(wire_bytes=1e8, seconds=1.0)
        >>> link(), link.signal()  # the throughput, the capacity
        (175000000.0, 190000000.0)
        """
        capacity = self.capacity or getattr(self.memory, "capacity", None)
        if capacity:
            return capacity
        measured = self.measured or getattr(self.memory, "bandwidth", None)
        return measured if measured and measured > 0 else math.nan

    @property
    def known(self) -> bool:
        """Whether asafe measured the link (this installation or an earlier one on this scheduler)."""
        return not math.isnan(self.signal())

    def reset(self) -> None:
        """Forget this installation's measurements (the remembered figures stay)."""
        self.measured = None
        self.capacity = None

    def __repr__(self) -> str:
        return f"<LinkEstimate {self():.3g} B/s measured={self.measured} capacity={self.capacity}>"


async def probe(scheduler: Any, nbytes: int, timeout: float) -> dict[str, Any]:
    """Measure the link once: one worker fetches ``nbytes`` of random bytes from another (the fastest of
    :data:`PROBE_FETCHES`).

    Random bytes, so that no compression shortens them; the fastest fetch, so
    that a connection's set-up is left out. Workers on different
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
