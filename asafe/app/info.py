"""``asafe info [SCHEDULER_ADDRESS]``: asafe's settings, where each came from, and what a scheduler runs.

Without an address it reports this process's configuration; with one, the
scheduler's: its settings (read in the scheduler's own process, from its own
files and environment), whether asafe is installed there, the runtime's
settings, each optimization's state and why it is in it
(:meth:`asafe.AdaptiveRuntime.explain`), the workers that hold the states,
the bytes each compression saved, and the errors counted.

Where a setting came from follows ``dask.config``'s own order
(``dask.config.collect``): the default shipped in ``asafe.yaml``, then the
YAML files of ``dask.config.paths`` in their order
(``dask.config.collect_yaml``), then ``DASK_*`` environment variables
(``dask.config.collect_env``), each overriding the one before; a value that
none of them gives was set in the process itself (``dask.config.set``). Keys
under ``asafe`` that no default declares are flagged as likely typos
(:func:`asafe.core.config.unknown_keys`), with where they were set and the
nearest real key.

The CLI command (:mod:`asafe.app.cli`) prints :func:`render` of :func:`report`;
``--json`` prints the report itself. An address that does not answer, or a
scheduler without asafe, is an :class:`InfoError`: one line, non-zero exit.
"""
from __future__ import annotations

import difflib
import json
from typing import Any

import dask.config

from ..core import config as _config
from ..core.explain import onoff, text_lines
from ..core.validate import env_var

__all__ = ["InfoError", "settings_report", "scheduler_report", "report", "render"]


class InfoError(RuntimeError):
    """What ``asafe info`` could not do, in one line."""


def _leaves(node: Any, path: str, out: dict[str, Any]) -> dict[str, Any]:
    """``{dotted key: value}`` of a nested mapping; ``optimizations`` (a list) is one leaf."""
    if isinstance(node, dict) and path.rpartition(".")[2] != "optimizations":
        for key, value in node.items():
            _leaves(value, f"{path}.{str(key).replace('_', '-')}", out)
    else:
        out[path] = node
    return out


def _asafe_part(tree: Any) -> dict[str, Any]:
    """The ``asafe.*`` leaves of one source, keys normalized as ``dask.config`` looks them up."""
    if not isinstance(tree, dict):
        return {}
    found = {}
    for key, value in tree.items():
        if str(key).replace("_", "-") == "asafe":
            _leaves(value, "asafe", found)
    return found


def settings_report(env: dict[str, str] | None = None, paths: list[str] | None = None) -> dict[str, Any]:
    """Every asafe setting's effective value and its source; unknown keys under ``asafe``.

    Parameters
    ----------
    env : dict, optional
        The environment to read ``DASK_*`` variables from (default ``os.environ``).
    paths : list of str, optional
        The folders and files of YAML configuration (default ``dask.config.paths``).

    Examples
    --------
    >>> found = settings_report(env={"DASK_ASAFE__CONTROLLER__DWELL": "1s"}, paths=[])
    >>> [s for s in found["settings"] if s["key"] == "asafe.controller.dwell"][0]["source"]
    'environment variable DASK_ASAFE__CONTROLLER__DWELL'
    """
    defaults = _leaves(_config.DEFAULTS["asafe"], "asafe", {})
    live = env is None and paths is None  # this process's dask.config holds what these sources gave
    sources = {key: "default" for key in defaults}
    given: dict[str, Any] = dict(defaults)
    for path, tree in dask.config.collect_yaml(dask.config.paths if paths is None else paths, return_paths=True):
        for key, value in _asafe_part(tree).items():
            sources[key], given[key] = f"YAML file {path}", value
    for key, value in _asafe_part(dask.config.collect_env(env)).items():
        sources[key], given[key] = f"environment variable {env_var(key)}", value
    settings = []
    for key in defaults:
        value, source = given[key], sources[key]
        if live:
            value = _config.get(key)
            if value != given[key]:
                source = "set in this process (dask.config.set)"
        settings.append({"key": key, "value": _plain(value), "source": source})
    unknown: dict[str, str] = {}
    for key in sources:
        if key not in defaults:
            unknown.setdefault(_first_unknown(key), sources[key])
    if live:
        for key in _config.unknown_keys():
            unknown.setdefault(key.replace("_", "-"), "set in this process (dask.config.set)")
    found = []
    for key, source in unknown.items():
        parent, _, last = key.rpartition(".")
        siblings = sorted({k[len(parent) + 1:].split(".")[0] for k in defaults if k.startswith(parent + ".")})
        near = difflib.get_close_matches(last, siblings, n=1)
        found.append({"key": key, "environment_variable": env_var(key), "source": source,
                      "did_you_mean": f"{parent}.{near[0]}" if near else None})
    return {"settings": settings, "unknown": found}


def _first_unknown(key: str) -> str:
    """The shortest prefix of ``key`` that no default declares (``asafe.controler`` of ``asafe.controler.dwell``)."""
    node: Any = _config.DEFAULTS
    parts = key.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            return ".".join(parts[: i + 1])
        node = node[part]
    return key


def _plain(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def scheduler_report(dask_scheduler: Any = None) -> dict[str, Any]:
    """What ``asafe info ADDRESS`` shows, built on the scheduler (``client.run_on_scheduler``)."""
    from ..schedulers.observe import installed, savings

    out: dict[str, Any] = {"where": "scheduler", **settings_report()}
    plugin = installed(dask_scheduler)
    out["installed"] = plugin is not None
    if plugin is None:
        return out
    rt = plugin.runtime
    out["token"] = plugin.token
    out["runtime"] = {"window": rt.tracker.window, "blend": rt.tracker.blend, "dwell": rt.dwell,
                      "dwell_tasks": rt.dwell_tasks, "interval": rt.interval, "default_type": rt.default_type,
                      "arrivals_skip_dwell": rt.arrivals_skip_dwell, "signals": rt.system_signals is not None,
                      "transfer_correction": plugin.transfer_correction,
                      "expected_transfers": plugin.expected_transfers, "next_wave": plugin.next_wave}
    out["optimizations"] = {name: {"domain": repr(opt.domain), "initial": opt.initial}
                            for name, opt in rt.optimizations.items()}
    out["states"] = rt.states
    out["explain"] = {name: dict(rt.explain(name)) for name in rt.optimizations}
    out["transitions"] = rt.transition_counts
    out["workers"] = {"connected": len(dask_scheduler.workers), "holding_states": len(plugin.receivers)}
    out["saved"] = savings(dask_scheduler, plugin)
    out["errors"] = {"plugin_hooks": dict(plugin.error_counts), "domains": len(rt.errors),
                     "rejected_events": dict(rt.tracker.rejected), "fallbacks": dict(plugin.fallbacks)}
    from ..schedulers.dashboard import ROUTE

    server = getattr(dask_scheduler, "http_application", None)
    paths = [getattr(app, "app_paths", ()) for app in getattr(server, "applications", ())]
    out["dashboard"] = ROUTE if any(ROUTE in p for p in paths) else None
    return out


def report(address: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
    """This process's settings, or (``address``) the scheduler's report; :class:`InfoError` on bad input."""
    if address is None:
        return {"where": "this process", **settings_report()}
    from distributed import Client

    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except Exception as exc:
        raise InfoError(f"no Dask scheduler answered at {address} within {timeout:g}s "
                        f"({type(exc).__name__}: {exc})") from None
    try:
        data = client.run_on_scheduler(_remote_report)
    except Exception as exc:
        raise InfoError(f"the scheduler at {address} could not report ({type(exc).__name__}: {exc}); asafe info "
                        "runs a function there: is asafe installed in its environment, and "
                        "distributed.scheduler.pickle on?") from None
    finally:
        client.close()
    if not data.get("installed"):
        raise InfoError(f"asafe is not installed on the scheduler at {address}: start it with "
                        "`--preload asafe.preload` or call asafe.install(client)")
    data["address"] = address
    return data


def _remote_report(dask_scheduler: Any = None) -> dict[str, Any]:
    # imported on the scheduler; a scheduler without asafe fails the import (see report)
    from asafe.app.info import scheduler_report

    return scheduler_report(dask_scheduler)


def render(data: dict[str, Any]) -> str:
    """The report as text: settings and their sources, likely typos, then the scheduler's runtime.

    Examples
    --------
    >>> text = render({"where": "this process", **settings_report(env={}, paths=[])})
    >>> print(text.splitlines()[0])
    asafe settings (this process):
    >>> [line.split() for line in text.splitlines() if "tracker.window" in line]
    [['asafe.tracker.window', '=', '256', '(default)']]
    """
    where = data.get("address") or data.get("where", "this process")
    lines = [f"asafe settings ({'scheduler ' + where if data.get('address') else where}):"]
    width = max((len(s["key"]) for s in data["settings"] if s["key"] != "asafe.optimizations"), default=0)
    for setting in data["settings"]:
        if setting["key"] == "asafe.optimizations":
            lines.append(f"  asafe.optimizations: {len(setting['value'])} entries  ({setting['source']})"
                         if isinstance(setting["value"], list) else
                         f"  asafe.optimizations = {setting['value']!r}  ({setting['source']})")
            continue
        lines.append(f"  {setting['key'].ljust(width)} = {setting['value']}  ({setting['source']})")
    if data["unknown"]:
        lines.append("unknown keys under asafe (likely typos; asafe ignores them):")
        for entry in data["unknown"]:
            hint = f"; did you mean {entry['did_you_mean']}?" if entry["did_you_mean"] else ""
            lines.append(f"  {entry['key']} ({entry['source']}){hint}")
    else:
        lines.append("unknown keys under asafe: none")
    if not data.get("address"):
        return "\n".join(lines)
    rt = data["runtime"]
    lines.append(f"asafe installed on {data['address']} (installation {data['token'][:8]}):")
    lines.append(f"  runtime: window {rt['window']}, blend {rt['blend']:g}, dwell {rt['dwell']:g} s / "
                 f"{rt['dwell_tasks']} tasks, interval {rt['interval']:g} s, default type {rt['default_type']}, "
                 f"signals {'on' if rt['signals'] else 'off'}")
    workers = data["workers"]
    lines.append(f"  workers: {workers['connected']} connected, {workers['holding_states']} holding the states")
    lines.append(f"  dashboard page: {data['dashboard'] or 'none (no dashboard on this scheduler)'}")
    for name, state in data["states"].items():
        lines.append(f"  {name} = {onoff(state)}, {data['transitions'].get(name, 0)} transitions; "
                     f"{data['optimizations'][name]['domain']}")
    lines.append("why:")
    for name in data["states"]:
        lines.extend("  " + line for line in text_lines(data["explain"][name]))
    saved = data["saved"]
    lines.append(f"bytes saved on {saved['transfers']} transfers: compression {saved['by']['compression']}, "
                 f"wire-compression {saved['by']['wire-compression']} ({saved['logical_bytes']} uncompressed-"
                 f"equivalent, {saved['wire_bytes']} sent)")
    errors = data["errors"]
    lines.append(f"errors: plugin hooks {errors['plugin_hooks'] or 'none'}, domains {errors['domains']}, "
                 f"rejected events {errors['rejected_events'] or 'none'}, fallbacks {errors['fallbacks'] or 'none'}")
    return "\n".join(lines)
