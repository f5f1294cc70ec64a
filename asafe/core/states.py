"""What an optimization's state may be, and when two states are the same.

A state is on/off (``True``/``False``) or a value that a domain chooses: an
``int`` (a thread count) or a non-empty ``str`` (a codec). It must travel as
JSON (the processes scheduler's shared board) and through distributed's
messages, and compare by value. ``True`` is not the state ``1``.
"""
from __future__ import annotations

import numbers
from typing import Any

from . import validate

__all__ = ["check_state", "same"]


def same(a: Any, b: Any) -> bool:
    """Whether two states are the same state (``True`` is not ``1``, ``False`` not ``0``)."""
    return a == b and type(a) is type(b)


def check_state(value: Any, what: str) -> Any:
    """``value`` as a state: a bool, an int or a non-empty str (numpy scalars become Python's).

    Examples
    --------
    >>> check_state("zstd", "state"), check_state(4, "state")
    ('zstd', 4)
    >>> check_state(None, "the decision of the domain of 'x'")
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: the decision of the domain of 'x' must be a state: True/False, an int or a non-empty str, got None
    """
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_":  # numpy.bool_, from a comparison of numpy values
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, str) and value:
        return value
    raise validate.InvalidSetting(f"{what} must be a state: True/False, an int or a non-empty str, got {value!r}")
