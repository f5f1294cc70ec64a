"""Adaptive wire compression: the ``wire-compression`` optimization's mechanism.

When :func:`asafe.is_on` ``("wire-compression")`` is true in a worker process,
large buffers that the worker serializes for the wire (numpy arrays, and the
out-of-band buffers of pickled objects such as asafe's tiles) are compressed with
blosc2 (shuffle filter, LZ4 by default); the receiver decompresses them whatever
its own state. When it is off, nothing is inspected or copied: the serializer
returns distributed's own header and frames after one dictionary lookup.

Why here and not in distributed's ``distributed.comm.compression`` setting
(read in ``distributed/comm/core.py`` and ``distributed/protocol/core.py``):

* the setting is negotiated once per comm in ``Comm.handshake_info`` and passed to
  ``dumps`` as ``context["compression"]``; comms are pooled and long-lived, so a
  flip of the state would not reach comms already open;
* ``handshake_info`` sets compression to ``None`` whenever ``comm.same_host`` is
  true, so processes on one host never compress;
* ``protocol.core.dumps`` only compresses a frame whose header entry in
  ``header["compression"]`` is ``None``, and ``loads`` decompresses every frame
  whose entry names a codec of ``distributed.protocol.compression.compressions``,
  independently of the comm's settings.

So the mechanism wraps the ``dask`` and ``pickle`` serialization families
(``distributed.protocol.serialize.families``): after distributed's own ``dumps``
it compresses the large frames and names them ``"asafe-blosc2"`` in the header;
``serialize_and_split`` then leaves them whole, ``dumps`` leaves them alone, and the
receiver's ``loads`` calls the codec registered under that name. Both sides need
:func:`enable` (the worker plugin calls it on every worker; :func:`asafe.install`
and :func:`asafe.attach` in the client, which gathers results).

A frame is compressed only if it is between ``asafe.wire.min-size`` and blosc2's
2 GiB limit and if a prefix sample (``asafe.wire.sample-size``) compresses by at
least ``asafe.wire.min-ratio``; the full frame must meet the same ratio, else the
original is sent. A frame that fails to decompress raises
:class:`WireDecompressionError`, an ``OSError``: the receiving worker treats it as
a failed transfer (logged), tells the scheduler the data is missing from the
sender, and Dask fetches it elsewhere or recomputes it -- no data is lost.

Accounting: the receiver counts the bytes compression saved (logical - wire) of
the frames it decompressed; the worker plugin takes them with :func:`take_received`
when it annotates a transfer, so the scheduler charges transfers in
uncompressed-equivalent seconds, as for tile compression.
"""
from __future__ import annotations

import threading
import time
from typing import Any

import dask.config

from . import board

__all__ = [
    "NAME", "CODEC", "CODECS", "WireDecompressionError", "enable", "disable", "enabled",
    "check_settings", "stats", "reset_stats", "take_received", "compress_frame", "decompress_frame",
]

#: Name of the optimization whose state switches the mechanism.
NAME = "wire-compression"
#: Codec name written in the frames' header (``header["compression"]``).
CODEC = "asafe-blosc2"
#: Allowed values of ``asafe.wire.codec``: blosc2's codecs, with the shuffle filter.
CODECS = ("lz4", "zstd", "blosclz", "lz4hc")
#: blosc2's largest buffer (``blosc2.MAX_BUFFERSIZE``); larger frames are sent as they are.
MAX_FRAME = 2**31 - 64

_lock = threading.Lock()
_enabled = False
_originals: dict[str, tuple] = {}
_settings: dict[str, Any] = {}
_counters: dict[str, float] = {}
_saved = 0  # receiver: bytes saved by frames decompressed since take_received()
_codec_seconds = 0.0  # receiver: codec seconds of those frames (both ends, see take_received)
#: Tests only: corrupt this many of the next compressed frames (the sender's side).
corrupt_next = 0


class WireDecompressionError(OSError):
    """A compressed frame could not be decompressed on arrival.

    An ``OSError`` on purpose: distributed's worker treats it as a failed
    transfer from that peer (``GatherDepNetworkFailureEvent``) and reports the
    data missing there, so the scheduler has it fetched from another replica or
    recomputed, rather than marking the dependent tasks as failed.
    """


def check_settings(config: dict | None = None) -> dict[str, Any]:
    """Validate ``asafe.wire`` and return it parsed (ValueError naming the allowed values)."""
    from dask.utils import parse_bytes

    raw = dict(dask.config.get("asafe.wire", {}) if config is None else config)
    allowed = {"codec", "level", "min-size", "sample-size", "min-ratio", "threads"}
    unknown = set(raw) - allowed
    if unknown:
        raise ValueError(f"asafe.wire has unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}")
    codec = raw.get("codec", "lz4")
    if codec not in CODECS:
        raise ValueError(f"asafe.wire.codec={codec!r} is not a known codec; allowed: {', '.join(CODECS)}")
    level = raw.get("level", 1)
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 9:
        raise ValueError(f"asafe.wire.level={level!r} must be an integer from 1 to 9")
    sizes = {}
    for key, default in (("min-size", "64 KiB"), ("sample-size", "64 KiB")):
        value = raw.get(key, default)
        try:
            sizes[key] = parse_bytes(value) if isinstance(value, str) else int(value)
        except (TypeError, ValueError):
            raise ValueError(f"asafe.wire.{key}={value!r} must be a size such as '64 KiB'") from None
        if isinstance(value, bool) or sizes[key] < 1:
            raise ValueError(f"asafe.wire.{key}={value!r} must be a positive size such as '64 KiB'")
    ratio = raw.get("min-ratio", 1.4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not ratio >= 1.0:
        raise ValueError(f"asafe.wire.min-ratio={ratio!r} must be a number >= 1 (uncompressed / compressed)")
    threads = raw.get("threads", 1)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"asafe.wire.threads={threads!r} must be a positive integer")
    return {"codec": codec, "level": level, "min_size": sizes["min-size"],
            "sample_size": sizes["sample-size"], "min_ratio": float(ratio), "threads": threads}


def enable() -> None:
    """Register the codec and wrap the ``dask`` and ``pickle`` families (idempotent).

    Reads ``asafe.wire`` (:func:`check_settings`) each time it is called.
    """
    global _enabled
    import importlib

    import blosc2

    # the modules, not the functions that distributed.protocol exports under the same names
    compression = importlib.import_module("distributed.protocol.compression")
    serialize = importlib.import_module("distributed.protocol.serialize")
    settings = check_settings()
    settings["codec_id"] = getattr(blosc2.Codec, settings["codec"].upper())
    settings["blosc2"] = blosc2
    with _lock:
        _settings.clear()
        _settings.update(settings)
        compression.compressions[CODEC] = compression.Compression(CODEC, compress_frame, decompress_frame)
        if _enabled:
            return
        if not _counters:
            reset_stats()
        for family in ("dask", "pickle"):
            original = serialize.families[family]
            _originals[family] = original
            serialize.families[family] = (_wrap(original[0], original[2], family), original[1], True)
        _enabled = True


def disable() -> None:
    """Put distributed's families back (the codec stays registered for late frames)."""
    global _enabled
    import importlib

    serialize = importlib.import_module("distributed.protocol.serialize")
    with _lock:
        for family, original in _originals.items():
            serialize.families[family] = original
        _originals.clear()
        _enabled = False


def enabled() -> bool:
    """Whether the families are wrapped in this process."""
    return _enabled


def _wrap(dumps: Any, wants_context: bool, family: str) -> Any:
    is_on = board.is_on

    def wire_dumps(x: Any, context: Any = None) -> tuple[dict, list]:
        header, frames = dumps(x, context=context) if wants_context else dumps(x)
        if is_on(NAME):
            _compress_frames(header, frames, x if family == "dask" else None)
        return header, frames

    wire_dumps.__wrapped__ = dumps  # type: ignore[attr-defined]
    return wire_dumps


def _compress_frames(header: dict, frames: list, x: Any) -> None:
    settings = _settings
    min_size = settings["min_size"]
    compressions = header.get("compression")
    if compressions is None:
        compressions = [None] * len(frames)
    else:
        compressions = list(compressions)
    typesize = getattr(getattr(x, "dtype", None), "itemsize", 0)
    changed = False
    for i, frame in enumerate(frames):
        if compressions[i] is not None:
            continue
        if not isinstance(frame, memoryview):
            try:
                frame = memoryview(frame)
            except TypeError:
                continue
        n = frame.nbytes
        if n < min_size or n > MAX_FRAME:
            continue
        size = typesize or (frame.itemsize if frame.itemsize in (2, 4, 8, 16) else 8)
        if frame.ndim != 1 or frame.format != "B":
            if not frame.c_contiguous:
                continue
            frame = frame.cast("B")
        compressed = _maybe_compress(frame, size)
        if compressed is not None:
            frames[i] = compressed
            compressions[i] = CODEC
            changed = True
    if changed:
        header["compression"] = tuple(compressions)


def _maybe_compress(frame: memoryview, typesize: int) -> bytes | None:
    global corrupt_next
    settings = _settings
    counters = _counters
    n = frame.nbytes
    start = time.perf_counter()
    sample = frame[: settings["sample_size"]]
    if len(compress_frame(sample, typesize)) * settings["min_ratio"] > sample.nbytes:
        counters["skipped_frames"] += 1
        counters["skipped_bytes"] += n
        counters["sample_seconds"] += time.perf_counter() - start
        return None
    compressed = compress_frame(frame, typesize)
    counters["compress_seconds"] += time.perf_counter() - start
    if len(compressed) * settings["min_ratio"] > n:
        counters["skipped_frames"] += 1
        counters["skipped_bytes"] += n
        return None
    counters["compressed_frames"] += 1
    counters["compressed_logical_bytes"] += n
    counters["compressed_wire_bytes"] += len(compressed)
    if corrupt_next > 0:  # tests: a frame whose stated size disagrees with its length
        corrupt_next -= 1
        compressed = compressed[:-1]
    return compressed


def compress_frame(data: Any, typesize: int = 8) -> bytes:
    """Compress one buffer with the configured blosc2 codec and the shuffle filter."""
    settings = _settings
    blosc2 = settings["blosc2"]
    return blosc2.compress2(
        data, typesize=typesize, clevel=settings["level"], codec=settings["codec_id"],
        filters=[blosc2.Filter.SHUFFLE], nthreads=settings["threads"],
    )


def decompress_frame(data: Any) -> bytearray:
    """Decompress one frame into a new writable buffer, or raise :class:`WireDecompressionError`."""
    global _saved, _codec_seconds
    import blosc2

    start = time.perf_counter()
    length = memoryview(data).nbytes
    try:
        nbytes, cbytes, _ = blosc2.get_cbuffer_sizes(data)
        if cbytes != length:
            raise ValueError(f"its header states {cbytes} compressed bytes")
        out = bytearray(nbytes)
        blosc2.decompress2(data, dst=out, nthreads=_settings.get("threads", 1))
    except Exception as exc:
        _counters["failed_frames"] = _counters.get("failed_frames", 0) + 1
        raise WireDecompressionError(
            f"asafe wire-compression: a received frame of {length} bytes ({CODEC}) failed to "
            f"decompress: {exc}. The transfer is dropped; Dask fetches the data again from "
            "another replica or recomputes it."
        ) from exc
    seconds = time.perf_counter() - start
    counters = _counters
    if counters:
        counters["decompressed_frames"] += 1
        counters["decompressed_logical_bytes"] += nbytes
        counters["decompressed_wire_bytes"] += length
        counters["decompress_seconds"] += seconds
    _saved += max(nbytes - length, 0)
    _codec_seconds += seconds + nbytes * _compress_seconds_per_byte(seconds / max(nbytes, 1))
    return out


def _compress_seconds_per_byte(fallback: float) -> float:
    """This process's own compression cost per byte (``fallback`` before it compressed anything)."""
    counters = _counters
    compressed = counters.get("compressed_logical_bytes", 0)
    return counters.get("compress_seconds", 0.0) / compressed if compressed else fallback


def take_received() -> tuple[int, float]:
    """Bytes compression saved on the frames received since the last call, and the codec's seconds on them.

    Both are then zeroed. The worker plugin adds the bytes to the transfer it
    annotates, so the scheduler counts that transfer in uncompressed-equivalent
    terms, and passes the seconds, so the scheduler can take the codec's time
    out of the transfer's before it measures the link. The seconds are this
    process's decompression plus the sender's compression, estimated at this
    process's own compression speed (the workers run the same codec on the same
    kind of hardware; before this process compressed anything, at its
    decompression speed).
    """
    global _saved, _codec_seconds
    taken = (_saved, _codec_seconds)
    _saved, _codec_seconds = 0, 0.0
    return taken


def stats() -> dict[str, float]:
    """This process's counters: frames and bytes compressed, skipped and decompressed, seconds."""
    return dict(_counters, enabled=_enabled, on=board.is_on(NAME))


def reset_stats() -> None:
    """Zero this process's counters."""
    global _saved, _codec_seconds
    for key in ("compressed_frames", "compressed_logical_bytes", "compressed_wire_bytes",
                "skipped_frames", "skipped_bytes", "decompressed_frames",
                "decompressed_logical_bytes", "decompressed_wire_bytes", "failed_frames"):
        _counters[key] = 0
    for key in ("compress_seconds", "sample_seconds", "decompress_seconds"):
        _counters[key] = 0.0
    _saved, _codec_seconds = 0, 0.0
