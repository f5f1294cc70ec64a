"""asafe on a Dask cluster: :func:`install`, :func:`attach` and the :class:`RuntimeHandle`.

``handle = asafe.install(client, runtime)`` checks that the scheduler and every
worker can import asafe, registers the scheduler plugin and then the worker
plugin through ``client.register_plugin`` (see the Architecture page, "The cluster plugins", for what they
do: scheduler events to the mode tracker, transfers in uncompressed-equivalent
bytes, states pushed to workers), and returns a :class:`RuntimeHandle`. The
runtime travels to the scheduler (pickled: settings, optimizations, states,
history) and lives there; the handle reads it from the scheduler, so
``runtime.state(...)`` in the client process no longer changes, while
``handle.state(...)`` does.

Installing is idempotent: installing the same runtime again returns a handle to
the running installation; installing another runtime replaces the installation
(one asafe per cluster), so every event is counted once. A cluster started with
``--preload asafe.preload`` is already running asafe: :func:`attach` returns a
handle to it.

>>> handle = asafe.install(client, runtime)          # doctest: +SKIP
>>> client.gather(client.map(work, range(100)))      # doctest: +SKIP
>>> handle.state("compression"), handle.mode         # doctest: +SKIP
(True, ModeVector({'communication': 0.8, 'compute': 0.2}, ratio=0.25))
>>> [t.as_dict() for t in handle.history]            # doctest: +SKIP
>>> handle.uninstall()                               # doctest: +SKIP
"""
from __future__ import annotations

import importlib.util
import weakref
from typing import TYPE_CHECKING, Any

import dask.config
from dask.utils import parse_timedelta

from ..core.mode import ModeVector
from ..core.runtime import AdaptiveRuntime, DomainError, Transition

if TYPE_CHECKING:
    from ..core.explain import Explanation

# the plugin modules import distributed; it is imported where a cluster is used, so
# that ``import asafe`` stays light for Dask's local schedulers.
NAME = "asafe"

__all__ = ["install", "attach", "RuntimeHandle"]

# runtime -> the token of its installation, so that installing it twice is a no-op
_TOKENS: weakref.WeakKeyDictionary[AdaptiveRuntime, str] = weakref.WeakKeyDictionary()


def install(
    client: Any,
    runtime: AdaptiveRuntime | None = None,
    *,
    timeout: float | str | None = None,
    transfer_correction: bool | None = None,
    expected_transfers: bool | None = None,
    next_wave: bool | None = None,
) -> "RuntimeHandle":
    """Run ``runtime`` on the cluster behind ``client``.

    Parameters
    ----------
    client : distributed.Client
        A synchronous client.
    runtime : AdaptiveRuntime, optional
        Default: a runtime built from configuration (``asafe.optimizations``).
    timeout : float or str, optional
        How long the check that every worker can import asafe may take. Default
        ``asafe.distributed.timeout``.
    transfer_correction, expected_transfers, next_wave : bool, optional
        See :class:`asafe.schedulers.scheduler_plugin.AdaptiveSchedulerPlugin`; defaults from
        ``asafe.distributed.*`` (configuration keys).

    Returns
    -------
    RuntimeHandle
        ``.mode``, ``.state(name)``, ``.states``, ``.history``, ``.timeline``,
        ``.errors``, served from the scheduler, and ``.uninstall()``.

    Raises
    ------
    RuntimeError
        The scheduler or some workers cannot import asafe (they are named), or
        they did not answer within ``timeout``.
    """
    if runtime is None:
        runtime = AdaptiveRuntime()
    if not isinstance(runtime, AdaptiveRuntime):
        raise TypeError(f"install() needs an asafe.AdaptiveRuntime, got {type(runtime).__name__}")
    if not callable(getattr(client, "register_plugin", None)):
        raise TypeError(f"install() needs a distributed.Client, got {type(client).__name__}")
    seconds = _timeout(timeout)
    from . import stealing, threads, wire

    wire.enable()  # refuses bad asafe.wire settings; this client decompresses what it gathers
    wire.advertise(client)
    _check_wire_states(runtime)
    threads.check_runtime(runtime)  # kernel-threads: thread counts from 1 to the cores
    stealing.check_runtime(runtime)  # work-stealing: a bool, and its name spelt right
    _check_cluster(client, seconds)
    token = _TOKENS.get(runtime)
    installed = client.run_on_scheduler(_installed_token)
    if token is not None and installed == token:
        return RuntimeHandle(client, token)  # already running this runtime: count nothing twice
    if installed is not None:  # another installation: replace it
        client.sync(client.scheduler.asafe_uninstall, callback_timeout=seconds)
    from .scheduler_plugin import AdaptiveSchedulerPlugin
    from .worker_plugin import AdaptiveWorkerPlugin

    token = _TOKENS[runtime] = _new_token()
    client.register_plugin(
        AdaptiveSchedulerPlugin(
            runtime, token=token, transfer_correction=transfer_correction, expected_transfers=expected_transfers,
            next_wave=next_wave,
        )
    )
    client.register_plugin(AdaptiveWorkerPlugin(token=token))
    return RuntimeHandle(client, token)


def attach(client: Any) -> "RuntimeHandle":
    """A handle to the asafe already running on a cluster (``--preload asafe.preload``).

    Raises
    ------
    RuntimeError
        asafe is not installed on that cluster's scheduler.
    """
    from . import wire

    wire.enable()  # this client decompresses what it gathers
    wire.advertise(client)
    token = client.run_on_scheduler(_installed_token)
    if token is None:
        raise RuntimeError(
            "asafe is not installed on this cluster: start the scheduler with "
            "`--preload asafe.preload` or call asafe.install(client, runtime)"
        )
    return RuntimeHandle(client, token)


class RuntimeHandle:
    """The read API of an :class:`~asafe.AdaptiveRuntime` that runs on a scheduler.

    Every read is one round trip to the scheduler. Use a synchronous client.
    """

    def __init__(self, client: Any, token: str) -> None:
        self.client = client
        self.token = token

    # raw access ---------------------------------------------------------------------
    def info(self, *what: str) -> dict[str, Any]:
        """Plain data from the scheduler: ``states``, ``mode``, ``history``, ``timeline``,
        ``errors``, ``explain``, ``tracker``, ``plugin``, ``fallbacks``, ``hosts`` (any of them)."""
        reply = self.client.sync(
            self.client.scheduler.asafe_info, what=list(what or ("states", "mode")),
            callback_timeout=_timeout(None),
        )
        if not reply or reply.get("token") != self.token:
            raise RuntimeError(
                "this asafe installation is no longer on the cluster (uninstalled, replaced, or the "
                "scheduler restarted)"
            )
        return reply

    # the runtime's read API -------------------------------------------------------------
    @property
    def mode(self) -> ModeVector:
        """The mode vector of the scheduler's latest evaluation."""
        return _mode(self.info("mode")["mode"])

    @property
    def states(self) -> dict[str, Any]:
        """Every optimization's state."""
        return dict(self.info("states")["states"])

    def state(self, name: str) -> Any:
        """One optimization's state (KeyError listing the known names)."""
        states = self.states
        try:
            return states[name]
        except KeyError:
            raise KeyError(f"unknown optimization {name!r}; known: {sorted(states)}") from None

    @property
    def history(self) -> list[Transition]:
        """Every transition, oldest first."""
        return [
            Transition(t, name, old, new, _mode([shares, signals]))
            for t, name, old, new, shares, signals in self.info("history")["history"]
        ]

    @property
    def timeline(self) -> list[tuple[float, ModeVector]]:
        """``(time, mode)`` at each evaluation, oldest first (``time.time()`` seconds)."""
        return [(t, _mode([shares, signals])) for t, shares, signals in self.info("timeline")["timeline"]]

    @property
    def errors(self) -> list[DomainError]:
        """Domains that raised (the optimization kept its state)."""
        return [DomainError(*e) for e in self.info("errors")["errors"]]

    def explain(self, name: str) -> "Explanation":
        """Why optimization ``name`` is in its state, on the scheduler's latest mode.

        The same data as :meth:`asafe.AdaptiveRuntime.explain` (plain data;
        ``str()`` gives one line per part of the domain).
        """
        from ..core.explain import Explanation

        explained = self.info("explain")["explain"]
        try:
            return Explanation(explained[name])
        except KeyError:
            raise KeyError(f"unknown optimization {name!r}; known: {sorted(explained)}") from None

    @property
    def plugin_errors(self) -> list:
        """Plugin hooks that raised on the scheduler (scheduling went on), as
        :class:`asafe.schedulers.protocol.PluginError`."""
        from .protocol import PluginError

        return [PluginError(*e) for e in self.info("plugin")["plugin"]["errors"]]

    @property
    def fallbacks(self) -> dict[str, int]:
        """Where the plugins took a less exact path because a distributed internal was missing.

        ``{internal: count}``, summed over the scheduler plugin and every worker
        plugin (a worker that does not answer is left out); each was also logged
        once as a warning. Empty on a tested version of distributed.
        """
        counts = dict(self.info("fallbacks")["fallbacks"])
        try:
            per_worker = self.client.run(_worker_fallbacks, on_error="return", callback_timeout=_timeout(None))
        except Exception:  # workers unreachable: the scheduler's counts alone
            per_worker = {}
        for found in per_worker.values():
            if isinstance(found, dict):
                for name, count in found.items():
                    counts[name] = counts.get(name, 0) + count
        return counts

    @property
    def rejected(self) -> dict[str, int]:
        """Events the scheduler's mode tracker ignored for a bad value (see :class:`asafe.ModeTracker`)."""
        return dict(self.info("tracker")["tracker"]["rejected"])

    @property
    def finished(self) -> int:
        """Finished tasks and measured transfers counted by the scheduler's tracker."""
        return int(self.info("tracker")["tracker"]["finished"])

    # control -----------------------------------------------------------------------------
    def set_state(self, name: str, state: Any) -> None:
        """Force a state on the scheduler (recorded as a transition and pushed to workers)."""
        from ..core.states import check_state

        self.states  # raises if uninstalled
        state = check_state(state, f"the state of {name!r}")
        reply = self.client.sync(self.client.scheduler.asafe_set_state, name=name, state=state)
        if reply is None:
            raise RuntimeError("asafe is not installed on this cluster")

    def uninstall(self) -> None:
        """Remove both plugins; on every worker :func:`asafe.is_on` answers ``False`` again."""
        if self.client.run_on_scheduler(_installed_token) == self.token:
            self.client.sync(self.client.scheduler.asafe_uninstall, callback_timeout=_timeout(None))
        from .observe import WIRE_COUNTERS

        for name in (NAME, WIRE_COUNTERS):
            try:
                self.client.unregister_worker_plugin(name)
            except Exception:  # not registered (already uninstalled)
                pass

    @property
    def installed(self) -> bool:
        """Whether this installation still runs on the scheduler."""
        return self.client.run_on_scheduler(_installed_token) == self.token

    def plot(self, ax: Any = None) -> Any:
        """Draw the timeline: share of each task type, and transitions as vertical lines.

        Needs matplotlib. Returns the axes.
        """
        import matplotlib.pyplot as plt

        data = self.info("timeline", "history")
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 3))
        timeline = data["timeline"]
        t0 = timeline[0][0] if timeline else 0.0
        names = sorted({name for _, shares, _ in timeline for name in shares})
        times = [t - t0 for t, _, _ in timeline]
        for name in names:
            ax.plot(times, [shares.get(name, 0.0) for _, shares, _ in timeline], drawstyle="steps-post", label=name)
        for t, name, old, new, _, _ in data["history"]:
            ax.axvline(t - t0, linestyle="--", color="tab:green" if new else "tab:red", alpha=0.7)
            ax.annotate(f"{name} {'on' if new else 'off'}", (t - t0, 1.0), rotation=90, fontsize=7, va="top")
        ax.set_xlabel("seconds")
        ax.set_ylabel("share of work")
        ax.set_ylim(0, 1.05)
        ax.legend(loc="upper right", fontsize=7)
        return ax

    def __repr__(self) -> str:
        try:
            states = self.states
        except Exception:
            return f"<RuntimeHandle {self.token[:8]} (not installed)>"
        return f"<RuntimeHandle {self.token[:8]} {states}>"


def _mode(data: list) -> ModeVector:
    shares, signals = data
    return ModeVector(shares, **signals)


def _worker_fallbacks(dask_worker: Any = None) -> dict[str, int]:
    """The fallback counts of the asafe worker plugin on this worker (run there)."""
    plugin = dask_worker.plugins.get(NAME)
    return dict(getattr(plugin, "fallbacks", None) or {})


def _installed_token(dask_scheduler: Any = None) -> str | None:
    """The token of the asafe plugin on this scheduler (run there), or None."""
    from .scheduler_plugin import AdaptiveSchedulerPlugin

    plugin = dask_scheduler.plugins.get(NAME)
    return getattr(plugin, "token", None) if isinstance(plugin, AdaptiveSchedulerPlugin) else None


def _check_wire_states(runtime: AdaptiveRuntime) -> None:
    """Refuse a wire-compression domain that can ask for a state the mechanism does not know."""
    from ..core.domains import possible_states
    from . import wire

    opt = runtime.optimizations.get(wire.NAME)
    if opt is None:
        return
    states = possible_states(opt.domain)
    wire.check_states([opt.initial, *(states or ())])


def _check_cluster(client: Any, timeout: float) -> None:
    """Raise a clear error unless the scheduler and every worker can import asafe."""
    try:
        # importlib.util.find_spec pickles by reference to the standard library, so
        # the probe itself runs where asafe is missing
        specs = client.run(importlib.util.find_spec, "asafe", on_error="return", callback_timeout=timeout)
        scheduler_spec = client.run_on_scheduler(importlib.util.find_spec, "asafe", callback_timeout=timeout)
    except TimeoutError:
        raise RuntimeError(
            f"asafe.install: the cluster did not answer within {timeout:g}s when asked whether its "
            "workers can import asafe; nothing was installed"
        ) from None
    if scheduler_spec is None:
        raise RuntimeError("asafe.install: the scheduler cannot import asafe; install asafe in its environment")
    missing = sorted(address for address, spec in specs.items() if spec is None or isinstance(spec, BaseException))
    if missing:
        raise RuntimeError(
            f"asafe.install: {len(missing)} of {len(specs)} workers cannot import asafe: {missing}. "
            "Install asafe in the workers' environment (or start them with --preload asafe.preload "
            "where it is installed); nothing was installed"
        )


def _timeout(value: float | str | None) -> float:
    if value is None:
        value = dask.config.get("asafe.distributed.timeout", "30s")
    seconds = parse_timedelta(value, default="seconds")
    if seconds is None or seconds <= 0:
        raise ValueError(f"timeout must be a positive duration such as '10s', got {value!r}")
    return float(seconds)


def _new_token() -> str:
    import uuid

    return uuid.uuid4().hex
