"""``work-stealing``: distributed's work stealing, paused while communication dominates.

Dask's scheduler moves queued tasks from busy workers to idle ones
(``distributed.stealing.WorkStealing``, on by default). That pays when tasks
compute for long and uneven times on small inputs; in a transfer-bound phase
a stolen task drags its inputs across the link again, and a misestimated
duration makes the scheduler steal tasks that would have finished where their
data was (dask/distributed#6993). The optimization ``work-stealing``
(opt-in; the Work stealing guide has the YAML) is a bool, ``True`` (Dask's
default) while compute dominates and ``False`` while communication does:

* its domain (:func:`domain`) is a hysteresis on the mode's compute /
  communication ``ratio``: off below 0.5 (transfers at least twice the
  compute, where ``compression`` switches on), on again above 1.5, unchanged
  in between. It is an :class:`asafe.Bands` with one edge and a margin, since
  :class:`asafe.Hysteresis` switches *on* below its band and this must switch
  *off* there;
* on the scheduler (:func:`attach`, called by the scheduler plugin's
  ``start``), a change of state calls the stealing extension's public
  ``stop()`` / ``start()`` (both idempotent). Whether stealing ran before
  asafe was installed is recorded and restored when the plugin detaches
  (uninstall, replacement, the scheduler closing). A scheduler whose
  stealing was off (``distributed.scheduler.work-stealing: False``, or
  stopped by hand) keeps it off: asafe pauses stealing, it never enables it;
* a scheduler without the extension (the configuration above removes it)
  counts the fallback ``"work-stealing"`` and nothing is done.

A state that is not a bool, or an optimization named like this one but
misspelt, is refused when the runtime is installed (:func:`check_runtime`).
"""
from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from ..core import validate
from ..core.domains import Bands

__all__ = ["NAME", "attach", "check_runtime", "check_states", "domain", "running"]

logger = logging.getLogger("asafe")

#: The optimization's name.
NAME = "work-stealing"
#: The stealing extension's name in ``scheduler.extensions`` and ``scheduler.periodic_callbacks``.
EXTENSION = "stealing"

# scheduler -> whether stealing ran before asafe, while a restore is in flight (a replacing installation
# reads it instead of the state the previous one left)
_restoring: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()


# the domain --------------------------------------------------------------------------------------------


def domain(off_below: float = 0.5, on_above: float = 1.5) -> Bands:
    """Stealing off while compute / communication < ``off_below``, on again above ``on_above``.

    The band between keeps the state. Without it, a phase that mixes
    transfers and compute (ratio near 1) would stop and start the stealing
    loop at each evaluation, and each restart re-balances at once, moving
    tasks (and their data) that the pause was meant to keep; the controller's
    dwell (250 ms and 16 finished tasks) bounds how often it can switch even
    where the ratio jumps across the whole band.

    Examples
    --------
    >>> domain()
    Bands('ratio', edges=[1.0], states=[False, True], margin=0.5)
    >>> from asafe import ModeVector
    >>> d = domain()
    >>> d.decide(ModeVector({"compute": 1, "communication": 4}), True)   # ratio 0.25
    False
    >>> d.decide(ModeVector({"compute": 1, "communication": 1}), False)  # in the band: kept
    False
    >>> d.decide(ModeVector({"compute": 4, "communication": 1}), False)  # ratio 4
    True
    >>> domain(2.0, 1.0)
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: work-stealing needs 0 < off_below <= on_above, got 2.0 and 1.0
    """
    low = validate.number(off_below, "off_below", minimum=0)
    high = validate.number(on_above, "on_above", minimum=0)
    if not 0 < low <= high:
        raise validate.InvalidSetting(f"{NAME} needs 0 < off_below <= on_above, got {low} and {high}")
    edge = (low + high) / 2
    return Bands("ratio", edges=[edge], states=[False, True], margin=(high - edge) / edge)


# the states and name, checked at install ---------------------------------------------------------------


def check_states(states: Iterable[Any], where: str = NAME) -> None:
    """Refuse a ``work-stealing`` state that is not a bool.

    Examples
    --------
    >>> check_states([True, False])
    >>> check_states([1], "the initial state of 'work-stealing'")
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: the initial state of 'work-stealing': the state 1 is not allowed; allowed: True (stealing on, Dask's default) or False (off)
    """
    for state in states:
        if not isinstance(state, bool):
            raise validate.InvalidSetting(f"{where}: the state {state!r} is not allowed; allowed: True (stealing "
                                          f"on, Dask's default) or False (off)")


def _misspelt(name: str) -> bool:
    """Whether ``name`` means this optimization but is not spelt ``work-stealing``.

    >>> [_misspelt(n) for n in ("work-stealing", "work_stealing", "stealing", "compression")]
    [False, True, True, False]
    """
    return name != NAME and "steal" in name.lower()


def check_runtime(runtime: Any) -> None:
    """Refuse a runtime whose ``work-stealing`` can be, or ask for, a non-bool state, or whose name is misspelt.

    The initial state and every state its domain can ask for (where its kind
    says, :func:`asafe.core.domains.possible_states`) are checked.
    """
    from ..core.domains import possible_states

    for name in runtime.optimizations:
        if isinstance(name, str) and _misspelt(name):
            raise validate.InvalidSetting(f"unknown optimization {name!r}: the scheduling policy is named {NAME!r} "
                                          f"(states True or False)")
    opt = runtime.optimizations.get(NAME)
    if opt is None:
        return
    check_states([opt.initial], f"the initial state of {NAME!r}")
    check_states(sorted(possible_states(opt.domain) or (), key=repr), f"the states of the domain of {NAME!r}")


# on the scheduler ---------------------------------------------------------------------------------------


def running(scheduler: Any) -> bool:
    """Whether the scheduler's stealing loop runs (its periodic callback is registered)."""
    return EXTENSION in getattr(scheduler, "periodic_callbacks", {})


def _spawn(coro: Any) -> None:
    try:
        asyncio.get_running_loop().create_task(coro)
    except RuntimeError:  # not on the scheduler's loop (tests that drive the plugin by hand)
        asyncio.run(coro)


class _Switch:
    """Applies ``work-stealing`` to one scheduler; restores the original on detach."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin
        self.scheduler = plugin.scheduler
        self.extension = self.scheduler.extensions.get(EXTENSION)
        restoring = _restoring.get(self.scheduler)
        self.original = restoring if restoring is not None else running(self.scheduler)
        self.applied: bool | None = None
        self.switches = 0

    def apply(self, state: Any) -> None:
        on = bool(state) and self.original  # never enable what the cluster had off
        if on == self.applied:
            return
        self.applied = on
        self.switches += 1
        _spawn(self.extension.start() if on else self.extension.stop())

    def on_states(self, states: dict[str, Any], transitions: list) -> None:
        if NAME in states:
            self.apply(states[NAME])

    def restore(self) -> None:
        if self.applied is None or self.applied == self.original:
            return
        scheduler, original = self.scheduler, self.original
        _restoring[scheduler] = original

        async def restore() -> None:
            try:
                await (self.extension.start() if original else self.extension.stop())
            finally:
                if _restoring.get(scheduler) is original:
                    del _restoring[scheduler]

        self.applied = None
        _spawn(restore())


def attach(plugin: Any) -> Callable[[], None]:
    """Apply ``work-stealing`` on ``plugin.scheduler`` from now on; returns the detach function (restores).

    Nothing is attached where the runtime has no ``work-stealing``; where the
    scheduler has no stealing extension the fallback ``"work-stealing"`` is
    counted. Never raises: a failure is logged and stealing is left as it is.
    """
    runtime = plugin.runtime
    if NAME not in runtime.optimizations:
        return lambda: None
    try:
        if plugin.scheduler.extensions.get(EXTENSION) is None:
            from .protocol import count_fallback

            count_fallback(plugin, NAME, "the scheduler has no work-stealing extension (distributed.scheduler."
                                         "work-stealing is False?); work-stealing changes nothing")
            return lambda: None
        switch = _Switch(plugin)
        plugin.stealing = switch
        unsubscribe = runtime.subscribe(switch.on_states)
        switch.apply(runtime.states.get(NAME, True))
    except Exception:
        logger.exception("asafe: work-stealing cannot be applied on this scheduler; stealing is left as it is")
        return lambda: None

    def detach() -> None:
        unsubscribe()
        try:
            switch.restore()
        except Exception:
            logger.exception("asafe: the scheduler's work stealing could not be restored")

    return detach
