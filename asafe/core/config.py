"""Configuration through :mod:`dask.config`.

The defaults live in ``asafe.yaml`` beside this module, under the ``asafe`` key,
with a comment on every key. They are registered with ``dask.config`` on import,
so ``~/.config/dask/*.yaml`` files and environment variables such as
``DASK_ASAFE__CONTROLLER__DWELL=1s`` override them as they override Dask's own.

Optimizations are configured as distributed's active memory manager configures its
policies: a list of ``{name, domain: dotted.path, kwargs, initial}`` entries, which
:func:`asafe.core.runtime.load_optimizations` builds. This module reads settings
and imports nothing else of asafe, so every room may import it.
"""
from __future__ import annotations

import importlib
import os
from typing import Any

import dask.config
import yaml
from dask.utils import parse_timedelta

__all__ = ["settings", "import_by_path", "parse_boolean"]

# asafe.yaml sits at the package root: the one settings file of every room
_DEFAULTS_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "asafe.yaml")

with open(_DEFAULTS_FILE, encoding="utf-8") as _f:
    _DEFAULTS = yaml.safe_load(_f)

dask.config.update_defaults(_DEFAULTS)


def settings() -> dict[str, Any]:
    """The runtime settings from ``dask.config``, parsed and validated.

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"asafe.controller.dwell": "2s"}):
    ...     settings()["dwell"]
    2.0
    """
    get = dask.config.get
    return {
        "default_type": get("asafe.default-type"),
        "window": int(get("asafe.tracker.window")),
        "blend": float(get("asafe.tracker.blend")),
        "default_duration": _seconds("asafe.tracker.default-duration"),
        "max_groups": int(get("asafe.tracker.max-groups")),
        "interval": _seconds("asafe.controller.interval"),
        "dwell": _seconds("asafe.controller.dwell"),
        "dwell_tasks": int(get("asafe.controller.dwell-tasks")),
        "arrivals_skip_dwell": parse_boolean(get("asafe.controller.arrivals-skip-dwell"),
                                             "asafe.controller.arrivals-skip-dwell"),
        "history_size": int(get("asafe.controller.history-size")),
        "signals": parse_boolean(get("asafe.signals.enabled"), "asafe.signals.enabled"),
        "signals_interval": _seconds("asafe.signals.interval"),
    }


def import_by_path(path: str) -> Any:
    """Import ``package.module.Name`` (as distributed imports AMM policies).

    Examples
    --------
    >>> import_by_path("asafe.Hysteresis").__name__
    'Hysteresis'
    """
    if not isinstance(path, str) or "." not in path:
        raise ValueError(f"expected a dotted path such as 'asafe.Hysteresis', got {path!r}")
    module_name, _, attr = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"cannot import {path!r}: {exc}") from exc


def _seconds(key: str) -> float:
    value = dask.config.get(key)
    try:
        seconds = parse_timedelta(value, default="seconds")
    except (TypeError, ValueError, KeyError):
        seconds = None
    if seconds is None or seconds < 0:
        raise ValueError(f"{key} must be a duration >= 0 such as '250ms', got {value!r}")
    return float(seconds)


def parse_boolean(value: Any, key: str | None = None) -> bool:
    """A boolean setting; strings as environment variables spell them.

    ``key``, the setting's name, goes into the error for a value that is not one.

    Examples
    --------
    >>> parse_boolean("off"), parse_boolean(True)
    (False, True)
    >>> parse_boolean("sometimes", "asafe.signals.enabled")
    Traceback (most recent call last):
    ...
    ValueError: asafe.signals.enabled must be a boolean (true/false, yes/no, on/off, 1/0), got 'sometimes'
    """
    if isinstance(value, str):  # environment variables arrive as strings
        lowered = value.strip().lower()
        if lowered in {"true", "1", "yes", "on"}:
            return True
        if lowered in {"false", "0", "no", "off"}:
            return False
        raise ValueError(f"{key or 'the setting'} must be a boolean (true/false, yes/no, on/off, 1/0), "
                         f"got {value!r}")
    return bool(value)
