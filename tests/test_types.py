"""Task types: annotation, decorator, precedence, and survival through graph optimization."""
import functools

import dask
import dask.array as da
import pytest

import asafe
from asafe.core.types import resolve_type, type_of_callable, type_of_task, validate_type


@asafe.typed("communication")
def ship(block):
    return block + 1


def test_predefined_types():
    assert asafe.COMPUTE == "compute"
    assert asafe.COMMUNICATION == "communication"


def test_task_type_annotates_layers():
    with asafe.task_type("io"):
        value = dask.delayed(sum)([1, 2])
    layer = value.__dask_graph__().layers[value.key]
    assert layer.annotations == {"asafe_type": "io"}


def test_typed_returns_the_same_function():
    def f(x):
        return x

    assert asafe.typed("compute")(f) is f
    assert type_of_callable(f) == "compute"


def test_type_of_callable_looks_through_partials_and_wrappers():
    @functools.wraps(ship)
    def wrapper(*args):
        return ship(*args)

    assert type_of_callable(functools.partial(ship)) == "communication"
    assert type_of_callable(wrapper) == "communication"
    assert type_of_callable(len) is None


@pytest.mark.parametrize("bad", [3, None, b"compute", ("compute",)])
def test_non_string_types_are_rejected(bad):
    with pytest.raises(TypeError, match="must be a str"):
        validate_type(bad)
    with pytest.raises(TypeError, match="must be a str"):
        asafe.typed(bad)
    with pytest.raises(TypeError, match="must be a str"):
        with asafe.task_type(bad):
            pass


def test_empty_type_is_rejected():
    with pytest.raises(ValueError, match="non-empty"):
        asafe.typed("  ")


def test_typed_rejects_non_callables():
    with pytest.raises(TypeError, match="decorates callables"):
        asafe.typed("compute")(42)


def test_type_survives_blockwise_fusion():
    # map_blocks followed by an elementwise op is fused into one task by
    # dask.optimize; an annotation would be dropped (dask/dask#7036), the
    # function's type is not.
    x = da.ones(10, chunks=5)
    with asafe.task_type("io"):
        y = x.map_blocks(ship) * 2
    (optimized,) = dask.optimize(y)
    tasks = [t for t in dict(optimized.__dask_graph__()).values() if type(t).__name__ == "Task"]
    fused = [t for t in tasks if t.func.__name__ == "_execute_subgraph"]
    assert len(fused) == 2  # one fused task per block
    assert optimized.__dask_graph__().layers[optimized.name].annotations is None  # dropped
    assert {type_of_task(t) for t in fused} == {"communication"}


def test_precedence_annotation_beats_decorator_beats_default():
    task = dask.delayed(ship)(1)
    (t,) = dict(task.__dask_graph__()).values()
    assert resolve_type("io", t, "compute") == "io"
    assert resolve_type(None, t, "compute") == "communication"
    assert resolve_type(None, object(), "compute") == "compute"
