"""Multi-host clusters on one machine: network namespaces joined by a bridge, each host's link shaped by tc.

:mod:`asafe.app.link` runs a whole cluster behind one shaped loopback: every
process sees every other at the same address, and the scheduler cannot tell its
workers' hosts apart. This module makes the hosts of a real cluster instead,
on one Linux machine: ``N`` network namespaces ("hosts"), each with one
interface (``eth0``, a veth pair) plugged into a bridge in a further "switch"
namespace, an address of its own, and a link shaped by ``tc tbf`` at the given
rate in both directions (on the host's end of the pair and on the switch's
port towards it: a full-duplex link)::

      host 0 (10.201.0.1)      host 1 (10.201.0.2)      host 2 (10.201.0.3)
      scheduler, client        worker(s)                worker(s)
          eth0 [tbf]               eth0 [tbf]               eth0 [tbf]
            |                        |                        |
          [tbf] h0 ---- br0 (switch namespace) ---- h1 [tbf] ... h2 [tbf]

Nothing here touches the root namespace: the namespaces, the bridge, the veth
pairs and the addresses (``10.201.0.0/24``) exist only inside the namespaces
this module makes, and no namespace has a route anywhere else. The namespaces
share the machine's cpus and memory: what is separate per host is the network
(addresses, ports, links) and the processes that run in each (which is what
the per-host signals of :mod:`asafe.schedulers.hosts` read; see there).

The pieces:

:func:`parse_hosts`, :func:`check_available`
    The number of hosts (2 to :data:`MAX_HOSTS`: host 0 runs the scheduler
    and the client, the others workers), and what building needs (Linux, root,
    ``ip`` and ``tc`` of iproute2, the kernel's veth, bridge and tbf), tried
    once for real; :class:`HostsUnavailable` says what is missing.
:class:`Topology`
    Builds the namespaces (names ``asafe-h<pid>-<k>``, the switch
    ``asafe-h<pid>-sw``: the pid of the process that made them), runs commands
    in a host (``ip netns exec``), and removes everything on :meth:`Topology.close`,
    at interpreter exit, and -- for a run that was killed -- at the next build or
    :func:`cleanup_stale`: namespaces whose pid is gone are removed with every
    process still in them. Processes started in a host die with the thread that
    started them (``setpriv --pdeathsig KILL``, where util-linux has it).
:class:`HostCluster`
    A Dask cluster on a topology: ``dask scheduler`` in host 0, ``dask worker``
    in hosts 1..N-1 (each with its own address), and the environment for a
    client in host 0 (:meth:`HostCluster.client_env`), where :func:`current`
    finds it and :func:`connect` connects to it.
:func:`cluster_client`
    What a benchmark suite calls to get its cluster: the topology's scheduler
    when the suite runs in one (``python -m benchmarks SUITE --hosts 3 --link
    1gbit`` re-executes the suite in host 0 with the cluster started), a
    ``LocalCluster`` otherwise.

Examples
--------
>>> parse_hosts("3")
3
>>> parse_hosts(1)
Traceback (most recent call last):
ValueError: --hosts must be an integer from 2 to 64 (host 0 runs the scheduler and the client, the others the workers), got 1
>>> Topology(3, "1gbit").hosts[2]
Host(index=2, netns='asafe-h...-2', address='10.201.0.3')
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import link as _link

__all__ = [
    "ENV_HOSTS",
    "MAX_HOSTS",
    "Host",
    "HostCluster",
    "HostsUnavailable",
    "Topology",
    "check_available",
    "cleanup_stale",
    "cluster_client",
    "connect",
    "current",
    "describe",
    "parse_hosts",
    "popen_in_host",
    "stale_namespaces",
]

#: Environment variable that tells a client it runs in host 0 of a topology (JSON, see :func:`current`).
ENV_HOSTS = "ASAFE_HOSTS"
#: Most hosts of one topology.
MAX_HOSTS = 64
#: Prefix of every namespace this module makes: ``asafe-h<pid>-<k>`` and ``asafe-h<pid>-sw``.
PREFIX = "asafe-h"
#: The hosts' subnet (only inside the namespaces; each topology has its own bridge, so two at once do not meet).
SUBNET = "10.201.0"
#: The scheduler's port in host 0 (a fresh namespace: nothing else listens there).
SCHEDULER_PORT = 8786
#: Dask config of the worker processes: their host is their network namespace (asafe.schedulers.hosts).
WORKER_HOST_SCOPE = "netns"

_NAME = re.compile(rf"^{re.escape(PREFIX)}(?P<pid>\d+)(?P<serial>[a-z]*)-(?P<role>sw|\d+)$")


class HostsUnavailable(RuntimeError):
    """A multi-host topology cannot be built here; the message says what is missing."""


@dataclass(frozen=True)
class Host:
    """One host of a :class:`Topology`: its namespace and its address on the bridge."""

    index: int
    netns: str
    address: str


def parse_hosts(value: Any) -> int:
    """The number of hosts: an integer from 2 to :data:`MAX_HOSTS` (a clear ``ValueError`` otherwise)."""
    try:
        n = int(value)
        if isinstance(value, float) and n != value or isinstance(value, bool):
            raise ValueError
    except (TypeError, ValueError):
        n = None
    if n is None or not 2 <= n <= MAX_HOSTS:
        raise ValueError(f"--hosts must be an integer from 2 to {MAX_HOSTS} (host 0 runs the scheduler and the "
                         f"client, the others the workers), got {value!r}")
    return n


# --------------------------------------------------------------------------- what is needed
def _needs() -> str:
    return ("A multi-host topology needs Linux, root (CAP_SYS_ADMIN and CAP_NET_ADMIN: `ip netns add` mounts "
            "/run/netns), the commands ip and tc (iproute2), and the kernel's veth, bridge and tbf (sch_tbf) "
            "support. Leave --hosts out to run the cluster on one host.")


def _ip_tc() -> tuple[str, str]:
    tools = {name: _link._tool(name) for name in ("ip", "tc")}
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        raise HostsUnavailable(f"missing on PATH (and in {', '.join(_link._SBIN)}): {', '.join(missing)}. "
                               + _needs())
    return tools["ip"], tools["tc"]


@functools.lru_cache(maxsize=None)
def _probe() -> tuple[str, str]:
    system = platform.system()
    if system != "Linux":
        raise HostsUnavailable(f"network namespaces are Linux's; this is {system}. " + _needs())
    ip, tc = _ip_tc()
    if os.geteuid() != 0:
        raise HostsUnavailable(f"this process runs as uid {os.geteuid()}, not root. " + _needs())
    trial = Topology(2, "1gbit", _trial=True)
    try:
        trial.build()
    except HostsUnavailable as exc:
        raise HostsUnavailable(f"a trial topology of 2 hosts failed: {exc}. " + _needs()) from None
    finally:
        trial.close()
    return ip, tc


def check_available() -> tuple[str, str]:
    """Check that a topology can be built here, by building a small one once (cached).

    Returns
    -------
    (str, str)
        The paths of ``ip`` and ``tc``.

    Raises
    ------
    HostsUnavailable
        Not Linux, not root, a tool missing, or the trial failed: the message
        gives the real error and what is needed.
    """
    return _probe()


# --------------------------------------------------------------------------- cleaning up
def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _netns_names(ip: str) -> list[str]:
    out = subprocess.run([ip, "netns", "list"], capture_output=True, text=True, timeout=30)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def stale_namespaces() -> list[str]:
    """Namespaces of this module whose maker (the pid in the name) is gone: a killed run's."""
    try:
        ip, _ = _ip_tc()
    except HostsUnavailable:
        return []
    stale = []
    for name in _netns_names(ip):
        m = _NAME.match(name)
        if m is not None and not _pid_alive(int(m["pid"])):
            stale.append(name)
    return stale


def _remove_namespace(ip: str, name: str) -> None:
    """Kill every process in namespace ``name`` (they would keep it alive), then delete it."""
    out = subprocess.run([ip, "netns", "pids", name], capture_output=True, text=True, timeout=30)
    for text in out.stdout.split():
        with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
            os.kill(int(text), signal.SIGKILL)
    subprocess.run([ip, "netns", "delete", name], capture_output=True, text=True, timeout=30)


def cleanup_stale() -> list[str]:
    """Remove the namespaces of killed runs (see :func:`stale_namespaces`) and their processes; return their names."""
    names = stale_namespaces()
    if names:
        ip, _ = _ip_tc()
        for name in names:
            _remove_namespace(ip, name)
    return names


def _die_with_parent() -> list[str]:
    """The command prefix that makes a child die with its parent: ``setpriv --pdeathsig KILL`` (util-linux).

    A prefix rather than a ``preexec_fn`` (which the subprocess documentation
    calls unsafe in a process with threads, as a Dask client's is). Without
    setpriv the prefix is empty: a killed run's processes are then ended by
    :func:`cleanup_stale` (the next build).
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL"] if setpriv else []


def _in_netns(ip: str, netns: str, argv: Sequence[str]) -> list[str]:
    """``ip netns exec <netns> argv...`` after :func:`_die_with_parent`'s prefix."""
    return [*_die_with_parent(), ip, "netns", "exec", netns, *map(str, argv)]


# --------------------------------------------------------------------------- the topology
class Topology:
    """``n_hosts`` network namespaces on a bridge, each host's link shaped to ``link`` in both directions.

    Parameters
    ----------
    n_hosts : int
        2 to :data:`MAX_HOSTS`.
    link : str or Link
        The rate of every host's link (tc units, :func:`asafe.app.link.parse_link`),
        or ``None``/``"loopback"`` for veth links as they are (unshaped).

    Use it as a context manager (or call :meth:`build` and :meth:`close`)::

        with Topology(3, "1gbit") as topo:
            topo.run(0, ["python", "-c", "print('in host 0')"])

    Processes started in a host (:meth:`popen`) are killed on :meth:`close`, and
    die with the thread that started them (the kernel's parent-death signal
    follows the thread): start them from a thread that lives as long as the
    topology (the main thread).
    """

    def __init__(self, n_hosts: int, link: str | Any = "1gbit", *, _trial: bool = False) -> None:
        self.n_hosts = parse_hosts(n_hosts)
        self.link = _link.parse_link(link)
        tag = f"{PREFIX}{os.getpid()}"
        self._serial = _next_serial() if not _trial else "t"
        base = f"{tag}-" if self._serial == "" else f"{tag}{self._serial}-"
        # The pid stays the first number of the name (what stale_namespaces reads); a second topology of one
        # process gets a letter after it.
        self.switch = f"{base}sw"
        self.hosts = [Host(i, f"{base}{i}", f"{SUBNET}.{i + 1}") for i in range(self.n_hosts)]
        self._built: list[str] = []
        self._processes: list[subprocess.Popen] = []
        self._ip = self._tc = ""
        self._closed = False

    # building -------------------------------------------------------------------------
    def _cmd(self, *args: str) -> None:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().replace("\n", " ") or f"exit status {done.returncode}"
            raise HostsUnavailable(f"`{' '.join(args)}` failed: {detail}")

    def build(self) -> "Topology":
        """Make the namespaces, the bridge, the links and the addresses; returns ``self``.

        Removes the namespaces of killed runs first (:func:`cleanup_stale`).
        Raises :class:`HostsUnavailable` with the failing command's error (what
        was made is removed again).
        """
        if self._built:
            return self
        if platform.system() != "Linux":
            raise HostsUnavailable(f"network namespaces are Linux's; this is {platform.system()}. " + _needs())
        if current() is not None:  # its namespaces could not be removed from inside (a mount namespace of its own)
            raise HostsUnavailable("this process runs in host 0 of a topology already; build topologies from "
                                   "the machine's own network namespace")
        self._ip, self._tc = ip, tc = _ip_tc()
        cleanup_stale()
        _LIVE.add(self)
        try:
            for name in (self.switch, *(h.netns for h in self.hosts)):
                self._cmd(ip, "netns", "add", name)
                self._built.append(name)
            sw = self.switch
            self._cmd(ip, "-n", sw, "link", "set", "lo", "up")
            self._cmd(ip, "-n", sw, "link", "add", "br0", "type", "bridge")
            self._cmd(ip, "-n", sw, "link", "set", "br0", "up")
            for h in self.hosts:
                port = f"p{h.index}"
                # the pair is made inside the host's namespace, its peer moved straight to the switch's
                self._cmd(ip, "-n", h.netns, "link", "add", "eth0", "type", "veth", "peer", "name", port,
                          "netns", sw)
                self._cmd(ip, "-n", sw, "link", "set", port, "master", "br0")
                self._cmd(ip, "-n", sw, "link", "set", port, "up")
                self._cmd(ip, "-n", h.netns, "link", "set", "lo", "up")
                self._cmd(ip, "-n", h.netns, "addr", "add", f"{h.address}/24", "dev", "eth0")
                self._cmd(ip, "-n", h.netns, "link", "set", "eth0", "up")
                if self.link is not None:
                    qdisc = self.link.tc_arguments()
                    self._cmd(ip, "netns", "exec", h.netns, tc, "qdisc", "add", "dev", "eth0", "root", *qdisc)
                    self._cmd(ip, "netns", "exec", sw, tc, "qdisc", "add", "dev", port, "root", *qdisc)
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self) -> "Topology":
        return self.build()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop every process started here and remove every namespace made (idempotent)."""
        for process in self._processes:
            if process.poll() is None:
                with contextlib.suppress(OSError):
                    process.terminate()
        deadline = time.monotonic() + 5
        for process in self._processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(deadline - time.monotonic(), 0.1))
            if process.poll() is None:
                with contextlib.suppress(OSError):
                    process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(5)
        self._processes = []
        for name in reversed(self._built):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                _remove_namespace(self._ip, name)
        self._built = []
        _LIVE.discard(self)

    @property
    def names(self) -> list[str]:
        """The namespaces of this topology (made or to be made)."""
        return [self.switch, *(h.netns for h in self.hosts)]

    # running ----------------------------------------------------------------------------
    def command(self, host: int, argv: Sequence[str]) -> list[str]:
        """``ip netns exec <host's namespace> argv...`` (after :func:`_die_with_parent`'s prefix)."""
        if not self._built:
            raise RuntimeError("the topology is not built (use it as a context manager, or call build())")
        return _in_netns(self._ip, self.hosts[host].netns, argv)

    def popen(self, host: int, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        """Start ``argv`` in host ``host``; it is stopped on :meth:`close` and dies with its starter."""
        process = subprocess.Popen(self.command(host, argv), **kwargs)
        self._processes.append(process)
        return process

    def run(self, host: int, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
        """Run ``argv`` in host ``host`` to its end (keyword arguments go to :func:`subprocess.run`)."""
        return subprocess.run(self.command(host, argv), **kwargs)

    def netns_id(self, host: int) -> str:
        """The kernel's identity of a host's namespace (``net:[inode]``), as ``/proc/PID/ns/net`` reads it."""
        done = self.run(host, ["readlink", "/proc/self/ns/net"], capture_output=True, text=True, timeout=30)
        return done.stdout.strip()

    def describe(self) -> dict[str, Any]:
        """The topology as plain data (recorded with results)."""
        return {
            "hosts": [{"index": h.index, "netns": h.netns, "address": h.address} for h in self.hosts],
            "switch": self.switch,
            "link": None if self.link is None else self.link.as_dict() | {
                "qdisc": f"tc qdisc add dev eth0 root {' '.join(self.link.tc_arguments())} (each host) and the "
                         f"same on the switch's port towards it (full duplex)"},
            "kind": "network namespaces on one machine joined by veth pairs through a bridge; they share its cpus",
        }

    def __repr__(self) -> str:
        return (f"<Topology {self.n_hosts} hosts, link {self.link.rate if self.link else 'unshaped'}, "
                f"{'built' if self._built else 'not built'}>")


_SERIAL = [0]
_SERIAL_LOCK = threading.Lock()


def _next_serial() -> str:
    """'' for the first topology of this process, then 'b', 'c', ... (names stay unique per process)."""
    with _SERIAL_LOCK:
        n = _SERIAL[0]
        _SERIAL[0] += 1
    if n == 0:
        return ""
    letters = ""
    while n:
        n, r = divmod(n, 26)
        letters = "abcdefghijklmnopqrstuvwxyz"[r] + letters
    return letters


_LIVE: set[Topology] = set()


@atexit.register
def _close_all() -> None:  # pragma: no cover - at interpreter exit
    for topology in list(_LIVE):
        topology.close()


# --------------------------------------------------------------------------- a Dask cluster on it
class HostCluster:
    """``dask scheduler`` in host 0 and ``dask worker`` in hosts 1..N-1 of a built :class:`Topology`.

    Parameters
    ----------
    topology : Topology
    workers_per_host : int
        Worker processes per worker host (``dask worker --nworkers``).
    nthreads : int
        Threads per worker.
    env : mapping, optional
        Extra environment of every process (the scheduler's and the workers').
    pythonpath : sequence of str, optional
        Folders put first on the processes' ``PYTHONPATH`` (a checkout whose
        modules the tasks use, e.g. ``benchmarks``).
    timeout : float
        Seconds to wait for the scheduler, and for the workers in :meth:`wait`.

    The processes' output goes to files in :attr:`logdir`; a process that
    exits early is reported with the end of its log.
    """

    def __init__(self, topology: Topology, *, workers_per_host: int = 1, nthreads: int = 1,
                 env: Mapping[str, str] | None = None, pythonpath: Sequence[str] = (), timeout: float = 60.0) -> None:
        if not topology._built:
            raise RuntimeError("HostCluster needs a built Topology")
        if int(workers_per_host) < 1 or int(nthreads) < 1:
            raise ValueError(f"workers_per_host and nthreads must be >= 1, got {workers_per_host}, {nthreads}")
        self.topology = topology
        self.workers_per_host = int(workers_per_host)
        self.nthreads = int(nthreads)
        self.timeout = float(timeout)
        self.logdir = Path(tempfile.mkdtemp(prefix="asafe-hosts-"))
        self.scheduler_address = f"tcp://{topology.hosts[0].address}:{SCHEDULER_PORT}"
        self._env = dict(os.environ)
        self._env.pop(ENV_HOSTS, None)
        self._env.pop(_link.ENV_LINK, None)
        self._env.pop(_link.ENV_NETNS, None)
        self._env.update(env or {})
        if pythonpath:
            self._env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath),
                                                       *filter(None, [self._env.get("PYTHONPATH")])])
        self._processes: list[tuple[str, subprocess.Popen, Path]] = []
        self.workers: list[str] = []

    @property
    def n_workers(self) -> int:
        return (self.topology.n_hosts - 1) * self.workers_per_host

    def _start(self, label: str, host: int, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = self.logdir / f"{label}.log"
        with open(log, "wb") as out:
            process = self.topology.popen(host, argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                          stdin=subprocess.DEVNULL)
        self._processes.append((label, process, log))
        return process

    def start(self) -> "HostCluster":
        """Start the scheduler (and wait until it listens), then the workers; returns ``self``."""
        topo = self.topology
        scheduler_file = self.logdir / "scheduler.json"
        self._start("scheduler", 0, [sys.executable, "-m", "distributed.cli.dask_scheduler",
                                     "--host", topo.hosts[0].address, "--port", str(SCHEDULER_PORT),
                                     "--scheduler-file", str(scheduler_file), "--no-dashboard"], self._env)
        deadline = time.monotonic() + self.timeout
        while not scheduler_file.exists():
            self._check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the scheduler in host 0 did not start within {self.timeout:g} s"
                                   + self._tail("scheduler"))
            time.sleep(0.05)
        worker_env = dict(self._env)
        worker_env["DASK_ASAFE__DISTRIBUTED__HOST_SIGNALS__SCOPE"] = WORKER_HOST_SCOPE
        worker_env.setdefault("NUMBA_NUM_THREADS", str(self.nthreads))  # a worker's kernels use its threads
        for h in topo.hosts[1:]:
            self._start(f"worker-{h.index}", h.index, [
                sys.executable, "-m", "distributed.cli.dask_worker", self.scheduler_address,
                "--host", h.address, "--nworkers", str(self.workers_per_host), "--nthreads", str(self.nthreads),
                "--name", f"host{h.index}", "--no-dashboard", "--death-timeout", str(int(self.timeout))],
                worker_env)
        return self

    def _check_alive(self) -> None:
        for label, process, _ in self._processes:
            if process.poll() is not None:
                raise RuntimeError(f"the {label} process exited with status {process.returncode}"
                                   + self._tail(label))

    def _tail(self, label: str, n: int = 3000) -> str:
        path = self.logdir / f"{label}.log"
        try:
            text = path.read_text(errors="replace")[-n:]
        except OSError:
            return ""
        return f"; the end of its log ({path}):\n{text}"

    def wait(self) -> list[str]:
        """Wait (from host 0) until every worker has joined; return the workers' addresses."""
        script = ("import json, sys; from distributed import Client\n"
                  f"with Client({self.scheduler_address!r}, timeout={self.timeout!r}) as c:\n"
                  f"    c.wait_for_workers({self.n_workers}, timeout={self.timeout!r})\n"
                  "    print(json.dumps(sorted(c.nthreads())))\n")
        done = self.topology.run(0, [sys.executable, "-c", script], capture_output=True, text=True,
                                 timeout=self.timeout + 30, env=self._env)
        if done.returncode != 0:
            self._check_alive()
            raise RuntimeError(f"the workers did not join the scheduler in host 0 within {self.timeout:g} s: "
                               f"{done.stderr.strip()[-2000:]}" + self._tail("worker-1"))
        self.workers = json.loads(done.stdout.strip().splitlines()[-1])
        return self.workers

    def client_env(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a client process in host 0: ``ASAFE_HOSTS`` describes the cluster (:func:`current`)."""
        out = dict(self._env if env is None else env)
        out.pop(_link.ENV_LINK, None)
        out.pop(_link.ENV_NETNS, None)
        out[ENV_HOSTS] = json.dumps({
            "scheduler": self.scheduler_address,
            "n_hosts": self.topology.n_hosts,
            "n_workers": self.n_workers,
            "workers_per_host": self.workers_per_host,
            "nthreads": self.nthreads,
            "rate": None if self.topology.link is None else self.topology.link.rate,
            "netns": self.topology.netns_id(0),
            "topology": self.topology.describe(),
        })
        return out

    def __enter__(self) -> "HostCluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers, then the scheduler (the topology kills what is left on its close)."""
        for label, process, _ in reversed(self._processes):
            if process.poll() is None:
                with contextlib.suppress(OSError):
                    process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
            if process.poll() is None:
                with contextlib.suppress(OSError):
                    process.kill()
        self._processes = []
        shutil.rmtree(self.logdir, ignore_errors=True)


# --------------------------------------------------------------------------- the client's side
def current() -> dict[str, Any] | None:
    """The cluster this process's client should use, when it runs in host 0 of a topology; else ``None``.

    True only where ``ASAFE_HOSTS`` is set and this process is in the namespace
    it names, so a variable that leaked into an ordinary process does not count.
    """
    text = os.environ.get(ENV_HOSTS)
    if not text:
        return None
    try:
        info = json.loads(text)
        if os.readlink("/proc/self/ns/net") != info.get("netns"):
            return None
        return info
    except (OSError, ValueError, AttributeError):
        return None


def describe() -> dict[str, Any] | None:
    """``environment["link"]`` in a topology: the hosts, their links and the cluster; ``None`` outside one."""
    info = current()
    if info is None:
        return None
    topo = info.get("topology") or {}
    return {**topo, "shaped": info.get("rate") is not None,
            "kind": "multi-host topology (asafe.app.hosts): " + str(topo.get("kind", "")),
            "rate": info.get("rate"), "n_hosts": info.get("n_hosts"), "n_workers": info.get("n_workers"),
            "scheduler": info.get("scheduler"),
            "emulates": "per-host links: rate and queueing (tbf); not propagation delay or jitter; the hosts "
                        "share one machine's cpus and memory"}


def popen_in_host(host: int, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """Start ``argv`` in host ``host`` of the topology this process runs in (from host 0; see :func:`current`).

    What a suite uses to load a worker host (``python -m benchmarks wire --hosts 3
    --burn 2 --burn-host 1``). The process dies with its starter, as those of
    :meth:`Topology.popen` do; the caller stops it.

    Raises
    ------
    RuntimeError
        This process does not run in a topology.
    ValueError
        ``host`` is not one of the topology's hosts.
    """
    known = (_current_or_raise().get("topology") or {}).get("hosts") or []
    if not isinstance(host, int) or isinstance(host, bool) or not 0 <= host < len(known):
        raise ValueError(f"host {host!r} is not a host of this topology; allowed: 0 to {len(known) - 1}")
    ip, _ = _ip_tc()
    return subprocess.Popen(_in_netns(ip, known[host]["netns"], argv), **kwargs)


def _current_or_raise() -> dict[str, Any]:
    """:func:`current`, or the error that says how to run in a topology."""
    info = current()
    if info is None:
        raise RuntimeError(f"this process does not run in host 0 of a topology ({ENV_HOSTS} is not set for it); "
                           "run it as `python -m benchmarks SUITE --hosts N`")
    return info


@contextlib.contextmanager
def connect(timeout: float = 60.0) -> Iterator[Any]:
    """A :class:`distributed.Client` of the topology this process runs in, with every worker joined."""
    from distributed import Client

    info = _current_or_raise()
    with Client(info["scheduler"], timeout=timeout) as client:
        client.wait_for_workers(int(info["n_workers"]), timeout=timeout)
        yield client


@contextlib.contextmanager
def cluster_client(n_workers: int = 2, threads_per_worker: int = 1, **local_options: Any) -> Iterator[Any]:
    """A client of the topology this process runs in (:func:`current`), or of a new ``LocalCluster``.

    In a topology, ``n_workers`` and ``threads_per_worker`` are the topology's
    (``--hosts N``: N-1 worker hosts); ``local_options`` go to ``LocalCluster``
    (``processes=True`` and ``dashboard_address=":0"`` unless given).
    """
    if current() is not None:
        with connect() as client:
            yield client
        return
    from distributed import Client, LocalCluster

    options = {"processes": True, "dashboard_address": ":0", **local_options}
    with LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, **options) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(n_workers)
        yield client
