"""The state board: where tasks read optimization states (:func:`is_on`).

Reads are on the hot path of library code, so they never take a lock or cross a
process boundary per call:

* In the process that runs the controller (threaded and synchronous schedulers)
  and on each distributed worker, states live in a module-level dict that is
  replaced, never mutated, on every update (copy-on-write): a reader on another
  thread sees either the old or the new snapshot.
* Worker processes of Dask's ``processes`` scheduler are children of the
  controller's process. The controller also writes its states into a small
  memory-mapped file named after its pid; a child maps its parent's file once and
  on each read compares an 8-byte sequence number (a seqlock), decoding the
  states only when they changed.

Outside any adaptive run :func:`is_on` returns ``False`` for every name, so
library code may call it unconditionally.
"""
from __future__ import annotations

import atexit
import json
import mmap
import os
import struct
import tempfile
import time
from collections.abc import Mapping

__all__ = ["is_on", "publish", "snapshot", "restore", "clear"]

_HEADER = struct.Struct("<QI")  # sequence number (odd while writing), payload length
_CAPACITY = 1 << 16  # bytes of JSON payload: thousands of optimization names
_RECHECK = 0.5  # seconds between looks for a parent's board file

_local: dict[str, bool] = {}


def is_on(name: str) -> bool:
    """Whether optimization ``name`` is on where this task runs.

    Returns ``False`` outside an adaptive run, and for a name the runtime does not
    know, so library code can call it unconditionally.

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
    state = _local.get(name)
    if state is not None:
        return state
    reader = _parent_board()
    if reader is None:
        return False
    return reader.read().get(name, False)


def publish(states: Mapping[str, bool], shared: bool = False) -> dict[str, bool]:
    """Make ``states`` what :func:`is_on` answers in this process; return the previous states.

    ``shared=True`` also writes them where child processes (Dask's processes
    scheduler) read them.
    """
    global _local
    previous = _local
    _local = {str(k): bool(v) for k, v in states.items()}
    if shared or _writer.active:
        _writer.write(_local)
    return previous


def snapshot() -> dict[str, bool]:
    """The states published in this process (a copy)."""
    return dict(_local)


def restore(states: Mapping[str, bool]) -> None:
    """Put back states captured by :func:`publish` or :func:`snapshot`."""
    publish(states)
    if not states:
        _writer.deactivate()


def clear() -> None:
    """Forget every state: :func:`is_on` answers ``False`` again."""
    restore({})


def _board_path(pid: int) -> str:
    return os.path.join(tempfile.gettempdir(), f"asafe-board-{pid}.bin")


class _SharedWriter:
    """The controller's side of the shared board: a seqlock over a mapped file."""

    def __init__(self) -> None:
        self._map: mmap.mmap | None = None
        self._pid = -1
        self._sequence = 0
        self.active = False

    def write(self, states: Mapping[str, bool]) -> None:
        payload = json.dumps(states, separators=(",", ":")).encode()
        if len(payload) > _CAPACITY:
            raise ValueError(f"too many optimization names to share ({len(payload)} bytes > {_CAPACITY})")
        board = self._open()
        self.active = True
        self._sequence += 1  # odd: readers retry
        _HEADER.pack_into(board, 0, self._sequence, len(payload))
        board[_HEADER.size : _HEADER.size + len(payload)] = payload
        self._sequence += 1  # even: consistent
        _HEADER.pack_into(board, 0, self._sequence, len(payload))

    def deactivate(self) -> None:
        if self.active:
            self.write({})
            self.active = False

    def _open(self) -> mmap.mmap:
        if self._map is None or self._pid != os.getpid():  # a forked child writes its own
            path = _board_path(os.getpid())
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                os.ftruncate(fd, _HEADER.size + _CAPACITY)
                self._map = mmap.mmap(fd, _HEADER.size + _CAPACITY)
            finally:
                os.close(fd)
            self._pid = os.getpid()
            self._sequence = 0
            atexit.register(_remove, path)
        return self._map


class _SharedReader:
    """A child's view of its parent's board; decodes only when the sequence moved."""

    def __init__(self, board: mmap.mmap) -> None:
        self._map = board
        self._sequence = -1
        self._states: dict[str, bool] = {}

    def read(self) -> dict[str, bool]:
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
_reader: _SharedReader | None = None
_reader_pid = -1  # the parent pid the reader was opened for
_next_look = 0.0


def _parent_board() -> _SharedReader | None:
    global _reader, _reader_pid, _next_look
    parent = os.getppid()
    if _reader is not None and _reader_pid == parent:
        return _reader
    now = time.monotonic()
    if now < _next_look:
        return None
    _next_look = now + _RECHECK
    try:
        fd = os.open(_board_path(parent), os.O_RDONLY)
    except OSError:
        return None
    try:
        board = mmap.mmap(fd, _HEADER.size + _CAPACITY, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    _reader, _reader_pid = _SharedReader(board), parent
    return _reader


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
