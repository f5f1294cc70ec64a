"""The wire sample (asafe.schedulers.wire._sample): which bytes it compresses to choose a codec, and when.

A link-speed state times its candidates on the frame's first MiB (a 64 KiB
sample read ZSTD at half its speed on whole frames: each call's fixed cost);
the sample only screens them, so data that does not compress is never timed on
more than the sample. These tests count the bytes handed to the codec, not
seconds: they hold on a loaded machine.
"""
from __future__ import annotations

import numpy as np
import pytest

from asafe.schedulers import wire


def _sizes_compressed(monkeypatch, data: np.ndarray, state) -> tuple[list[int], object]:
    wire.enable()
    wire._choices.clear()
    seen: list[int] = []
    compress = wire.compress_frame

    def counting(buffer, *args, **kwargs):
        seen.append(memoryview(buffer).nbytes)
        return compress(buffer, *args, **kwargs)

    monkeypatch.setattr(wire, "compress_frame", counting)
    frame = memoryview(data).cast("B")
    choice = wire._sample(frame, data.dtype.itemsize, (state, "dask", "ndarray", data.dtype.str, 8, 0, False))
    return seen, choice[0]


def _ids(n: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 1000, n).astype("i8") * 3


def test_a_link_speed_times_the_candidates_that_pass_on_a_mib(monkeypatch):
    seen, choice = _sizes_compressed(monkeypatch, _ids(1 << 19), 120)  # 4 MiB of int ids, 120 MB/s
    sample = wire._settings["sample_size"]
    assert choice is not None  # int ids compress about 5x: some candidate pays behind 120 MB/s
    assert set(seen) == {sample, wire._TIMED_PREFIX}
    screened = seen.count(sample)
    assert screened == len(wire.CODEC_STATES) * 3  # every codec with none, shuffle, bitshuffle
    assert 1 <= seen.count(wire._TIMED_PREFIX) <= screened  # only those that passed are timed


def test_incompressible_data_is_only_screened(monkeypatch):
    data = np.random.default_rng(1).standard_normal(1 << 19)
    seen, choice = _sizes_compressed(monkeypatch, data, 120)
    assert choice is None  # sent as it is
    assert max(seen) == wire._settings["sample_size"]  # never timed on the MiB


@pytest.mark.parametrize("state", ["lz4", "zstd", True])
def test_a_named_codec_is_chosen_on_the_sample_alone(monkeypatch, state):
    seen, choice = _sizes_compressed(monkeypatch, _ids(1 << 19), state)
    assert choice == wire._library()["codecs"][wire.CODEC_STATES[0] if state is True else state]
    assert set(seen) == {wire._settings["sample_size"]}


def test_a_frame_shorter_than_the_prefix_is_timed_whole(monkeypatch):
    data = _ids(1 << 15)  # 256 KiB
    seen, choice = _sizes_compressed(monkeypatch, data, 120)
    assert choice is not None and max(seen) == data.nbytes
