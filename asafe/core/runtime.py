"""Optimizations and the adaptive runtime (the controller).

An :class:`Optimization` is a name, an efficiency domain and a state (on/off). The
:class:`AdaptiveRuntime` owns a :class:`~asafe.core.tracker.ModeTracker`; whenever it
is evaluated (throttled to once per ``interval`` on the event path) it builds the
mode vector, asks each optimization's domain for its next state, applies the
dwell rule, records every transition in :attr:`AdaptiveRuntime.history` and tells
its subscribers (the state board of the local schedulers, the scheduler plugin of
a cluster).

Scheduler integrations feed the tracker and call :meth:`AdaptiveRuntime.evaluate`;
they live in :mod:`asafe.schedulers.local` and :mod:`asafe.schedulers.distributed`.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from . import config as _config
from . import validate
from .domains import EfficiencyDomain
from .explain import Explanation, domain_metrics, explain_domain, json_number, unknown_metric_message, unknown_metrics
from .mode import ModeVector
from .signals import SystemSignals
from .states import check_state, same as _same
from .tracker import ModeTracker
from .types import declared_types, validate_type

__all__ = ["Optimization", "Transition", "DomainError", "AdaptiveRuntime", "load_optimizations"]

logger = logging.getLogger("asafe")


class Transition(NamedTuple):
    """One change of an optimization's state."""

    time: float  #: seconds since the epoch (``time.time()``)
    optimization: str
    old: Any  #: ``True``/``False``, or a value (a codec, a thread count)
    new: Any
    mode: ModeVector  #: the mode that caused it

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (``from``/``to`` and the ratio that caused it)."""
        return {
            "time": self.time,
            "optimization": self.optimization,
            "from": self.old,
            "to": self.new,
            "ratio": _json_float(self.mode.ratio),
            "mode": {k: _json_float(v) for k, v in self.mode.shares.items()},
        }


class DomainError(NamedTuple):
    """A domain that raised: logged, recorded, and the optimization kept its state."""

    time: float
    optimization: str
    error: str


class Optimization:
    """A named optimization switched by an efficiency domain.

    Its state is on/off (``True``/``False``) or a value: a codec name, a thread
    count -- whatever its domain returns (a bool, an int or a str). Library
    code reads it with :func:`asafe.is_on` (not off) or :func:`asafe.state`
    (the value).

    Parameters
    ----------
    name : str
        The name library code asks about with :func:`asafe.is_on`.
    domain : EfficiencyDomain or object with ``decide(mode, state)``
        The rule that decides the state.
    initial : bool, int or str
        State before the first decision.

    Examples
    --------
    >>> from asafe import Hysteresis
    >>> Optimization("compression", Hysteresis(0.5, 2.0))
    Optimization('compression', Hysteresis(alpha=0.5, beta=2.0, metric='ratio'), initial=False)
    """

    def __init__(self, name: str, domain: EfficiencyDomain, initial: Any = False) -> None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"an optimization name must be a non-empty str, got {name!r}")
        if not callable(getattr(domain, "decide", None)):
            raise TypeError(
                f"the domain of optimization {name!r} must have a decide(mode, state) method, "
                f"got {type(domain).__name__}"
            )
        initial = check_state(initial, f"initial state of {name!r}")
        self.name = name
        self.domain = domain
        self.initial = initial

    def __repr__(self) -> str:
        return f"Optimization({self.name!r}, {self.domain!r}, initial={self.initial})"


class AdaptiveRuntime:
    """The controller: mode tracking, domain decisions, dwell, history.

    Parameters
    ----------
    optimizations : iterable of Optimization, optional
        Default: those configured under ``asafe.optimizations``.
    window, blend, default_duration
        Mode tracker settings (see :class:`~asafe.core.tracker.ModeTracker`); defaults
        from ``asafe.core.tracker.*``.
    dwell : float
        Minimum seconds between two toggles of one optimization.
    dwell_tasks : int
        Minimum number of finished tasks between two toggles of one optimization.
    arrivals_skip_dwell : bool
        At a graph's arrival (``evaluate(arrival=True)``), a toggle that the
        scheduled view alone also makes is not held by the dwell (see
        :meth:`evaluate`); default ``asafe.controller.arrivals-skip-dwell``.
    interval : float
        Minimum seconds between two evaluations on the event path.
    default_type : str
        Type of tasks that carry none.
    signals : bool
        Attach cpu and memory load (psutil) to the mode vector.

    Examples
    --------
    >>> from asafe import Hysteresis, ModeVector
    >>> rt = AdaptiveRuntime([Optimization("compression", Hysteresis(0.5, 2.0))], dwell=0, signals=False)
    >>> rt.state("compression")
    False
    >>> [t.new for t in rt.evaluate(mode=ModeVector({"compute": 1, "communication": 9}))]
    [True]
    >>> rt.state("compression"), len(rt.history)
    (True, 1)
    >>> rt.state("tiling")
    Traceback (most recent call last):
    ...
    KeyError: "unknown optimization 'tiling'; known: ['compression']"
    """

    def __init__(
        self,
        optimizations: Iterable[Optimization] | None = None,
        *,
        window: int | None = None,
        blend: float | None = None,
        default_duration: float | None = None,
        dwell: float | None = None,
        dwell_tasks: int | None = None,
        arrivals_skip_dwell: bool | None = None,
        interval: float | None = None,
        default_type: str | None = None,
        signals: bool | None = None,
        history_size: int | None = None,
    ) -> None:
        settings = _config.settings()  # read once
        if optimizations is None:
            optimizations = load_optimizations()
        opts = list(optimizations)
        for opt in opts:
            if not isinstance(opt, Optimization):
                raise TypeError(f"optimizations must be asafe.Optimization objects, got {type(opt).__name__}")
        names = [opt.name for opt in opts]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"optimization names must be unique; repeated: {duplicates}")
        self.optimizations: dict[str, Optimization] = {opt.name: opt for opt in opts}
        self.tracker = ModeTracker(
            window=settings["window"] if window is None else window,
            blend=settings["blend"] if blend is None else blend,
            default_duration=settings["default_duration"] if default_duration is None else default_duration,
            max_groups=settings["max_groups"],
        )
        self.dwell = validate.number(settings["dwell"] if dwell is None else dwell, "dwell", minimum=0)
        self.dwell_tasks = validate.integer(settings["dwell_tasks"] if dwell_tasks is None else dwell_tasks,
                                            "dwell_tasks", minimum=0)
        skip = settings["arrivals_skip_dwell"] if arrivals_skip_dwell is None else arrivals_skip_dwell
        if not isinstance(skip, bool):
            raise validate.InvalidSetting(f"arrivals_skip_dwell must be True or False, got {skip!r}")
        self.arrivals_skip_dwell = skip
        self.interval = validate.number(settings["interval"] if interval is None else interval, "interval",
                                        minimum=0)
        self.default_type = validate_type(settings["default_type"] if default_type is None else default_type)
        use_signals = settings["signals"] if signals is None else signals
        self._signals = SystemSignals(settings["signals_interval"]) if use_signals else None
        self._signal_sources: dict[str, Callable[[], float]] = {}
        size = settings["history_size"] if history_size is None else history_size
        self._states = {opt.name: opt.initial for opt in opts}
        # per optimization, its last toggle: (time, finished tasks then, whether it came within the dwell's
        # seconds of the toggle before it: see _signals_make)
        self._last_toggle: dict[str, tuple[float, int, bool]] = {}
        self._history: deque[Transition] = deque(maxlen=size)
        self._transition_counts: dict[str, int] = {}  # every transition, also those history let go
        self._timeline: deque[tuple[float, ModeVector]] = deque(maxlen=size)
        self._errors: deque[DomainError] = deque(maxlen=size)
        self._subscribers: list[Callable[[dict[str, Any], list[Transition]], None]] = []
        self._mode = ModeVector()
        self._failing: set[str] = set()
        self._failing_sources: set[str] = set()
        self._unchecked = list(self.optimizations)  # metric names not yet checked (see _check_metrics)
        self._next_evaluation = 0.0
        self._lock = threading.RLock()

    # read API ----------------------------------------------------------------
    @property
    def mode(self) -> ModeVector:
        """The mode vector of the latest evaluation."""
        return self._mode

    def state(self, name: str) -> Any:
        """Current state of one optimization (KeyError listing the known names)."""
        try:
            return self._states[name]
        except KeyError:
            raise KeyError(f"unknown optimization {name!r}; known: {sorted(self._states)}") from None

    @property
    def states(self) -> dict[str, Any]:
        """A copy of every optimization's state."""
        return dict(self._states)

    @property
    def history(self) -> list[Transition]:
        """Every transition, oldest first (bounded by ``history_size``)."""
        return list(self._history)

    @property
    def transition_counts(self) -> dict[str, int]:
        """Transitions made per optimization since this runtime was built (not bounded as ``history`` is)."""
        return dict(self._transition_counts)

    @property
    def timeline(self) -> list[tuple[float, ModeVector]]:
        """``(time, mode)`` at each evaluation, oldest first (bounded)."""
        return list(self._timeline)

    @property
    def errors(self) -> list[DomainError]:
        """Domains that raised, oldest first."""
        return list(self._errors)

    # wiring ---------------------------------------------------------------------
    def subscribe(self, callback: Callable[[dict[str, Any], list[Transition]], None]) -> Callable[[], None]:
        """Call ``callback(states, transitions)`` after every evaluation that changed a state.

        Returns a function that unsubscribes. A failing subscriber is logged and
        never breaks the controller.
        """
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def add_signal(self, name: str, source: Callable[[], float]) -> Callable[[], None]:
        """Attach ``source()`` to every mode vector as the signal ``name``; returns a function that detaches it.

        A scheduler plugin attaches what only it knows (the distributed one:
        ``bandwidth``, the link's measured bytes per second). ``source`` is called
        at every evaluation and must be O(1); it returns ``nan`` for a value it
        does not know yet. A source that raises or returns a negative or infinite
        value reads ``nan`` in that mode too (logged once): no threshold crosses
        ``nan``, so a :class:`Hysteresis` on it keeps its state instead of acting
        on a wrong value.

        Examples
        --------
        >>> from asafe import Hysteresis
        >>> rt = AdaptiveRuntime([Optimization("c", Hysteresis(1e8, 2e8, metric="bandwidth"))], signals=False)
        >>> detach = rt.add_signal("bandwidth", lambda: 5e7)
        >>> rt.evaluate()[0].new, rt.mode.signals["bandwidth"]
        (True, 50000000.0)
        >>> detach()
        """
        if not isinstance(name, str) or not name or name == "ratio":
            raise ValueError(f"a signal needs a non-empty name other than 'ratio', got {name!r}")
        if not callable(source):
            raise TypeError(f"source must be callable, got {type(source).__name__}")
        self._signal_sources[name] = source

        def detach() -> None:
            if self._signal_sources.get(name) is source:
                del self._signal_sources[name]

        return detach

    @property
    def system_signals(self) -> SystemSignals | None:
        """The psutil signals of this runtime (None when ``signals=False``)."""
        return self._signals

    def _read_sources(self) -> dict[str, float]:
        values = {}
        for name, source in list(self._signal_sources.items()):
            try:
                value = float(source())
                if not (math.isnan(value) or (math.isfinite(value) and value >= 0)):
                    raise ValueError(f"{value!r} is not a finite non-negative number or nan")
            except Exception as exc:
                if name not in self._failing_sources:
                    logger.warning("asafe: the signal source %r failed (%s); it reads nan", name, exc)
                    self._failing_sources.add(name)
                values[name] = math.nan
                continue
            self._failing_sources.discard(name)
            values[name] = value
        return values

    def set_state(self, name: str, state: Any) -> None:
        """Force a state (recorded as a transition); used to restore or script runs."""
        self.state(name)
        state = check_state(state, f"the state of {name!r}")
        with self._lock:
            old = self._states[name]
            if _same(old, state):
                return
            transition = Transition(time.time(), name, old, state, self._mode)
            self._apply([transition])

    # control --------------------------------------------------------------------
    def maybe_evaluate(self) -> None:
        """Evaluate unless one ran less than ``interval`` seconds ago (event path)."""
        now = time.monotonic()
        if now >= self._next_evaluation:
            self._next_evaluation = now + self.interval
            self.evaluate()

    def evaluate(self, mode: ModeVector | None = None, now: float | None = None, *,
                 arrival: bool = False, predicted: ModeVector | None = None,
                 signals_changed: bool = False) -> list[Transition]:
        """Decide every optimization's state now; return the transitions made.

        Parameters
        ----------
        mode : ModeVector, optional
            Decide on this mode instead of the tracker's (scripted runs, tests).
        now : float, optional
            The time of the decision (default ``time.time()``); dwell is measured
            on it.
        arrival : bool
            A graph (or a batch of futures) has just been submitted: the
            scheduler integrations say so from ``update_graph`` and the local
            schedulers' ``start_state``. With ``arrivals_skip_dwell``, a toggle
            that the scheduled view alone (the prediction) also makes is not
            held by the dwell: it is made on tasks that have not run, not on
            measurements, so neither kind of flapping the dwell prevents can
            drive it.
        predicted : ModeVector, optional
            The scheduled view to check an arrival's toggle against instead of
            the tracker's (scripted runs, tests).
        signals_changed : bool
            Signals moved between two measurements of tasks: the distributed
            scheduler plugin says so when a worker's host report arrives
            (:class:`asafe.schedulers.hosts.HostWatch`). A toggle that the
            previous evaluation's shares with the new signals also make is not
            held by the dwell's finished tasks, nor by its seconds where the
            toggle before it waited for them (see ``_signals_make``).

        Examples
        --------
        A phase of local work turned compression off a moment ago; the next
        phase's graph arrives, its transfers planned (ratio 0.25):

        >>> from asafe import Hysteresis, ModeVector
        >>> rt = AdaptiveRuntime([Optimization("c", Hysteresis(1.0, 8.0))], dwell=0.2, dwell_tasks=0,
        ...                      arrivals_skip_dwell=True, signals=False)
        >>> shipped, local = ModeVector({"compute": 1, "communication": 4}), ModeVector({"compute": 1})
        >>> [t.new for t in rt.evaluate(mode=shipped, now=0.0)], [t.new for t in rt.evaluate(mode=local, now=1.0)]
        ([True], [False])
        >>> rt.evaluate(mode=shipped, now=1.05)  # measured: the dwell holds it
        []
        >>> [t.new for t in rt.evaluate(mode=shipped, now=1.05, arrival=True, predicted=shipped)]
        [True]
        """
        now = time.time() if now is None else now
        if mode is None:
            signals = dict(self._signals.read()) if self._signals is not None else {}
            signals.update(self._read_sources())
            mode = self.tracker.mode(**signals)
        with self._lock:
            previous, self._mode = self._mode, mode
            self._timeline.append((now, mode))
            if self._unchecked:
                self._check_metrics(mode)
            transitions = []
            for name, opt in self.optimizations.items():
                old = self._states[name]
                new = self._decide(opt, mode, old, now)
                if _same(new, old):
                    continue
                if self._dwell_allows(name, now) or (
                        arrival and self.arrivals_skip_dwell
                        and self._predicted_agrees(opt, old, new, predicted, mode, now)) or (
                        signals_changed and self._signals_make(opt, old, new, previous, mode, now)):
                    transitions.append(Transition(now, name, old, new, mode))
            if transitions:
                self._apply(transitions)
            return transitions

    # Dwell prevents flapping: without it, an optimization that changes its own
    # signal (compression shrinks transfers, the ratio rises past beta, compression
    # switches off, transfers grow, the ratio falls below alpha, on again ...) or a
    # ratio measured on a handful of noisy tasks near a threshold would toggle at
    # every evaluation, paying the switching cost each time. A toggle is allowed
    # only once ``dwell`` seconds and ``dwell_tasks`` finished tasks have passed
    # since the previous toggle of the same optimization (but for the two
    # exceptions below: an arrival's, and one that moved signals make).
    def _dwell_allows(self, name: str, now: float, count_tasks: bool = True) -> bool:
        last = self._last_toggle.get(name)
        if last is None:
            return True
        last_time, last_finished, _ = last
        return now - last_time >= self.dwell and (
            not count_tasks or self.tracker.finished - last_finished >= self.dwell_tasks)

    # An arrival's toggle skips the dwell only where the scheduled view alone
    # makes it too. The blend gives the measured window its weight even at an
    # arrival (all of it when the new graph is a task or two against a full
    # window), and a toggle driven by measurements is what the dwell is for;
    # the scheduled view counts tasks not yet run and transfers in
    # uncompressed-equivalent seconds, so it holds neither noise of a few
    # measurements nor the optimization's own effect. Two arrivals can still
    # toggle back and forth, but only as fast as the graphs submitted change
    # the scheduled work across the domain's whole band (a hysteresis).
    def _predicted_agrees(self, opt: Optimization, old: Any, new: Any, predicted: ModeVector | None,
                          mode: ModeVector, now: float) -> bool:
        if predicted is None:  # the tracker's scheduled view, with the signals this evaluation read
            predicted = self.tracker.scheduled_mode(**mode.signals)
            if predicted is None:  # nothing scheduled: no prediction to agree
                return False
        return _same(self._decide(opt, predicted, old, now), new)  # a domain that raises keeps the state: held

    # A toggle that moved signals alone make is held neither by the dwell's
    # finished tasks nor, once, by its seconds. The task count keeps a few
    # noisy task measurements, and an optimization's effect on its own ratio,
    # from flapping a state; a host's load is no measurement of tasks, the
    # run's own work is left out of it (external_cpu), and a worker reports it
    # only when it moved by a tenth of the host's cpus. Without this a loaded
    # host waited, after it was seen, for 16 tasks to finish since compression
    # came on (0.5-0.7 s on three hosts, docs/results/hosts-s35), then for the
    # 250 ms since the arrival had turned it on (docs/results/hosts-s36). The
    # seconds hold against the signals' own jitter: a report's toggle skips
    # them only where the toggle before it did not skip them (an arrival's or
    # a report's), so two toggles can come within one dwell but never a third:
    # a load that flickers across the domain's band flaps the state at most
    # once a dwell, as the dwell alone would let it every other dwell. The
    # toggle must follow from the signals: the previous evaluation's shares
    # with the new signals make it too, so a report cannot carry a toggle that
    # the shares' measurements drive past the dwell.
    def _signals_make(self, opt: Optimization, old: Any, new: Any, previous: ModeVector | None,
                      mode: ModeVector, now: float) -> bool:
        if previous is None or self._skipped_seconds(opt.name, now):
            return False
        return _same(self._decide(opt, previous.replace(**mode.signals), old, now), new)

    def _skipped_seconds(self, name: str, now: float) -> bool:
        # the last toggle came within the dwell's seconds of the one before, and those seconds
        # have not passed since: a report's toggle may not skip them again (_signals_make)
        last = self._last_toggle.get(name)
        return last is not None and last[2] and not self._dwell_allows(name, now, count_tasks=False)

    def _check_metrics(self, mode: ModeVector) -> None:
        # Once per optimization, at its first evaluation: a metric that is no
        # signal and no known task type reads as a share of 0, and a typo
        # ("ratoi") would act on that 0 without a word (asafe.core.explain).
        unchecked, self._unchecked = self._unchecked, []
        try:
            types = {*self.tracker.seen_types(), *declared_types(), self.default_type}
            for name in unchecked:
                for metric in unknown_metrics(domain_metrics(self.optimizations[name].domain), mode, types):
                    logger.warning(unknown_metric_message(name, metric, mode, types))
        except Exception:  # a check must never stop an evaluation
            logger.exception("asafe: checking the metrics the domains read failed; the run goes on")

    def explain(self, name: str) -> Explanation:
        """Why optimization ``name`` is in its state, on the latest evaluation's mode.

        For each part of its domain: the metric it read, the value, the
        thresholds and what it asks for; and, where the state differs from
        what the domain asks, what holds it (the dwell). Plain data (a dict
        that ``json.dumps`` takes; ``str()`` gives one line per part). See
        :class:`asafe.core.explain.Explanation`.

        Examples
        --------
        >>> from asafe import AllOf, Hysteresis, ModeVector
        >>> wire = AllOf([Hysteresis(0.5, 2.0), Hysteresis(0.5, 0.8, metric="external_cpu")])
        >>> rt = AdaptiveRuntime([Optimization("wire", wire)], dwell=0, signals=False)
        >>> _ = rt.evaluate(mode=ModeVector({"compute": 1, "communication": 4}, external_cpu=0.9))
        >>> print(rt.explain("wire"))
        wire: off; its domain asks off
          AllOf: on while every part asks on; asks off
            Hysteresis: ratio = 0.25 (compute/communication), alpha 0.5, beta 2: below alpha; asks on
            Hysteresis: external_cpu = 0.9, alpha 0.5, beta 0.8: above beta; asks off
        >>> rt.explain("wire")["domain"]["parts"][1]["value"]
        0.9
        """
        self.state(name)  # KeyError naming the known ones
        with self._lock:
            opt = self.optimizations[name]
            state = self._states[name]
            mode = self._mode
            when = self._timeline[-1][0] if self._timeline else None
            last = self._last_toggle.get(name)
            finished = self.tracker.finished
            skipped = when is not None and self._skipped_seconds(name, when)
        part = explain_domain(opt.domain, mode, state)
        asks = part.get("asks")
        held = None
        if when is not None and asks is not None and not _same(asks, state):
            held = "changes at the next evaluation"
            if last is not None:
                seconds, tasks = when - last[0], finished - last[1]
                if seconds < self.dwell or tasks < self.dwell_tasks:
                    held = (f"held by the dwell: {seconds:.3g} s of {self.dwell:g} s and {tasks} of "
                            f"{self.dwell_tasks} finished tasks since its last change; sooner where a graph's "
                            f"arrival makes the change from its scheduled work")
                    if not skipped:  # _signals_make's once-a-dwell rule
                        held += ", or a change of the signals alone makes it (a host's load report)"
        return Explanation(
            optimization=name, state=state, asks=asks, held=held, time=when,
            mode={"ratio": json_number(mode.ratio), "shares": mode.shares,
                  "signals": {k: json_number(v) for k, v in mode.signals.items()}},
            domain=part,
        )

    def _decide(self, opt: Optimization, mode: ModeVector, old: Any, now: float) -> Any:
        try:
            decision = check_state(opt.domain.decide(mode, old), f"the decision of the domain of {opt.name!r}")
        except Exception as exc:  # a broken domain must never break scheduling
            if opt.name not in self._failing:  # log once per failure streak, record always
                logger.exception("asafe: the domain of %r raised; keeping state %s", opt.name, old)
            self._failing.add(opt.name)
            self._errors.append(DomainError(now, opt.name, f"{type(exc).__name__}: {exc}"))
            return old
        self._failing.discard(opt.name)
        return decision

    def _apply(self, transitions: list[Transition]) -> None:
        for t in transitions:
            self._states[t.optimization] = t.new
            # an arrival's, a report's or a forced (set_state) toggle may come within the seconds
            within = not self._dwell_allows(t.optimization, t.time, count_tasks=False)
            self._last_toggle[t.optimization] = (t.time, self.tracker.finished, within)
            self._history.append(t)
            self._transition_counts[t.optimization] = self._transition_counts.get(t.optimization, 0) + 1
            logger.info(
                "asafe: %s %s -> %s (ratio=%s)",
                t.optimization, _onoff(t.old), _onoff(t.new), _json_float(t.mode.ratio),
            )
        states = dict(self._states)
        for callback in list(self._subscribers):
            try:
                callback(states, transitions)
            except Exception:
                logger.exception("asafe: a state subscriber failed; the run goes on")

    # pickling: a runtime travels to a cluster's scheduler as its settings,
    # optimizations and current states; locks, subscribers and the tracker's
    # in-flight counts stay behind.
    def __getstate__(self) -> dict[str, Any]:
        return {
            "optimizations": [self.optimizations[name] for name in self.optimizations],
            "states": dict(self._states),
            "settings": {
                "window": self.tracker.window,
                "blend": self.tracker.blend,
                "default_duration": self.tracker.default_duration,
                "dwell": self.dwell,
                "dwell_tasks": self.dwell_tasks,
                "arrivals_skip_dwell": self.arrivals_skip_dwell,
                "interval": self.interval,
                "default_type": self.default_type,
                "signals": self._signals is not None,
                "history_size": self._history.maxlen,
            },
            "history": list(self._history),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["optimizations"], **state["settings"])
        self._states.update(state["states"])
        self._history.extend(state["history"])

    def __repr__(self) -> str:
        states = ", ".join(f"{n}={_onoff(s)}" for n, s in self._states.items())
        return f"<AdaptiveRuntime {states or 'no optimizations'} mode={self._mode!r}>"


def _onoff(state: Any) -> str:
    if state is True or state is False:
        return "on" if state else "off"
    return str(state)



def _json_float(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


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
    if entries is None:
        entries = _config.optimization_entries()
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
        factory = _config.import_by_path(entry["domain"])
        domain = factory(**(entry.get("kwargs") or {}))
        built.append(Optimization(entry["name"], domain, initial=check_state(entry.get("initial", False),
                                                                          f"asafe.optimizations[{i}].initial")))
    return built
