"""Fixtures of the tile-engine tests (tests/compression).

Tests run with ``--import-mode=importlib``: no imports between test files, so the
shared helpers live here as fixtures.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from asafe.compression import kernels


@pytest.fixture
def rng():
    """A seeded generator: every test is deterministic."""
    return np.random.default_rng(20260521)


@pytest.fixture
def make_mixed():
    """Factory of dense test matrices: sparse noise plus fully dense tiles.

    ``make_mixed(m, n, tile, density, dense_tiles, rng, dtype)`` returns a dense
    array whose tiles listed in ``dense_tiles`` (``(I, J)`` pairs) are fully
    non-zero and whose other tiles hold random non-zeros at ``density``.
    """

    def make(m, n, tile, density, dense_tiles, rng, dtype=np.float64):
        S = sp.random_array((m, n), density=density, rng=rng, format="csr", dtype=np.float64)
        D = S.toarray()
        for I, J in dense_tiles:
            block = D[I * tile:(I + 1) * tile, J * tile:(J + 1) * tile]
            block[...] = rng.uniform(0.5, 1.5, block.shape)
        return D.astype(dtype)

    return make


@pytest.fixture(params=["serial", "parallel"])
def kernel_path(request, monkeypatch):
    """Run a test once on the serial kernels and once on the parallel ones."""
    if request.param == "serial":
        old = kernels.configure(serial_work=float("inf"))
    else:
        old = kernels.configure(serial_work=0)
        # the measured choice of path would pick either: force the parallel one
        monkeypatch.setattr(kernels.PathChooser, "choose", lambda self: True)
    yield request.param
    kernels.configure(threads=old.threads, serial_work=old.serial_work)


@pytest.fixture
def stored_reference():
    """``y = sum over stored elements of A[i, j] * x[j]`` computed with numpy.

    ``A`` is a TiledMatrix: the elements of dense tiles are all stored (zeros
    too), those of sparse tiles only where non-zero. This is the exact NaN/Inf
    contract of ``A @ x`` (see asafe.compression.matrix).
    """

    def ref(A, x):
        D = A.to_dense().astype(np.float64)
        kinds = A.tile_kinds()
        dense_mask = np.kron(kinds == 2, np.ones((A.tile, A.tile), bool))[: A.shape[0], : A.shape[1]]
        stored = dense_mask | (D != 0)
        with np.errstate(invalid="ignore", over="ignore"):
            prod = np.where(stored, D * np.asarray(x, np.float64)[None, :], 0.0)
            return prod.sum(axis=1)

    return ref
