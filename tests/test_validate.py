"""asafe.core.validate: one rule for numbers, booleans, durations, sizes and names at every boundary."""
from __future__ import annotations

import copy
import math

import dask
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import asafe
from asafe.core import config, validate


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
def test_a_number_is_accepted_exactly_within_its_bounds(x):
    inside = 0 <= x <= 1
    if inside:
        assert validate.number(x, "blend", minimum=0, maximum=1) == x
    else:
        with pytest.raises(validate.InvalidSetting, match="blend must be a number from 0 to 1"):
            validate.number(x, "blend", minimum=0, maximum=1)


@pytest.mark.parametrize("check", [
    lambda v: validate.number(v, "x"), lambda v: validate.integer(v, "x"),
    lambda v: validate.duration(v, "x"), lambda v: validate.size(v, "x"),
])
def test_booleans_are_never_numbers(check):
    for value in (True, False, np.bool_(True)):
        with pytest.raises(validate.InvalidSetting):
            check(value)


def test_numbers_are_never_booleans_and_strings_are_spelled_as_environment_variables():
    assert [validate.boolean(v, "x") for v in ("on", "Off", " yes ", "0", True, 1)] == [True, False, True, False,
                                                                                         True, True]
    for value in (2, -1, "sometimes", 0.5, None):
        with pytest.raises(validate.InvalidSetting, match="must be a boolean"):
            validate.boolean(value, "x")


def test_an_invalid_setting_is_both_a_value_error_and_a_type_error():
    with pytest.raises(ValueError):
        validate.integer("abc", "window")
    with pytest.raises(TypeError):
        validate.integer("abc", "window")


def test_a_configuration_error_names_the_key_and_its_environment_variable():
    with dask.config.set({"asafe.tracker.window": "abc"}):
        with pytest.raises(validate.InvalidSetting) as error:
            asafe.AdaptiveRuntime()
    assert "asafe.tracker.window must be an integer >= 1, got 'abc'" in str(error.value)
    assert "DASK_ASAFE__TRACKER__WINDOW" in str(error.value)


def test_a_choice_suggests_the_nearest_allowed_value():
    with pytest.raises(validate.InvalidSetting, match=r"one of lz4, zstd \(did you mean 'zstd'\?\)"):
        validate.choice("zstf", "asafe.wire.codec", ["lz4", "zstd"])


def test_durations_and_sizes():
    assert validate.duration("1.5s", "d") == 1.5 and validate.duration(0, "d") == 0.0
    assert validate.size("1 MiB", "s") == 1 << 20
    for bad in ("-1s", "soon", math.inf):
        with pytest.raises(validate.InvalidSetting):
            validate.duration(bad, "d")
    with pytest.raises(validate.InvalidSetting):
        validate.size("lots", "s")


@pytest.fixture
def restored_config():
    """dask.config as it was, restored in place (dask.config.get reads that one dict)."""
    saved = copy.deepcopy(dask.config.config)
    yield dask.config.config
    dask.config.config.clear()
    dask.config.config.update(saved)


def test_defaults_survive_a_configuration_reset(restored_config):
    # as distributed.utils_test.reset_config does, with a snapshot taken before import asafe
    before_asafe = {k: v for k, v in copy.deepcopy(restored_config).items() if k != "asafe"}
    restored_config.clear()
    restored_config.update(before_asafe)
    assert dask.config.get("asafe", None) is None
    runtime = asafe.AdaptiveRuntime()
    assert set(runtime.states) == {"compression", "wire-compression"}
    assert config.settings()["window"] == 256


def test_optimizations_from_a_json_environment_variable(monkeypatch, restored_config):
    monkeypatch.setenv("DASK_ASAFE__OPTIMIZATIONS",
                       '[{"name": "c", "domain": "asafe.Hysteresis", "kwargs": {"alpha": 1, "beta": 2}, '
                       '"initial": true}]')
    dask.config.refresh()
    assert isinstance(dask.config.get("asafe.optimizations"), str)  # JSON's true is no Python literal
    assert asafe.AdaptiveRuntime().states == {"c": True}


def test_optimizations_that_are_not_a_list_name_the_key():
    with dask.config.set({"asafe.optimizations": "notjson"}):
        with pytest.raises(validate.InvalidSetting, match="asafe.optimizations must be a list.*DASK_ASAFE__OPTIMIZATIONS"):
            asafe.AdaptiveRuntime()


def test_an_unknown_key_is_warned_once_with_a_suggestion(caplog):
    with dask.config.set({"asafe.controler.dwell": "1s"}), caplog.at_level("WARNING", logger="asafe"):
        asafe.AdaptiveRuntime(signals=False)
        asafe.AdaptiveRuntime(signals=False)
    warned = [r.getMessage() for r in caplog.records if "controler" in r.getMessage()]
    assert len(warned) == 1
    assert "DASK_ASAFE__CONTROLER" in warned[0] and "did you mean asafe.controller" in warned[0]


def test_an_exclusive_upper_bound_refuses_the_bound_itself():
    assert validate.number("0.99", "share", minimum=0, below=1) == 0.99
    for bad in (1, 1.0, 2):
        with pytest.raises(validate.InvalidSetting, match=r"share must be a number >= 0 and < 1, got"):
            validate.number(bad, "share", minimum=0, below=1)
