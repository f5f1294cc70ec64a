"""asafe: scheduler-driven adaptive optimizations for Dask.

Tasks carry a *type* (:data:`COMPUTE`, :data:`COMMUNICATION`, or any name); the
scheduler turns the scheduled and measured tasks into a :class:`ModeVector`; each
:class:`Optimization` has an efficiency domain (such as :class:`Hysteresis`) that
sets its state from that vector (on/off, or a value such as a codec); tasks ask
:func:`is_on` and :func:`state`.

The package is laid out in rooms that follow the flow of a task event (the
Architecture page draws it):

* :mod:`asafe.core` -- the adaptive core, which knows nothing of Dask's
  schedulers: task types, the mode vector and its tracker, efficiency domains,
  the controller, settings;
* :mod:`asafe.schedulers` -- where events enter and states leave: Dask's local
  schedulers, the distributed plugins and their deployment, the state board that
  tasks read;
* :mod:`asafe.app` -- what uses both: ``asafe demo``, its workloads, the CLI, and
  the statistics of the demo and the benchmarks;
* :mod:`asafe.compression` -- the tile engine.

Everything a user imports is exported here; the rooms' modules are private.
"""
from .core import config  # registers the dask.config defaults first
from .core.domains import AllOf, AnyOf, AtLeast, Bands, EfficiencyDomain, Fixed, Gated, Hysteresis
from .core.mode import ModeVector
from .core.reuse import reuse
from .core.runtime import AdaptiveRuntime, Optimization, Transition
from .core.tracker import ModeTracker
from .core.types import COMMUNICATION, COMPUTE, task_type, typed
from .schedulers.board import is_on, state
from .schedulers.distributed import attach, install
from .schedulers.local import adaptive
from .schedulers.sizes import register as report_sizes

__version__ = "0.1.0"

__all__ = [
    "COMPUTE",
    "COMMUNICATION",
    "task_type",
    "typed",
    "reuse",
    "ModeVector",
    "ModeTracker",
    "EfficiencyDomain",
    "Hysteresis",
    "AtLeast",
    "AllOf",
    "AnyOf",
    "Bands",
    "Gated",
    "Fixed",
    "Optimization",
    "Transition",
    "AdaptiveRuntime",
    "adaptive",
    "is_on",
    "state",
    "install",
    "report_sizes",
    "attach",
    "__version__",
]
