"""resolve_type over the tasks of an array reduction graph as the scheduler sees them (fused), us per task."""
import sys, time, statistics
sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "/work/main")
import dask, dask.array as da
from asafe.core.types import resolve_type
from dask.base import collections_to_expr
x = da.ones((4000, 4000), chunks=(40, 40))
y = (x + 3).sum()
# the graph as the scheduler receives it: optimized (fused) tasks
(y2,) = dask.optimize(y)
graph = dict(y2.__dask_graph__())
tasks = list(graph.values())
fused = sum(1 for t in tasks if getattr(t, "has_subgraph", lambda: False)())
times = []
for _ in range(15):
    t = time.perf_counter()
    for task in tasks:
        resolve_type(None, task, "compute")
    times.append(time.perf_counter() - t)
print(f"{len(tasks)} tasks ({fused} fused): median {statistics.median(times) / len(tasks) * 1e6:.2f} us per task, min {min(times) / len(tasks) * 1e6:.2f}")
