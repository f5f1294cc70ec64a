"""The state board: where tasks read optimization states (:func:`is_on`).

Reads are on the hot path of library code, so they never take a lock or cross a
process boundary per call:

* In the process that runs the controller (threaded and synchronous schedulers)
  and on each distributed worker, states live in a module-level dict that is
  replaced, never mutated, on every update (copy-on-write): a reader on another
  thread sees either the old or the new snapshot.
* Worker processes of Dask's ``processes`` scheduler are children of the
  controller's process. The controller also writes its states into a small
  memory-mapped file; a child maps that file once and on each read compares an
  8-byte sequence number (a seqlock), decoding the states only when they changed.

Outside any adaptive run :func:`is_on` returns ``False`` for every name, so
library code may call it unconditionally.

The shared file is scoped to the run
------------------------------------
Only processes the controller hands the file's name to read it:

* The name is unguessable: the file ``board.bin`` (mode 0600) lives in a private
  directory made by :func:`tempfile.mkdtemp` (mode 0700, a random suffix), one
  per run, created when the first states are shared.
* The name is handed over in the environment variable :data:`ENV`
  (``ASAFE_BOARD``), set in the controller's process while the board is active.
  Dask's ``processes`` scheduler creates its pool inside each ``get`` and its
  workers are spawned (``multiprocessing.context: spawn``) or forked from the
  controller then, so they inherit the variable (Dask itself hands
  ``PYTHONHASHSEED`` to its workers the same way). A process without the
  variable -- a worker of an unrelated cluster, any process started before the
  run or with a cleaned environment -- reads nothing: :func:`is_on` answers
  ``False``. (Earlier versions fell back to ``/tmp/asafe-board-<parent pid>.bin``,
  which any child of the controller, or any process whose parent's pid matched,
  could read.) A caveat: the controller's other children started *during* a run
  inherit the variable too; they belong to the same user and the same run.
* Cleanup: the file and its directory are removed when the run ends (the
  states are cleared first, so a child that still maps the unlinked file reads
  nothing) and at interpreter exit. A file cannot be unlinked right after the
  children map it, because Dask starts a fresh pool per ``compute`` inside a run
  and its workers map the file lazily, on their first :func:`is_on`. So that a
  controller killed by SIGKILL (no ``atexit``) leaves nothing behind for good,
  the directory's name carries the controller's pid
  (``asafe-board-<pid>-<random>``), and the first board a process creates sweeps
  the directories of this user whose pid is no longer alive (one directory
  listing per process).
"""
from __future__ import annotations

import atexit
import difflib
import json
import logging
import mmap
import os
import struct
import tempfile
import threading
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["is_on", "state", "peek", "publish", "snapshot", "restore", "clear", "ENV"]

logger = logging.getLogger("asafe")
_MISSING = object()

#: The environment variable that hands the shared board's path to child processes.
ENV = "ASAFE_BOARD"

_HEADER = struct.Struct("<QI")  # sequence number (odd while writing), payload length
_CAPACITY = 1 << 16  # bytes of JSON payload: thousands of optimization names
_RECHECK = 0.5  # seconds between looks for a board file that could not be opened
_DIR_PREFIX = "asafe-board-"  # + "<pid>-" + mkdtemp's random suffix
_FILE = "board.bin"

_local: dict[str, Any] = {}
_warned: set[str] = set()  # names asked about that the published states lack (warned once each)


def state(name: str, default: Any = None) -> Any:
    """The state of optimization ``name`` where this task runs: ``True``/``False``, or a value such as a codec.

    Returns ``default`` outside an adaptive run. Inside one, a name that the
    runtime does not know also returns ``default``, and is warned about once
    (a typo such as ``"compresion"`` would otherwise read as "off" forever).

    Examples
    --------
    >>> state("wire-compression") is None
    True
    >>> previous = publish({"wire-compression": "zstd"})
    >>> state("wire-compression"), is_on("wire-compression")
    ('zstd', True)
    >>> restore(previous)
    """
    states = _local
    if not states:
        reader = _shared_board()
        if reader is None:
            return default
        states = reader.read()
        if not states:
            return default
    value = states.get(name, _MISSING)
    if value is _MISSING:
        _unknown(name, states)
        return default
    return value


def peek(name: str, default: Any = None) -> Any:
    """:func:`state` without the warning: for asafe's own mechanisms, which ask whether or not it is installed."""
    value = _local.get(name, _MISSING)
    if value is not _MISSING:
        return value
    if _local:
        return default
    reader = _shared_board()
    return default if reader is None else reader.read().get(name, default)


def is_on(name: str) -> bool:
    """Whether optimization ``name`` is on (its state is not off) where this task runs.

    Returns ``False`` outside an adaptive run, and for a name the runtime does
    not know (warned once per name), so library code can call it
    unconditionally. A state that is a value (a codec, a thread count) is on
    when it is not ``False``, ``0`` or empty; :func:`state` reads the value.

    Examples
    --------
    >>> is_on("compression")
    False
    >>> previous = publish({"compression": True})
    >>> is_on("compression")
    True
    >>> restore(previous)
    >>> is_on("compression")
    False
    """
    value = _local.get(name)
    if value is not None:
        return bool(value)
    return bool(state(name, False))


def _unknown(name: str, states: Mapping[str, Any]) -> None:
    if name in _warned:
        return
    _warned.add(name)
    near = difflib.get_close_matches(str(name), list(states), n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    logger.warning("asafe: is_on/state(%r) asks for an optimization the running runtime does not know (it knows "
                   "%s)%s; it reads as off", name, sorted(states), hint)


def publish(states: Mapping[str, Any], shared: bool = False) -> dict[str, Any]:
    """Make ``states`` what :func:`is_on` and :func:`state` answer in this process; return the previous states.

    ``shared=True`` also writes them where child processes (Dask's processes
    scheduler) read them.
    """
    global _local
    previous = _local
    _local = {str(k): v for k, v in states.items()}
    if shared or _writer.active:
        _writer.write(_local)
    return previous


def snapshot() -> dict[str, Any]:
    """The states published in this process (a copy)."""
    return dict(_local)


def restore(states: Mapping[str, Any]) -> None:
    """Put back states captured by :func:`publish` or :func:`snapshot`."""
    publish(states)
    if not states:
        _writer.deactivate()


def clear() -> None:
    """Forget every state: :func:`is_on` answers ``False`` again."""
    restore({})


class _SharedWriter:
    """The controller's side of the shared board: a seqlock over a mapped file."""

    def __init__(self) -> None:
        self._map: mmap.mmap | None = None
        self._pid = -1
        self._sequence = 0
        self._lock = threading.Lock()
        self.path: str | None = None  # the board file while one is open
        self.active = False

    def write(self, states: Mapping[str, Any]) -> None:
        payload = json.dumps(states, separators=(",", ":")).encode()
        if len(payload) > _CAPACITY:
            raise ValueError(f"too many optimization names to share ({len(payload)} bytes > {_CAPACITY})")
        with self._lock:
            board = self._open()
            self.active = True
            self._sequence += 1  # odd: readers retry
            _HEADER.pack_into(board, 0, self._sequence, len(payload))
            board[_HEADER.size : _HEADER.size + len(payload)] = payload
            self._sequence += 1  # even: consistent
            _HEADER.pack_into(board, 0, self._sequence, len(payload))

    def deactivate(self) -> None:
        """The run ended: clear the states children read, then remove the file."""
        if self.active:
            self.write({})
            self.active = False
        self.close()

    def close(self) -> None:
        """Remove the board file and its directory, and stop handing its name out."""
        with self._lock:
            if self._map is None or self._pid != os.getpid():  # a forked child owns nothing
                self._map = None
                return
            path, self.path = self.path, None
            self._map.close()
            self._map = None
            self.active = False
            if path is not None:
                if os.environ.get(ENV) == path:
                    del os.environ[ENV]
                _remove(path)
                _remove_dir(os.path.dirname(path))

    def _open(self) -> mmap.mmap:
        if self._map is None or self._pid != os.getpid():  # a forked child writes its own
            _sweep_once()
            directory = tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-")  # mode 0700
            path = os.path.join(directory, _FILE)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.ftruncate(fd, _HEADER.size + _CAPACITY)
                self._map = mmap.mmap(fd, _HEADER.size + _CAPACITY)
            finally:
                os.close(fd)
            self._pid = os.getpid()
            self._sequence = 0
            self.path = path
            os.environ[ENV] = path  # what the processes scheduler's workers inherit
        return self._map


class _SharedReader:
    """A child's view of its parent's board; decodes only when the sequence moved."""

    def __init__(self, board: mmap.mmap) -> None:
        self._map = board
        self._sequence = -1
        self._states: dict[str, Any] = {}

    def read(self) -> dict[str, Any]:
        for _ in range(100):
            sequence, length = _HEADER.unpack_from(self._map, 0)
            if sequence == self._sequence:
                return self._states
            if sequence % 2:
                continue  # a write is in progress
            payload = bytes(self._map[_HEADER.size : _HEADER.size + length])
            if _HEADER.unpack_from(self._map, 0)[0] == sequence:
                self._states = json.loads(payload) if payload else {}
                self._sequence = sequence
                return self._states
        return self._states


_writer = _SharedWriter()
atexit.register(_writer.close)
_reader: _SharedReader | None = None
_reader_path: str | None = None  # the board file the reader was opened for
_next_look = 0.0
_swept = False


def _shared_board() -> _SharedReader | None:
    """The board this process was handed (:data:`ENV`), mapped once; else ``None``."""
    global _reader, _reader_path, _next_look
    path = os.environ.get(ENV)
    if not path or (path == _writer.path and _writer._pid == os.getpid()):  # none, or this process's own
        return None
    if _reader is not None and _reader_path == path:
        return _reader
    now = time.monotonic()
    if now < _next_look:
        return None
    _next_look = now + _RECHECK
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        board = mmap.mmap(fd, _HEADER.size + _CAPACITY, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    _reader, _reader_path = _SharedReader(board), path
    return _reader


def _sweep_once() -> None:
    """Remove board directories of this user left by dead controllers (a SIGKILL)."""
    global _swept
    if _swept:
        return
    _swept = True
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in entries:
        if not entry.name.startswith(_DIR_PREFIX):
            continue
        pid_text = entry.name[len(_DIR_PREFIX):].partition("-")[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not entry.is_dir(follow_symlinks=False) or (uid is not None and info.st_uid != uid):
                continue
        except OSError:
            continue
        _remove(os.path.join(entry.path, _FILE))
        _remove_dir(entry.path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _remove_dir(path: str) -> None:
    try:
        os.rmdir(path)  # only if empty: nothing but the board is ever removed
    except OSError:
        pass
