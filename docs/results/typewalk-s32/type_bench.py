"""resolve_type per task, Python walk vs compiled walk, on the tasks of real graphs (as the scheduler sees them)."""
import time, statistics
import dask, dask.array as da
from asafe.core import types
from asafe.core import _typewalk
def graphs():
    x = da.ones((2000, 2000), chunks=20)
    yield "array-reduction (arange sum)", dict(dask.optimize(da.arange(100_000, chunks=10).sum(split_every=8))[0].__dask_graph__())
    yield "fused (ones+3).sum()", dict(dask.optimize((x + 3).sum())[0].__dask_graph__())
    yield "diff x[1:,1:]-y[:-1,:-1]", dict(dask.optimize(x[1:, 1:] - (x * 2)[:-1, :-1])[0].__dask_graph__())
for name, g in graphs():
    tasks = list(g.values())
    for walk_name, walk in (("python", types.type_of_task), ("compiled", _typewalk.type_of_task)):
        xs = []
        for r in range(7):
            t = time.perf_counter()
            for task in tasks:
                found = walk(task)
            xs.append((time.perf_counter() - t) / len(tasks))
        print(f"{name:30s} {len(tasks):7d} tasks  {walk_name:8s} {1e6*statistics.median(xs):6.2f} us/task")
