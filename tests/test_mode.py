"""ModeVector: shares, ratio, signals, immutability and bad input."""
import math
import pickle

import pytest

from asafe import ModeVector


def test_shares_are_normalised():
    mode = ModeVector({"compute": 1, "communication": 3})
    assert mode["compute"] == 0.25
    assert mode["communication"] == 0.75
    assert mode["other"] == 0.0
    assert math.isclose(sum(mode.values()), 1.0)


@pytest.mark.parametrize(
    "shares, ratio",
    [
        ({"compute": 0.2, "communication": 0.8}, 0.25),
        ({"compute": 1.0}, math.inf),
        ({"communication": 1.0}, 0.0),
        ({"compute": 1.0, "io": 5.0}, math.inf),
    ],
)
def test_ratio(shares, ratio):
    assert ModeVector(shares).ratio == ratio


def test_idle_mode_has_nan_ratio_and_zero_shares():
    assert math.isnan(ModeVector().ratio)
    assert math.isnan(ModeVector({"compute": 0, "communication": 0}).ratio)
    assert ModeVector({"compute": 0})["compute"] == 0.0


def test_signals_and_metric():
    mode = ModeVector({"compute": 1, "io": 1}, cpu=0.9, memory=0.2)
    assert mode.signals == {"cpu": 0.9, "memory": 0.2}
    assert mode.metric("cpu") == 0.9
    assert mode.metric("io") == 0.5
    assert mode.metric("ratio") == math.inf
    assert mode.replace(cpu=0.1).signals["cpu"] == 0.1
    assert mode.signals["cpu"] == 0.9


def test_immutable_and_hashable():
    mode = ModeVector({"compute": 1})
    with pytest.raises(AttributeError):
        mode.ratio = 3
    with pytest.raises(TypeError):
        mode["compute"] = 0.5
    shares = mode.shares
    shares["compute"] = 0.0
    assert mode["compute"] == 1.0
    assert hash(mode) == hash(ModeVector({"compute": 2}))
    assert mode == ModeVector({"compute": 2})


def test_pickles():
    mode = ModeVector({"compute": 1, "communication": 1}, cpu=0.5)
    assert pickle.loads(pickle.dumps(mode)) == mode


def test_repr_is_compact():
    text = repr(ModeVector({"compute": 1, "communication": 3}, cpu=0.5))
    assert text == "ModeVector({'communication': 0.75, 'compute': 0.25}, ratio=0.333, cpu=0.5)"


@pytest.mark.parametrize(
    "shares, error, message",
    [
        ({"compute": -1}, ValueError, "finite non-negative"),
        ({"compute": math.nan}, ValueError, "got nan"),
        ({"compute": math.inf}, ValueError, "finite non-negative"),
        ({"compute": "a lot"}, TypeError, "must be a number"),
        ({3: 1.0}, TypeError, "must be a str"),
    ],
)
def test_bad_shares(shares, error, message):
    with pytest.raises(error, match=message):
        ModeVector(shares)
