"""The adaptive core: what asafe decides, knowing nothing of Dask's schedulers.

A scheduler integration (:mod:`asafe.schedulers`) feeds the core task events and
reads back states; everything in between lives here, in the order of the flow:

* :mod:`~asafe.core.types` -- task types (``compute``, ``communication``, any
  name), carried by annotations and by ``@typed`` functions;
* :mod:`~asafe.core.mode` -- the :class:`~asafe.ModeVector`, shares of expected
  work per type plus extra signals;
* :mod:`~asafe.core.tracker` -- the :class:`~asafe.ModeTracker`, which turns
  scheduled and finished tasks into a mode vector in O(1) per event;
* :mod:`~asafe.core.signals` -- cpu and memory load sampled for the mode;
* :mod:`~asafe.core.reuse` -- how many times a task's output is read, as tasks
  declare it (:func:`~asafe.reuse`), and the mode's ``reuse`` signal made of it;
* :mod:`~asafe.core.domains` -- efficiency domains (:class:`~asafe.Hysteresis`,
  :class:`~asafe.AtLeast`, combined by :class:`~asafe.AllOf` and
  :class:`~asafe.AnyOf`) that map a mode and a state to the next state;
* :mod:`~asafe.core.explain` -- why a domain decides as it does (the values
  and thresholds of its parts), and the check of the metric names domains read;
* :mod:`~asafe.core.runtime` -- :class:`~asafe.Optimization` and the controller,
  :class:`~asafe.AdaptiveRuntime`, which evaluates the domains, applies the dwell
  rule, records transitions and tells its subscribers;
* :mod:`~asafe.core.config` -- the ``dask.config`` settings (``asafe.yaml``); it
  imports nothing else of asafe.

Imports run one way: types -> mode -> tracker, explain -> domains -> runtime;
config is read by all.
"""
