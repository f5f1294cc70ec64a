"""The workers' side of the workloads suite's reduction under py-spy: plain Dask or asafe installed once (session 52).

    PYTHONPATH=. python docs/results/workers-s52/profile.py VARIANT GRAPHS OUT    # VARIANT: dask or asafe
    python docs/results/workers-s52/profile.py --read OUT/VARIANT-0.txt OUT/VARIANT-1.txt

A LocalCluster (2 worker processes of one thread, the scheduler and the client in this process), the suite's
reduction (``reduce``) of half-zero floats as ``../scheduler-s49/installs_ab.py`` runs it (96 MiB inputs
persisted, each graph after 0.3 s idle, timed from its submission until its outputs are in memory). With
``asafe``, asafe is installed once before the graphs, as a user installs it. py-spy records both workers at
1,000 samples a second (raw stacks, ``OUT/VARIANT-<i>.txt``) while GRAPHS graphs run; it takes cpu of its own
on the 2 cores, so the graphs run about twice as long as without it: read the shares, not the times.

``--read`` prints the samples whose stack holds a frame of asafe's (``asafe/``), grouped by the outermost such
frame, beside the workers' samples that are not waiting (a leaf other than a selector's or a lock's wait).
"""
import collections
import os
import statistics as st
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_WAITS = ("EpollSelector.select", "Condition.wait", "Event.wait", "_wait_for_tstate_lock", "Queue.get")


def record(variant, graphs, out):
    sys.path.insert(0, os.path.join(HERE, "..", "scheduler-s49"))
    from distributed import Client, LocalCluster
    from installs_ab import graph_timer

    from benchmarks._workloads_cluster import _install, _uninstall

    os.makedirs(out, exist_ok=True)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        run = graph_timer(client, "reduce", "zeros")
        run()
        handle = _install(client, "asafe") if variant == "asafe" else None
        run(), run()
        spies = [subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--rate", "1000", "--format", "raw",
                                   "--nonblocking", "-o", os.path.join(out, f"{variant}-{i}.txt")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i, pid in enumerate(client.run(os.getpid).values())]
        time.sleep(1.5)
        began = time.time()
        times = [run() for _ in range(graphs)]
        span = time.time() - began
        for spy in spies:
            spy.send_signal(2)
        for spy in spies:
            spy.wait()
        print(f"{variant}: {graphs} graphs in {span:.1f} s, median {st.median(t[0] for t in times) * 1e3:.1f} ms "
              f"(under py-spy); load average {os.getloadavg()[0]:.2f}")
        if handle is not None:
            _uninstall(client, handle)


def read(paths):
    total = active = ours = wrapped = 0
    outermost = collections.Counter()
    for path in paths:
        with open(path) as f:
            for line in f:
                stack, _, count = line.rstrip().rpartition(" ")
                count, frames = int(count), stack.split(";")
                total += count
                if not frames[-1].startswith(_WAITS):
                    active += count
                mine = [i for i, frame in enumerate(frames) if "asafe/" in frame]
                if mine and any("distributed/protocol/" in frame for frame in frames[mine[-1] + 1:]):
                    wrapped += count
                elif mine:
                    ours += count
                    outermost[frames[mine[0]]] += count
    print(f"samples {total}, not waiting {active}, in asafe {ours} ({ours / active:.2%} of those not waiting); "
          f"Dask's serialization inside asafe's wire wrappers {wrapped}")
    for frame, count in outermost.most_common(12):
        print(f"{count:6d}  {frame}")


if __name__ == "__main__":
    if sys.argv[1] == "--read":
        read(sys.argv[2:])
    else:
        record(sys.argv[1], int(sys.argv[2]), sys.argv[3])
