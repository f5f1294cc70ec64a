"""Efficiency domains: rules that decide an optimization's next state.

The contract is one method, ``decide(mode, state) -> new_state``: given the current
:class:`~asafe.ModeVector` and the optimization's own current state, return the
state it should be in. The state is an input on purpose: the paper notes that an
optimization's domain depends on its own state (compression changes the very
signal that decides it). A second method, ``explain(mode, state)``, says why:
the value each part read, its thresholds and what it asks for, as plain data
(:mod:`asafe.core.explain`); the base class gives user domains a default.

:class:`Hysteresis` is the alpha/beta rule of the adaptive compression engine.
:class:`AtLeast` follows a declared property of the work (the ``reuse`` that
tasks declare with :func:`asafe.reuse`). :class:`AllOf` and :class:`AnyOf`
combine domains: compression is on when communication dominates *or* the
scheduled work declares enough reuse.
Domains are named in configuration by dotted path with their keyword arguments
(see :func:`asafe.core.runtime.load_optimizations`), as distributed's active memory
manager names its policies.
"""
from __future__ import annotations

import math
from typing import Any

from . import validate
from .explain import default_explanation, explain_domain, leaf, onoff, read_metric
from .mode import ModeVector
from .states import check_state, same

__all__ = ["EfficiencyDomain", "Hysteresis", "AtLeast", "AllOf", "AnyOf", "Fixed", "Bands", "Gated", "build_domain",
           "possible_states"]


class EfficiencyDomain:
    """Base class of efficiency domains.

    Subclasses implement :meth:`decide`. A domain must be cheap (it runs on the
    scheduler's event path) and must not block. If it raises, the runtime logs and
    records the error, and the optimization keeps its state.

    Examples
    --------
    >>> class CpuBound(EfficiencyDomain):
    ...     '''On while the cpu is busier than 80%.'''
    ...     def decide(self, mode, state):
    ...         return mode.signals.get("cpu", 0.0) > 0.8
    >>> CpuBound().decide(ModeVector({"compute": 1}, cpu=0.9), False)
    True
    """

    def decide(self, mode: ModeVector, state: bool) -> bool:
        """Return the optimization's next state for this mode and current state."""
        raise NotImplementedError(f"{type(self).__name__} must implement decide(mode, state)")

    def explain(self, mode: ModeVector, state: Any) -> dict:
        """Why :meth:`decide` asks what it asks, as plain data (see :mod:`asafe.core.explain`).

        The default reports what ``decide`` asks for and, where the domain has
        a ``metric`` attribute, the value it read; asafe's domains add their
        thresholds and parts. Keys: ``domain``, ``metric``, ``value``,
        ``source``, ``thresholds``, ``asks``, ``why``, and ``parts`` for a
        combined domain.

        Examples
        --------
        >>> class CpuBound(EfficiencyDomain):
        ...     metric = "cpu"
        ...     def decide(self, mode, state):
        ...         return mode.metric("cpu") > 0.8
        >>> part = CpuBound().explain(ModeVector({"compute": 1}, cpu=0.9), False)
        >>> part["metric"], part["value"], part["asks"]
        ('cpu', 0.9, True)
        """
        return default_explanation(self, mode, state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Hysteresis(EfficiencyDomain):
    """On below ``alpha``, off above ``beta``, unchanged in between.

    With ``alpha < beta`` the band ``[alpha, beta]`` keeps the current state, so a
    metric that wanders around one threshold does not toggle the optimization at
    every evaluation (the same reason distributed starts spilling at 70% memory
    and stops at 60%). ``alpha == beta`` is allowed and gives a plain threshold.

    Parameters
    ----------
    alpha : float
        Switch on when the metric is strictly below ``alpha``.
    beta : float
        Switch off when the metric is strictly above ``beta``. ``alpha <= beta``.
    metric : str
        ``"ratio"`` (compute / communication, default), the name of a signal
        (``"cpu"``, ``"memory"``) or of a task type (its share).

    Examples
    --------
    >>> domain = Hysteresis(alpha=0.5, beta=2.0)
    >>> comm_heavy = ModeVector({"compute": 0.2, "communication": 0.8})  # ratio 0.25
    >>> domain.decide(comm_heavy, False)
    True
    >>> middle = ModeVector({"compute": 0.5, "communication": 0.5})       # ratio 1.0
    >>> domain.decide(middle, True), domain.decide(middle, False)
    (True, False)
    >>> Hysteresis(alpha=3, beta=1)
    Traceback (most recent call last):
    ...
    ValueError: Hysteresis needs alpha <= beta, got alpha=3.0 > beta=1.0
    """

    def __init__(self, alpha: float, beta: float, metric: str = "ratio") -> None:
        alpha = _threshold("alpha", alpha)
        beta = _threshold("beta", beta)
        if alpha > beta:
            raise ValueError(f"Hysteresis needs alpha <= beta, got alpha={alpha} > beta={beta}")
        if not isinstance(metric, str) or not metric:
            raise TypeError(f"metric must be a non-empty str such as 'ratio', got {metric!r}")
        self.alpha = alpha
        self.beta = beta
        self.metric = metric

    def decide(self, mode: ModeVector, state: bool) -> bool:
        value = mode.metric(self.metric)
        if value < self.alpha:  # nan compares False: an idle mode changes nothing
            return True
        if value > self.beta:
            return False
        return bool(state)

    def explain(self, mode: ModeVector, state: Any) -> dict:
        """The metric's value against alpha and beta.

        >>> Hysteresis(0.5, 2.0).explain(ModeVector({"compute": 1, "communication": 1}), True)["why"]
        'between alpha and beta: keeps on'
        """
        value, _ = read_metric(mode, self.metric)
        if value < self.alpha:
            why = "below alpha"
        elif value > self.beta:
            why = "above beta"
        elif math.isnan(value):
            why = f"unknown (nan): keeps {onoff(bool(state))}"
        else:
            why = f"between alpha and beta: keeps {onoff(bool(state))}"
        return leaf(self, self.metric, mode, {"alpha": self.alpha, "beta": self.beta}, self.decide(mode, state), why)

    def __repr__(self) -> str:
        return f"Hysteresis(alpha={self.alpha}, beta={self.beta}, metric={self.metric!r})"


class AtLeast(EfficiencyDomain):
    """On while a metric is at least ``on``, off below ``off``; ``nan`` is off.

    Meant for a metric that the optimization does not change, such as the
    ``reuse`` that the scheduled tasks declare (:func:`asafe.reuse`): turning
    compression on does not change how often a panel is read, so no band against
    the optimization's own effect is needed and ``off`` defaults to ``on``.
    ``nan`` (nothing declared) is no reason to be on: as a part of
    :class:`AnyOf` it leaves the decision to the other parts. Alone, it would
    switch off in an idle mode; put it beside a domain that holds the state.

    Parameters
    ----------
    metric : str
        A signal name (``"reuse"``), ``"ratio"`` or a task type.
    on : float
        On when the metric is at least ``on``.
    off : float, optional
        Off when the metric is strictly below ``off`` (``off <= on``; between the
        two the state is kept). Default ``on``.

    Examples
    --------
    >>> reused = AtLeast("reuse", on=4)
    >>> reused.decide(ModeVector({"compute": 1}, reuse=16.0), False)
    True
    >>> reused.decide(ModeVector({"compute": 1}, reuse=2.0), True)
    False
    >>> reused.decide(ModeVector({"compute": 1}, reuse=float("nan")), True)
    False
    >>> AtLeast("reuse", on=2, off=4)
    Traceback (most recent call last):
    ...
    ValueError: AtLeast needs off <= on, got off=4.0 > on=2.0
    """

    def __init__(self, metric: str, on: float, off: float | None = None) -> None:
        if not isinstance(metric, str) or not metric:
            raise TypeError(f"metric must be a non-empty str such as 'reuse', got {metric!r}")
        on = _threshold("on", on)
        off = on if off is None else _threshold("off", off)
        if off > on:
            raise ValueError(f"AtLeast needs off <= on, got off={off} > on={on}")
        self.metric = metric
        self.on = on
        self.off = off

    def decide(self, mode: ModeVector, state: bool) -> bool:
        value = mode.metric(self.metric)
        if value >= self.on:
            return True
        if value < self.off or math.isnan(value):
            return False
        return bool(state)

    def explain(self, mode: ModeVector, state: Any) -> dict:
        """The metric's value against ``on`` and ``off``.

        >>> AtLeast("reuse", on=16).explain(ModeVector({"compute": 1}, reuse=float("nan")), True)["why"]
        'unknown (nan): off'
        """
        value, _ = read_metric(mode, self.metric)
        if value >= self.on:
            why = "at least on"
        elif math.isnan(value):
            why = "unknown (nan): off"
        elif value < self.off:
            why = "below off"
        else:
            why = f"between off and on: keeps {onoff(bool(state))}"
        return leaf(self, self.metric, mode, {"on": self.on, "off": self.off}, self.decide(mode, state), why)

    def __repr__(self) -> str:
        return f"AtLeast({self.metric!r}, on={self.on}, off={self.off})"


class _Combined(EfficiencyDomain):
    """Domains built from a list of domains or configuration entries."""

    def __init__(self, domains: list) -> None:
        name = type(self).__name__
        built = [build_domain(part, f"{name} domains[{i}]") for i, part in enumerate(domains or ())]
        if not built:
            raise ValueError(f"{name} needs at least one domain")
        self.domains = built

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.domains!r})"

    _rule = ""

    def explain(self, mode: ModeVector, state: Any) -> dict:
        """Each part's explanation, from the state the parts see (on/off)."""
        parts = [explain_domain(domain, mode, bool(state)) for domain in self.domains]
        return {"domain": type(self).__name__, "thresholds": {}, "asks": self.decide(mode, state),
                "why": self._rule, "parts": parts}


class AllOf(_Combined):
    """On only when every domain would turn on; off as soon as one turns off.

    Off: turns on when every domain decides ``True`` from the off state (each
    metric below its ``alpha``). On: stays on while every domain decides
    ``True`` from the on state (each metric at most its ``beta``), so a
    :class:`Hysteresis` part keeps its band. ``wire-compression`` uses three
    parts: the ratio (communication dominates), the cpu load outside the run
    (headroom) and the link's bandwidth (slower than the codec).

    Parameters
    ----------
    domains : list
        Domains, or configuration entries ``{"domain": dotted.path, "kwargs": {...}}``.

    Examples
    --------
    >>> both = AllOf([Hysteresis(0.5, 2.0), Hysteresis(0.5, 0.8, metric="cpu")])
    >>> both.decide(ModeVector({"compute": 1, "communication": 4}, cpu=0.3), False)
    True
    >>> both.decide(ModeVector({"compute": 1, "communication": 4}, cpu=0.9), True)
    False
    """

    _rule = "on while every part asks on"

    def decide(self, mode: ModeVector, state: bool) -> bool:
        state = bool(state)
        return all(domain.decide(mode, state) for domain in self.domains)


class AnyOf(_Combined):
    """On as soon as one domain would turn on; off only when every domain turns off.

    Off: turns on when some domain decides ``True`` from the off state. On: stays
    on while some domain decides ``True`` from the on state, so a
    :class:`Hysteresis` part still holds its band. ``compression`` uses two
    parts: the ratio (the panels cross the network) or the declared reuse (they
    are read many times where they are made).

    Parameters
    ----------
    domains : list
        Domains, or configuration entries ``{"domain": dotted.path, "kwargs": {...}}``.

    Examples
    --------
    >>> either = AnyOf([Hysteresis(1.0, 8.0), AtLeast("reuse", on=4)])
    >>> local_reused = ModeVector({"compute": 1}, reuse=16.0)       # ratio inf
    >>> either.decide(local_reused, False)
    True
    >>> either.decide(ModeVector({"compute": 1}, reuse=1.0), True)  # local, read once
    False
    >>> either.decide(ModeVector({"compute": 1, "communication": 4}, reuse=1.0), False)
    True
    """

    _rule = "on while some part asks on"

    def decide(self, mode: ModeVector, state: bool) -> bool:
        state = bool(state)
        return any(domain.decide(mode, state) for domain in self.domains)


class Fixed(EfficiencyDomain):
    """Always the same state: a static setting, written as a domain.

    For comparisons against the adaptive rule (every static setting of an
    optimization is a ``Fixed`` domain) and for deployments that pin a state.

    Examples
    --------
    >>> Fixed("zstd").decide(ModeVector({"compute": 1}), False)
    'zstd'
    """

    def __init__(self, state: Any) -> None:
        self.state = check_state(state, "Fixed(state)")

    def decide(self, mode: ModeVector, state: Any) -> Any:
        return self.state

    def explain(self, mode: ModeVector, state: Any) -> dict:
        """Nothing read: the state is fixed."""
        return leaf(self, None, None, {}, self.state, "fixed")

    def __repr__(self) -> str:
        return f"Fixed({self.state!r})"


class Bands(EfficiencyDomain):
    """One state per band of a metric, each edge widened by a margin of hysteresis.

    ``states[i]`` is asked for while the metric lies between ``edges[i - 1]``
    and ``edges[i]``. A state already in force is kept until the metric leaves
    its band by more than ``margin`` (a fraction of the edge), so a metric that
    wanders around an edge does not switch between the two neighbours at every
    evaluation. ``nan`` (an unknown metric) keeps the state.

    Parameters
    ----------
    metric : str
        A mode signal (``"bandwidth"``), ``"ratio"`` or a task type's share.
    edges : list of float
        Increasing band edges.
    states : list
        ``len(edges) + 1`` states (bools, ints or strs), from the lowest band up.
    margin : float
        Hysteresis around each edge, as a fraction of it (0 to 1).

    Examples
    --------
    >>> codec = Bands("bandwidth", edges=[200e6], states=["zstd", "lz4"], margin=0.2)
    >>> codec.decide(ModeVector({}, bandwidth=120e6), False)
    'zstd'
    >>> codec.decide(ModeVector({}, bandwidth=220e6), "zstd")  # within the margin: kept
    'zstd'
    >>> codec.decide(ModeVector({}, bandwidth=260e6), "zstd")
    'lz4'
    """

    def __init__(self, metric: str, edges: list, states: list, margin: float = 0.1) -> None:
        if not isinstance(metric, str) or not metric:
            raise validate.InvalidSetting(f"metric must be a non-empty str such as 'bandwidth', got {metric!r}")
        self.metric = metric
        self.edges = [_threshold(f"edges[{i}]", edge) for i, edge in enumerate(edges or ())]
        if any(b <= a for a, b in zip(self.edges, self.edges[1:])):
            raise validate.InvalidSetting(f"Bands needs increasing edges, got {list(edges)!r}")
        self.states = [check_state(state, f"states[{i}]") for i, state in enumerate(states or ())]
        if len(self.states) != len(self.edges) + 1:
            raise validate.InvalidSetting(f"Bands needs one state more than edges: {len(self.edges)} edges, "
                                          f"{len(self.states)} states")
        self.margin = validate.number(margin, "margin", minimum=0, maximum=1)

    def decide(self, mode: ModeVector, state: Any) -> Any:
        value = mode.metric(self.metric)
        if math.isnan(value):
            return state
        band = sum(value >= edge for edge in self.edges)
        current = next((i for i, known in enumerate(self.states) if same(known, state)), None)
        if current is None or current == band:
            return self.states[band]
        low = self.edges[current - 1] * (1 - self.margin) if current > 0 else -math.inf
        high = self.edges[current] * (1 + self.margin) if current < len(self.edges) else math.inf
        return state if low <= value <= high else self.states[band]

    def explain(self, mode: ModeVector, state: Any) -> dict:
        """The metric's band, and whether the margin keeps the current state.

        >>> codec = Bands("bandwidth", edges=[200e6], states=["zstd", "lz4"], margin=0.2)
        >>> codec.explain(ModeVector({}, bandwidth=220e6), "zstd")["why"]
        'band 1 of 0-1; within the margin of the band of zstd: keeps it'
        """
        value, _ = read_metric(mode, self.metric)
        asks = self.decide(mode, state)
        if math.isnan(value):
            why = "unknown (nan): keeps the state"
        else:
            band = sum(value >= edge for edge in self.edges)
            why = f"band {band} of 0-{len(self.edges)}"
            if not same(asks, self.states[band]):
                why += f"; within the margin of the band of {onoff(state)}: keeps it"
        thresholds = {"edges": list(self.edges), "states": list(self.states), "margin": self.margin}
        return leaf(self, self.metric, mode, thresholds, asks, why)

    def __repr__(self) -> str:
        return f"Bands({self.metric!r}, edges={self.edges}, states={self.states}, margin={self.margin})"


class Gated(EfficiencyDomain):
    """Off while a gate says off; otherwise the state another domain chooses.

    The gate is an on/off domain (a :class:`Hysteresis`, an :class:`AllOf`)
    that sees whether the optimization is on now; ``then`` chooses which state
    "on" is (a :class:`Bands` of codecs, of thread counts).

    Parameters
    ----------
    gate, then : domain or configuration entry
        Domains, or ``{"domain": dotted.path, "kwargs": {...}}``.
    off : bool, int or str
        The state while the gate is off (default ``False``).

    Examples
    --------
    >>> wire = Gated(Hysteresis(0.5, 2.0), Bands("bandwidth", [200e6], ["zstd", "lz4"]))
    >>> wire.decide(ModeVector({"compute": 1, "communication": 4}, bandwidth=1e8), False)
    'zstd'
    >>> wire.decide(ModeVector({"compute": 4, "communication": 1}, bandwidth=1e8), "zstd")
    False
    """

    def __init__(self, gate: Any, then: Any, off: Any = False) -> None:
        self.gate = build_domain(gate, "Gated gate")
        self.then = build_domain(then, "Gated then")
        self.off = check_state(off, "Gated off")

    def decide(self, mode: ModeVector, state: Any) -> Any:
        on = not same(state, self.off)
        if not self.gate.decide(mode, on):
            return self.off
        return self.then.decide(mode, state if on else self.off)

    def explain(self, mode: ModeVector, state: Any) -> dict:
        """The gate's explanation, then (when the gate is on) the chosen state's."""
        on = not same(state, self.off)
        gate = {**explain_domain(self.gate, mode, on), "role": "gate"}
        then = {**explain_domain(self.then, mode, state if on else self.off), "role": "then"}
        open_ = bool(gate.get("asks"))
        if not open_:
            then["why"] = "not asked: the gate is off"
            then["asks"] = None
        return {"domain": "Gated", "thresholds": {"off": self.off}, "asks": self.decide(mode, state),
                "why": "the gate is on: then chooses" if open_ else "the gate is off", "parts": [gate, then]}

    def __repr__(self) -> str:
        return f"Gated({self.gate!r}, {self.then!r}, off={self.off!r})"


def possible_states(domain: Any) -> set | None:
    """The states ``domain`` can ask for, where its kind says (``None`` for a domain of unknown kind).

    >>> sorted(possible_states(Gated(Hysteresis(0.5, 2.0), Bands("bandwidth", [1e8], ["zstd", "lz4"]))), key=str)
    [False, 'lz4', 'zstd']
    >>> possible_states(AllOf([Hysteresis(0.5, 2.0)]))
    {False, True}
    """
    if isinstance(domain, Fixed):
        return {domain.state}
    if isinstance(domain, Bands):
        return set(domain.states)
    if isinstance(domain, Gated):
        then = possible_states(domain.then)
        return None if then is None else then | {domain.off}
    if isinstance(domain, (Hysteresis, AtLeast, AllOf, AnyOf)):
        return {True, False}
    return None


def build_domain(part: Any, where: str) -> Any:
    """A domain from a domain or a configuration entry ``{"domain": dotted.path, "kwargs": {...}}``.

    >>> build_domain({"domain": "asafe.Hysteresis", "kwargs": {"alpha": 1, "beta": 2}}, "domain")
    Hysteresis(alpha=1.0, beta=2.0, metric='ratio')
    """
    from .config import import_by_path

    if isinstance(part, dict):
        if set(part) - {"domain", "kwargs"} or "domain" not in part:
            raise ValueError(f"{where} must be a domain or {{'domain', 'kwargs'}}, got {part!r}")
        part = import_by_path(part["domain"])(**(part.get("kwargs") or {}))
    if not callable(getattr(part, "decide", None)):
        raise TypeError(f"{where} has no decide(mode, state): {part!r}")
    return part


def _threshold(name: str, value: Any) -> float:
    return validate.number(value, name, minimum=0, allow_inf=True, rule="a non-negative number (inf allowed)",
                           named=True)
