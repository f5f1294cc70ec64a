"""Strong sparse baselines of the ``kernels`` suite: SuiteSparse:GraphBLAS and Intel MKL.

Each library is optional (the ``[bench]`` extra installs them). :func:`load` imports
what is there and returns, for each library that cannot be used, the printed
reason (missing wheel, MKL runtime not found, ...): the suite then runs without it
and says so.

Thread control, per call (set before the product and restored after it, inside
the timed call: the switch costs microseconds, so that the variants can be
interleaved):

* numpy dense: its BLAS (OpenBLAS here) through :mod:`threadpoolctl`;
* scipy CSR: single-threaded by construction (``csr_matvec`` has no threads), so
  it appears only at 1 thread;
* GraphBLAS: ``graphblas.ss.config["nthreads"]`` (SuiteSparse's OpenMP);
* MKL: ``mkl_set_num_threads`` and ``mkl_set_num_threads_local`` (MKL's OpenMP,
  ``libiomp5``). Both: a thread-local count, once set, overrides the global
  one, and threadpoolctl -- which the suite uses for numpy's BLAS and which
  finds MKL among the BLAS libraries once it is loaded -- sets the local one.
  With the global one alone, "MKL 1t" ran on 2 threads after the first numpy
  variant (measured: 3.2-3.5 ms at 1.8 cpu-seconds per second, against 5.5-6.5 ms
  at 1.0 before it, scale-17 graph);
* asafe tiled: :func:`asafe.compression.kernels.configure` (chunks per product:
  1 means the serial kernel) and ``numba.set_num_threads``.

``sparse_dot_mkl.dot_product_mkl`` wraps the CSR in an MKL handle on every call
(``mkl_sparse_d_create_csr``, no copy of the arrays for int32 indices) and calls
``mkl_sparse_d_mv``; it gives no access to ``mkl_sparse_optimize`` (the inspector
step), so the MKL figures are the plain executor's.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Library", "load", "GRAPHBLAS", "MKL"]

GRAPHBLAS = "GraphBLAS"
MKL = "MKL"


@dataclass
class Library:
    """One sparse library usable for ``y = S @ x``."""

    name: str
    version: str
    #: ``prepare(S, x) -> call``: convert once (not timed), return the zero-argument product
    prepare: Callable[[Any, np.ndarray], Callable[[], Any]]
    #: ``set_threads(n)``: the library's own thread count
    set_threads: Callable[[int], None]
    get_threads: Callable[[], int]
    #: turns a result of ``call()`` into a float64 numpy vector (outside the timing)
    to_numpy: Callable[[Any], np.ndarray]
    notes: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def with_threads(self, call: Callable[[], Any], threads: int) -> Callable[[], Any]:
        """``call`` run with the library at ``threads`` threads (restored after)."""
        set_threads, get_threads = self.set_threads, self.get_threads

        def run():
            old = get_threads()
            set_threads(threads)
            try:
                return call()
            finally:
                set_threads(old)

        return run


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def _graphblas() -> Library:
    import graphblas as gb

    config = gb.ss.config

    def prepare(S, x):
        A = gb.io.from_scipy_sparse(S)
        v = gb.Vector.from_dense(np.ascontiguousarray(x, np.float64))
        semiring = gb.semiring.plus_times

        def call():
            return A.mxv(v, semiring).new()

        return call

    def set_threads(n: int) -> None:
        config["nthreads"] = int(n)

    def get_threads() -> int:
        return int(config["nthreads"])

    def to_numpy(result) -> np.ndarray:
        return np.asarray(result.to_dense(fill_value=0.0), dtype=np.float64)

    return Library(GRAPHBLAS, f"python-graphblas {_version('python-graphblas')}, "
                   f"SuiteSparse:GraphBLAS {_version('suitesparse-graphblas')}",
                   prepare, set_threads, get_threads, to_numpy,
                   notes="A.mxv(x, plus_times).new(); threads: gb.ss.config['nthreads']")


def _mkl_runtime() -> str | None:
    """Path of ``libmkl_rt`` installed by the ``mkl`` wheel in this environment, if any."""
    for root in (Path(sys.prefix) / "lib", Path(sys.base_prefix) / "lib"):
        for name in ("libmkl_rt.so", "libmkl_rt.so.2", "libmkl_rt.so.3"):
            if (root / name).is_file():
                return str(root / name)
    return None


def _mkl() -> Library:
    if "MKL_RT" not in os.environ:  # sparse_dot_mkl looks for libmkl_rt on the loader path only
        path = _mkl_runtime()
        if path:
            os.environ["MKL_RT"] = path
    import sparse_dot_mkl as sdm

    def prepare(S, x):
        import scipy.sparse as sp

        A = sp.csr_matrix(S)  # sparse_dot_mkl takes scipy's csr_matrix (int32 indices: LP64, no copy)
        xx = np.ascontiguousarray(x, np.float64)

        def call():
            return sdm.dot_product_mkl(A, xx)

        return call

    from sparse_dot_mkl._mkl_interface import mkl_set_num_threads_local

    def set_threads(n: int) -> None:
        sdm.mkl_set_num_threads(int(n))
        mkl_set_num_threads_local(int(n))  # the local count wins over the global one (see the module docstring)

    def get_threads() -> int:
        return int(sdm.mkl_get_max_threads())

    lib = Library(MKL, f"sparse_dot_mkl {_version('sparse_dot_mkl')}, mkl {_version('mkl')}",
                  prepare, set_threads, get_threads, lambda y: np.asarray(y, np.float64),
                  notes="sparse_dot_mkl.dot_product_mkl(S, x): mkl_sparse_d_mv on a handle made per call "
                        "(no mkl_sparse_optimize); threads: mkl_set_num_threads and mkl_set_num_threads_local")
    lib.info["MKL_RT"] = os.environ.get("MKL_RT")
    return lib


_LOADERS = {GRAPHBLAS: _graphblas, MKL: _mkl}


def load(names=None) -> tuple[dict[str, Library], dict[str, str]]:
    """The usable libraries and, for the others, why not (``{name: reason}``).

    A library is usable when it imports and multiplies a 3x3 test matrix
    correctly (checked against numpy).
    """
    import scipy.sparse as sp

    libs: dict[str, Library] = {}
    skipped: dict[str, str] = {}
    D = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [4.0, 5.0, 0.0]])
    x = np.array([1.0, 2.0, 3.0])
    for name in names or _LOADERS:
        try:
            lib = _LOADERS[name]()
            y = lib.to_numpy(lib.prepare(sp.csr_array(D), x)())
            if not np.allclose(y, D @ x, rtol=1e-14, atol=0):
                raise AssertionError(f"wrong product on a 3x3 test matrix: {y} != {D @ x}")
        except Exception as exc:  # ImportError, OSError (runtime not found), wrong results
            skipped[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".strip()
            continue
        libs[name] = lib
    return libs, skipped
