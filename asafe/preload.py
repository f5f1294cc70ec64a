"""``--preload asafe.preload``: the name a Dask deployment gives to enable asafe.

distributed's preload protocol imports the module it is given and calls its
``dask_setup``; the implementation lives with the other cluster integrations in
:mod:`asafe.schedulers.preload` (its docstring shows the two-terminal setup).
This module keeps the short, stable name that scheduler and worker command lines
and ``distributed.*.preload`` settings carry.
"""
from .schedulers.preload import dask_setup, dask_teardown

__all__ = ["dask_setup", "dask_teardown"]
