"""External load: a competing job beside the workload, for phases that change under load.

A node running Dask is rarely alone: another tenant's job takes a core and a
share of the memory bandwidth, another job's shuffle takes a share of the link.
Neither shows in a task graph, and a cost calibrated when the node was quiet no
longer holds while they run. A :class:`~asafe.app.workload.Phase` can name such
a job (``Phase(load="memory")``); :func:`asafe.app.workload.run_phase` starts it
before the phase's first task and stops it after the phase's result, the same
for every variant, so a run can change phase by its environment alone: the same
graph, quiet and then loaded.

The competing jobs
------------------
``"memory"``
    One process streams memory on one core: ``numpy.copyto`` between two
    64 MiB arrays, in a loop (a co-located job, as a STREAM-like analysis or a
    shuffle's copies would be). Every kernel gets slower, the bandwidth-bound
    ones more.
``"link"``
    One process sends a bulk TCP flow between two sockets on ``127.0.0.1``.
    Behind a shaped link (:mod:`asafe.app.link`: the whole cluster in a
    network namespace whose loopback is rate-limited) the flow lives in the same
    namespace and takes a share of the link's rate, as another job's transfers
    would; on the plain loopback it costs CPU (the kernel's copies, about a core).
``"cpu"``
    One process computes in cache on one core: ``numpy.sqrt`` over a 32 KiB
    array, in a loop (another tenant's compute-bound job). Every task of a
    worker that shares its core gets slower, whatever it touches: the costs a
    per-task rule calibrated on a quiet node are off by the same factor for
    every operation, while the link is not.

The job runs in a child process (``python -m asafe.app.load KIND``) so that it
competes as a process does, for cores and memory, never for this process's GIL.
The child says ``ready`` on its stdout once it runs; on ``SIGTERM`` it stops and
prints one JSON line of what it did (seconds, bytes copied or moved, elements
computed), which
:func:`external_load` returns in :attr:`Load.report`.

Examples
--------
>>> with external_load(None) as job:   # no load: nothing is started
...     pass
>>> job.report is None
True
>>> check_load("disk")
Traceback (most recent call last):
...
ValueError: load must be None or one of ('memory', 'link', 'cpu'), got 'disk'
"""
from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["LOADS", "Load", "check_load", "external_load", "main"]

#: The competing jobs a phase can name.
LOADS = ("memory", "link", "cpu")
#: Longest wait for the child to say it runs (a cold numpy import on a busy machine).
READY_SECONDS = 60.0
#: Longest wait for the child to stop after SIGTERM before it is killed.
STOP_SECONDS = 10.0
#: Bytes of each of the two arrays the memory job copies between (far out of cache).
MEMORY_BYTES = 64 << 20
#: Elements of the array the cpu job computes on (32 KiB of float64: in the L1/L2 cache).
CPU_ELEMENTS = 4096
#: Bytes of one send of the link job.
LINK_BLOCK = 1 << 20


def check_load(load: Any) -> str | None:
    """``load`` if it names a competing job (or is ``None``); a clear error otherwise."""
    if load is None or load in LOADS:
        return load
    raise ValueError(f"load must be None or one of {LOADS}, got {load!r}")


@dataclass
class Load:
    """A competing job started by :func:`external_load`.

    ``report`` is what the child said it did, once it has stopped (``None``
    while it runs, or where no job was started).
    """

    kind: str | None
    pid: int | None = None
    report: dict[str, Any] | None = None


@contextlib.contextmanager
def external_load(kind: str | None) -> Iterator[Load]:
    """Run the competing job ``kind`` for the duration of the ``with`` block.

    ``None`` starts nothing. The job runs once the block is entered (the child
    has said ``ready``) and is gone when it is left, also when the block
    raises; a child that fails to start raises :class:`RuntimeError` with its
    stderr.
    """
    kind = check_load(kind)
    job = Load(kind)
    if kind is None:
        yield job
        return
    proc = subprocess.Popen([sys.executable, "-m", "asafe.app.load", kind], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    job.pid = proc.pid
    try:
        _wait_ready(proc, kind)
        yield job
    finally:
        job.report = _stop(proc)


def _wait_ready(proc: subprocess.Popen, kind: str) -> None:
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        line = proc.stdout.readline().strip() if sel.select(READY_SECONDS) else ""
    if line != "ready":
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"the competing {kind!r} job did not start (said {line!r}; stderr: {err.strip()!r})")


def _stop(proc: subprocess.Popen) -> dict[str, Any] | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    for line in reversed(out.splitlines()):
        with contextlib.suppress(ValueError):
            return json.loads(line)
    return None


# --------------------------------------------------------------------------- the child
def _memory(stop: threading.Event) -> dict[str, Any]:
    import numpy as np

    a = np.ones(MEMORY_BYTES // 8)
    b = np.empty_like(a)
    _ready()
    copies = 0
    while not stop.is_set():
        np.copyto(b, a)
        copies += 1
    return {"bytes_copied": copies * MEMORY_BYTES}


def _cpu(stop: threading.Event) -> dict[str, Any]:
    import numpy as np

    a = np.linspace(1.0, 2.0, CPU_ELEMENTS)
    b = np.empty_like(a)
    _ready()
    calls = 0
    while not stop.is_set():
        np.sqrt(a, out=b)
        calls += 1
    return {"elements_computed": calls * CPU_ELEMENTS}


def _link(stop: threading.Event) -> dict[str, Any]:
    server = socket.create_server(("127.0.0.1", 0))
    received = [0]

    def receive() -> None:
        conn, _ = server.accept()
        with conn:
            while True:
                chunk = conn.recv(LINK_BLOCK)
                if not chunk:
                    return
                received[0] += len(chunk)

    threading.Thread(target=receive, name="asafe-load-receiver", daemon=True).start()
    sender = socket.create_connection(server.getsockname())

    def send() -> None:
        block = memoryview(b"\0" * LINK_BLOCK)
        with contextlib.suppress(OSError):
            while not stop.is_set():
                sender.sendall(block)

    threading.Thread(target=send, name="asafe-load-sender", daemon=True).start()
    _ready()
    while not stop.wait(0.05):
        pass
    return {"bytes_moved": received[0]}


_JOBS = {"memory": _memory, "link": _link, "cpu": _cpu}


def _ready() -> None:
    print("ready", flush=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m asafe.app.load KIND``: run the competing job until SIGTERM, then report it."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in LOADS:
        print(f"usage: python -m asafe.app.load {{{','.join(LOADS)}}}", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    start = time.perf_counter()
    did = _JOBS[args[0]](stop)
    print(json.dumps({"kind": args[0], "seconds": time.perf_counter() - start, "pid": os.getpid(), **did}),
          flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process
    sys.exit(main())
