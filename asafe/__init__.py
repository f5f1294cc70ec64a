"""asafe: scheduler-driven adaptive optimizations for Dask.

Tasks carry a *type* (:data:`COMPUTE`, :data:`COMMUNICATION`, or any name); the
scheduler turns the scheduled and measured tasks into a :class:`ModeVector`; each
:class:`Optimization` has an efficiency domain (such as :class:`Hysteresis`) that
switches it from that vector; tasks ask :func:`is_on`.

Modules, by theme: :mod:`asafe.types` (task types), :mod:`asafe.mode` (the mode
vector), :mod:`asafe.tracker` (the O(1) mode tracker), :mod:`asafe.domains`
(efficiency domains), :mod:`asafe.runtime` (optimizations and the controller),
:mod:`asafe.board` (where tasks read states), :mod:`asafe.local` (Dask's local
schedulers), :mod:`asafe.distributed` (a Dask cluster), :mod:`asafe.config`
(``dask.config`` settings), :mod:`asafe.compression` (the tile engine).
"""
from . import config  # registers the dask.config defaults first
from .board import is_on
from .distributed import attach, install
from .domains import EfficiencyDomain, Hysteresis
from .local import adaptive
from .mode import ModeVector
from .runtime import AdaptiveRuntime, Optimization, Transition
from .tracker import ModeTracker
from .types import COMMUNICATION, COMPUTE, task_type, typed

__version__ = "0.1.0"

__all__ = [
    "COMPUTE",
    "COMMUNICATION",
    "task_type",
    "typed",
    "ModeVector",
    "ModeTracker",
    "EfficiencyDomain",
    "Hysteresis",
    "Optimization",
    "Transition",
    "AdaptiveRuntime",
    "adaptive",
    "is_on",
    "install",
    "attach",
    "__version__",
]
