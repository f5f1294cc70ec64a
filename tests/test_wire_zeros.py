"""Zero elision (asafe.schedulers.wire.elide_zeros): exact for any bytes, refused when damaged, chosen by the sample."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asafe.schedulers import wire


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2048), st.sampled_from([2, 4, 8]), st.floats(0.0, 1.0))
def test_elision_restores_every_bit_of_any_buffer(raw, typesize, zero_share):
    data = bytearray(raw)
    for i in range(0, len(data) - typesize + 1, typesize):  # zero a share of whole elements
        if (i // typesize) % 100 < zero_share * 100:
            data[i:i + typesize] = bytes(typesize)
    frame = wire.elide_zeros(memoryview(bytes(data)), typesize)
    assert wire.restore_zeros(frame) == data
    whole = len(data) // typesize
    zeros = sum(1 for i in range(whole) if not any(data[i * typesize:(i + 1) * typesize]))
    assert len(frame) == 24 + (whole + 63) // 64 * 8 + (whole - zeros) * typesize + len(data) % typesize


def test_half_zero_floats_shrink_about_twofold_and_keep_negative_zero_and_nans():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1 << 16)
    x[rng.choice(x.size, x.size // 2, replace=False)] = 0.0
    x[:3] = [-0.0, np.nan, np.inf]
    frame = wire.elide_zeros(memoryview(x).cast("B"), 8)
    assert 1.9 < x.nbytes / len(frame) < 2.0
    assert wire.restore_zeros(frame) == x.tobytes()


@pytest.mark.parametrize("damage, words", [
    (lambda f: f[:-1], "holds"),
    (lambda f: f + b"\0", "holds"),
    (lambda f: b"XXXX" + f[4:], "magic"),
    (lambda f: f[:4] + bytes([3]) + f[5:], "elements of 3 bytes"),
    (lambda f: f[:10], "magic"),
])
def test_a_damaged_frame_raises_on_the_receiver_and_is_counted(damage, words):
    wire.reset_stats()
    x = np.arange(1024, dtype="f8") % 3
    frame = damage(wire.elide_zeros(memoryview(x).cast("B"), 8))
    with pytest.raises(ValueError, match=words):
        wire.restore_zeros(frame)
    with pytest.raises(wire.WireDecompressionError, match="asafe-zeros"):
        wire.decompress_zeros(frame)
    assert wire.stats()["failed_frames"] == 1


def _choose(data, state, zeros=True):
    wire.enable()
    wire._choices.clear()
    frame = memoryview(data).cast("B")
    return wire._sample(frame, data.dtype.itemsize, (state, "dask", "ndarray", data.dtype.str, 8, 0, zeros))[0]


def test_the_sample_elides_half_zero_floats_behind_a_slow_link_and_never_for_a_named_codec():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(1 << 16)
    x[rng.choice(x.size, x.size // 2, replace=False)] = 0.0
    assert _choose(x, 30) == wire.ZEROS  # 30 MB/s: the elision sends it soonest
    assert _choose(x, 30, zeros=False) != wire.ZEROS  # a peer that cannot decode it
    assert _choose(x, "lz4") not in (wire.ZEROS, None)  # a named codec means that codec
    assert _choose(rng.standard_normal(1 << 16), 30) is None  # nothing to elide, nothing compresses
    wire.enable()


def test_the_zeros_filter_can_be_left_out_and_a_typo_is_refused():
    assert wire.check_settings({"filters": ["none", "zeros"]})["filters"] == ("none", "zeros")
    with pytest.raises(wire.validate.InvalidSetting, match="zeros"):
        wire.check_settings({"filters": ["zeroes"]})


def test_a_peer_that_decodes_only_blosc2_never_receives_elided_frames():
    rng = np.random.default_rng(2)
    x = np.where(rng.random(1 << 17) < 0.5, 0.0, rng.standard_normal(1 << 17))
    wire.enable()
    for version, codec, restore in ((1, wire.CODEC, wire.decompress_frame),
                                    (wire.HANDSHAKE_VERSION, wire.ZEROS_CODEC, wire.decompress_zeros)):
        wire._choices.clear()
        header, frames = {}, [memoryview(x).cast("B")]
        wire._compress_frames(header, frames, x, "dask", 30, wire._decodes_zeros(version))
        assert header["compression"] == (codec,)
        assert restore(frames[0]) == x.tobytes()
    assert not wire._decodes_zeros(None) and not wire._decodes_zeros("yes")
