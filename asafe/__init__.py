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

From a checkout. ``compression/`` sits beside ``asafe/`` in the repository
and is installed as ``asafe.compression`` (setup.py ``package_dir``). Where
Python imports this folder instead of the installed package (``python -c``
or ``python -m sphinx`` from the repository root put the current folder
first on ``sys.path``), :func:`_find_checkout_compression` makes
``asafe.compression`` that folder. It adds a finder for exactly that one name,
last in ``sys.meta_path``, so an installed or editable ``asafe.compression``
still wins, and the repository's other folders (``benchmarks``, ``tests``,
``docs``) do not become ``asafe.*`` as they would if the repository root
joined ``asafe.__path__``.
"""
import importlib.abc as _abc
import importlib.util as _util
import os as _os
import sys as _sys


class _CheckoutCompression(_abc.MetaPathFinder):
    """Finds ``asafe.compression`` in the checkout's top-level ``compression/`` folder, and nothing else."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(self, name, path=None, target=None):
        if name != "asafe.compression":
            return None
        return _util.spec_from_file_location(name, _os.path.join(self.folder, "__init__.py"),
                                             submodule_search_locations=[self.folder])


def _find_checkout_compression() -> None:
    """Add the finder where this ``asafe`` is a checkout's folder and ``compression/`` is not inside it."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    root = _os.path.dirname(here)
    folder = _os.path.join(root, "compression")
    if (_os.path.exists(_os.path.join(here, "compression"))
            or not _os.path.isfile(_os.path.join(folder, "__init__.py"))
            or not _os.path.isfile(_os.path.join(root, "setup.py"))):
        return  # an installed package, or not asafe's repository
    if any(isinstance(finder, _CheckoutCompression) for finder in _sys.meta_path):
        return
    _sys.meta_path.append(_CheckoutCompression(folder))


_find_checkout_compression()

from .core import config  # noqa: E402, F401  (registers the dask.config defaults first)
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
from .schedulers.threads import kernel_threads

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
    "kernel_threads",
    "attach",
    "__version__",
]
