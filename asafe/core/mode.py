"""The run-time mode vector.

A :class:`ModeVector` is an immutable snapshot of what the scheduled and recently
measured work consists of: the *share* of work per task type (shares are
non-negative and sum to 1, or are all zero for an idle scheduler) plus extra
*signals* such as cpu and memory load. Efficiency domains read it; the mode
tracker (:mod:`asafe.core.tracker`) builds it.

It is deliberately a small value object: building one costs a dict copy, and it
prints compactly so that transition logs stay readable.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from . import validate
from .types import COMMUNICATION, COMPUTE, validate_type

__all__ = ["ModeVector"]


class ModeVector(Mapping):
    """Shares of work per task type, with extra signals.

    Parameters
    ----------
    shares : mapping of str to float, optional
        Work per task type. Values must be finite and non-negative; they are
        normalised to sum to 1 (all-zero stays all-zero).
    **signals : float
        Extra signals, for example ``cpu=0.7`` (fraction of cpu busy) or
        ``memory=0.4``.

    Examples
    --------
    >>> mode = ModeVector({"compute": 0.2, "communication": 0.8}, cpu=0.5)
    >>> mode["compute"], mode.ratio, mode.signals["cpu"]
    (0.2, 0.25, 0.5)
    >>> ModeVector({"compute": 1.0}).ratio
    inf
    >>> ModeVector({"communication": 3}).ratio
    0.0
    >>> ModeVector({"compute": 1, "communication": 3})
    ModeVector({'communication': 0.75, 'compute': 0.25}, ratio=0.333)
    """

    __slots__ = ("_shares", "_signals", "_ratio")

    def __init__(self, shares: Mapping[str, float] | None = None, **signals: float) -> None:
        raw = dict(shares or {})
        for name, value in raw.items():
            validate_type(name)
            _check_number("share of", name, value)
        total = float(sum(raw.values()))
        if total > 0:
            normalised = {name: float(value) / total for name, value in raw.items()}
        else:
            normalised = {name: 0.0 for name in raw}
        for name, value in signals.items():
            _check_number("signal", name, value, allow_nan=True)
        self._shares = normalised
        self._signals = {name: float(value) for name, value in signals.items()}
        self._ratio = _ratio(normalised.get(COMPUTE, 0.0), normalised.get(COMMUNICATION, 0.0))

    # Mapping interface over the shares -------------------------------------
    def __getitem__(self, name: str) -> float:
        """Share of one task type (0.0 for a type with no work)."""
        return self._shares.get(name, 0.0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._shares)

    def __len__(self) -> int:
        return len(self._shares)

    def __contains__(self, name: object) -> bool:
        return name in self._shares

    # Derived values ----------------------------------------------------------
    @property
    def ratio(self) -> float:
        """Compute / communication: ``inf`` with no communication, ``0.0`` with no compute.

        An idle mode (neither) has ratio ``nan``, which no threshold crosses.
        """
        return self._ratio

    @property
    def shares(self) -> dict[str, float]:
        """A copy of the shares per task type."""
        return dict(self._shares)

    @property
    def signals(self) -> dict[str, float]:
        """A copy of the extra signals."""
        return dict(self._signals)

    def metric(self, name: str) -> float:
        """Value of a named metric: ``"ratio"``, a signal, or the share of a type.

        Examples
        --------
        >>> ModeVector({"compute": 1, "io": 1}, cpu=0.9).metric("io")
        0.5
        """
        if name == "ratio":
            return self._ratio
        if name in self._signals:
            return self._signals[name]
        return self._shares.get(name, 0.0)

    def replace(self, **signals: float) -> "ModeVector":
        """A copy with some signals replaced or added."""
        merged = {**self._signals, **signals}
        return ModeVector(self._shares, **merged)

    def as_dict(self) -> dict[str, object]:
        """A JSON-friendly dict: shares, signals and ratio."""
        return {"shares": self.shares, "signals": self.signals, "ratio": self._ratio}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModeVector):
            return NotImplemented
        return self._shares == other._shares and self._signals == other._signals

    def __hash__(self) -> int:
        return hash((tuple(sorted(self._shares.items())), tuple(sorted(self._signals.items()))))

    def __reduce__(self):
        return (_rebuild, (self._shares, self._signals))

    def __repr__(self) -> str:
        shares = {k: round(v, 3) for k, v in sorted(self._shares.items())}
        parts = [repr(shares), f"ratio={_fmt(self._ratio)}"]
        parts += [f"{k}={_fmt(v)}" for k, v in sorted(self._signals.items())]
        return f"ModeVector({', '.join(parts)})"


def _rebuild(shares: dict, signals: dict) -> ModeVector:
    return ModeVector(shares, **signals)


def _ratio(compute: float, communication: float) -> float:
    if communication > 0:
        return compute / communication
    if compute > 0:
        return math.inf
    return math.nan


def _check_number(kind: str, name: str, value: object, allow_nan: bool = False) -> None:
    # The tracker builds a mode at every evaluation: a plain float in range costs one comparison here, and the
    # value's description (``kind name``) is formatted only for a value that is then checked in full
    if type(value) is float and (0.0 <= value < math.inf or (allow_nan and value != value)):
        return
    validate.number(value, f"{kind} {name!r}", minimum=0, allow_nan=allow_nan, rule="a finite non-negative number")


def _fmt(value: float) -> str:
    if math.isinf(value) or math.isnan(value):
        return str(value)
    return f"{value:.3g}"
