"""Adaptive wire compression: the ``wire-compression`` optimization's mechanism.

The optimization's state says how to compress what workers send each other:

* ``False``: nothing is compressed; the serializer returns distributed's own
  header and frames after one dictionary lookup;
* an int: the link's speed in MB/s, as the domain reads it (the default domain
  gives a few bands of it). Each kind of frame gets the codec of
  :data:`CODEC_STATES` and the filter that send it soonest over a link of that
  speed, by a cost model measured on a sample: per byte,
  ``1/compress + 1/decompress + 1/(ratio * link)`` against ``1/link`` sent as it
  is, at the speeds this process measured compressing and decompressing the
  sample itself, on its thread's cpu clock (a time slice lost to another
  process is not the codec's cost). A slow link buys a stronger codec, a fast
  one a faster codec or none; cpus busy with other processes are the domain's
  to weigh (the default gate's ``external_cpu`` switches the state off);
* a codec's name (:data:`CODEC_STATES`: ``"lz4"``, ``"zstd"``), or ``True``
  (the first): that codec, with the filter that shrinks the sample most (a
  static setting, for comparisons).

Which filter. blosc2 filters the bytes before the codec: byte shuffle suits
smooth floats and small integers, bit shuffle integer ids and low-precision
floats, and no filter suits floats of which many are exactly zero (shuffle
scatters their zero bytes: 1.07x with shuffle against 1.49x without on
half-zero float64 with LZ4, and 1.89x with ZSTD). Floats and integers of
which many elements are exactly zero have a transform of their own,
:data:`ZEROS` ("zero elision"): the elements that are zero are dropped and a
bitmap says where they were (:mod:`asafe.schedulers._zeros`, compiled; numpy
where it was not built, the same frames). On half-zero float64 of 16 MiB here
it elides at about 2 GB/s and restores at 1.2 GB/s into fresh memory (numpy
1.1 and 1.0: the page faults of a new buffer bound both), 6-7 and 4-5 GB/s
into reused memory (numpy 4 and 4). It halves
half-zero float64 (1.94x) where no blosc2 codec reaches 1.9x at a speed that
pays behind 1 Gbit/s (ZSTD: 1.89x at 240 MB/s). Its frames are named
:data:`ZEROS_CODEC`; only a peer whose handshake says
:data:`HANDSHAKE_VERSION` or more receives them, and only a state that is a
link speed chooses it (a codec's name means that codec). So the codec and
filter are chosen from a sample: the first bytes of a frame (an eighth of it, at least
``asafe.wire.sample-size`` and at most ``asafe.wire.max-sample-size``: :func:`sample_bytes`) are
compressed with each candidate, and a candidate must shrink them by
``asafe.wire.min-ratio`` (and, for a link speed, send them sooner than they go
as they are by ``asafe.wire.min-gain`` of that time) or the frame goes as it is. The choice is kept per
kind of frame (state, serializer family, type, dtype, frame position, the shape of a row) for the
next ``asafe.wire.resample`` frames of that kind (twice as many each time a
sample chooses the codec the last one did, up to eight times ``resample``), so
random data costs one sample per ``resample`` frames, not one per frame. A frame whose full
compression falls short of ``min-ratio`` is sent as it is and makes its kind
sample again. The choices are the worker process's, not an installation's:
a new ``asafe.install`` on the same workers goes on with them (a choice is
made for its state, and is sampled again every ``resample`` frames), as the
scheduler goes on with the link and the output sizes an earlier
installation measured; a change of ``asafe.wire`` starts them afresh, as does
:func:`forget_choices`. Sampling anew at each installation cost 8-11 ms per
worker, on the first frames and before they are sent, in every run of the
workloads suite's futures of int ids behind 1 Gbit/s (0.45 s runs, a fresh
installation each).

Who may receive compressed frames. Only a process that calls :func:`enable`
knows the codec, and only a server that :func:`advertise` marks says so: the
worker plugin marks its worker, :func:`asafe.install` and :func:`asafe.attach`
their client. A marked server adds :data:`HANDSHAKE_KEY` to the handshake of
every connection it makes (``connection_args["handshake_overrides"]``) or
accepts (its listeners); a worker compresses a message only when the
connection's other end said it. A client that never imported asafe therefore
receives what plain Dask sends, and reads every result. The scheduler is never
marked, also where it shares a process with a client or workers: it relays data
to clients without deserializing it, so what reaches it must stay as plain Dask
sends it. Connections a server opened before it was marked are closed when
idle, so that its next ones carry the mark.

Why here and not in distributed's ``distributed.comm.compression`` setting:
the setting is negotiated once per comm (comms are pooled and long-lived, so a
flip of the state would not reach comms already open), is ``None`` whenever
``comm.same_host`` is true, and compresses every frame of every message alike.
The mechanism wraps the ``dask`` and ``pickle`` serialization families
(``distributed.protocol.serialize.families``): after distributed's own ``dumps``
it compresses the large frames and names them :data:`CODEC` in the header;
``serialize_and_split`` then leaves them whole, ``dumps`` leaves them alone, and
the receiver's ``loads`` calls the codec registered under that name. A frame
that fails to decompress raises :class:`WireDecompressionError`, an ``OSError``:
the receiving worker treats it as a failed transfer and Dask fetches the data
elsewhere or recomputes it.

The event loop. distributed compresses a large message off the event loop
(its offload thread, above ``distributed.comm.offload``), and decompresses it
there too, but blosc2 holds the GIL through a call unless told otherwise, so
a 40 MiB frame held the worker's event loop for the 70 ms its compression took
(a thread ticking every millisecond ticked 3 times through three compressions of
a 38 MiB frame, 159 times with the GIL released: docs/results/hosts-s36/
gil_probe.txt), and with it the worker's heartbeats, its other transfers and the
host watch (its samples, due 0.1 s apart, came 0.3 s apart while it
compressed). So the first use of blosc2 in a process calls
``blosc2.set_releasegil(True)``: the setting is the process's, and blosc2 calls
elsewhere in it release the GIL too (the results are the same; blosc2 says that
releasing costs a little on small blocks); :func:`disable` puts back the value
it found.

Costs. The codec's seconds are metered with distributed's ``context_meter``
(labels ``asafe-compress`` and ``asafe-decompress``), so they show on Dask's
Fine Performance Metrics page under the activity that paid them (``get-data``,
``gather-dep``, a P2P shuffle's ``background-comms``).

Accounting. The receiver counts the bytes compression saved (logical - wire):
of the frames it decompressed, and of objects stored compressed whose sizes the
sender wrote in the header (:mod:`asafe.schedulers.sizes`). The worker plugin
takes them with :func:`take_received` when it annotates a transfer, so the
scheduler charges transfers in uncompressed-equivalent seconds.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from ..core import config as _config
from ..core import validate
from . import board, sizes

try:  # zero elision compiled (asafe/schedulers/_zeros.c), optional: numpy writes the same frames
    from . import _zeros as _zeros_c
except ImportError:  # pragma: no cover - built wherever a C compiler was found at install
    _zeros_c = None

__all__ = [
    "NAME", "CODEC", "ZEROS_CODEC", "CODEC_STATES", "FILTERS", "ZEROS", "HANDSHAKE_KEY", "HANDSHAKE_VERSION",
    "SIZES_KEY", "WireDecompressionError", "elide_zeros", "restore_zeros",
    "enable", "disable", "enabled", "advertise", "prepare", "check_settings", "check_states", "stats", "reset_stats",
    "forget_choices",
    "take_received",
    "compress_frame", "decompress_frame", "decompress_zeros",
]

#: Name of the optimization whose state switches the mechanism.
NAME = "wire-compression"
#: Codec name written in the frames' header (``header["compression"]``).
CODEC = "asafe-blosc2"
#: The states of ``wire-compression`` that compress: blosc2's codec of that name.
#: ``True`` (an on/off domain) means the first.
CODEC_STATES = ("lz4", "zstd")
#: Codec name of frames whose zero elements were elided (:func:`elide_zeros`).
ZEROS_CODEC = "asafe-zeros"
#: The filter that elides zero elements; no codec runs after it.
ZEROS = "zeros"
#: Filters the sample chooses from (``asafe.wire.filters``).
FILTERS = ("none", "shuffle", "bitshuffle", ZEROS)
#: Key a process adds to its connections' handshake when it can decode :data:`CODEC`.
HANDSHAKE_KEY = "asafe-wire"
#: The value it adds: 1 decodes :data:`CODEC`, 2 also :data:`ZEROS_CODEC`.
HANDSHAKE_VERSION = 2
#: Element sizes (bytes) whose zeros can be elided.
_ZERO_SIZES = {2: "<u2", 4: "<u4", 8: "<u8"}
#: Prefix of a frame that times zero elision in a sample (see _sample).
_ZEROS_SAMPLE = 1 << 20
#: An elided frame's header: magic, element size, elements, original bytes.
_ZEROS_MAGIC = b"AZE1"
#: Header key of ``[logical, wire]`` of an object that reports its sizes.
SIZES_KEY = "asafe-nbytes"
#: blosc2's largest buffer (``blosc2.MAX_BUFFERSIZE``); larger frames are sent as they are.
MAX_FRAME = 2**31 - 64
#: Kinds of frame whose filter choice is remembered; past it the memory starts afresh.
_MAX_KINDS = 4096
_SETTINGS = ("level", "filters", "min-size", "sample-size", "max-sample-size", "min-ratio", "min-gain",
             "resample", "threads")
#: A frame's sample is this share of it (between ``sample-size`` and ``max-sample-size``).
_SAMPLE_SHARE = 8

_lock = threading.Lock()
_enabled = False
_originals: dict[str, tuple] = {}
_settings: dict[str, Any] = {}
_blosc2: dict[str, Any] = {}  # see _library
_importing = False  # see prepare
_warm = False  # every candidate called once in this process (see _warm_up)
_counters: dict[str, float] = {}
_choices: dict[tuple, list] = {}  # kind -> [codec id or None (send as is), filter id, frames left, frames it was given]
#: A kind whose sample chose what it had chosen waits twice as many frames for its next one, up to this many
#: times ``resample`` (see _sample).
_RESAMPLE_GROWTH = 8
_saved = 0  # receiver: bytes the codec saved on frames received since take_received()
_stored_saved = 0  # receiver: bytes objects stored compressed saved (their reported sizes), likewise
_codec_seconds = 0.0  # receiver: codec seconds of those frames (both ends, see take_received)
_meter: Any = None  # distributed.metrics.context_meter, once enabled
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
    """Validate ``asafe.wire`` and return it parsed (errors name the key and the allowed values).

    Examples
    --------
    >>> check_settings({"filters": ["none", "bitshuffle"]})["filters"]
    ('none', 'bitshuffle')
    >>> check_settings({"codec": "zstd"})
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: asafe.wire has unknown keys ['codec']; allowed: filters, level, max-sample-size, min-gain, min-ratio, min-size, resample, sample-size, threads (the codec is the state of the wire-compression optimization: lz4, zstd)
    """
    raw = _canonical_keys(_config.get("asafe.wire") if config is None else config)
    unknown = sorted(set(raw) - set(_SETTINGS))
    if unknown:
        raise validate.InvalidSetting(
            f"asafe.wire has unknown keys {unknown}; allowed: {', '.join(sorted(_SETTINGS))} (the codec is the "
            f"state of the {NAME} optimization: {', '.join(CODEC_STATES)})"
        )
    default = _config.DEFAULTS["asafe"]["wire"]
    value = {key: raw.get(key, default[key]) for key in _SETTINGS}
    filters = value["filters"]
    if isinstance(filters, str):
        filters = [part.strip() for part in filters.split(",")]
    if not isinstance(filters, (list, tuple)) or not filters:
        raise validate.InvalidSetting(f"asafe.wire.filters must be a list of {', '.join(FILTERS)}, got {filters!r}")
    sample_size = validate.size(value["sample-size"], "asafe.wire.sample-size", minimum=1)
    max_sample_size = validate.size(value["max-sample-size"], "asafe.wire.max-sample-size", minimum=1)
    if max_sample_size < sample_size:
        raise validate.InvalidSetting(
            f"asafe.wire.max-sample-size ({value['max-sample-size']!r}) must be at least asafe.wire.sample-size "
            f"({value['sample-size']!r}): a frame's sample is an eighth of it, between the two"
        )
    return {
        "level": validate.integer(value["level"], "asafe.wire.level", minimum=1, maximum=9),
        "filters": tuple(validate.choice(f, "asafe.wire.filters", FILTERS) for f in filters),
        "min_size": validate.size(value["min-size"], "asafe.wire.min-size", minimum=1),
        "sample_size": sample_size,
        "max_sample_size": max_sample_size,
        "min_ratio": validate.number(value["min-ratio"], "asafe.wire.min-ratio", minimum=1.0),
        "min_gain": validate.number(value["min-gain"], "asafe.wire.min-gain", minimum=0.0, below=1.0,
                                    rule="at least 0 and below 1 (the share of a frame's time sent as it is that "
                                         "a codec must save)"),
        "resample": validate.integer(value["resample"], "asafe.wire.resample", minimum=1),
        "threads": validate.integer(value["threads"], "asafe.wire.threads", minimum=1),
    }


def _canonical_keys(raw: Any) -> dict[str, Any]:
    """``asafe.wire`` with each key spelled as shipped: ``sample_size`` is ``sample-size``, as dask reads it.

    dask treats ``-`` and ``_`` in a key alike, and an environment variable
    cannot hold a ``-`` in most shells: ``DASK_ASAFE__WIRE__SAMPLE_SIZE`` arrives
    as ``sample_size``. Where both spellings are present, the underscore's is the
    user's (the shipped defaults use hyphens).

    >>> _canonical_keys({"sample-size": "64 KiB", "sample_size": "1 MiB"})
    {'sample-size': '1 MiB'}
    """
    keys = dict(raw)
    out = {key: value for key, value in keys.items() if "_" not in key}
    out.update({key.replace("_", "-"): value for key, value in keys.items() if "_" in key})
    return out


def check_states(states: Any) -> None:
    """Refuse a ``wire-compression`` state that is not off, on, a link speed in MB/s, or a codec.

    >>> check_states([False, "zstd", 120])
    >>> check_states(["zstd", "snappy"])
    Traceback (most recent call last):
    ...
    asafe.core.validate.InvalidSetting: the wire-compression state 'snappy' is not one; allowed: False (off), True (lz4), a link speed in MB/s (an int > 0), or a codec: lz4, zstd
    """
    for state in states:
        if state is False or state is True or state in CODEC_STATES or (
                isinstance(state, int) and not isinstance(state, bool) and state > 0):
            continue
        raise validate.InvalidSetting(
            f"the {NAME} state {state!r} is not one; allowed: False (off), True ({CODEC_STATES[0]}), a link "
            f"speed in MB/s (an int > 0), or a codec: {', '.join(CODEC_STATES)}"
        )


def enable() -> None:
    """Register the codec and wrap the ``dask`` and ``pickle`` families (idempotent).

    Reads ``asafe.wire`` (:func:`check_settings`) each time it is called.
    Nothing is compressed for a peer until a server of this process is marked
    with :func:`advertise` and the peer's is too. The choices of codec made
    so far stay (each for its kind of frame and state, until its next
    sample; see the module docstring) unless the settings changed.
    """
    global _enabled, _meter
    import importlib

    from distributed.metrics import context_meter

    # the modules, not the functions that distributed.protocol exports under the same names
    compression = importlib.import_module("distributed.protocol.compression")
    serialize = importlib.import_module("distributed.protocol.serialize")
    settings = check_settings()  # blosc2 itself is imported once a state that compresses arrives (prepare)
    with _lock:
        if settings != _settings:  # a choice holds for the settings it was made under
            _choices.clear()
        _settings.clear()
        _settings.update(settings)
        _meter = context_meter
        compression.compressions[CODEC] = compression.Compression(CODEC, compress_frame, decompress_frame)
        compression.compressions[ZEROS_CODEC] = compression.Compression(ZEROS_CODEC, elide_zeros, decompress_zeros)
        _release_gil()  # after a disable() put blosc2's setting back
        if _enabled:
            return
        if not _counters:
            reset_stats()
        for family in ("dask", "pickle"):
            original = serialize.families[family]
            _originals[family] = original
            serialize.families[family] = (_wrap_dumps(original[0], original[2], family),
                                          _wrap_loads(original[1]), True)
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
        if "releasegil_before" in _blosc2:  # blosc2's GIL setting as this module found it
            _blosc2["blosc2"].set_releasegil(_blosc2.pop("releasegil_before"))


def enabled() -> bool:
    """Whether the families are wrapped in this process."""
    return _enabled


def advertise(server: Any) -> None:
    """Mark a worker or a client: its connections' handshakes say that it decodes :data:`CODEC` (idempotent).

    The connections it makes carry the mark through its
    ``connection_args["handshake_overrides"]`` (the dict its connection pool
    holds), those it accepts through its listeners; its idle pooled
    connections, made before the mark, are closed so that the next ones carry
    it. Never call it on a scheduler (see the module docstring).
    """
    args = getattr(server, "connection_args", None)
    if not isinstance(args, dict) or (args.get("handshake_overrides") or {}).get(HANDSHAKE_KEY):
        return
    args["handshake_overrides"] = {**(args.get("handshake_overrides") or {}), HANDSHAKE_KEY: HANDSHAKE_VERSION}
    for listener in getattr(server, "listeners", ()):
        original = listener.on_connection

        async def on_connection(comm: Any, handshake_overrides: dict | None = None, _original: Any = original) -> Any:
            return await _original(comm, {**(handshake_overrides or {}), HANDSHAKE_KEY: HANDSHAKE_VERSION})

        listener.on_connection = on_connection
    pool = getattr(server, "rpc", None)
    loop = getattr(server, "loop", None)
    if callable(getattr(pool, "collect", None)) and loop is not None:
        loop.add_callback(pool.collect)  # on the server's loop, where it closes its comms


def _wrap_dumps(dumps: Any, wants_context: bool, family: str) -> Any:
    peek = board.peek

    def wire_dumps(x: Any, context: Any = None) -> tuple[dict, list]:
        header, frames = dumps(x, context=context) if wants_context else dumps(x)
        recipient = context.get("recipient") if context else None
        version = recipient.get(HANDSHAKE_KEY) if recipient else None
        if version:  # the other end decodes: it counts what was saved
            if getattr(type(x), sizes.MARK, False):
                header[SIZES_KEY] = list(sizes.sizes_of(x))  # type: ignore[arg-type]
            state = peek(NAME, False)
            if state:
                _compress_frames(header, frames, x, family, state, _decodes_zeros(version))
        return header, frames

    wire_dumps.__wrapped__ = dumps  # type: ignore[attr-defined]
    return wire_dumps


def _wrap_loads(loads: Any) -> Any:
    def wire_loads(header: dict, frames: list) -> Any:
        reported = header.get(SIZES_KEY)
        if reported:
            global _stored_saved
            _stored_saved += max(int(reported[0]) - int(reported[1]), 0)
        return loads(header, frames)

    wire_loads.__wrapped__ = loads  # type: ignore[attr-defined]
    return wire_loads


def _decodes_zeros(version: Any) -> bool:
    try:
        return int(version) >= HANDSHAKE_VERSION
    except (TypeError, ValueError):
        return False


def _compress_frames(header: dict, frames: list, x: Any, family: str, state: Any, zeros: bool = False) -> None:
    settings = _settings
    if not (state is True or isinstance(state, int) or state in CODEC_STATES):
        return  # a state that is no codec: refused at install, ignored here
    min_size = settings["min_size"]
    compressions = header.get("compression")
    compressions = [None] * len(frames) if compressions is None else list(compressions)
    dtype = getattr(x, "dtype", None)
    typesize = getattr(dtype, "itemsize", 0)
    rows = _rows_of(x)
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
        kind = (state, family, type(x).__name__, getattr(dtype, "str", None), size, i, rows, zeros)
        compressed = _maybe_compress(frame, size, kind)
        if compressed is not None:
            frames[i], compressions[i] = compressed
            changed = True
    if changed:
        header["compression"] = tuple(compressions)


def _rows_of(x: Any) -> tuple | None:
    """The shape of one of ``x``'s rows (its shape but the first axis), where it has a shape: part of its kind.

    The chunks of one array share it (their first axis may vary: an edge chunk,
    a dataframe's partitions), and arrays that differ there are kept apart: a
    choice to send as it is, made on one array's frames (a matrix product's
    partial products, which no codec sends sooner), held for the next
    ``resample`` frames of any other array of that dtype (a rechunk of a
    smooth field that compresses 6x), which went as they were for several runs.

    >>> import numpy as np
    >>> _rows_of(np.zeros((256, 4096))), _rows_of(np.zeros(10)), _rows_of({"a": 1})
    ((4096,), (), None)
    """
    try:
        shape = getattr(x, "shape", None)
        return tuple(shape[1:]) if isinstance(shape, tuple) else None
    except Exception:  # an object whose shape raises is sent as it would be without one, never refused
        return None


def _maybe_compress(frame: memoryview, typesize: int, kind: tuple) -> tuple[bytes, str] | None:
    global corrupt_next
    settings = _settings
    counters = _counters
    n = frame.nbytes
    start = time.perf_counter()
    choice = _choices.get(kind)
    if choice is None or choice[2] <= 0:
        choice = _sample(frame, typesize, kind)
        counters["sample_seconds"] += time.perf_counter() - start
    choice[2] -= 1
    if choice[0] is None:
        counters["skipped_frames"] += 1
        counters["skipped_bytes"] += n
        return None
    begin = time.perf_counter()
    elide = choice[0] == ZEROS
    with _meter.meter("asafe-compress"):
        compressed = elide_zeros(frame, typesize) if elide else compress_frame(frame, typesize, choice[0], choice[1])
    counters["compress_seconds"] += time.perf_counter() - begin
    if len(compressed) * settings["min_ratio"] > n:  # the sample promised more: sample this kind again
        choice[2] = choice[3] = 0  # and from `resample` frames again (the data changed)
        counters["skipped_frames"] += 1
        counters["skipped_bytes"] += n
        return None
    counters["compressed_frames"] += 1
    counters["elided_frames"] += elide
    counters["compressed_logical_bytes"] += n
    counters["compressed_wire_bytes"] += len(compressed)
    if corrupt_next > 0:  # tests: a frame whose stated size disagrees with its length
        corrupt_next -= 1
        compressed = compressed[:-1]
    return compressed, ZEROS_CODEC if elide else CODEC


def _sample(frame: memoryview, typesize: int, kind: tuple) -> list:
    """Choose this kind's codec and filter from its first bytes (or none); remember the choice.

    Returns ``[codec, filter id, frames left before the next sample]``, where ``codec`` is a
    blosc2 codec id, :data:`ZEROS` (elide zero elements; filter None) or None (send as is).
    """
    settings = _settings
    state = kind[0]
    least = settings["sample_size"]
    sample = frame[: sample_bytes(frame.nbytes, least, settings["max_sample_size"])]
    n = sample.nbytes
    link = state * 1e6 if isinstance(state, int) and not isinstance(state, bool) and state > 0 else None
    library = _library()
    if link is None:  # a codec named: the filter that shrinks the sample most
        codecs = [library["codecs"][CODEC_STATES[0] if state is True else state]]
        best, best_cost = (None, None), n / settings["min_ratio"]
    else:  # a link speed: the candidate that sends the sample soonest, by a margin over sending it as it is
        codecs = list(library["codecs"].values())
        best, best_cost = (None, None), (n / link) * (1 - settings["min_gain"])
    blosc2 = library["blosc2"]
    # the thread's cpu clock, not the wall's: a candidate takes a fraction of a millisecond, so one
    # time slice lost to another process (a few ms on a host whose cores are busy) measured it
    # several times slower than it is, and the choice it made held for `resample` frames. blosc2
    # runs in this thread with one thread; with more, its own threads' seconds are the wall's.
    clock = time.thread_time if settings["threads"] == 1 else time.perf_counter
    with _meter.meter("asafe-sample"):
        if link is not None and kind[-1] and ZEROS in settings["filters"] and typesize in _ZERO_SIZES:
            # a longer prefix than the codecs': numpy's fixed cost per call (a few microseconds, eight
            # calls) halved the speed measured on 64 KiB, and the choice with it, where a frame of
            # megabytes pays it once; a frame shorter than the prefix is timed whole, as it is sent
            prefix = frame[: max(n, _ZEROS_SAMPLE)]
            began = clock()
            elided = elide_zeros(prefix, typesize)
            eliding = clock() - began
            if len(elided) * settings["min_ratio"] <= prefix.nbytes:
                began = clock()
                restore_zeros(elided)
                cost = (eliding + (clock() - began) + len(elided) / link) * n / prefix.nbytes
                if cost < best_cost:
                    best, best_cost = (ZEROS, None), cost
        for codec_id in codecs:
            for name in settings["filters"]:
                if name == ZEROS:
                    continue
                filter_id = library["filters"][name]
                if n > least and len(compress_frame(sample[:least], typesize, codec_id, filter_id)) * \
                        settings["min_ratio"] > least:
                    continue  # it does not shrink the first bytes: not timed on the rest (random data's sample)
                began = clock()
                compressed = compress_frame(sample, typesize, codec_id, filter_id)
                compressing = clock() - began
                if len(compressed) * settings["min_ratio"] > n:
                    continue
                if link is None:
                    cost = len(compressed)
                else:
                    cost = compressing + len(compressed) / link
                    if cost >= best_cost:
                        continue  # it cannot win with its decompression added: not timed
                    began = clock()
                    blosc2.decompress2(compressed, nthreads=settings["threads"])
                    cost += clock() - began
                if cost < best_cost:
                    best, best_cost = (codec_id, filter_id), cost
    _counters["samples"] += 1
    if len(_choices) >= _MAX_KINDS:
        _choices.clear()
    frames = _next_sample(_choices.get(kind), best, settings["resample"])
    choice = _choices[kind] = [best[0], best[1], frames, frames]
    return choice


def _next_sample(previous: list | None, best: tuple, resample: int) -> int:
    """Frames of a kind before its next sample: ``resample``, doubled each time a sample chose as the last one did.

    A sample of a large frame costs a worker 13-25 ms (six candidates on 1 MiB,
    docs/results/workloads/1gbit-s37-sample), and a kind of frame that carries
    a run's every transfer (the workloads suite's futures: 30 frames of 6 MB a
    run) paid one per run, 5-8% of its time. Data whose choice holds is sampled
    at most every ``resample * 8`` frames; a new choice, or a frame that fell
    short of ``min-ratio``, starts again from ``resample``, so a kind whose data
    changes is looked at as often as before. A kind sent as it is (random
    data) is looked at every ``resample`` frames: its sample is the 64 KiB
    look, and a kind that starts to compress should not wait 256 frames.

    >>> _next_sample(None, (1, 2), 32), _next_sample([1, 2, 0, 32], (1, 2), 32), _next_sample([1, 2, 0, 256], (1, 2), 32)
    (32, 64, 256)
    >>> _next_sample([1, 2, 0, 128], (5, 2), 32), _next_sample([None, None, 0, 32], (None, None), 32)
    (32, 32)
    """
    if previous is None or best[0] is None or (previous[0], previous[1]) != best or previous[3] <= 0:
        return resample
    return max(resample, min(2 * previous[3], _RESAMPLE_GROWTH * resample))  # within [resample, 8 x resample]


def sample_bytes(nbytes: int, least: int, most: int) -> int:
    """How many of a frame's first bytes its sample compresses: an eighth of it, within ``[least, most]``.

    The candidates are timed on the sample to price the whole frame, and a
    short sample prices it wrong in a worker. distributed's nanny starts
    workers with ``MALLOC_TRIM_THRESHOLD_=65536``, so each blosc2 call there
    takes the pages of its codec's context and buffers from the kernel again
    (about 0.1 ms for ZSTD's): on a 64 KiB sample of int ids that doubled
    ZSTD's cost per byte (3.5 ns against 1.7 on 1 MiB and 1.6 on the whole
    frame; LZ4's changed little), so the sample chose LZ4 where ZSTD sends the
    frame 7-12% sooner. A frame of megabytes pays that once; a sample of 1 MiB
    prices it within a few percent. A frame shorter than ``least`` is sampled
    whole (it pays its own fixed costs in full). :func:`_sample` first
    compresses the first ``least`` bytes with each candidate, and times on the
    whole sample only those that shrink them by ``min-ratio``, so the sample
    of data that no candidate shrinks (random floats) costs what a 64 KiB one
    did.

    >>> sample_bytes(100 << 20, 64 << 10, 1 << 20)  # a large frame: the most
    1048576
    >>> sample_bytes(2 << 20, 64 << 10, 1 << 20)  # an eighth of it
    262144
    >>> sample_bytes(200 << 10, 64 << 10, 1 << 20), sample_bytes(40 << 10, 64 << 10, 1 << 20)
    (65536, 40960)
    """
    return min(nbytes, max(least, min(nbytes // _SAMPLE_SHARE, most)))


def elide_zeros(data: Any, typesize: int = 8) -> bytes:
    """Drop the elements of ``typesize`` bytes that are all zero bits; a bitmap says where they were.

    The frame: :data:`_ZEROS_MAGIC`, the element size (one byte, three of
    padding), the number of elements and of the buffer's bytes (8 each,
    little-endian), the bitmap of the non-zero elements (``numpy.packbits``,
    padded to a multiple of 8 bytes so that the elements after it stay
    aligned), those elements, and the bytes past the last whole element.
    Exact for any dtype: elements are compared as unsigned integers, so
    ``-0.0`` and NaNs are kept as they are.

    >>> import numpy as np
    >>> x = np.array([0.0, 1.5, 0.0, -0.0, 0.0, 0.0, 2.0, 0.0])
    >>> frame = elide_zeros(memoryview(x).cast("B"), 8)
    >>> len(frame), x.nbytes  # 24 of header, 8 of bitmap, 3 elements
    (56, 64)
    >>> restore_zeros(frame) == x.tobytes()  # bit for bit: -0.0 keeps its sign
    True

    Compiled (:mod:`asafe.schedulers._zeros`) where it was built, else
    numpy; both write and read the same frames.
    """
    if typesize not in _ZERO_SIZES:
        raise ValueError(f"zero elision takes elements of 2, 4 or 8 bytes, not {typesize!r}")
    if _zeros_c is not None:
        return _zeros_c.elide(memoryview(data).cast("B"), typesize)
    return _elide_zeros_numpy(data, typesize)


def _elide_zeros_numpy(data: Any, typesize: int) -> bytes:
    import numpy as np

    buffer = memoryview(data).cast("B")
    nbytes = buffer.nbytes
    count = nbytes // typesize
    dtype = _ZERO_SIZES[typesize]
    elements = np.frombuffer(buffer, dtype=dtype, count=count)
    nonzero = elements != 0
    bitmap = np.packbits(nonzero)
    header = _ZEROS_MAGIC + bytes((typesize, 0, 0, 0)) + count.to_bytes(8, "little") + nbytes.to_bytes(8, "little")
    # np.compress and a fancy put (restore_zeros) run 4-5x faster than a boolean mask's indexing and
    # assignment (6 and 8 against 1.5 GB/s on this project's machine), which decides whether elision
    # pays behind 1 Gbit/s; one join of the parts was faster than compressing into a preallocated frame
    return b"".join((header, bitmap.data, bytes(_bitmap_bytes(count) - bitmap.nbytes),
                     np.compress(nonzero, elements).data, buffer[count * typesize:]))


def _bitmap_bytes(count: int) -> int:
    return (count + 63) // 64 * 8


def restore_zeros(data: Any) -> bytearray:
    """The buffer :func:`elide_zeros` made ``data`` from (``ValueError`` where its lengths disagree)."""
    if _zeros_c is not None:
        return _zeros_c.restore(memoryview(data).cast("B"))
    return _restore_zeros_numpy(data)


def _restore_zeros_numpy(data: Any) -> bytearray:
    import numpy as np

    frame = memoryview(data).cast("B")
    if frame.nbytes < 24 or bytes(frame[:4]) != _ZEROS_MAGIC:
        raise ValueError("not a zero-elided frame (its magic bytes differ)")
    typesize = frame[4]
    dtype = _ZERO_SIZES.get(typesize)
    count = int.from_bytes(frame[8:16], "little")
    nbytes = int.from_bytes(frame[16:24], "little")
    values_at = 24 + _bitmap_bytes(count)
    if dtype is None or count * typesize > nbytes or frame.nbytes < values_at:
        raise ValueError(f"its header states {count} elements of {typesize} bytes in {nbytes} bytes")
    nonzero = np.unpackbits(np.frombuffer(frame, dtype=np.uint8, count=(count + 7) // 8, offset=24),
                            count=count).view(bool)
    kept = int(np.count_nonzero(nonzero))
    tail = nbytes - count * typesize
    if frame.nbytes != values_at + kept * typesize + tail:
        raise ValueError(f"it holds {frame.nbytes} bytes where its bitmap needs {values_at + kept * typesize + tail}")
    out = bytearray(nbytes)
    elements = np.frombuffer(out, dtype=dtype, count=count)
    elements[np.flatnonzero(nonzero)] = np.frombuffer(frame, dtype=dtype, count=kept, offset=values_at)
    if tail:
        out[count * typesize:] = frame[values_at + kept * typesize:]
    return out


def decompress_zeros(data: Any) -> bytearray:
    """Restore one zero-elided frame on arrival, or raise :class:`WireDecompressionError` (counted as one)."""
    start = time.perf_counter()
    length = memoryview(data).nbytes
    try:
        with _decompress_meter():
            out = restore_zeros(data)
    except Exception as exc:
        raise _failed(length, ZEROS_CODEC, exc) from exc
    _count_received(len(out), length, time.perf_counter() - start)
    return out


def compress_frame(data: Any, typesize: int = 8, codec: Any = None, filter: Any = None) -> bytes:
    """Compress one buffer with blosc2 (default: the first codec of :data:`CODEC_STATES`, byte shuffle)."""
    settings = _settings
    library = _library()
    blosc2 = library["blosc2"]
    return blosc2.compress2(
        data, typesize=typesize, clevel=settings["level"],
        codec=library["codecs"][CODEC_STATES[0]] if codec is None else codec,
        filters=[blosc2.Filter.SHUFFLE if filter is None else filter], nthreads=settings["threads"],
    )


def prepare(state: Any) -> None:
    """Import blosc2 in the background once a state that compresses reaches this process (idempotent).

    The worker plugin calls it with each state it receives. The first frame's
    sample otherwise imported blosc2 itself, on the path of that transfer
    (about 0.1 s on a quiet core of this project's machine, 0.3-0.7 s while
    the worker starts); a state that never compresses imports nothing. The
    same thread then makes each candidate's first call (:func:`_warm_up`).
    """
    global _importing
    if not state or _blosc2 or _importing:
        return
    _importing = True
    threading.Thread(target=_import_quietly, name="asafe-wire-import", daemon=True).start()


def _import_quietly() -> None:
    try:
        _library()
        _warm_up()
    except Exception:  # noqa: BLE001  (missing blosc2 is refused at install; a frame raises it again)
        pass


def _warm_up() -> None:
    """Make each candidate's first call in this process, on a small buffer, off the transfers' path.

    A process's first call of a codec and filter costs more than the next ones
    (blosc2's and the codec's set-up: up to 40% more on a 64 KiB sample of int
    ids, ``docs/results/workloads/1gbit-s29/codec_probe.txt``), so the first
    sample priced the candidates it timed first above the others, and its
    choice held for ``resample`` frames. :func:`prepare` runs this in the
    background.
    """
    global _warm
    library = _library()
    small = bytes(range(256)) * 64
    for codec_id in library["codecs"].values():
        for filter_id in library["filters"].values():
            library["blosc2"].decompress2(compress_frame(small, 8, codec_id, filter_id),
                                          nthreads=_settings.get("threads", 1))
    _warm = True


def _library() -> dict[str, Any]:
    """blosc2, its codecs of :data:`CODEC_STATES` and the filters of :data:`FILTERS` (imported on first use)."""
    if not _blosc2:
        import blosc2

        _blosc2.update(
            blosc2=blosc2,
            codecs={name: getattr(blosc2.Codec, name.upper()) for name in CODEC_STATES},
            filters={"none": blosc2.Filter.NOFILTER, "shuffle": blosc2.Filter.SHUFFLE,
                     "bitshuffle": blosc2.Filter.BITSHUFFLE},
        )
        _release_gil()
    return _blosc2


def _release_gil() -> None:
    # blosc2 releases the GIL in its calls from now on, in this process (see the module docstring);
    # the value it had is kept for disable()
    if _blosc2 and "releasegil_before" not in _blosc2:
        _blosc2["releasegil_before"] = _blosc2["blosc2"].set_releasegil(True)


def decompress_frame(data: Any) -> bytearray:
    """Decompress one frame into a new writable buffer, or raise :class:`WireDecompressionError`."""
    blosc2 = _library()["blosc2"]  # not a bare import: the first use releases the GIL (module docstring)
    start = time.perf_counter()
    length = memoryview(data).nbytes
    try:
        nbytes, cbytes, _ = blosc2.get_cbuffer_sizes(data)
        if cbytes != length:
            raise ValueError(f"its header states {cbytes} compressed bytes")
        out = bytearray(nbytes)
        with _decompress_meter():
            blosc2.decompress2(data, dst=out, nthreads=_settings.get("threads", 1))
    except Exception as exc:
        raise _failed(length, CODEC, exc) from exc
    _count_received(nbytes, length, time.perf_counter() - start)
    return out


def _decompress_meter() -> Any:
    """distributed's ``context_meter`` for a decompression, or nothing before :func:`enable` set it."""
    return _meter.meter("asafe-decompress") if _meter is not None else contextlib.nullcontext()


def _failed(length: int, codec: str, exc: Exception) -> WireDecompressionError:
    _counters["failed_frames"] = _counters.get("failed_frames", 0) + 1
    return WireDecompressionError(
        f"asafe wire-compression: a received frame of {length} bytes ({codec}) failed to "
        f"decompress: {exc}. The transfer is dropped; Dask fetches the data again from "
        "another replica or recomputes it."
    )


def _count_received(nbytes: int, length: int, seconds: float) -> None:
    """Count one decompressed frame: the bytes it saved and the codec's seconds at both ends."""
    counters = _counters
    if counters:
        counters["decompressed_frames"] += 1
        counters["decompressed_logical_bytes"] += nbytes
        counters["decompressed_wire_bytes"] += length
        counters["decompress_seconds"] += seconds
    global _saved, _codec_seconds
    _saved += max(nbytes - length, 0)
    _codec_seconds += seconds + nbytes * _compress_seconds_per_byte(seconds / max(nbytes, 1))


def _compress_seconds_per_byte(fallback: float) -> float:
    """This process's own compression cost per byte (``fallback`` before it compressed anything)."""
    counters = _counters
    compressed = counters.get("compressed_logical_bytes", 0)
    return counters.get("compress_seconds", 0.0) / compressed if compressed else fallback


def take_received() -> tuple[int, int, float]:
    """What was saved on what this process received since the last call; all three are then zeroed.

    Returns the bytes the codec saved on the frames it decompressed, the bytes
    saved by objects stored compressed (tiles) whose sizes the sender reported,
    and the codec's seconds. The worker plugin adds both byte counts to the
    transfer it annotates (the codec's are also taken off the batch's size,
    which counts them uncompressed), so the scheduler counts that transfer in
    uncompressed-equivalent terms, and passes the seconds, so the scheduler can
    take the codec's time out of the transfer's before it measures the link.
    The seconds are this process's decompression plus the sender's
    compression, estimated at this process's own compression speed (the
    workers run the same codec on the same kind of hardware; before this
    process compressed anything, at its decompression speed).
    """
    global _saved, _stored_saved, _codec_seconds
    taken = (_saved, _stored_saved, _codec_seconds)
    _saved, _stored_saved, _codec_seconds = 0, 0, 0.0
    return taken


def stats() -> dict[str, float]:
    """This process's counters: frames and bytes compressed (of them ``elided_frames`` by zero elision),
    skipped and decompressed, samples, seconds."""
    return dict(_counters, enabled=_enabled, on=bool(board.peek(NAME, False)), state=board.peek(NAME, False))


def forget_choices() -> None:
    """Forget this process's codec choices: the next frame of every kind is sampled again."""
    with _lock:
        _choices.clear()


def reset_stats() -> None:
    """Zero this process's counters."""
    global _saved, _stored_saved, _codec_seconds
    for key in ("compressed_frames", "elided_frames", "compressed_logical_bytes", "compressed_wire_bytes",
                "skipped_frames", "skipped_bytes", "decompressed_frames",
                "decompressed_logical_bytes", "decompressed_wire_bytes", "failed_frames", "samples"):
        _counters[key] = 0
    for key in ("compress_seconds", "sample_seconds", "decompress_seconds"):
        _counters[key] = 0.0
    _saved, _stored_saved, _codec_seconds = 0, 0, 0.0
