"""What Dask spends calling one more scheduler plugin at one transition (session 44).

python dispatch_floor.py

Dask's scheduler calls every registered plugin's ``transition`` at every transition
(``SchedulerState._transition``: ``for plugin in list(self.plugins.values()): plugin.transition(key, start,
finish, stimulus_id=..., **kwargs)``), and a plain Dask scheduler already holds two plugins (work stealing and
the P2P extension's). This times that loop with one plugin whose hooks are Dask's own no-ops, less the loop with
none, with the keyword arguments a task's ``processing -> memory`` carries; the best of 5 repeats of 200,000
calls. A lower bound: a tight loop keeps everything in cache."""
import timeit

from distributed.diagnostics.plugin import SchedulerPlugin


class Noop(SchedulerPlugin):
    """A scheduler plugin with Dask's default hooks, which do nothing."""


KWARGS = {"worker": "tcp://127.0.0.1:40000", "nbytes": 28, "type": b"int", "typename": "int", "metadata": {},
          "thread": 140000000000000, "startstops": ({"action": "compute", "start": 1.0, "stop": 1.1},)}


def _dispatch(plugins):
    def run():
        for plugin in list(plugins.values()):
            try:
                plugin.transition("x", "processing", "memory", stimulus_id="task-finished-1", **KWARGS)
            except Exception:
                pass
    return run


def main():
    n = 200_000
    best = {label: min(timeit.repeat(_dispatch(plugins), number=n, repeat=5)) / n * 1e6
            for label, plugins in (("none", {}), ("one", {"noop": Noop()}))}
    print(f"one no-op plugin at one transition: {best['one'] - best['none']:.2f} us "
          f"(the loop with it {best['one']:.2f} us, with none {best['none']:.2f} us)")


if __name__ == "__main__":
    main()
