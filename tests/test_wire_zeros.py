"""Zero elision (asafe.schedulers.wire.elide_zeros): exact for any bytes, refused when damaged, chosen by the sample.

Both forms, the compiled one (``asafe.schedulers._zeros``) and numpy's, write and read the same frames.
"""
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
    return wire._sample(frame, data.dtype.itemsize, (state, "dask", "ndarray", data.dtype.str, 8, 0, None, zeros))[0]


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


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096), st.sampled_from([2, 4, 8]), st.floats(0.0, 1.0), st.integers(0, 7))
def test_the_compiled_and_numpy_forms_write_and_read_the_same_frames(zeros_compiled, raw, typesize, zero_share,
                                                                     offset):
    data = bytearray(raw)
    rng = np.random.default_rng(len(raw))
    for i in range(0, len(data) - typesize + 1, typesize):
        if rng.random() < zero_share:
            data[i:i + typesize] = bytes(typesize)
    unaligned = memoryview(bytes(offset) + bytes(data))[offset:]  # a frame may start at any address
    frame = zeros_compiled.elide(unaligned, typesize)
    assert frame == wire._elide_zeros_numpy(unaligned, typesize)
    assert zeros_compiled.restore(memoryview(bytes(offset) + frame)[offset:]) == data
    assert wire._restore_zeros_numpy(frame) == data


@pytest.mark.parametrize("damage", [
    lambda f: f[:-1], lambda f: f + b"\0", lambda f: b"XXXX" + f[4:], lambda f: f[:4] + bytes([3]) + f[5:],
    lambda f: f[:10], lambda f: f[:24] + bytes(len(f) - 24),  # a bitmap of zeros: no element kept
    lambda f: f[:8] + (2**63).to_bytes(8, "little") + f[16:],  # a count that no frame holds
    lambda f: f[:16] + (2**64 - 1).to_bytes(8, "little") + f[24:],  # a size that no frame holds
])
def test_both_forms_refuse_a_damaged_frame_alike(zeros_compiled, damage):
    x = np.arange(1000, dtype="f8") % 3
    frame = damage(wire._elide_zeros_numpy(memoryview(x).cast("B"), 8))
    with pytest.raises(ValueError) as compiled:
        zeros_compiled.restore(frame)
    with pytest.raises(ValueError) as numpy_form:
        wire._restore_zeros_numpy(frame)
    assert str(compiled.value) == str(numpy_form.value)


def test_an_element_size_that_cannot_be_elided_is_refused_by_name():
    with pytest.raises(ValueError, match="2, 4 or 8 bytes, not 3"):
        wire.elide_zeros(b"abcdef", 3)


def test_the_sample_times_its_candidates_on_the_threads_cpu_clock(monkeypatch):
    """A time slice lost to another process during the sample must not decide.

    The wall clock here advances 5 ms at every read, as if the sampling thread were
    preempted between any two: on it, no candidate sends the sample sooner than the
    link, and the sample sent it as it was.
    """
    rng = np.random.default_rng(3)
    x = rng.standard_normal(1 << 16)
    x[rng.choice(x.size, x.size // 2, replace=False)] = 0.0
    wall = iter(range(10**9))
    monkeypatch.setattr(wire.time, "perf_counter", lambda: next(wall) * 0.005)
    assert _choose(x, 120) == wire.ZEROS


def test_blosc2_releases_the_gil_while_the_codec_is_enabled_and_disable_puts_it_back():
    """blosc2 holds the GIL through a call unless told otherwise, and a frame compressed on distributed's
    offload thread then held the worker's event loop for the whole call (the module docstring); the wire's
    first use of blosc2 releases it, and disable() restores what it found."""
    import blosc2

    wire.disable()
    blosc2.set_releasegil(False)  # what a process has before asafe
    wire.enable()
    wire.decompress_frame(wire.compress_frame(np.arange(4096.0).tobytes()))  # the first use imports blosc2
    assert blosc2.set_releasegil(True) is True  # it was released
    wire.disable()
    assert blosc2.set_releasegil(False) is False  # put back
    wire.enable()  # re-enabled: released again
    assert blosc2.set_releasegil(True) is True
