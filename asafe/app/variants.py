"""The variants the demo compares, and the adaptive runtime of the ``adaptive`` one.

A *variant* (:class:`Variant`) says how every producer of the workload decides
on compression and which runtime, if any, is installed around the run:

``adaptive``
    asafe's runtime (:func:`adaptive_runtime`: compression under
    :func:`compression_domain`, the settings of :data:`DEFAULT_THRESHOLDS`)
    switches compression from the global mode while the run goes on; every
    producer asks ``asafe.is_on("compression")``;
``per-task``
    no runtime: each panel is decided when it is produced by the per-task cost
    rule (:class:`~asafe.app.pertask.PerTask`);
``static-on`` / ``static-off``
    no runtime: compression always on / always off (the strongest baselines);
``oracle`` (:data:`ORACLE`)
    not a run: the better static setting of each phase, chosen after the fact
    (:class:`asafe.app.comparison.Comparison`).

:data:`KNOWN_VARIANTS` holds the package's variants, :data:`VARIANTS` those the
demo runs by default. :func:`run_variant` runs every phase under one variant and
returns a :class:`VariantRun` (with the runtime's transitions and timeline, or the
rule's decisions). The variants made for evaluations (``hybrid``,
``adaptive-sampling``, ``adaptive-ready``, ``adaptive-arrivals``,
``adaptive-dwell``) are :class:`Variant` objects of the ``phased`` benchmark
suite (``benchmarks/variants.py``, run from a checkout), which passes its own
catalogue where these functions take ``known``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .runner import PER_TASK_RULE, PhaseRun, run_workload
from .workload import Phase

__all__ = [
    "Thresholds",
    "DEFAULT_THRESHOLDS",
    "compression_domain",
    "adaptive_runtime",
    "Variant",
    "KNOWN_VARIANTS",
    "VARIANTS",
    "COMPARED",
    "ORACLE",
    "check_variants",
    "VariantRun",
    "run_variant",
]


# --------------------------------------------------------------------------- the adaptive runtime
@dataclass(frozen=True)
class Thresholds:
    """The settings of the adaptive runtime of the demo, and why."""

    alpha: float
    beta: float
    window: int
    dwell: float
    dwell_tasks: int
    blend: float = 0.5
    how: str = ""
    #: compression is also on while the scheduled producers declare at least this
    #: reuse (``AtLeast("reuse", reuse)``); ``inf``: the ratio alone decides
    reuse: float = math.inf
    #: ``adaptive-sampling`` (a variant of the ``phased`` benchmark suite): the
    #: per-task rule decides the panels the mode leaves uncompressed while the
    #: scheduled producers declare at least this reuse
    #: (:data:`asafe.app.pertask.PER_TASK`); ``inf``: never
    per_task_reuse: float = math.inf

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


DEFAULT_THRESHOLDS = Thresholds(
    alpha=1.0, beta=8.0, window=16, dwell=0.2, dwell_tasks=16, blend=0.1,
    how=(
        "chosen on CALIBRATION_PHASES only (neither the demo's phases nor the held-out ones), on loopback;\n"
        "data and command in docs/results/calibration/ (python -m benchmarks phased --section ratios\n"
        "--section sweep). With compression pinned on and off, benchmarks.phased.thresholds_rule puts alpha\n"
        "between the largest median ratio of the shipped phases and the smallest 5th percentile of the local\n"
        "ones (one evaluation below alpha switches compression on: typical in a shipped phase, rare in a local\n"
        "one), and beta between the shipped phases' largest 90th percentile and the local phases' smallest\n"
        "median; geometric means, rounded to powers of two.\n"
        "blend = 0.1: the scheduled view (tasks ready at submission and the transfers the forecast plans)\n"
        "decides when it holds a window's worth of tasks; the measured window weighs 10% (the sweep's blend\n"
        "row compares 0.1, 0.25, 0.5 and 1, the measured window alone).\n"
        "window = 16 measurements, about one step of a phase; dwell: 0.2 s and 16 finished tasks between\n"
        "two toggles (kept from the previous calibration, not re-tuned). arrivals_skip_dwell (a toggle decided\n"
        "when a graph arrives is not held by the dwell where the scheduled view alone makes it too): as\n"
        "configured, asafe.controller.arrivals-skip-dwell, on by default -- chosen on CALIBRATION_2_PHASES\n"
        "(docs/results/arrivals-eval2/: python -m benchmarks evals arrivals2, whose rule is\n"
        "benchmarks/analysis/decide_arrivals.py: the rule fired, the pooled paired median over 12 rounds\n"
        "1.045); the variants adaptive-arrivals and adaptive-dwell set it on and off.\n"
        "reuse = 16: compression is also on while the scheduled producers declare >= 16 reads per panel\n"
        "(asafe.reuse). The local calibration phases with compression pinned on and off at 1, 2, 4, 8 and 16\n"
        "reads (python -m benchmarks phased --section reuse, docs/results/calibration-reuse/, fba398c):\n"
        "benchmarks.phased.reuse_rule takes the smallest reuse from which on won in every local phase:\n"
        "cal-local-dense from 4 (1.05x), cal-local-fill20 only at 16 (1.075x; 0.89x-0.96x below).\n"
        "per_task_reuse = 2 (the adaptive-sampling variant only): from the same data, benchmarks.phased.\n"
        "per_task_rule takes the smallest reuse from which on won in at least one local phase (cal-local-dense\n"
        "from 2, 1.003x): between it and reuse, the calibration phases disagree -- the content decides, which\n"
        "the graph does not show -- so there the per-task rule samples the panels the mode leaves off."
    ),
    reuse=16.0,
    per_task_reuse=2.0,
)


def compression_domain(thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Any:
    """``AnyOf(Hysteresis(alpha, beta), AtLeast("reuse", reuse))``: panels that cross, or are read often.

    Examples
    --------
    >>> compression_domain(Thresholds(alpha=1, beta=8, window=16, dwell=0.2, dwell_tasks=16, reuse=8))
    AnyOf([Hysteresis(alpha=1.0, beta=8.0, metric='ratio'), AtLeast('reuse', on=8.0, off=8.0)])
    """
    from ..core.domains import AnyOf, AtLeast, Hysteresis

    ratio = Hysteresis(thresholds.alpha, thresholds.beta)
    if math.isinf(thresholds.reuse):
        return ratio
    return AnyOf([ratio, AtLeast("reuse", thresholds.reuse)])


def adaptive_runtime(thresholds: Thresholds = DEFAULT_THRESHOLDS, initial: bool = False,
                     arrivals_skip_dwell: bool | None = None, optimizations: Sequence[Any] = ()) -> Any:
    """The runtime of the ``adaptive`` variant: compression under :func:`compression_domain`.

    ``arrivals_skip_dwell``: whether a toggle decided at a graph's arrival skips
    the dwell where the scheduled view alone makes it too
    (:meth:`asafe.AdaptiveRuntime.evaluate`); ``None``, the configured
    ``asafe.controller.arrivals-skip-dwell``. ``optimizations``: further
    :class:`~asafe.Optimization` objects run beside compression, with the same
    window, blend and dwell.

    Examples
    --------
    >>> list(adaptive_runtime().optimizations)
    ['compression']
    """
    from ..core.runtime import AdaptiveRuntime, Optimization

    return AdaptiveRuntime(
        [Optimization("compression", compression_domain(thresholds), initial=initial), *optimizations],
        window=thresholds.window, blend=thresholds.blend, dwell=thresholds.dwell,
        dwell_tasks=thresholds.dwell_tasks, arrivals_skip_dwell=arrivals_skip_dwell, signals=False,
    )


# --------------------------------------------------------------------------- the variants
@dataclass(frozen=True)
class Variant:
    """How one variant runs the phases: what every producer is told, and the runtime installed around the run.

    Parameters
    ----------
    name : str
        The name the variant is asked for by (``--variants``) and reported under.
    compress : bool, None, "per-task" or callable
        What every panel's producer is given (:func:`asafe.app.runner.run_phase`):
        ``True``/``False``, a static setting; ``None``, ``asafe.is_on("compression")``
        of the installed runtime; ``"per-task"`` or a rule factory (called as
        ``compress(reads=..., remote=...)``, as :class:`~asafe.app.pertask.PerTask`),
        a per-task rule per panel, whose decisions are logged.
    runtime : callable(Thresholds) -> AdaptiveRuntime, optional
        The runtime installed for the run and removed after it; ``None``: asafe is
        not installed (no plugin cost at all).
    next_wave : bool
        Whether the scheduled view counts the next wave (``next_wave`` of
        :func:`asafe.install`).
    color : str
        Its color in the demo's figure (a matplotlib color).

    Examples
    --------
    >>> KNOWN_VARIANTS["per-task"].rule, KNOWN_VARIANTS["per-task"].installed
    (True, False)
    >>> Variant("lost", compress=None)
    Traceback (most recent call last):
    ...
    ValueError: variant 'lost': compress=None asks the installed runtime, and it has no runtime
    """

    name: str
    compress: Any
    runtime: Callable[[Thresholds], Any] | None = None
    next_wave: bool = True
    color: str = "0.3"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or "," in self.name:
            raise ValueError(f"a variant needs a non-empty name without commas, got {self.name!r}")
        if self.name == ORACLE:
            raise ValueError(f"{ORACLE!r} is the variant made after the fact; a run cannot take its name")
        if self.compress is None and self.runtime is None:
            raise ValueError(f"variant {self.name!r}: compress=None asks the installed runtime, and it has no runtime")

    @property
    def installed(self) -> bool:
        """Whether the variant installs asafe's runtime (and so records its transitions)."""
        return self.runtime is not None

    @property
    def rule(self) -> bool:
        """Whether every panel is decided by a per-task rule (its decisions are logged)."""
        return self.compress == PER_TASK_RULE or (callable(self.compress) and not isinstance(self.compress, bool))


#: The variant that is not run: the best static setting per phase, chosen after the fact.
ORACLE = "oracle"

#: The package's variants, by name, in the order tables and figures show them.
KNOWN_VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("adaptive", compress=None, runtime=adaptive_runtime, color="tab:blue"),
    Variant("per-task", compress=PER_TASK_RULE, color="tab:purple"),
    Variant("static-on", compress=True, color="tab:green"),
    Variant("static-off", compress=False, color="tab:red"),
)}
#: The variants measured by default: asafe's global mode, the per-task cost rule
#: (:mod:`asafe.app.pertask`, the strongest alternative design) and the static settings.
VARIANTS = ("adaptive", "per-task", "static-on", "static-off")
#: The variants compared with the others, in this order: ``adaptive_vs_per-task``,
#: never ``per-task_vs_adaptive``; the static settings and the oracle are bases only.
COMPARED = ("adaptive", "per-task")


def check_variants(variants: Sequence[str] | str, known: Mapping[str, Variant] = KNOWN_VARIANTS) -> tuple[str, ...]:
    """The variants to measure, checked: names of ``known``, no repeats, both static settings (the oracle's).

    Examples
    --------
    >>> check_variants("adaptive,per-task,static-on,static-off")
    ('adaptive', 'per-task', 'static-on', 'static-off')
    >>> check_variants(["adaptive", "static-on"])
    Traceback (most recent call last):
    ...
    ValueError: variants must include static-on and static-off (the oracle is made of them), got ('adaptive', 'static-on')
    """
    if isinstance(variants, str):
        variants = [v.strip() for v in variants.split(",") if v.strip()]
    variants = tuple(variants)
    unknown = [v for v in variants if v not in known]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; allowed: {', '.join(known)}")
    if len(set(variants)) != len(variants):
        raise ValueError(f"a variant is named twice in {variants}")
    if "static-on" not in variants or "static-off" not in variants:
        raise ValueError(f"variants must include static-on and static-off (the oracle is made of them), got {variants}")
    return variants


@dataclass
class VariantRun:
    """One measured run of one variant: every phase in order."""

    variant: str
    repetition: int
    phases: list[PhaseRun]
    transitions: list[dict[str, Any]] = field(default_factory=list)
    timeline: list[tuple[float, float]] = field(default_factory=list)  #: (time.time(), ratio)
    states: list[tuple[float, bool]] = field(default_factory=list)  #: (time.time(), compression state)
    warmup: bool = False
    decisions: list[dict[str, Any]] = field(default_factory=list)  #: per-task rules' decisions, by time

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phases)

    @property
    def correct(self) -> bool:
        return all(p.correct for p in self.phases)

    @property
    def start(self) -> float:
        return self.phases[0].start if self.phases else 0.0

    def phase_at(self, when: float) -> int | None:
        """Index of the phase that was running at ``when`` (``time.time()``), or None."""
        for i, p in enumerate(self.phases):
            if p.start <= when <= p.stop:
                return i
        return None


def _transition_dict(t: Any, runs: Sequence[PhaseRun]) -> dict[str, Any]:
    d = t.as_dict()
    phase = None
    for run in runs:
        if run.start <= t.time <= run.stop:
            phase = run.phase
    d["phase"] = phase
    return d


def run_variant(
    client: Any,
    phases: Sequence[Phase],
    variant: str | Variant,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    expected: Sequence[np.ndarray] | None = None,
    workers: Sequence[str] | None = None,
    repetition: int = 0,
    on_step: Callable[[int, int, int, Any], None] | None = None,
) -> VariantRun:
    """One run of every phase under one variant (a name of :data:`KNOWN_VARIANTS`, or a :class:`Variant`).

    A variant with a runtime has a fresh one installed first (outside the timed
    phases) and removed after; the static variants run without asafe installed
    and pass their setting to every producer (the strongest baseline: no plugin
    cost at all); a rule's decisions are collected from the workers after the
    run. ``on_step(phase_index, step, steps, handle)`` is called between steps
    (outside the timing); ``handle`` is the
    :class:`~asafe.schedulers.distributed.RuntimeHandle` of an installed runtime,
    else ``None``.
    """
    spec = _spec(variant)
    handle = None
    if spec.rule:
        from .pertask import drain

        client.run(drain)  # a previous run's leftovers
    if spec.installed:
        from ..schedulers.distributed import install

        handle = install(client, spec.runtime(thresholds), next_wave=spec.next_wave)
    try:
        callback = None
        if on_step is not None:
            def callback(i: int, step: int, steps: int) -> None:
                on_step(i, step, steps, handle)
        runs = run_workload(client, phases, spec.compress, workers=workers, on_step=callback, expected=expected)
        result = VariantRun(spec.name, repetition, runs)
        if spec.rule:
            logged = client.run(drain)
            result.decisions = sorted((d for ds in logged.values() for d in ds), key=lambda d: d["time"])
        if handle is not None:
            data = handle.info("history", "timeline")
            history = [t for t in handle.history if t.optimization == "compression"]
            result.transitions = [_transition_dict(t, runs) for t in history]
            result.timeline = [(when, _ratio(shares)) for when, shares, _ in data["timeline"]]
            result.states = [(runs[0].start, False)] + [(t.time, t.new) for t in history]
        else:
            result.states = [(runs[0].start, bool(spec.compress))] if runs and not spec.rule else []
        return result
    finally:
        if handle is not None:
            handle.uninstall()


def _spec(variant: str | Variant) -> Variant:
    if isinstance(variant, Variant):
        return variant
    try:
        return KNOWN_VARIANTS[variant]
    except (KeyError, TypeError):
        raise ValueError(f"variant must be one of {tuple(KNOWN_VARIANTS)} or a Variant, got {variant!r}") from None


def _ratio(shares: dict[str, float]) -> float:
    from ..core.mode import ModeVector

    return ModeVector(shares).ratio
