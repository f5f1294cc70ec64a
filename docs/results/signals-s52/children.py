"""What listing a process's children costs: psutil's scan of /proc against the kernel's lists (session 52).

    PYTHONPATH=. python docs/results/signals-s52/children.py [EXTRA ...]

For each EXTRA (default 0 and 1000), starts that many idle processes that are *not* this process's
descendants (a shell starts them and exits, so they belong to init: other jobs on the host), one child
of this process with a grandchild (a task's subprocess), and times, 20 times each, alternated:

* ``psutil``: ``psutil.Process().children(recursive=True)``, what the samplers called every ten seconds;
* ``lists``: :func:`asafe.core._procfs.children_pids`, the kernel's per-thread lists.

Both must list the same pids. Prints the medians and the load average; the worker's and the
scheduler's samplers call this once every ``CHILDREN_REFRESH`` (10 s), on the thread that samples.
"""
import os
import statistics as st
import subprocess
import sys
import time

import psutil

from asafe.core import _procfs


def _others(n):
    """n idle processes that are not ours: started by a shell that exits at once."""
    if not n:
        return []
    subprocess.run(["bash", "-c", f"for i in $(seq {n}); do sleep 300 & done; disown -a"], check=True)
    time.sleep(0.5)
    return [p for p in psutil.process_iter(["name", "cmdline"]) if p.info["cmdline"] == ["sleep", "300"]]


def median_seconds(fn, rounds=20):
    """The median of ``rounds`` timed calls of ``fn`` (also what ``tree.py`` times with)."""
    out = []
    for _ in range(rounds):
        began = time.perf_counter()
        fn()
        out.append(time.perf_counter() - began)
    return st.median(out)


def main():
    extras = [int(a) for a in sys.argv[1:]] or [0, 1000]
    code = "import subprocess, sys, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"
    child = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(0.5)
    try:
        for n in extras:
            others = _others(n)
            try:
                scan = sorted(p.pid for p in psutil.Process().children(recursive=True))
                assert scan == _procfs.children_pids(psutil), (scan, _procfs.children_pids(psutil))
                assert len(scan) == 2
                a = median_seconds(lambda: psutil.Process().children(recursive=True))
                b = median_seconds(lambda: _procfs.children_pids(psutil))
                print(f"{len(psutil.pids()):5d} processes on the host: psutil's scan {a * 1e3:8.3f} ms, "
                      f"the kernel's lists {b * 1e3:6.3f} ms ({a / b:,.0f}x); load average {os.getloadavg()[0]:.2f}")
            finally:
                for p in others:
                    p.kill()
    finally:
        for p in psutil.Process(child.pid).children(recursive=True):
            p.kill()
        child.kill()


if __name__ == "__main__":
    main()
