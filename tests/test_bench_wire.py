"""The wire suite's command line: it builds its parser beside the common options and refuses bad variants."""
from __future__ import annotations

import pytest

from benchmarks import wire


def test_help_lists_the_suite_options_with_the_common_link(capsys):
    with pytest.raises(SystemExit) as info:
        wire.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--link", "--data", "--burn", "--variants", "--rounds"):
        assert option in out


def test_unknown_variant_is_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit) as info:
        wire.main(["--variants", "adaptive,zip"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown ['zip']" in err and "dask, adaptive, always, ratio-only, host-cpu" in err
