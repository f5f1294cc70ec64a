"""Configuration through :mod:`dask.config`.

The defaults live in ``asafe.yaml`` at the package root, under the ``asafe``
key, with a comment on every key. They are registered with ``dask.config`` on
import, so ``~/.config/dask/*.yaml`` files and environment variables such as
``DASK_ASAFE__CONTROLLER__DWELL=1s`` override them as they override Dask's own.

Every read goes through :func:`get`, which falls back to the shipped default
when ``dask.config`` has lost it: code that resets Dask's configuration to a
snapshot taken before ``import asafe`` (``distributed.utils_test.reset_config``,
``dask.config.config = saved``) removes the registered defaults, and asafe must
go on working with them rather than fail with ``KeyError: 'asafe'``. Values are
checked by :mod:`asafe.core.validate`, whose errors name the key and its
environment variable. :func:`unknown_keys` lists keys under ``asafe`` that no
default declares (a typo such as ``asafe.controler.dwell``), which
:func:`settings` warns about once per key.

Optimizations are configured as distributed's active memory manager configures
its policies: a list of ``{name, domain: dotted.path, kwargs, initial}``
entries, which :func:`asafe.core.runtime.load_optimizations` builds. This module
imports nothing of asafe but :mod:`asafe.core.validate`, so every room may import it.
"""
from __future__ import annotations

import difflib
import importlib
import json
import logging
import os
from typing import Any

import dask.config
import yaml

from . import validate

__all__ = ["DEFAULTS", "get", "settings", "optimization_entries", "unknown_keys", "import_by_path"]

logger = logging.getLogger("asafe")

# asafe.yaml sits at the package root: the one settings file of every room
_DEFAULTS_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "asafe.yaml")

with open(_DEFAULTS_FILE, encoding="utf-8") as _f:
    #: The shipped defaults, ``{"asafe": {...}}`` as in ``asafe.yaml``.
    DEFAULTS: dict = yaml.safe_load(_f)

dask.config.update_defaults(DEFAULTS)

_MISSING = object()
_warned_unknown: set[str] = set()


def _default(key: str) -> Any:
    node: Any = DEFAULTS
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def get(key: str) -> Any:
    """The value of ``key`` (``"asafe.tracker.window"``) in ``dask.config``, else the shipped default.

    Examples
    --------
    >>> get("asafe.tracker.window")
    256
    >>> saved = dask.config.config.pop("asafe")  # a reset to a snapshot taken before import asafe
    >>> get("asafe.controller.dwell")
    '250ms'
    >>> dask.config.config["asafe"] = saved
    """
    value = dask.config.get(key, default=_MISSING)
    if value is _MISSING or value is None:
        value = _default(key)
        if value is _MISSING:
            raise KeyError(f"{key} is not an asafe setting; see asafe/asafe.yaml for the keys")
    return value


def settings() -> dict[str, Any]:
    """The runtime settings from ``dask.config``, parsed and validated.

    Examples
    --------
    >>> with dask.config.set({"asafe.controller.dwell": "2s"}):
    ...     settings()["dwell"]
    2.0
    """
    _warn_unknown_keys()
    return {
        "default_type": get("asafe.default-type"),
        "window": validate.integer(get("asafe.tracker.window"), "asafe.tracker.window", minimum=1),
        "blend": validate.number(get("asafe.tracker.blend"), "asafe.tracker.blend", minimum=0, maximum=1),
        "default_duration": validate.duration(get("asafe.tracker.default-duration"),
                                              "asafe.tracker.default-duration", minimum=1e-9),
        "max_groups": validate.integer(get("asafe.tracker.max-groups"), "asafe.tracker.max-groups", minimum=1),
        "interval": validate.duration(get("asafe.controller.interval"), "asafe.controller.interval"),
        "dwell": validate.duration(get("asafe.controller.dwell"), "asafe.controller.dwell"),
        "dwell_tasks": validate.integer(get("asafe.controller.dwell-tasks"), "asafe.controller.dwell-tasks",
                                        minimum=0),
        "arrivals_skip_dwell": validate.boolean(get("asafe.controller.arrivals-skip-dwell"),
                                                "asafe.controller.arrivals-skip-dwell"),
        "history_size": validate.integer(get("asafe.controller.history-size"), "asafe.controller.history-size",
                                         minimum=1),
        "signals": validate.boolean(get("asafe.signals.enabled"), "asafe.signals.enabled"),
        "signals_interval": validate.duration(get("asafe.signals.interval"), "asafe.signals.interval"),
    }


def optimization_entries() -> list:
    """``asafe.optimizations`` as a list of entries; a JSON or YAML string (an environment variable) is parsed.

    Examples
    --------
    >>> with dask.config.set({"asafe.optimizations": '[{"name": "c", "domain": "asafe.Hysteresis"}]'}):
    ...     optimization_entries()
    [{'name': 'c', 'domain': 'asafe.Hysteresis'}]
    """
    value = get("asafe.optimizations")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            try:
                value = yaml.safe_load(value)
            except yaml.YAMLError:
                pass
    if not isinstance(value, list):
        raise validate.InvalidSetting(
            f"asafe.optimizations must be a list of {{name, domain, kwargs, initial}} entries (YAML, or JSON in "
            f"the environment variable {validate.env_var('asafe.optimizations')}), got {value!r}"
        )
    return value


def unknown_keys() -> list[str]:
    """Keys set under ``asafe`` that no shipped default declares, as dotted paths.

    The entries of ``asafe.optimizations`` are free-form (each names its own
    domain's arguments) and are not looked into.

    Examples
    --------
    >>> with dask.config.set({"asafe.controler.dwell": "1s"}):
    ...     unknown_keys()
    ['asafe.controler']
    """
    found: list[str] = []
    _walk(dask.config.get("asafe", default={}), DEFAULTS["asafe"], "asafe", found)
    return found


def _walk(node: Any, declared: Any, path: str, found: list[str]) -> None:
    if not isinstance(node, dict) or not isinstance(declared, dict):
        return
    for key, value in node.items():
        # dask.config normalizes "_" and "-" alike in lookups; compare the same way
        name = str(key).replace("_", "-")
        if name not in declared:
            found.append(f"{path}.{key}")
        elif name != "optimizations":
            _walk(value, declared[name], f"{path}.{name}", found)


def _warn_unknown_keys() -> None:
    for key in unknown_keys():
        if key in _warned_unknown:
            continue
        _warned_unknown.add(key)
        parent, _, last = key.rpartition(".")
        declared = _default(parent)
        near = difflib.get_close_matches(last.replace("_", "-"), list(declared) if isinstance(declared, dict) else [],
                                         n=1)
        hint = f" (did you mean {parent}.{near[0]}?)" if near else ""
        logger.warning("asafe: the setting %s (environment variable %s) is not one of asafe's and is ignored%s",
                       key, validate.env_var(key), hint)


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
