"""What the forecast learns of a prefix's output sizes: their mean, not the latest outputs."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from asafe import ModeTracker
from asafe.schedulers.forecast import TransferForecast


def _forecast():
    tracker = ModeTracker(window=4, blend=0.0, default_duration=1.0)
    return TransferForecast(tracker, bandwidth=lambda: 1e8, workers=lambda: 2)


def test_a_prefix_of_blocks_and_slivers_is_priced_near_its_mean():
    # one 6 MB block and three slivers of 7 kB per input chunk, as the misaligned difference
    # splits them: the mean is 1.5 MB; the latest outputs (slivers) would price every edge at ~0
    forecast = _forecast()
    for _ in range(16):
        for nbytes in (6e6, 7e3, 7e3, 7e3):
            forecast.learn_output("piece", nbytes=nbytes)
    assert 0.5e6 < forecast.output_bytes["piece"] < 3e6


@given(st.lists(st.floats(0, 1e9), min_size=1, max_size=200))
def test_the_size_learned_lies_within_the_sizes_seen(sizes):
    forecast = _forecast()
    for nbytes in sizes:
        forecast.learn_output("p", nbytes=nbytes)
    assert min(sizes) * (1 - 1e-9) <= forecast.output_bytes["p"] <= max(sizes) * (1 + 1e-9)
