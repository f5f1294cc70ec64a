"""asafe.core._typewalk, the compiled type walk: the same type (or the same error) as asafe.core.types' Python walk."""
import functools
import subprocess
import sys
import textwrap
from collections.abc import Mapping

import dask
import dask.array as da
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asafe
from asafe.core import types


@asafe.typed("communication")
def ship(block):
    return block


@asafe.typed("io")
def load(block):
    return block


def plain(block):
    return block


class Node:
    """A task-like object: the attributes the walk reads, each present only when given."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)


class Wrapped:
    """A callable whose ``__wrapped__`` leads on (as functools.wraps leaves)."""

    def __init__(self, inner):
        self.__wrapped__ = inner

    def __call__(self, *args):
        return self.__wrapped__(*args)


class Graph(Mapping):
    """A Mapping that is not a dict (the walk's ``isinstance(value, Mapping)`` branch)."""

    def __init__(self, items):
        self._items = dict(items)

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)


class Raising:
    """An object whose lookups of the attributes the walk reads raise something other than AttributeError."""

    READ = {"func", "__asafe_type__", "__wrapped__", "has_subgraph", "args", "value", "key"}

    def __getattr__(self, name):
        if name in self.READ:
            raise ValueError(f"no reading {name}")
        raise AttributeError(name)

    def __repr__(self):
        return "Raising()"


def outcome(walk, task):
    """What ``walk(task)`` returns, or the type of what it raises."""
    try:
        return ("value", walk(task))
    except Exception as exc:  # the same error type from both walks is the contract
        return ("raised", type(exc))


def assert_same(typewalk, task):
    assert outcome(typewalk.type_of_task, task) == outcome(types.type_of_task, task)


def test_the_attribute_is_the_one_typed_sets(typewalk):
    assert typewalk.ATTRIBUTE == types._ATTRIBUTE


def test_resolve_type_walks_with_the_compiled_function(typewalk):
    assert types._walk is typewalk.type_of_task
    task = dask.delayed(ship)(1)
    (t,) = dict(task.__dask_graph__()).values()
    assert types.resolve_type(None, t, "compute") == "communication"
    assert types.resolve_type("io", t, "compute") == "io"


def test_every_task_of_real_graphs_gets_the_same_type(typewalk):
    x = da.ones((40, 40), chunks=10)
    with asafe.task_type("io"):
        y = x.map_blocks(ship) * 2
    graphs = [
        dask.optimize(y)[0].__dask_graph__(),  # fused blockwise tasks: _execute_subgraph with an inner typed task
        y.__dask_graph__(),
        (x.map_blocks(load) + x.T).sum(split_every=2).__dask_graph__(),
        da.arange(100, chunks=10).sum(split_every=3).__dask_graph__(),
        dask.delayed(functools.partial(ship, 1))().__dask_graph__(),
        {"a": (plain, 1), "b": (functools.partial(load), "a"), "c": (sum, ["a", "b"]), "d": 4},  # legacy tuples
    ]
    seen = set()
    for graph in graphs:
        for task in dict(graph).values():
            assert_same(typewalk, task)
            seen.add(types.type_of_task(task))
    assert {"communication", "io", None} <= seen


# Generated task shapes: callables behind partials and wrappers, tasks with and without a
# callable, fused tasks whose subgraph is a dict, a Mapping or wrapped as a DataNode's value,
# with or without has_subgraph, and lookups that raise.
callables = st.recursive(
    st.sampled_from([ship, load, plain, len, Raising(), 3]),
    lambda inner: st.one_of(inner.map(lambda f: functools.partial(f) if callable(f) else Wrapped(f)),
                            inner.map(Wrapped)),
    max_leaves=12,
)


def _fused(draw, children):
    inner = draw(st.lists(children, max_size=4))
    keys = [f"k{i}" for i in range(len(inner))]
    subgraph = dict(zip(keys, inner))
    container = draw(st.sampled_from([dict, Graph]))(subgraph)
    value = draw(st.sampled_from(["bare", "node", "node-none"]))
    arg = container if value == "bare" else Node(value=container if value == "node" else None)
    args = draw(st.permutations([arg, *draw(st.lists(st.sampled_from([1, "x", None, {}]), max_size=2))]))
    attributes = {"func": draw(st.one_of(st.none(), callables)), "args": args}
    key = draw(st.sampled_from([None, "missing", *keys]))
    if key != "missing":
        attributes["key"] = key
    subgraph_says = draw(st.sampled_from(["absent", "none", True, False]))
    if subgraph_says == "none":
        attributes["has_subgraph"] = None
    elif subgraph_says != "absent":
        attributes["has_subgraph"] = (lambda answer=subgraph_says: answer)
    return Node(**attributes)


def fused(children):
    """Fused tasks whose inner tasks are drawn from ``children``."""
    return st.composite(lambda draw: _fused(draw, children))()


def tasks(depth=2):
    """Tasks up to ``depth`` levels of fusion."""
    leaf = st.one_of(
        callables.map(lambda f: Node(func=f)),
        callables.map(lambda f: (f, 1)),
        st.sampled_from([(), (1, 2), None, 7, "key", Node(), Node(func=None), Raising()]),
    )
    return leaf if depth == 0 else st.one_of(leaf, fused(tasks(depth - 1)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(task=tasks())
def test_generated_tasks_get_the_same_type_or_the_same_error(typewalk, task):
    assert_same(typewalk, task)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(func=callables)
def test_generated_callables_get_the_same_type_or_the_same_error(typewalk, func):
    assert (outcome(typewalk.type_of_callable, func) == outcome(types.type_of_callable, func))


@pytest.mark.parametrize("container", [dict, Graph])
@pytest.mark.parametrize("wrap", [lambda g: g, lambda g: Node(value=g)])
def test_a_fused_task_is_typed_by_its_output_task_first(typewalk, container, wrap):
    subgraph = container({"first": Node(func=load), "out": Node(func=ship)})
    for key, expected in (("out", "communication"), ("first", "io"), ("gone", "io")):
        task = Node(func=plain, args=[1, wrap(subgraph)], key=key)
        assert typewalk.type_of_task(task) == types.type_of_task(task) == expected
    task = Node(func=plain, args=[wrap(subgraph)], key="out", has_subgraph=lambda: False)
    assert typewalk.type_of_task(task) is None and types.type_of_task(task) is None


def test_a_chain_longer_than_the_bound_is_untyped_in_both(typewalk):
    func = ship
    for _ in range(7):
        func = Wrapped(func)  # (functools.partial flattens a partial of a partial)
    assert types.type_of_callable(func) == typewalk.type_of_callable(func) == "communication"
    func = Wrapped(func)
    assert types.type_of_callable(func) is None and typewalk.type_of_callable(func) is None


def test_a_task_nested_without_end_raises_recursion_error(typewalk):
    task = Node(func=plain, args=[{}])
    for _ in range(100_000):
        task = Node(func=plain, args=[{"out": task}], key="out")
    with pytest.raises(RecursionError):
        typewalk.type_of_task(task)


def test_without_the_compiled_module_resolve_type_walks_in_python(tmp_path):
    code = textwrap.dedent("""
        import sys
        sys.modules["asafe.core._typewalk"] = None  # as if it had not been built
        import dask, asafe
        from asafe.core import types
        assert types._typewalk is None and types._walk is types.type_of_task
        f = asafe.typed("io")(lambda x: x)
        (task,) = dict(dask.delayed(f)(1).__dask_graph__()).values()
        assert types.resolve_type(None, task, "compute") == "io"
        print("python walk ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "python walk ok"
