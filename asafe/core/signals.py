"""System signals for the mode vector: cpu and memory load from psutil.

psutil calls cost tens of microseconds, too much for the per-event path, so
:class:`SystemSignals` samples at most once per ``interval`` and serves the last
sample in between.
"""
from __future__ import annotations

import time

import psutil

__all__ = ["SystemSignals"]


class SystemSignals:
    """Throttled cpu and memory load, as fractions in [0, 1].

    Examples
    --------
    >>> sample = SystemSignals(interval=1.0).read()
    >>> sorted(sample), all(0.0 <= v <= 1.0 for v in sample.values())
    (['cpu', 'memory'], True)
    """

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = float(interval)
        self._next = 0.0
        psutil.cpu_percent(interval=None)  # primes the counter: the first call returns 0
        self._last = {"cpu": 0.0, "memory": psutil.virtual_memory().percent / 100.0}

    def read(self) -> dict[str, float]:
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self.interval
            self._last = {
                "cpu": psutil.cpu_percent(interval=None) / 100.0,
                "memory": psutil.virtual_memory().percent / 100.0,
            }
        return self._last
