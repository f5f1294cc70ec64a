"""Logical and wire sizes of task outputs, taken where the worker measures them, never read back from its store.

An output that is stored compressed (a tile stored as CSR, a panel of such
tiles) has two sizes: its *logical* size, the bytes it would take dense, and
its *wire* size, the bytes it takes in memory and on the network. The mode
counts communication in logical bytes (so that compressing does not change
the signal that decides it), and so the scheduler needs both for every output
that has them.

A type reports them by having ``logical_nbytes`` and ``nbytes`` attributes and
being registered with :func:`register` (``asafe.compression``'s tiles and
matrices register themselves). Registration marks the type (subclasses
included) and adds a :func:`dask.sizeof.sizeof` implementation for it, unless
the type has its own that calls :func:`note`; it also gives the type a
``__sizeof__`` that does the same where it has none of its own, because a class
that is pickled by value (defined in ``__main__`` or a notebook) reaches a worker
with its attributes but without the registration, and Dask's default ``sizeof``
there calls ``__sizeof__``. A distributed worker calls
``sizeof`` on every task's result on the thread that ran the task, right after
it ran, to learn its ``nbytes``; the implementation answers the wire size, as
before, and also notes ``(logical, wire)`` under the key of the task running on
that thread (``distributed.worker.thread_state.key``). The worker plugin takes
the note when the task reaches memory (:func:`take`) and ships it in the
task's metadata. No output is ever read back from ``worker.data`` (which may be
a disk-backed or custom store: a read would unspill it).

A container of registered objects (a list of tiles) is sized by Dask item by
item, or from a sample of ten items when it is longer; the note then holds the
sampled items' sums, and :func:`take` scales the logical size by the worker's
own ``nbytes`` of the whole, the same extrapolation Dask makes.

The sender's serialization (:mod:`asafe.schedulers.wire`) also writes the two
sizes of a registered object in the frames' header, so the receiver counts the
bytes the object's compression saved without looking at the object.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

__all__ = ["register", "registered", "sizes_of", "note", "take", "discard"]

#: The class attribute that marks a type (and its subclasses) as reporting its sizes.
MARK = "__asafe_reports_sizes__"
_lock = threading.Lock()
#: key of a task that ran on this worker -> [logical, wire, objects] noted by sizeof on its thread
_notes: dict[Any, list[int]] = {}


def register(cls: type, sizeof: bool = True) -> type:
    """Make ``cls`` (and its subclasses) report their logical and wire sizes; usable as a class decorator.

    ``cls`` must have ``logical_nbytes`` and ``nbytes`` attributes. With
    ``sizeof=True`` Dask's :func:`~dask.sizeof.sizeof` of ``cls`` becomes its
    ``nbytes``, noted; a type with its own ``sizeof`` passes ``sizeof=False``
    and calls :func:`note` there.

    Examples
    --------
    >>> @register
    ... class Packed:
    ...     def __init__(self, logical, wire):
    ...         self.logical_nbytes, self.nbytes = logical, wire
    >>> from dask.sizeof import sizeof
    >>> sizeof(Packed(8000, 120)), sizes_of(Packed(8000, 120))
    (120, (8000, 120))
    """
    from dask.sizeof import sizeof as dask_sizeof

    if not isinstance(cls, type):
        raise TypeError(f"register() takes a class with logical_nbytes and nbytes, got {cls!r}")
    setattr(cls, MARK, True)
    if sizeof:
        dask_sizeof.register(cls)(_sizeof)
        if cls.__sizeof__ is object.__sizeof__:
            # The registration above lives in this process. A class that travels by value
            # (defined in ``__main__``, a notebook, a test module: cloudpickle sends its
            # dict) reaches a worker without it, and Dask's default ``sizeof`` there is
            # ``sys.getsizeof``; that calls ``__sizeof__``, which travels with the class.
            # Without it such outputs reported their shallow size (56 bytes) and no note,
            # and the transfer forecast planned nothing for them.
            cls.__sizeof__ = _dunder_sizeof
    return cls


def registered(value: object) -> bool:
    """Whether ``value``'s type reports its sizes (:func:`register`)."""
    return getattr(type(value), MARK, False)


def sizes_of(value: object) -> tuple[int, int] | None:
    """``(logical, wire)`` of a registered object, else ``None``.

    >>> sizes_of(b"bytes") is None
    True
    """
    if not getattr(type(value), MARK, False):
        return None
    logical = int(value.logical_nbytes)  # type: ignore[attr-defined]
    wire = getattr(value, "nbytes", None)
    return logical, int(logical if wire is None else wire)


def _sizeof(value: object) -> int:
    logical, wire = sizes_of(value)  # type: ignore[misc]
    note(logical, wire)
    return wire


def _dunder_sizeof(self: object) -> int:
    # ``__sizeof__`` of a registered class (see register): notes the sizes, answers the wire size
    # (``sys.getsizeof`` adds the object header the garbage collector keeps).
    return _sizeof(self)


def note(logical: int, wire: int) -> None:
    """Note an output's sizes for the task running on this thread (a worker's executor), if any.

    Called by the ``sizeof`` of a registered type; elsewhere it does nothing.
    """
    worker = sys.modules.get("distributed.worker")
    key = getattr(getattr(worker, "thread_state", None), "key", None) if worker is not None else None
    if key is None:
        return
    with _lock:
        found = _notes.get(key)
        if found is None:
            _notes[key] = [logical, wire, 1]
        else:
            found[0] += logical
            found[1] += wire
            found[2] += 1


def take(key: Any, nbytes: int | None) -> tuple[int, int] | None:
    """The sizes noted for ``key``'s output, ``(logical, wire)`` scaled to the worker's ``nbytes``; forgets them.

    One object is taken as noted; several (a container's items, or a sample of
    them) are scaled to the worker's ``nbytes`` of the whole.

    >>> _notes["x"] = [8000, 100, 2]
    >>> take("x", 200), take("x", 200)
    ((16000, 200), None)
    """
    with _lock:
        found = _notes.pop(key, None)
    if found is None:
        return None
    logical, wire, objects = found
    if objects == 1 or nbytes is None or nbytes <= 0 or wire <= 0:
        return logical, wire
    return int(round(logical * nbytes / wire)), int(nbytes)  # a container: Dask's own extrapolation


def discard(key: Any) -> None:
    """Forget a note whose task will not reach memory (it failed or was released)."""
    if _notes:
        with _lock:
            _notes.pop(key, None)
