"""Real links: run a command behind a rate-shaped loopback in its own network namespace.

The loopback interface of these machines moves about 25 Gbit/s, so a
``LocalCluster`` ships data between its workers at memory speed and no phase is
ever bound by communication the way it is on a real network. This module runs a
whole command (the demo, a benchmark suite, a script that starts a cluster) in a
fresh Linux network namespace whose loopback is shaped by a token bucket filter::

    unshare --net sh -c 'ip link set lo up &&
        tc qdisc add dev lo root tbf rate R burst B latency 50ms && exec "$@"' CMD...

Every process started inside (the scheduler, the nanny, the workers of a
``LocalCluster``) inherits the namespace, so the whole cluster talks over the
shaped loopback, and nothing it sends can leave the namespace: it has no
interface but ``lo``.

What tbf emulates: a link's rate, and the queueing behind it (a packet waits at
most ``latency`` for its turn, then it is dropped and TCP backs off). What it
does not: propagation delay and jitter (that is netem's job, and netem is not
available on every kernel, these machines included).

The pieces:

:func:`parse_link`
    ``"1gbit"``, ``"100mbit"``, ``"2.5gbit"``, ``"125MBps"`` (tc's units) to a
    :class:`Link`; ``None``, ``""``, ``"loopback"``, ``"none"`` to ``None`` (the
    loopback as it is). A clear :class:`ValueError` for anything else.
:func:`check_available`
    What a namespace needs (Linux, ``unshare``, ``ip`` and ``tc``, root or
    unprivileged user namespaces), tried once for real; :class:`LinkUnavailable`
    says what is missing.
:func:`enter`
    Makes the rest of the current command run behind the link: re-executes it
    (``os.execvpe``) inside a fresh namespace, with ``ASAFE_LINK`` in its
    environment so that the re-executed command knows it is inside and goes on.
    Re-executing keeps threads out of the picture (``unshare(2)`` in a threaded
    process would move only the calling thread).
:func:`run_in_link`
    Runs another command behind the link as a child process and returns its
    :class:`subprocess.CompletedProcess`: for scripts that must not be replaced.
:func:`current`, :func:`measure_throughput`, :func:`describe`
    The link this process is behind (``None`` on the plain loopback), a measured
    check of it (bytes sent between two TCP sockets on the loopback), and the
    record every result file carries under ``environment["link"]``.

Examples
--------
>>> link = parse_link("1gbit")
>>> link.rate, link.bits_per_s, link.burst_bytes, link.latency_ms
('1gbit', 1000000000.0, 524288, 50.0)
>>> parse_link("10gbit").burst_bytes     # 1 ms of the rate once that exceeds 512 KiB
1250000
>>> parse_link("loopback") is None
True
>>> parse_link("fast")
Traceback (most recent call last):
ValueError: cannot read the link rate 'fast': ...
"""
from __future__ import annotations

import functools
import os
import platform
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ENV_LINK",
    "ENV_NETNS",
    "Link",
    "LinkUnavailable",
    "check_available",
    "current",
    "describe",
    "enter",
    "exec_in_link",
    "link_command",
    "measure_throughput",
    "parse_link",
    "run_in_link",
    "summary",
]

#: Environment variable that tells a command it runs behind a link (its rate, e.g. ``1gbit``).
ENV_LINK = "ASAFE_LINK"
#: Environment variable with the namespace the link was made in (``readlink /proc/self/ns/net``).
ENV_NETNS = "ASAFE_LINK_NETNS"

#: Words that mean "no shaping: the loopback as it is".
LOOPBACK_WORDS = ("loopback", "none", "off")

#: Smallest token bucket: 512 KiB, eight of the loopback's 64 KiB packets (MTU 65536),
#: so that a TCP segmentation burst never exceeds the bucket (tbf drops such packets).
MIN_BURST_BYTES = 512 * 1024
#: Above 512 KiB the bucket holds this many seconds of the rate (1 ms), so that the
#: kernel's timer granularity does not cap the rate of fast links.
BURST_SECONDS = 1e-3
#: Longest a packet may wait in the tbf queue before it is dropped (sets the queue length).
LATENCY_MS = 50.0
#: Accepted rates (the shaped cluster must still be usable; above the loopback's own
#: speed, about 25 Gbit/s here, shaping does nothing).
MIN_BITS_PER_S = 1e6
MAX_BITS_PER_S = 100e9

# tc's units (iproute2's tc_util.c), bits per second per unit. Bit units are read in
# any case; byte units ("Bps") need the capital B, because "1gbps" is read by tc as
# gigaBYTES per second and by most people as gigabits.
_BIT_UNITS = {
    "bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kibit": 2.0**10, "mibit": 2.0**20, "gibit": 2.0**30, "tibit": 2.0**40,
}
_BYTE_UNITS = {
    "Bps": 8.0, "KBps": 8e3, "MBps": 8e6, "GBps": 8e9, "TBps": 8e12,
    "KiBps": 8 * 2.0**10, "MiBps": 8 * 2.0**20, "GiBps": 8 * 2.0**30, "TiBps": 8 * 2.0**40,
}
_ACCEPTED = ("a number and one of tc's units: bit, kbit, mbit, gbit, tbit, kibit, mibit, gibit, tibit "
             "(bits per second) or Bps, KBps, MBps, GBps, KiBps, MiBps, GiBps (bytes per second, capital B); "
             f"e.g. 1gbit, 100mbit, 2.5gbit, 125MBps; or {', '.join(LOOPBACK_WORDS)} for the unshaped loopback")
_RATE = re.compile(r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)(?:[eE](?P<exp>[+-]?\d+))?\s*(?P<unit>[A-Za-z]+)\s*$")

# Where ip and tc live (often /usr/sbin, which is not on every user's PATH).
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")


@dataclass(frozen=True)
class Link:
    """A shaped loopback: tbf ``rate``, ``burst`` and ``latency``.

    Build one with :func:`parse_link`. ``rate`` is the canonical text (``1gbit``),
    ``bits_per_s`` its value; ``burst_bytes`` is ``max(512 KiB, 1 ms of the rate)``
    and ``latency_ms`` 50 ms (see the module constants for why).
    """

    rate: str
    bits_per_s: float
    burst_bytes: int
    latency_ms: float = LATENCY_MS

    @property
    def bytes_per_s(self) -> float:
        return self.bits_per_s / 8.0

    @property
    def gbit_per_s(self) -> float:
        return self.bits_per_s / 1e9

    def tc_arguments(self) -> list[str]:
        """The qdisc of ``tc qdisc add dev lo root ...``: rate in bit/s, burst in bytes."""
        return ["tbf", "rate", f"{int(round(self.bits_per_s))}bit", "burst", str(self.burst_bytes),
                "latency", f"{self.latency_ms:g}ms"]

    def as_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "bits_per_s": self.bits_per_s, "gbit_per_s": self.gbit_per_s,
                "burst_bytes": self.burst_bytes, "latency_ms": self.latency_ms,
                "qdisc": "tc qdisc add dev lo root " + " ".join(self.tc_arguments())}

    def __str__(self) -> str:
        return (f"tbf {self.rate} ({_format_rate(self.bits_per_s)}), burst {self.burst_bytes / 1024:.0f} KiB, "
                f"latency {self.latency_ms:g} ms")


class LinkUnavailable(RuntimeError):
    """A shaped link cannot be made here; the message says what is needed."""


# --------------------------------------------------------------------------- parsing
def parse_link(value: str | Link | None) -> Link | None:
    """Read a link rate: ``"1gbit"`` -> :class:`Link`, ``None``/``"loopback"`` -> ``None``.

    Parameters
    ----------
    value : str, Link or None
        A number with one of tc's units (``1gbit``, ``100mbit``, ``2.5gbit``,
        ``125MBps``), or ``None``, ``""``, ``"loopback"``, ``"none"``, ``"off"``
        for the loopback as it is. A :class:`Link` is returned as it is.

    Raises
    ------
    ValueError
        For anything else, naming the accepted forms; for a rate outside 1 Mbit/s
        to 100 Gbit/s; for ``gbps``-style units, which tc reads as bytes.
    """
    if value is None or isinstance(value, Link):
        return value
    if not isinstance(value, str):
        raise ValueError(f"a link rate is a string such as '1gbit', got {type(value).__name__} {value!r}")
    text = value.strip()
    if text == "" or text.lower() in LOOPBACK_WORDS:
        return None
    m = _RATE.match(text)
    if m is None:
        if re.fullmatch(r"\s*\d+(\.\d*)?\s*", text):
            raise ValueError(f"the link rate {value!r} has no unit (tc would read bytes per second); "
                             f"write {text}mbit or {text}gbit. Accepted: {_ACCEPTED}")
        raise ValueError(f"cannot read the link rate {value!r}: accepted forms are {_ACCEPTED}")
    number = float(m["num"]) * (10.0 ** int(m["exp"]) if m["exp"] else 1.0)
    unit = m["unit"]
    if unit.lower() in _BIT_UNITS:
        bits = number * _BIT_UNITS[unit.lower()]
    elif unit in _BYTE_UNITS:
        bits = number * _BYTE_UNITS[unit]
    elif unit.lower().endswith("bps"):
        raise ValueError(f"ambiguous link rate {value!r}: tc reads '{unit}' as BYTES per second. "
                         f"Write {m['num']}{unit[:-3].lower()}bit for bits per second, or "
                         f"{m['num']}{unit[:-3].upper()}Bps for bytes per second")
    else:
        raise ValueError(f"unknown unit {unit!r} in the link rate {value!r}: accepted forms are {_ACCEPTED}")
    if not MIN_BITS_PER_S <= bits <= MAX_BITS_PER_S:
        raise ValueError(f"the link rate {value!r} is {_format_rate(bits)}; accepted: "
                         f"{_format_rate(MIN_BITS_PER_S)} to {_format_rate(MAX_BITS_PER_S)}")
    burst = max(MIN_BURST_BYTES, int(round(bits / 8.0 * BURST_SECONDS)))
    return Link(rate=_canonical(bits), bits_per_s=bits, burst_bytes=burst)


def _canonical(bits: float) -> str:
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bits >= scale and abs(bits / scale - round(bits / scale, 3)) < 1e-9:
            return f"{round(bits / scale, 3):.12g}{unit}"
    return f"{int(round(bits))}bit"


def _format_rate(bits: float) -> str:
    if bits >= 1e9:
        return f"{bits / 1e9:g} Gbit/s"
    return f"{bits / 1e6:g} Mbit/s"


# --------------------------------------------------------------------------- what is needed
def _tool(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(_SBIN))


def _needs() -> str:
    return ("A shaped link needs Linux, the commands unshare (util-linux), ip and tc (iproute2), the "
            "kernel's tbf qdisc (sch_tbf), and either root (CAP_SYS_ADMIN and CAP_NET_ADMIN) or "
            "unprivileged user namespaces (sysctl user.max_user_namespaces > 0; on Debian/Ubuntu also "
            "kernel.unprivileged_userns_clone=1, and on Ubuntu 24.04 "
            "kernel.apparmor_restrict_unprivileged_userns=0). Leave --link out to use the loopback as it is.")


def _script(link: Link, ip: str, tc: str, then: str) -> str:
    q = shlex.quote
    return (f"{q(ip)} link set lo up && {q(tc)} qdisc add dev lo root {' '.join(link.tc_arguments())} && "
            f"{then}")


@functools.lru_cache(maxsize=None)
def _probe() -> tuple[tuple[str, ...], str, str]:
    system = platform.system()
    if system != "Linux":
        raise LinkUnavailable(f"shaped links use Linux network namespaces; this is {system}. " + _needs())
    tools = {name: _tool(name) for name in ("unshare", "ip", "tc")}
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        raise LinkUnavailable(f"missing on PATH (and in {', '.join(_SBIN)}): {', '.join(missing)}. " + _needs())
    unshare, ip, tc = tools["unshare"], tools["ip"], tools["tc"]
    candidates = []
    if os.geteuid() == 0:
        candidates.append((unshare, "--net"))
    candidates.append((unshare, "--user", "--map-root-user", "--net"))
    probe = _script(Link("1gbit", 1e9, MIN_BURST_BYTES), ip, tc, "true")
    errors = []
    for prefix in candidates:
        try:
            out = subprocess.run([*prefix, "sh", "-c", probe], capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(f"`{' '.join(prefix)}`: {exc}")
            continue
        if out.returncode == 0:
            return prefix, ip, tc
        detail = (out.stderr or out.stdout).strip().replace("\n", " ") or f"exit status {out.returncode}"
        errors.append(f"`{' '.join(prefix)} sh -c '...'` failed: {detail}")
    raise LinkUnavailable("cannot make a network namespace with a shaped loopback here (as "
                          f"{'root' if os.geteuid() == 0 else 'uid ' + str(os.geteuid())}): "
                          + "; ".join(errors) + ". " + _needs())


def check_available() -> tuple[str, ...]:
    """Check that a shaped link can be made here, by making one once (cached).

    Returns
    -------
    tuple of str
        The ``unshare`` command line that makes a namespace: ``unshare --net`` as
        root, ``unshare --user --map-root-user --net`` otherwise.

    Raises
    ------
    LinkUnavailable
        Not Linux, a tool missing, or the trial failed: the message gives the real
        error and what is needed.
    """
    return _probe()[0]


def link_command(link: str | Link, argv: Sequence[str]) -> list[str]:
    """The command line that runs ``argv`` behind ``link`` in a fresh namespace.

    Run it with ``ASAFE_LINK`` set to the link's rate in its environment
    (:func:`exec_in_link` and :func:`run_in_link` do); the shell exports the
    namespace's identity as ``ASAFE_LINK_NETNS`` before it executes ``argv``.
    """
    spec = parse_link(link)
    if spec is None:
        raise ValueError("link_command() needs a shaped link, not the loopback")
    if not argv:
        raise ValueError("link_command() needs a command to run")
    prefix, ip, tc = _probe()
    then = f'{ENV_NETNS}=$(readlink /proc/self/ns/net) && export {ENV_NETNS} && exec "$@"'
    return [*prefix, "sh", "-c", _script(spec, ip, tc, then), "asafe-link", *map(str, argv)]


def _child_env(link: Link, env: Mapping[str, str] | None = None) -> dict[str, str]:
    out = dict(os.environ if env is None else env)
    out[ENV_LINK] = link.rate
    out.pop(ENV_NETNS, None)
    return out


# --------------------------------------------------------------------------- running behind a link
def current() -> Link | None:
    """The link this process runs behind, or ``None`` on the plain loopback.

    True only where ``ASAFE_LINK`` names a rate and this process is still in the
    namespace that was made for it (``ASAFE_LINK_NETNS``), so a variable that
    leaked into the environment of an ordinary process does not count.
    """
    rate = os.environ.get(ENV_LINK)
    netns = os.environ.get(ENV_NETNS)
    if not rate or not netns:
        return None
    try:
        if os.readlink("/proc/self/ns/net") != netns:
            return None
        return parse_link(rate)
    except (OSError, ValueError):
        return None


def _current_argv() -> list[str]:
    orig = getattr(sys, "orig_argv", None)  # Python >= 3.10: the interpreter's own command line
    if orig:
        return [sys.executable, *orig[1:]]
    return [sys.executable, *sys.argv]  # pragma: no cover


def exec_in_link(link: str | Link, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """Replace this process with ``argv`` run behind ``link`` in a fresh namespace (never returns)."""
    spec = parse_link(link)
    command = link_command(spec, argv)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):
            pass
    os.execvpe(command[0], command, _child_env(spec, env))


def enter(link: str | Link | None, argv: Sequence[str] | None = None, *, measure: bool = True) -> Link | None:
    """Make the rest of the current command run behind ``link``.

    Outside a namespace for ``link``, re-executes the command (``argv``, default
    the interpreter's own command line, ``sys.orig_argv``) inside a fresh one: this
    call then never returns, and the re-executed command calls it again, finds
    itself inside, and goes on. Call it early, before the command starts threads,
    files or clusters it would start again.

    Parameters
    ----------
    link : str, Link or None
        The rate (see :func:`parse_link`); ``None``/``"loopback"`` does nothing.
    argv : sequence of str, optional
        The command to re-execute; default this process's own.
    measure : bool
        Inside, measure the link once (:func:`measure_throughput`) so that
        :func:`describe` reports it.

    Returns
    -------
    Link or None
        The link now in force (``None`` for the loopback).

    Raises
    ------
    ValueError
        The rate cannot be read.
    LinkUnavailable
        No namespace can be made here.
    """
    spec = parse_link(link)
    if spec is None:
        return None
    inside = current()
    if inside is not None and inside.rate == spec.rate:
        if measure:
            _measured()
        return inside
    exec_in_link(spec, list(argv) if argv is not None else _current_argv())
    raise AssertionError("unreachable")  # pragma: no cover


def run_in_link(link: str | Link, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                **kwargs: Any) -> subprocess.CompletedProcess:
    """Run ``argv`` behind ``link`` as a child process; return its :class:`subprocess.CompletedProcess`.

    Keyword arguments go to :func:`subprocess.run` (``capture_output=True``,
    ``text=True``, ``timeout=...``, ``check=True``). Inside, ``ASAFE_LINK`` is set
    and :func:`current` returns the link, so an asafe command or a script that
    calls :func:`enter` with the same rate goes on without re-executing.

    >>> run_in_link("1gbit", ["python", "my_cluster_script.py"], check=True)  # doctest: +SKIP
    """
    spec = parse_link(link)
    if spec is None:
        return subprocess.run(list(argv), env=None if env is None else dict(env), **kwargs)
    return subprocess.run(link_command(spec, argv), env=_child_env(spec, env), **kwargs)


# --------------------------------------------------------------------------- the measured check
def measure_throughput(nbytes: int | None = None, *, seconds: float = 0.5) -> dict[str, Any]:
    """Send ``nbytes`` between two TCP sockets on 127.0.0.1 and time it.

    The default size is what the link in force moves in about ``seconds`` (0.5 s),
    at least 1 MB and at most 50 MB (the plain loopback moves 50 MB in a few ms).
    The time runs from the first byte sent to the receiver's acknowledgement of the
    last one, so it includes tbf's initial burst (``burst_bytes`` at memory speed).

    Returns
    -------
    dict
        ``bytes``, ``seconds``, ``gbit_per_s``, and where a link is in force
        ``fraction_of_rate`` (measured / configured).
    """
    link = current()
    if nbytes is None:
        nbytes = 50_000_000 if link is None else int(min(50e6, max(1e6, link.bytes_per_s * seconds)))
    nbytes = int(nbytes)
    if nbytes <= 0:
        raise ValueError(f"nbytes must be > 0, got {nbytes}")
    server = socket.create_server(("127.0.0.1", 0))
    received = [0]
    errors: list[BaseException] = []

    def receive() -> None:
        try:
            conn, _ = server.accept()
            with conn:
                while received[0] < nbytes:
                    chunk = conn.recv(1 << 20)
                    if not chunk:
                        break
                    received[0] += len(chunk)
                conn.sendall(b"k")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=receive, name="asafe-link-receiver", daemon=True)
    thread.start()
    try:
        with socket.create_connection(server.getsockname(), timeout=120) as sender:
            block = b"\0" * (1 << 20)
            view = memoryview(block)
            start = time.perf_counter()
            sent = 0
            while sent < nbytes:
                k = min(len(block), nbytes - sent)
                sender.sendall(view[:k])
                sent += k
            ack = sender.recv(1)
            elapsed = time.perf_counter() - start
        thread.join(timeout=10)
    finally:
        server.close()
    if errors or ack != b"k" or received[0] != nbytes:
        raise RuntimeError(f"loopback throughput check failed: received {received[0]} of {nbytes} bytes"
                           + (f" ({errors[0]!r})" if errors else ""))
    out = {"bytes": nbytes, "seconds": elapsed, "gbit_per_s": nbytes * 8 / elapsed / 1e9,
           "how": "TCP between two sockets on 127.0.0.1 in this process, first byte to acknowledgement"}
    if link is not None:
        out["fraction_of_rate"] = nbytes * 8 / elapsed / link.bits_per_s
    return out


_MEASURED: dict[str, dict[str, Any]] = {}
_MEASURE_LOCK = threading.Lock()


def _measured() -> dict[str, Any] | None:
    """The link's measured check, taken once per process (``None`` on the plain loopback)."""
    link = current()
    if link is None:
        return None
    with _MEASURE_LOCK:
        if link.rate not in _MEASURED:
            _MEASURED[link.rate] = measure_throughput()
        return _MEASURED[link.rate]


def _qdisc() -> str | None:
    tc = _tool("tc")
    if tc is None:
        return None
    try:
        out = subprocess.run([tc, "qdisc", "show", "dev", "lo"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def describe(*, measure: bool = True) -> dict[str, Any]:
    """The link a result was measured on, for ``environment["link"]``.

    On the plain loopback: ``{"shaped": False, "kind": "loopback", ...}``. Behind a
    link: its settings (rate, burst, latency, the qdisc line), the qdisc the kernel
    shows for ``lo`` (``tc qdisc show dev lo``), and with ``measure`` the measured
    check (:func:`measure_throughput`, taken once per process).
    """
    link = current()
    if link is None:
        return {"shaped": False, "kind": "loopback",
                "note": "the loopback interface as it is (no shaping; about 25 Gbit/s on the project's machines)"}
    info: dict[str, Any] = {"shaped": True, "kind": "tbf on the loopback of a private network namespace",
                            **link.as_dict(), "namespace": os.environ.get(ENV_NETNS), "kernel_qdisc": _qdisc(),
                            "emulates": "rate and queueing; not propagation delay or jitter (no netem)"}
    if measure:
        info["measured"] = _measured()
    return info


def summary(info: Mapping[str, Any] | None = None) -> str:
    """One line for a console: the link and its measured check."""
    info = describe() if info is None else info
    if not info.get("shaped"):
        return "link: the loopback as it is (unshaped)"
    text = (f"link: tbf {info['rate']} on lo in namespace {info['namespace']}, burst "
            f"{info['burst_bytes'] / 1024:.0f} KiB, latency {info['latency_ms']:g} ms")
    m = info.get("measured")
    if m:
        text += (f"; measured {m['gbit_per_s']:.3f} Gbit/s ({m['fraction_of_rate']:.2f} of the rate) "
                 f"over {m['bytes'] / 1e6:.0f} MB of loopback TCP")
    return text
