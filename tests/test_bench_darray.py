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


def test_the_floor_is_asafes_product_graph_with_a_kernel_that_reads_nothing():
    import numpy as np
    import scipy.sparse as sp

    import asafe.compression as ac
    from asafe.compression.array import matmul_graph

    S = sp.random_array((300, 200), density=0.05, rng=0, format="csr")
    A = ac.from_scipy(S, tile=64, chunks=(128, -1))
    x = np.arange(200.0)
    real, floor = A @ x, matmul_graph(A, x, kernel=darray._no_product)
    assert floor.name != real.name  # no key shared with a product of the same x
    assert floor.chunks == real.chunks
    layer = lambda arr: arr.dask.layers[arr.name]  # noqa: E731
    assert len(layer(floor)) == len(layer(real)) == A.numblocks[0]  # one task per chunk, as the product
    np.testing.assert_array_equal(floor.compute(scheduler="sync"), np.zeros(300))
    np.testing.assert_allclose(real.compute(scheduler="sync"), S @ x)
