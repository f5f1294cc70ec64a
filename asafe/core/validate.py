"""One way to check a number, a boolean, a duration, a size or a name at asafe's public boundaries.

Every setting read from ``dask.config`` and every argument of a public
constructor goes through these functions, so that they agree on what they
accept and say the same things when they refuse:

* booleans are never numbers (``True`` is not a window of 1), and numbers are
  never booleans (``2`` is not "on");
* a number may come as a string where a YAML file or an environment variable
  spells it (``"2.5e8"``: PyYAML reads exponents without a dot as strings);
* the error names the setting and, for a configuration key, the environment
  variable that sets it, and says what is allowed;
* one exception type, :class:`InvalidSetting`, which is both a ``ValueError``
  and a ``TypeError``: a caller that catches either (as callers of earlier
  versions did, depending on the check) still catches it.

Nothing here imports the rest of asafe, so every room may use it.

Examples
--------
>>> number("2.5e8", "alpha", minimum=0)
250000000.0
>>> integer(True, "asafe.tracker.window", minimum=1)
Traceback (most recent call last):
...
asafe.core.validate.InvalidSetting: asafe.tracker.window must be an integer >= 1, got True (environment variable DASK_ASAFE__TRACKER__WINDOW)
"""
from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable
from typing import Any

__all__ = ["InvalidSetting", "env_var", "number", "integer", "boolean", "duration", "size", "choice"]

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class InvalidSetting(ValueError, TypeError):
    """A setting or argument that asafe refuses; the message names it and what is allowed."""


def env_var(key: str) -> str:
    """The environment variable that sets the ``dask.config`` key ``key``.

    >>> env_var("asafe.controller.dwell-tasks")
    'DASK_ASAFE__CONTROLLER__DWELL_TASKS'
    """
    return "DASK_" + key.replace(".", "__").replace("-", "_").upper()


def _refuse(name: str, rule: str, value: Any, named: bool = False) -> InvalidSetting:
    where = f" (environment variable {env_var(name)})" if name.startswith("asafe.") and "[" not in name else ""
    got = f"{name}={value!r}" if named else repr(value)
    return InvalidSetting(f"{name} must be {rule}, got {got}{where}")


def _bounds(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum:g} to {maximum:g}"
    if minimum is not None:
        return f" >= {minimum:g}"
    if maximum is not None:
        return f" <= {maximum:g}"
    return ""


def number(value: Any, name: str, *, minimum: float | None = None, maximum: float | None = None,
           below: float | None = None, allow_nan: bool = False, allow_inf: bool = False, rule: str | None = None,
           named: bool = False) -> float:
    """``value`` as a float, if it is a number within the bounds (inclusive).

    Parameters
    ----------
    value
        A real number (numpy scalars included) or a string that spells one; never a bool.
    name : str
        The argument or ``dask.config`` key, for the error.
    minimum, maximum : float, optional
        Inclusive bounds.
    below : float, optional
        An exclusive upper bound (a share that must stay below 1).
    allow_nan, allow_inf : bool
        Whether ``nan`` (an unknown value) or an infinity is accepted.
    rule : str, optional
        What is allowed, in words, instead of the generated "a number >= 0".
    named : bool
        Show the refused value as ``name=value`` (for keyword arguments).

    Examples
    --------
    >>> number(0.5, "blend", minimum=0, maximum=1)
    0.5
    >>> number(float("inf"), "beta", minimum=0, allow_inf=True)
    inf
    >>> number("abc", "asafe.tracker.blend", minimum=0, maximum=1)
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: asafe.tracker.blend must be a number from 0 to 1, got 'abc' (environment variable DASK_ASAFE__TRACKER__BLEND)
    """
    generated = ("a number" + _bounds(minimum, maximum) + (f" and < {below:g}" if below is not None else "")
                 + (" (inf allowed)" if allow_inf else ""))
    not_a_number = f"a number ({rule})" if rule else generated
    rule = rule or generated
    if isinstance(value, bool):
        raise _refuse(name, not_a_number, value, named)
    if isinstance(value, numbers.Real):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            raise _refuse(name, not_a_number, value, named) from None
    else:
        raise _refuse(name, not_a_number, value, named)
    if math.isnan(result):
        if allow_nan:
            return result
        raise _refuse(name, rule, value, named)
    if math.isinf(result) and not allow_inf:
        raise _refuse(name, rule, value, named)
    if (minimum is not None and result < minimum) or (maximum is not None and result > maximum) or (
            below is not None and result >= below):
        raise _refuse(name, rule, value, named)
    return result


def integer(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int, if it is a whole number within the bounds; never a bool.

    >>> integer(256, "window", minimum=1), integer("16", "asafe.controller.dwell-tasks", minimum=0)
    (256, 16)
    >>> integer(2.5, "window", minimum=1)
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: window must be an integer >= 1, got 2.5
    """
    rule = "an integer" + _bounds(minimum, maximum)
    if isinstance(value, bool):
        raise _refuse(name, rule, value)
    if isinstance(value, numbers.Integral):
        result = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        result = int(value)  # 16.0, as a YAML file or a division may give it
    elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        result = int(value.strip())
    else:
        raise _refuse(name, rule, value)
    if (minimum is not None and result < minimum) or (maximum is not None and result > maximum):
        raise _refuse(name, rule, value)
    return result


def boolean(value: Any, name: str) -> bool:
    """``value`` as a bool: ``True``/``False``, or a string as environment variables spell one.

    >>> boolean("off", "asafe.signals.enabled"), boolean(True, "x")
    (False, True)
    >>> boolean(2, "asafe.signals.enabled")
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: asafe.signals.enabled must be a boolean (true/false, yes/no, on/off, 1/0), got 2 (environment variable DASK_ASAFE__SIGNALS__ENABLED)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    elif isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise _refuse(name, "a boolean (true/false, yes/no, on/off, 1/0)", value)


def duration(value: Any, name: str, *, minimum: float = 0.0) -> float:
    """``value`` in seconds: a number of seconds or a string such as ``"250ms"``.

    >>> duration("250ms", "asafe.controller.dwell"), duration(2, "dwell")
    (0.25, 2.0)
    >>> duration("soon", "asafe.controller.dwell")
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: asafe.controller.dwell must be a duration >= 0 such as '250ms' or 2 (seconds), got 'soon' (environment variable DASK_ASAFE__CONTROLLER__DWELL)
    """
    from dask.utils import parse_timedelta

    rule = f"a duration >= {minimum:g} such as '250ms' or 2 (seconds)"
    if isinstance(value, bool):
        raise _refuse(name, rule, value)
    try:
        seconds = parse_timedelta(value, default="seconds")
    except (TypeError, ValueError, KeyError, AttributeError):
        seconds = None
    if seconds is None or math.isnan(seconds) or math.isinf(seconds) or seconds < minimum:
        raise _refuse(name, rule, value)
    return float(seconds)


def size(value: Any, name: str, *, minimum: int = 0) -> int:
    """``value`` in bytes: a whole number or a string such as ``"64 KiB"``.

    >>> size("64 KiB", "asafe.wire.min-size", minimum=1), size(4096, "min_size")
    (65536, 4096)
    """
    from dask.utils import parse_bytes

    rule = f"a size >= {minimum} such as '64 KiB' or 65536 (bytes)"
    if isinstance(value, bool):
        raise _refuse(name, rule, value)
    try:
        result = parse_bytes(value) if isinstance(value, str) else value
    except (TypeError, ValueError):
        raise _refuse(name, rule, value) from None
    if not isinstance(result, numbers.Integral) or result < minimum:
        raise _refuse(name, rule, value)
    return int(result)


def choice(value: Any, name: str, allowed: Iterable[str]) -> str:
    """``value`` if it is one of ``allowed``; the error lists them and suggests the nearest.

    >>> choice("zstd", "asafe.wire.codec", ["lz4", "zstd"])
    'zstd'
    >>> choice("zstf", "codec", ["lz4", "zstd"])
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: codec must be one of lz4, zstd (did you mean 'zstd'?), got 'zstf'
    """
    allowed = list(allowed)
    if isinstance(value, str) and value in allowed:
        return value
    near = difflib.get_close_matches(str(value), allowed, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise _refuse(name, f"one of {', '.join(allowed)}{hint}", value)
