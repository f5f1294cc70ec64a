"""Does a fresh installation's graph cost more than a kept one's? The workloads suite's reduction (session 49, issue 29).

    PYTHONPATH=. python docs/results/scheduler-s49/installs_ab.py blocks WORKLOAD KIND BLOCKS PER
    PYTHONPATH=. python docs/results/scheduler-s49/installs_ab.py rotate WORKLOAD KIND ROUNDS

An experiment, not a change. A LocalCluster (the scheduler and the client in this process, 2 worker processes of
one thread), the workloads suite's WORKLOAD on its KIND of data (96 MiB inputs, as the suite), each graph after
0.3 s idle, timed from its submission until its outputs are in memory; the cpu of this process (the scheduler and
the client) and of the two workers around the same span (``time.process_time``, not the 10 ms ticks of
``os.times`` the suite records).

- ``blocks``: blocks of PER graphs of each of ``dask`` (nothing installed), ``kept`` (``asafe.install`` at the
  block's start, an untimed graph, then PER graphs on that installation) and ``fresh`` (installed before each
  graph and removed after it, as the suite does, with the suite's own calls between the installation and the
  graph), the three blocks in a rotated order, BLOCKS times. Prints each variant's median and cpu means, and the
  paired ratios of the blocks' medians.
- ``rotate``: graph by graph, ``dask``, ``fresh`` and ``settled`` (installed 0.5 s before the graph instead of
  just before it), ROUNDS rounds in a rotated order. Prints paired ratios of wall and cpu.
"""
import os
import statistics as st
import sys
import time

import cloudpickle
from distributed import Client, LocalCluster, wait

from asafe.app.stats import paired_ratio_ci
from benchmarks import workloads as wl_module
from benchmarks._workloads_cluster import _check_state, _install, _keys_of, _reset_wire, _uninstall, _wait_forgotten
from benchmarks._workloads_defs import WORKLOADS, Spec

cloudpickle.register_pickle_by_value(wl_module)


def _cpu():
    return time.process_time()


def graph_timer(client, name, kind):
    """A function that runs one graph after 0.3 s idle: (wall s, the workers' cpu s, this process's cpu s)."""
    spec = Spec(kind, 96, 0.5, 0)
    workload = WORKLOADS[name]
    inputs = workload.prepare(client, spec)

    def run(before=None):
        time.sleep(0.3)
        handle = before() if before is not None else None
        client.run(_reset_wire)
        workers_before, here_before = client.run(_cpu), _cpu()
        began = time.perf_counter()
        outputs = client.persist(workload.run(client, inputs, spec))
        wait(outputs)
        wall = time.perf_counter() - began
        here_after, workers_after = _cpu(), client.run(_cpu)
        keys = _keys_of(outputs if isinstance(outputs, list) else [outputs])
        del outputs
        if handle is not None:
            _uninstall(client, handle)
        _wait_forgotten(client, keys)
        return wall, sum(workers_after[w] - workers_before[w] for w in workers_after), here_after - here_before

    return run


def installer(client, settle=0.0):
    def install():
        handle = _install(client, "asafe")
        if settle:
            time.sleep(settle)
        _check_state(client, "asafe")  # the suite's calls between an installation and its sample
        return handle

    return install


def blocks(client, run, count, per):
    variants = ("dask", "kept", "fresh")
    res = {v: [] for v in variants}
    for b in range(count):
        for variant in variants[b % 3:] + variants[:b % 3]:
            if variant == "kept":
                handle = _install(client, "asafe")
                run()  # the installation's first graph, untimed
                res[variant] += [run() for _ in range(per)]
                _uninstall(client, handle)
            elif variant == "fresh":
                res[variant] += [run(installer(client)) for _ in range(per)]
            else:
                res[variant] += [run() for _ in range(per)]
    medians = {v: [st.median(x[0] for x in res[v][b * per:(b + 1) * per]) for b in range(count)] for v in variants}
    print(f"{count} blocks of {per} graphs a variant; load average {os.getloadavg()[0]:.2f}")
    _means(res)
    for a, b in (("dask", "kept"), ("dask", "fresh"), ("kept", "fresh")):
        r = paired_ratio_ci(medians[a], medians[b])
        print(f"  blocks' medians, {a} / {b}: {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}] ({r.n} blocks)")


def rotate(client, run, rounds):
    variants = ("dask", "fresh", "settled")
    before = {"dask": None, "fresh": installer(client), "settled": installer(client, settle=0.5)}
    res = {v: [] for v in variants}
    for r in range(rounds):
        order = variants[r % 3:] + variants[:r % 3]
        for variant in order[::-1] if r % 2 else order:
            res[variant].append(run(before[variant]))
    print(f"{rounds} rounds, rotated graph by graph; load average {os.getloadavg()[0]:.2f}")
    _means(res)
    for variant in variants[1:]:
        r = paired_ratio_ci([x[0] for x in res["dask"]], [x[0] for x in res[variant]])
        print(f"  dask / {variant}: {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}]")
        for i, part in ((1, "the workers' cpu"), (2, "the scheduler's and client's cpu")):
            r = paired_ratio_ci([x[i] for x in res[variant]], [x[i] for x in res["dask"]])
            print(f"     {part}, {variant} / dask: {r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}]")


def _means(res):
    base = res["dask"]
    for variant, xs in res.items():
        workers = st.mean(x[1] for x in xs) - st.mean(x[1] for x in base)
        here = st.mean(x[2] for x in xs) - st.mean(x[2] for x in base)
        print(f"  {variant:8s} median {st.median(x[0] for x in xs) * 1e3:.1f} ms; cpu means: workers "
              f"{st.mean(x[1] for x in xs) * 1e3:.2f} ms ({workers * 1e3:+.2f}), scheduler and client "
              f"{st.mean(x[2] for x in xs) * 1e3:.2f} ms ({here * 1e3:+.2f})")


def main():
    design, name, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    numbers = [int(a) for a in sys.argv[4:]]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        run = graph_timer(client, name, kind)
        run()  # a warm-up graph, nothing installed
        print(f"{name}/{kind}, {design}")
        if design == "blocks":
            blocks(client, run, *numbers)
        elif design == "rotate":
            rotate(client, run, *numbers)
        else:
            raise SystemExit(f"the design must be blocks or rotate, got {design!r}")


if __name__ == "__main__":
    main()
