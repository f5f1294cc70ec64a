"""An efficiency domain of your own: on while a signal of the mode is high.

:class:`asafe.Hysteresis` turns its optimization on when the metric is
*low* (compression wants a low compute/communication ratio). ``Busy`` is
the mirror image: on above ``high``, off below ``low``, unchanged in
between. It reads one signal of the mode vector, the cpu load by default.

In a project this class lives in a module of its own, so that
configuration can name it by dotted path (here ``precision_domain.Busy``;
in your project, for example ``myproject.domains.Busy``).

Examples
--------
>>> import asafe
>>> domain = Busy(high=0.85, low=0.6)
>>> saturated = asafe.ModeVector({"compute": 1.0}, cpu=0.95)
>>> quiet = asafe.ModeVector({"compute": 1.0}, cpu=0.2)
>>> between = asafe.ModeVector({"compute": 1.0}, cpu=0.7)
>>> domain.decide(saturated, False), domain.decide(quiet, True)
(True, False)
>>> domain.decide(between, False), domain.decide(between, True)
(False, True)
>>> no_signal = asafe.ModeVector({"compute": 1.0})
>>> domain.decide(no_signal, True)       # nothing to go by: keep the state
True
"""
from __future__ import annotations

import math

import asafe


class Busy(asafe.EfficiencyDomain):
    """On while ``signal`` is above ``high``, off once it is below ``low``.

    Parameters
    ----------
    high : float
        Switch on when the signal is strictly above this value.
    low : float
        Switch off when the signal is strictly below this value;
        ``0 <= low <= high``.
    signal : str
        A signal of the mode vector: ``"cpu"`` or ``"memory"``
        (fractions in [0, 1]).
    """

    def __init__(self, high=0.85, low=0.6, signal="cpu"):
        high, low = float(high), float(low)
        if not 0.0 <= low <= high:
            raise ValueError(
                f"Busy needs 0 <= low <= high, got low={low}, high={high}")
        self.high, self.low, self.signal = high, low, signal

    def decide(self, mode, state):
        # Cheap and non-blocking: this runs on the scheduler's event path.
        value = mode.signals.get(self.signal, math.nan)
        if value > self.high:
            return True
        if value < self.low:
            return False
        return state  # in the band, or no such signal (nan): keep it

    def __repr__(self):
        return (f"Busy(high={self.high}, low={self.low}, "
                f"signal={self.signal!r})")
