"""Task types: how a task says what kind of work it does.

A task's *type* is a plain string. Two are predefined, :data:`COMPUTE` and
:data:`COMMUNICATION`; any other non-empty string is a user-defined type.

A type reaches the scheduler by two routes:

* :func:`task_type` is a context manager around :func:`dask.annotate`: every task
  built inside it carries the annotation ``asafe_type``. Dask's graph optimizations
  (fusion of blockwise layers, linear fusion) are known to drop annotations
  (dask/dask#7036), so this route can be lost.
* :func:`typed` marks the *function*: the type travels with the callable inside the
  task itself, so it survives optimization, fusion and pickling.

Precedence, applied by :func:`resolve_type`: an explicit annotation from
:func:`task_type` wins over the function's :func:`typed` type (the call site is more
specific than the definition), and either wins over the configured default type.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import dask

__all__ = [
    "COMPUTE",
    "COMMUNICATION",
    "ANNOTATION",
    "task_type",
    "typed",
    "type_of_callable",
    "type_of_task",
    "resolve_type",
    "validate_type",
    "declared_types",
]

#: Type of tasks that mostly compute.
COMPUTE = "compute"
#: Type of tasks that mostly move data.
COMMUNICATION = "communication"
#: The dask annotation name that :func:`task_type` sets.
ANNOTATION = "asafe_type"
#: The attribute that :func:`typed` sets on a function.
_ATTRIBUTE = "__asafe_type__"

F = TypeVar("F", bound=Callable[..., Any])

# Type names this process declared with task_type() or typed(): a domain that
# reads the share of one of them is not reading a typo, even before its tasks
# run (see asafe.core.explain.unknown_metrics).
_DECLARED: set[str] = {COMPUTE, COMMUNICATION}


def declared_types() -> frozenset[str]:
    """The task types this process named in :func:`task_type` or :func:`typed`, with the two built in.

    >>> "compute" in declared_types()
    True
    """
    return frozenset(_DECLARED)


def validate_type(name: object) -> str:
    """Return ``name`` if it is a valid task type, else raise.

    Parameters
    ----------
    name : object
        A candidate type name: a non-empty string.

    Raises
    ------
    TypeError
        ``name`` is not a string.
    ValueError
        ``name`` is empty or only whitespace.

    Examples
    --------
    >>> validate_type("io")
    'io'
    >>> validate_type(3)
    Traceback (most recent call last):
    ...
    TypeError: a task type must be a str such as 'compute' or 'communication', got int 3
    """
    if not isinstance(name, str):
        raise TypeError(
            "a task type must be a str such as 'compute' or 'communication', "
            f"got {type(name).__name__} {name!r}"
        )
    if not name.strip():
        raise ValueError("a task type must be a non-empty string, got an empty one")
    return name


@contextlib.contextmanager
def task_type(name: str) -> Iterator[str]:
    """Annotate every Dask task built inside the block with a task type.

    A thin wrapper over :func:`dask.annotate` (annotation ``asafe_type``). Graph
    optimization may drop annotations; use :func:`typed` where a type must survive
    fusion.

    Parameters
    ----------
    name : str
        :data:`COMPUTE`, :data:`COMMUNICATION` or any other non-empty string.

    Examples
    --------
    >>> import dask
    >>> with task_type("communication"):
    ...     shipped = dask.delayed(sum)([1, 2])
    >>> layer = shipped.__dask_graph__().layers[shipped.key]
    >>> layer.annotations["asafe_type"]
    'communication'
    """
    validate_type(name)
    _DECLARED.add(name)
    with dask.annotate(**{ANNOTATION: name}):
        yield name


def typed(name: str) -> Callable[[F], F]:
    """Decorator: the function carries its task type wherever its tasks go.

    The function is returned unchanged but for one attribute, so it pickles and
    behaves as before; tasks calling it are typed even after Dask fuses them.

    Parameters
    ----------
    name : str
        The task type.

    Examples
    --------
    >>> @typed("compute")
    ... def multiply(tile, x):
    ...     return tile @ x
    >>> type_of_callable(multiply)
    'compute'
    """
    validate_type(name)
    _DECLARED.add(name)

    def mark(func: F) -> F:
        if not callable(func):
            raise TypeError(f"@typed({name!r}) decorates callables, got {type(func).__name__}")
        setattr(func, _ATTRIBUTE, name)
        return func

    return mark


def type_of_callable(func: object) -> str | None:
    """The :func:`typed` type of a callable, looking through partials and wrappers.

    Returns ``None`` for an untyped callable.

    Examples
    --------
    >>> import functools
    >>> @typed("io")
    ... def load(path, mode): ...
    >>> type_of_callable(functools.partial(load, mode="r"))
    'io'
    >>> type_of_callable(print) is None
    True
    """
    for _ in range(8):  # bounded walk: partial(partial(wrapped(f)))
        found = getattr(func, _ATTRIBUTE, None)
        if isinstance(found, str):
            return found
        if isinstance(func, functools.partial):
            func = func.func
        elif hasattr(func, "__wrapped__"):
            func = func.__wrapped__
        else:
            return None
    return None


def type_of_task(task: object) -> str | None:
    """The :func:`typed` type of a task of a Dask graph, or ``None``.

    Handles :class:`dask._task_spec.Task` objects (including fused tasks that run a
    subgraph: the first typed inner task, output first, gives the type) and legacy
    tuple tasks ``(func, *args)``.
    """
    func = getattr(task, "func", None)
    if func is not None:
        found = type_of_callable(func)
        if found is not None:
            return found
        inner = _fused_inner_tasks(task)
        for subtask in inner:
            found = type_of_task(subtask)
            if found is not None:
                return found
        return None
    if isinstance(task, tuple) and task and callable(task[0]):
        return type_of_callable(task[0])
    return None


def _fused_inner_tasks(task: object) -> list[object]:
    """Inner tasks of a fused task (``_execute_subgraph(subgraph, outkey, ...)``)."""
    has_subgraph = getattr(task, "has_subgraph", None)
    if has_subgraph is not None and not has_subgraph():  # dask's Task says: no scan of its arguments
        return []  # (the scheduler resolves every task's type; most are not fused)
    for arg in getattr(task, "args", ()):
        value = getattr(arg, "value", arg)  # DataNode wraps the subgraph dict
        if (type(value) is dict or isinstance(value, Mapping)) and value:  # a plain dict skips the ABC check
            # output task first: it names what the fused task produces (the subgraph maps each inner
            # task's key to it; a lookup, not a sort: the scheduler resolves every task's type)
            first = value.get(getattr(task, "key", None))
            if first is None:
                return list(value.values())
            return [first, *(t for t in value.values() if t is not first)]
    return []


try:  # the compiled walk (asafe/core/_typewalk.c), optional: the same lookups without the interpreter's frames
    from . import _typewalk
except ImportError:  # not built (no C compiler at install): the functions above do the same
    _typewalk = None

#: What :func:`resolve_type` walks a task with: the compiled :func:`type_of_task` where it was built
#: (the scheduler resolves every task's type: 1.0-3.4 us a task in Python alone, 0.4-1.1 compiled), else the
#: function above.
_walk = _typewalk.type_of_task if _typewalk is not None else type_of_task


def resolve_type(annotated: object, task: object, default: str) -> str:
    """Apply the precedence rule: annotation, then :func:`typed`, then default.

    Examples
    --------
    >>> resolve_type("communication", None, "compute")
    'communication'
    >>> resolve_type(None, None, "compute")
    'compute'
    """
    if isinstance(annotated, str) and annotated:
        return annotated
    found = _walk(task)
    return found if found is not None else default
