"""Configuration through :mod:`dask.config`.

The defaults live in ``asafe.yaml`` beside this module, under the ``asafe`` key,
with a comment on every key. They are registered with ``dask.config`` on import,
so ``~/.config/dask/*.yaml`` files and environment variables such as
``DASK_ASAFE__CONTROLLER__DWELL=1s`` override them as they override Dask's own.

Optimizations are configured as distributed's active memory manager configures its
policies: a list of ``{name, domain: dotted.path, kwargs, initial}`` entries.
"""
from __future__ import annotations

import importlib
import os
from typing import Any

import dask.config
import yaml
from dask.utils import parse_timedelta

__all__ = ["settings", "load_optimizations", "import_by_path"]

_DEFAULTS_FILE = os.path.join(os.path.dirname(__file__), "asafe.yaml")

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
        "history_size": int(get("asafe.controller.history-size")),
        "signals": _boolean(get("asafe.signals.enabled")),
        "signals_interval": _seconds("asafe.signals.interval"),
    }


def load_optimizations(entries: list[dict] | None = None) -> list:
    """Build :class:`~asafe.Optimization` objects from configuration entries.

    Parameters
    ----------
    entries : list of dict, optional
        Default: ``dask.config.get("asafe.optimizations")``. Each entry has
        ``name``, ``domain`` (dotted path of a class or factory), optional
        ``kwargs`` and optional ``initial``.

    Examples
    --------
    >>> load_optimizations([{"name": "f32", "domain": "asafe.Hysteresis",
    ...                      "kwargs": {"alpha": 0.1, "beta": 0.2, "metric": "cpu"}}])
    [Optimization('f32', Hysteresis(alpha=0.1, beta=0.2, metric='cpu'), initial=False)]
    """
    from .runtime import Optimization

    if entries is None:
        entries = dask.config.get("asafe.optimizations") or []
    built = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "name" not in entry or "domain" not in entry:
            raise ValueError(
                f"asafe.optimizations[{i}] must be a mapping with 'name' and 'domain' "
                f"(and optional 'kwargs', 'initial'), got {entry!r}"
            )
        unknown = set(entry) - {"name", "domain", "kwargs", "initial"}
        if unknown:
            raise ValueError(f"asafe.optimizations[{i}] has unknown keys {sorted(unknown)}; "
                             "allowed: name, domain, kwargs, initial")
        factory = import_by_path(entry["domain"])
        domain = factory(**(entry.get("kwargs") or {}))
        built.append(Optimization(entry["name"], domain, initial=_boolean(entry.get("initial", False))))
    return built


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


def _boolean(value: Any) -> bool:
    if isinstance(value, str):  # environment variables arrive as strings
        lowered = value.strip().lower()
        if lowered in {"true", "1", "yes", "on"}:
            return True
        if lowered in {"false", "0", "no", "off"}:
            return False
        raise ValueError(f"expected a boolean, got {value!r}")
    return bool(value)
