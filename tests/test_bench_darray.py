"""The dask.array suite (benchmarks/darray.py) without pydata/sparse: a clear message, not a traceback."""
from __future__ import annotations

import sys

# benchmarks is loaded from the checkout by tests/conftest.py
from benchmarks import darray  # noqa: E402


def test_missing_pydata_sparse_is_named_with_the_install_step(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sparse", None)  # `import sparse` raises ImportError
    assert darray.main(["--quick"]) == 2
    err = capsys.readouterr().err
    assert "pydata/sparse" in err and 'pip install -e ".[bench]"' in err
