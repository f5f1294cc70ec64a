"""The wire codec's sample: how much of a frame it compresses, and the settings that say so.

Which candidate the sample chooses depends on speeds measured on this machine
and is measured by the benchmarks (``docs/results/workloads/1gbit-s37-sample``),
not asserted here; what the sample compresses is.
"""
from __future__ import annotations

import dask
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from asafe.core import validate
from asafe.schedulers import wire

KIB = 1 << 10


@given(st.integers(0, 1 << 34), st.integers(1, 1 << 24), st.integers(0, 1 << 24), st.integers(0, 1 << 30))
def test_a_frames_sample_is_an_eighth_of_it_between_the_settings(nbytes, least, extra, more):
    most = least + extra
    n = wire.sample_bytes(nbytes, least, most)
    assert n == nbytes if nbytes <= least else least <= n <= most
    if least < nbytes // 8 < most:
        assert n == nbytes // 8
    assert wire.sample_bytes(nbytes + more, least, most) >= n  # a longer frame never gets a shorter sample


def _compressed_sizes(monkeypatch, frame_bytes, state, config=None):
    """Sizes of the buffers one sample of an int-ids frame of ``frame_bytes`` compressed."""
    sizes = []
    compress = wire.compress_frame

    def recording(data, typesize=8, codec=None, filter=None):
        sizes.append(memoryview(data).nbytes)
        return compress(data, typesize, codec, filter)

    with dask.config.set(config or {}):
        wire.enable()
    monkeypatch.setattr(wire, "compress_frame", recording)
    _sample_int_ids(frame_bytes, state)
    return sizes


def _sample_int_ids(frame_bytes, state):
    """A fresh sample of an int-ids frame of ``frame_bytes`` under ``state``: its choice."""
    ids = np.random.default_rng(0).integers(0, 5000, frame_bytes // 8, dtype=np.int64)
    wire._choices.clear()
    return wire._sample(memoryview(ids).cast("B"), 8, (state, "dask", "ndarray", ids.dtype.str, 8, 0, None, False))


@pytest.mark.parametrize("state", [120, "zstd"])
def test_the_sample_of_a_large_frame_compresses_max_sample_size(monkeypatch, state):
    try:
        sizes = _compressed_sizes(monkeypatch, 16 << 20, state)
        assert set(sizes) == {64 * KIB, 1 << 20}  # the first 64 KiB of each candidate, then the sample
        sizes = _compressed_sizes(monkeypatch, 16 << 20, state, {"asafe.wire.max-sample-size": "256 KiB"})
        assert set(sizes) == {64 * KIB, 256 * KIB}
    finally:
        wire.enable()  # the shipped settings again


def test_the_sample_of_a_mid_sized_frame_is_an_eighth_and_of_a_short_one_all_of_it(monkeypatch):
    try:
        assert set(_compressed_sizes(monkeypatch, 2 << 20, 120)) == {64 * KIB, 256 * KIB}
        assert set(_compressed_sizes(monkeypatch, 48 * KIB, 120, {"asafe.wire.min-size": "16 KiB"})) == {48 * KIB}
    finally:
        wire.enable()


def test_a_max_sample_size_below_sample_size_is_refused_naming_both():
    with pytest.raises(validate.InvalidSetting, match="max-sample-size.*'32 KiB'.*wire.sample-size.*'64 KiB'"):
        wire.check_settings({"sample-size": "64 KiB", "max-sample-size": "32 KiB"})
    with pytest.raises(validate.InvalidSetting, match="asafe.wire.max-sample-size"):
        wire.check_settings({"max-sample-size": "lots"})


def test_an_environment_variables_underscored_key_is_the_setting_it_names():
    # DASK_ASAFE__WIRE__MAX_SAMPLE_SIZE: a shell cannot put a hyphen in a variable's name
    env = dask.config.collect_env({"DASK_ASAFE__WIRE__MAX_SAMPLE_SIZE": "2 MiB", "DASK_ASAFE__WIRE__MIN_RATIO": "1.5"})
    assert env == {"asafe": {"wire": {"max_sample_size": "2 MiB", "min_ratio": 1.5}}}
    settings = wire.check_settings(env["asafe"]["wire"])
    assert settings["max_sample_size"] == 2 << 20 and settings["min_ratio"] == 1.5
    # both spellings in one dict (the defaults' and the variable's): the variable's wins
    both = wire.check_settings({"max-sample-size": "1 MiB", "max_sample_size": "4 MiB"})
    assert both["max_sample_size"] == 4 << 20
    with pytest.raises(validate.InvalidSetting, match=r"unknown keys \['sample-sise'\]"):
        wire.check_settings({"sample_sise": "1 MiB"})  # a typo is still caught


def test_min_gain_is_a_share_below_1_checked_with_the_other_settings():
    assert wire.check_settings({"min-gain": "0.05"})["min_gain"] == 0.05
    assert wire.check_settings({})["min_gain"] == 0.1  # the shipped default
    env = dask.config.collect_env({"DASK_ASAFE__WIRE__MIN_GAIN": "0"})
    assert wire.check_settings(env["asafe"]["wire"])["min_gain"] == 0.0
    for bad in (1, 1.5, -0.1, "lots", True, float("nan")):
        with pytest.raises(validate.InvalidSetting, match=r"asafe.wire.min-gain must be .*at least 0 and below 1"):
            wire.check_settings({"min-gain": bad})


def _int_ids_choice(config):
    try:
        with dask.config.set(config):
            wire.enable()
        return _sample_int_ids(4 << 20, 120)
    finally:
        wire.enable()


def test_a_link_speed_codec_must_save_min_gain_of_the_frames_time():
    # int ids at 120 MB/s: a codec sends them in well under half the time they take as they are (their
    # bytes alone shrink more than 4x); no codec saves 99% of it (13 of 64 bits carry information)
    assert _int_ids_choice({"asafe.wire.min-gain": 0.1})[0] is not None
    assert _int_ids_choice({"asafe.wire.min-gain": 0.0})[0] is not None
    assert _int_ids_choice({"asafe.wire.min-gain": 0.99})[0] is None


def _sent(x, state=120):
    """Compress ``x``'s one frame as a worker sends it under ``state``; whether it went compressed."""
    header, frames = {}, [memoryview(np.ascontiguousarray(x)).cast("B")]
    wire._compress_frames(header, frames, x, "dask", state)
    return (header.get("compression") or (None,))[0] is not None


def test_a_choice_to_send_as_it_is_holds_for_arrays_of_that_shape_only():
    # A matrix product's partial products (random-looking) chose "as it is"; a rechunk of a smooth field
    # of the same dtype sent next went as it was for the next `resample` frames before its kind had its own
    rng = np.random.default_rng(0)
    smooth = np.round(np.sin(np.linspace(0, 60, 1024 * 512)), 3).reshape(1024, 512)
    try:
        wire.enable()
        wire._choices.clear()
        wire.reset_stats()
        assert not _sent(rng.random((512, 128)))
        assert not _sent(rng.random((512, 128)))  # the same kind: the choice holds, no second sample
        assert wire._counters["samples"] == 1
        assert _sent(smooth)  # rows of another shape: its own kind, sampled, compressed
        assert _sent(smooth[:768])  # an edge chunk of the same array (fewer rows): the same kind
        assert wire._counters["samples"] == 2
    finally:
        wire.enable()


def test_random_datas_sample_compresses_only_the_first_bytes(monkeypatch):
    # no candidate shrinks random bytes: none is timed on the whole sample, and the frame goes as it is
    sizes = []
    compress = wire.compress_frame

    def recording(data, typesize=8, codec=None, filter=None):
        sizes.append(memoryview(data).nbytes)
        return compress(data, typesize, codec, filter)

    try:
        wire.enable()
        monkeypatch.setattr(wire, "compress_frame", recording)
        noise = np.random.default_rng(0).random((16 << 20) // 8)
        wire._choices.clear()
        choice = wire._sample(memoryview(noise).cast("B"), 8, (120, "dask", "ndarray", "<f8", 8, 0, None, False))
        assert choice[0] is None
        assert sizes and set(sizes) == {64 * KIB}
    finally:
        wire.enable()


@given(st.none() | st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, 1, 2]), st.integers(0, 4096)),
       st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, 1, 2])), st.integers(1, 512))
def test_a_kinds_next_sample_waits_longer_only_while_its_codec_holds(previous, best, resample):
    previous = None if previous is None else [previous[0], previous[1], 0, previous[2]]
    frames = wire._next_sample(previous, best, resample)
    assert resample <= frames <= wire._RESAMPLE_GROWTH * resample
    holds = previous is not None and best[0] is not None and (previous[0], previous[1]) == best and previous[3] > 0
    if not holds:
        assert frames == resample  # a new choice, data sent as it is, or a frame that fell short: from resample
    else:
        assert frames == max(resample, min(2 * previous[3], wire._RESAMPLE_GROWTH * resample))


def _frames_sampled(data, state, frames):
    wire.enable()
    wire._choices.clear()
    wire.reset_stats()
    sampled = []
    frame = memoryview(data).cast("B")
    kind = (state, "dask", "ndarray", data.dtype.str, 8, 0, None, False)
    for i in range(frames):
        before = wire.stats()["samples"]
        wire._maybe_compress(frame, 8, kind)
        if wire.stats()["samples"] > before:
            sampled.append(i)
    return sampled


def test_a_kind_whose_codec_holds_is_sampled_ever_less_often_and_random_data_every_resample():
    ids = np.random.default_rng(0).integers(0, 5000, (256 * KIB) // 8, dtype=np.int64)
    noise = np.random.default_rng(0).random((256 * KIB) // 8)
    try:
        # a named codec chooses its filter by size alone: the same filter at every sample
        assert _frames_sampled(ids, "zstd", 600) == [0, 32, 96, 224, 480]
        assert _frames_sampled(noise, 120, 100) == [0, 32, 64, 96]  # sent as it is: no growth
    finally:
        wire.enable()
