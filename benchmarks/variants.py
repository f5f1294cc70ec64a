"""The variants made for evaluations, beside the demo's: what ``--variants`` of the phased suite accepts.

``asafe demo`` runs the package's variants (:data:`asafe.app.variants.KNOWN_VARIANTS`:
``adaptive``, ``per-task``, ``static-on``, ``static-off``). The evaluations of
``docs/results/`` compared them with others, each a :class:`~asafe.app.variants.Variant`
defined here:

``hybrid``
    the global mode as a prior, the per-task payoff as evidence
    (``PerTask(..., prior=True)``): the payoff decides where one form is
    expected 1.25x cheaper, the mode on close calls; asafe's runtime installed;
``adaptive-sampling``
    the global mode first, with a second optimization: the per-task rule
    (``PerTask(..., deferred=True)``) samples and decides the panels the mode
    leaves uncompressed while the scheduled producers declare a reuse at which
    the calibration phases disagreed (:func:`sampling_runtime`, from
    :attr:`~asafe.app.variants.Thresholds.per_task_reuse` reads);
``adaptive-ready``
    adaptive without the next wave in the scheduled view (the design before it);
``adaptive-arrivals`` / ``adaptive-dwell``
    adaptive with a graph's arrival skipping the dwell where the scheduled view
    alone makes its toggle / with the dwell holding arrivals too, whatever
    ``asafe.controller.arrivals-skip-dwell`` says.

:data:`KNOWN` is every variant by name, in the order tables and figures show
them (the order of :data:`ALL_VARIANTS`); :data:`COMPARED` the order in which
they are compared with each other (``new_vs_base``). The ``phased`` suite, its
``demo`` twin (``python -m benchmarks demo``) and the evaluation plans
(:mod:`benchmarks.evals`) resolve the names here, exactly as before they left
the package.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from asafe.app.pertask import PER_TASK, PerTask
from asafe.app.variants import DEFAULT_THRESHOLDS, KNOWN_VARIANTS, Thresholds, Variant, adaptive_runtime
from asafe.app.variants import check_variants as _check_variants

__all__ = ["sampling_runtime", "EVALUATION_VARIANTS", "KNOWN", "ALL_VARIANTS", "COMPARED", "check_variants"]


def sampling_runtime(thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Any:
    """The runtime of ``adaptive-sampling``: adaptive, plus :data:`~asafe.app.pertask.PER_TASK` from the declared reuse.

    Where ``per-task-compression`` is on (``AtLeast("reuse", thresholds.per_task_reuse)``)
    and compression is off, a deferred per-task rule decides each panel.

    Examples
    --------
    >>> list(sampling_runtime().optimizations)
    ['compression', 'per-task-compression']
    """
    from asafe import AtLeast, Optimization

    return adaptive_runtime(thresholds, optimizations=[
        Optimization(PER_TASK, AtLeast("reuse", thresholds.per_task_reuse), initial=False)])


#: The variants of the evaluations that are not the demo's.
EVALUATION_VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("adaptive-ready", compress=None, runtime=adaptive_runtime, next_wave=False, color="tab:olive"),
    Variant("adaptive-arrivals", compress=None, runtime=functools.partial(adaptive_runtime, arrivals_skip_dwell=True),
            color="tab:pink"),
    Variant("adaptive-dwell", compress=None, runtime=functools.partial(adaptive_runtime, arrivals_skip_dwell=False),
            color="tab:orange"),
    Variant("adaptive-sampling", compress=functools.partial(PerTask, deferred=True), runtime=sampling_runtime,
            color="tab:brown"),
    Variant("hybrid", compress=functools.partial(PerTask, prior=True), runtime=adaptive_runtime, color="tab:cyan"),
)}

#: Every variant the phased suite can run, in the order tables and figures show them.
ALL_VARIANTS = ("adaptive", "adaptive-ready", "adaptive-arrivals", "adaptive-dwell", "adaptive-sampling", "per-task",
                "hybrid", "static-on", "static-off")
#: Every variant by name (the package's and the evaluations'), in the order of :data:`ALL_VARIANTS`.
KNOWN: dict[str, Variant] = {name: {**KNOWN_VARIANTS, **EVALUATION_VARIANTS}[name] for name in ALL_VARIANTS}
#: The variants compared with the others, in this order: the first of a pair is the ``new`` of ``new_vs_base``.
COMPARED = ("adaptive", "adaptive-sampling", "adaptive-ready", "adaptive-arrivals", "adaptive-dwell", "hybrid",
            "per-task")


def check_variants(variants: Sequence[str] | str) -> tuple[str, ...]:
    """:func:`asafe.app.variants.check_variants` over every variant of :data:`KNOWN`.

    Examples
    --------
    >>> check_variants("adaptive,hybrid,static-on,static-off")
    ('adaptive', 'hybrid', 'static-on', 'static-off')
    >>> check_variants("greedy,static-on,static-off")
    Traceback (most recent call last):
    ...
    ValueError: unknown variant(s) ['greedy']; allowed: adaptive, adaptive-ready, adaptive-arrivals, adaptive-dwell, adaptive-sampling, per-task, hybrid, static-on, static-off
    """
    return _check_variants(variants, KNOWN)
