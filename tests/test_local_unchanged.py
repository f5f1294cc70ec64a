"""asafe.adaptive() observes Dask's local schedulers and changes nothing Dask decides (issue 30).

Each check is one of the differences the peer run of Dask's own tests found:
collections keep their default schedulers, Dask's errors still raise,
``get_scheduler()`` answers as without asafe, and a copy of ``dask.config``
compares equal.
"""
from __future__ import annotations

import copy

import dask
import dask.array as da
import dask.bag as db
import pytest
from dask.base import get_scheduler
from dask.callbacks import Callback

import asafe


def runtime():
    return asafe.AdaptiveRuntime([asafe.Optimization("c", asafe.Hysteresis(0.5, 2.0))], signals=False)


def test_each_collection_keeps_its_default_scheduler():
    array, bag = da.ones(4, chunks=2), db.from_sequence([1, 2, 3], npartitions=2)
    with asafe.adaptive(runtime()):
        assert get_scheduler() is None
        assert get_scheduler(collections=[bag]) is get_scheduler(collections=[db.from_sequence([1])])
        assert get_scheduler(collections=[bag]) is dask.multiprocessing.get
        assert get_scheduler(collections=[array]) is dask.threaded.get
        with pytest.raises(ValueError, match="differing default schedulers"):
            dask.compute(array, bag)
        assert bag.map(lambda x: x + 1).compute() == [2, 3, 4]  # on processes: cloudpickle, as without asafe


def test_the_tasks_are_tracked_on_the_collections_default_scheduler():
    rt = runtime()
    with asafe.adaptive(rt):
        assert da.ones(100, chunks=10).sum().compute() == 100
    assert rt.tracker.finished > 10


def test_a_named_scheduler_is_the_users_choice_and_a_copy_of_the_config_compares_equal():
    with asafe.adaptive(runtime(), scheduler="sync"):
        assert copy.deepcopy(dask.config.config) == dask.config.config
        assert get_scheduler() is not None
    assert dask.config.get("scheduler", None) is None


def test_nothing_stays_registered_after_the_block():
    before = set(Callback.active)
    with asafe.adaptive(runtime()):
        assert len(Callback.active) == len(before) + 1
        dask.compute(dask.delayed(sum)([1, 2]))
    assert Callback.active == before
    assert asafe.is_on("c") is False
