"""Why an optimization is in its state: explanations of domains, and checks of the metrics they read.

A domain's :meth:`~asafe.EfficiencyDomain.explain` returns, for each of its
parts, the metric it read, the value and where that value came from (the
ratio, a signal of the mode, or a task type's share), the thresholds, and the
state it asks for. Combined domains (:class:`~asafe.AllOf`,
:class:`~asafe.AnyOf`, :class:`~asafe.Gated`) nest their parts. The data is
plain (str, float, bool, int, list, dict; ``nan`` and ``inf`` as strings), so
it travels from a cluster's scheduler as it is and prints as JSON;
:class:`Explanation` adds the runtime's side (the state now, the dwell) and a
text form with one line per part. :meth:`asafe.AdaptiveRuntime.explain` and
``handle.explain(name)`` build one; ``asafe info`` and the dashboard page show
it.

A domain that does not derive from :class:`~asafe.EfficiencyDomain` (any object
with ``decide``) is explained by :func:`explain_domain`'s default: the state
its ``decide`` asks for, and the value of its ``metric`` attribute if it has
one.

The second half checks the names domains read. ``mode.metric(name)`` reads
``"ratio"``, a signal, or else the share of a task type of that name, which
is 0 for a type that never ran: a typo (``metric="ratoi"``) would read 0 and
never say so. :func:`unknown_metrics` lists the names a domain reads that are
neither the ratio, a signal of the mode or one asafe attaches somewhere
(:data:`ASAFE_SIGNALS`: a signal can be absent where no scheduler attaches it,
as ``bandwidth`` on the local schedulers), nor a task type known so far (in the
mode, seen by the tracker, or declared in this process with
:func:`asafe.task_type` or :func:`asafe.typed`); the runtime warns about them
once, at its first evaluation.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from typing import Any

from .mode import ModeVector

__all__ = ["Explanation", "explain_domain", "read_metric", "leaf", "domain_metrics", "unknown_metrics",
           "ASAFE_SIGNALS", "text_lines", "json_number", "onoff"]

#: Signals asafe attaches to the mode somewhere: ``cpu``, ``memory``,
#: ``external_cpu`` (:mod:`asafe.core.signals`, where signals are enabled),
#: ``reuse`` (the local schedulers and the cluster plugin, :mod:`asafe.core.reuse`)
#: and ``bandwidth`` (the cluster plugin, the link's measured bytes per second).
#: Where a scheduler does not attach one, a domain reading it reads a share of 0
#: (the explanation says "not a signal here").
ASAFE_SIGNALS = frozenset({"cpu", "memory", "external_cpu", "reuse", "bandwidth"})


def json_number(value: Any) -> Any:
    """``value`` as JSON can carry it: non-finite floats become ``"nan"``, ``"inf"``, ``"-inf"``.

    >>> json_number(0.25), json_number(float("nan")), json_number(float("inf"))
    (0.25, 'nan', 'inf')
    """
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def onoff(state: Any) -> str:
    """A state as text: ``on``/``off`` for booleans, else its value.

    >>> onoff(True), onoff(False), onoff("zstd")
    ('on', 'off', 'zstd')
    """
    if state is True or state is False:
        return "on" if state else "off"
    return str(state)


def _num(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.3g}"
    return str(value)


def read_metric(mode: ModeVector, name: str) -> tuple[float, str]:
    """The value of metric ``name`` in ``mode``, and where it came from.

    The source is ``"ratio"``, ``"signal"``, ``"share"`` (a task type with
    work in the mode) or ``"absent"`` (neither: it reads 0, as the share of a
    type with no work).

    Examples
    --------
    >>> mode = ModeVector({"compute": 1, "io": 1}, cpu=0.5)
    >>> read_metric(mode, "io"), read_metric(mode, "cpu"), read_metric(mode, "bandwidth")
    ((0.5, 'share'), (0.5, 'signal'), (0.0, 'absent'))
    """
    if name == "ratio":
        return mode.ratio, "ratio"
    signals = mode.signals
    if name in signals:
        return signals[name], "signal"
    if name in mode:
        return mode[name], "share"
    return mode.metric(name), "absent"


def leaf(domain: Any, metric: str | None, mode: ModeVector | None, thresholds: dict, asks: Any, why: str) -> dict:
    """One part of an explanation: a domain that reads one metric.

    Examples
    --------
    >>> leaf("Hysteresis", "ratio", ModeVector({"compute": 1, "communication": 4}), {"alpha": 0.5},
    ...      True, "below alpha 0.5: on")["value"]
    0.25
    """
    part: dict[str, Any] = {"domain": domain if isinstance(domain, str) else type(domain).__name__}
    if metric is not None and mode is not None:
        value, source = read_metric(mode, metric)
        part.update(metric=metric, value=json_number(float(value)), source=source)
    part.update(thresholds={k: json_number(v) for k, v in thresholds.items()}, asks=asks, why=why)
    return part


def explain_domain(domain: Any, mode: ModeVector, state: Any) -> dict:
    """The explanation of any domain: its own ``explain`` if it has one, else the default.

    The default (also :meth:`asafe.EfficiencyDomain.explain`'s) reports what
    ``decide`` asks for and, if the domain has a ``metric`` attribute, its
    value. A domain whose ``explain`` or ``decide`` raises is reported with the
    error, never raised.

    Examples
    --------
    >>> class CpuBound:
    ...     metric = "cpu"
    ...     def decide(self, mode, state):
    ...         return mode.metric("cpu") > 0.8
    >>> part = explain_domain(CpuBound(), ModeVector({"compute": 1}, cpu=0.9), False)
    >>> part["value"], part["asks"], part["why"]
    (0.9, True, 'its decide()')
    """
    own = getattr(domain, "explain", None)
    try:
        if callable(own):
            part = own(mode, state)
            if isinstance(part, dict):
                return part
        return default_explanation(domain, mode, state)
    except Exception as exc:  # an explanation must never break the caller (the scheduler, the dashboard)
        return {"domain": type(domain).__name__, "asks": None, "error": f"{type(exc).__name__}: {exc}",
                "why": f"raised {type(exc).__name__}: {exc}"}


def default_explanation(domain: Any, mode: ModeVector, state: Any) -> dict:
    """What any domain's ``decide`` asks for, with its ``metric`` attribute's value if it has one."""
    asks = domain.decide(mode, state)
    metric = getattr(domain, "metric", None)
    return leaf(domain, metric if isinstance(metric, str) else None, mode, {}, asks, "its decide()")


def domain_metrics(domain: Any) -> list[str]:
    """The metric names a domain reads, its parts' included, in order and once each.

    A part is found through the attributes ``domains`` (a list), ``gate`` and
    ``then``; a metric through a ``metric`` attribute that is a str.

    Examples
    --------
    >>> from asafe import AnyOf, AtLeast, Hysteresis
    >>> domain_metrics(AnyOf([Hysteresis(0.5, 2.0), AtLeast("reuse", on=16), Hysteresis(0.1, 0.2, metric="cpu")]))
    ['ratio', 'reuse', 'cpu']
    """
    found: list[str] = []
    stack = [domain]
    seen: set[int] = set()
    while stack:
        node = stack.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        metric = _attribute(node, "metric")
        if isinstance(metric, str) and metric not in found:
            found.append(metric)
        parts = _attribute(node, "domains")
        children = list(parts) if isinstance(parts, (list, tuple)) else []
        children += [child for child in (_attribute(node, "gate"), _attribute(node, "then")) if child is not None]
        stack.extend(child for child in children if callable(_attribute(child, "decide")))
    return found


def _attribute(node: Any, name: str) -> Any:
    try:  # a user domain's property may raise: it reads as absent here
        return getattr(node, name, None)
    except Exception:
        return None


def unknown_metrics(names: Iterable[str], mode: ModeVector, types: Iterable[str]) -> list[str]:
    """The names that are not ``"ratio"``, a signal of ``mode`` or of :data:`ASAFE_SIGNALS`, nor one of ``types``.

    Examples
    --------
    >>> unknown_metrics(["ratio", "bandwidth", "ratoi", "io"], ModeVector({"compute": 1}), ["compute", "io"])
    ['ratoi']
    """
    known = {"ratio", *mode.signals, *mode, *ASAFE_SIGNALS, *types}
    return [name for name in names if name not in known]


def unknown_metric_message(optimization: str, name: str, mode: ModeVector, types: Iterable[str]) -> str:
    """The one warning for a metric that no signal or known type has (see :func:`unknown_metrics`)."""
    signals = sorted(mode.signals)
    kinds = sorted({*types, *mode})
    near = difflib.get_close_matches(name, ["ratio", *signals, *sorted(ASAFE_SIGNALS), *kinds], n=1)
    hint = f" Did you mean {near[0]!r}?" if near else ""
    return (f"asafe: the domain of {optimization!r} reads the metric {name!r}, which is not 'ratio', a signal "
            f"of the mode ({', '.join(signals) or 'none'}) nor a task type seen so far ({', '.join(kinds)}); "
            f"it reads as the share of tasks of type {name!r}, 0 while none are scheduled.{hint} A type whose "
            f"tasks come later is known once declared (asafe.task_type({name!r}) or @asafe.typed({name!r})) "
            f"before the first computation.")


class Explanation(dict):
    """Why an optimization is in its state: plain data, and a text form (``str()``) of one line per part.

    Keys: ``optimization``, ``state`` (now), ``asks`` (what its domain asks for
    on the latest mode), ``held`` (why a state differs from what the domain
    asks, else ``None``), ``mode`` (that mode: ratio, shares, signals),
    ``time`` (of that evaluation, ``None`` before the first) and ``domain``
    (the domain's parts, as :func:`explain_domain` returns them). Built by
    :meth:`asafe.AdaptiveRuntime.explain`; a dict, so ``json.dumps`` takes it.

    Examples
    --------
    >>> import asafe
    >>> rt = asafe.AdaptiveRuntime([asafe.Optimization("c", asafe.Hysteresis(0.5, 2.0))], signals=False)
    >>> _ = rt.evaluate(mode=asafe.ModeVector({"compute": 1, "communication": 4}))
    >>> print(rt.explain("c"))
    c: on; its domain asks on
      Hysteresis: ratio = 0.25 (compute/communication), alpha 0.5, beta 2: below alpha; asks on
    """

    @property
    def text(self) -> str:
        """The explanation as text, one line for the optimization and one per part."""
        return "\n".join(text_lines(self))

    def __str__(self) -> str:
        return self.text


_SOURCES = {"ratio": "compute/communication", "signal": None, "share": "share of that task type",
            "absent": "no signal of that name here, no work of a type of that name: 0"}


def text_lines(explanation: dict) -> list[str]:
    """The text form of an :class:`Explanation` (or of its plain data), one line per part."""
    head = f"{explanation.get('optimization')}: {onoff(explanation.get('state'))}"
    asks = explanation.get("asks")
    if explanation.get("time") is None:
        head += "; not evaluated yet"
    elif asks is not None:
        head += f"; its domain asks {onoff(asks)}"
    if explanation.get("held"):
        head += f" ({explanation['held']})"
    lines = [head]
    _part_lines(explanation.get("domain") or {}, 1, lines)
    return lines


def _part_lines(part: dict, depth: int, lines: list[str]) -> None:
    pad = "  " * depth
    role = f"{part['role']}: " if part.get("role") else ""
    text = f"{pad}{role}{part.get('domain', '?')}"
    if "metric" in part:
        source = _SOURCES.get(part.get("source"))
        text += f": {part['metric']} = {_num(part.get('value'))}" + (f" ({source})" if source else "")
    thresholds = part.get("thresholds") or {}
    if thresholds:
        text += ", " + ", ".join(f"{k} {_fmt_threshold(v)}" for k, v in thresholds.items())
    said = [part.get("why"), f"asks {onoff(part['asks'])}" if part.get("asks") is not None else None]
    said = [piece for piece in said if piece]
    if said:
        text += ": " + "; ".join(said)
    lines.append(text)
    for child in part.get("parts") or ():
        _part_lines(child, depth + 1, lines)


def _fmt_threshold(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_fmt_threshold(v) for v in value) + "]"
    return _num(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
