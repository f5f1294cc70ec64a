"""The product kernels of a tiled matrix (numba), behind a thin typed dispatcher.

What the kernels walk
---------------------
A :class:`~asafe.compression.TiledMatrix` never hands the kernels Python
objects. Its tiles are flattened into a few arrays (a
:class:`~asafe.compression.layout.Layout`, see that module): the dense tiles of
tile row ``I`` are ``dense_ptr[I]:dense_ptr[I + 1]``, tile ``t`` sits in tile
column ``dense_col[t]`` and is stored row-major and contiguous at
``dense_values[dense_off[t]:]``; the sparse tiles of all tile rows are one CSR
(``row_ptr``, ``col``, ``data``) whose rows hold only the non-zeros of sparse
tiles, with narrow unsigned column indices (``uint16`` up to 65536 columns).

Parallel matvec
---------------
``y = A @ x`` is parallel (``prange``) over *row segments*: ``(tile row, first
row, last row)`` triples grouped into one chunk per thread so that every chunk
carries about the same estimated work (see :func:`work_estimate`). Splitting
inside a tile row keeps the chunks balanced when dense tiles cluster in a few
tile rows. A chunk owns its output rows: no races, no reduction. ``A.T @ x``
gives every chunk a private float64 output and sums them.

The inner loops:

* dense tiles: a contiguous dot product over one row of one tile, compiled
  with ``fastmath={"reassoc", "contract"}`` so that LLVM vectorizes it (no
  ``nnan``/``ninf``: NaN and Inf keep IEEE semantics); it runs at the speed of
  a one-thread BLAS ``dgemv`` on the same data;
* sparse rows: a scalar loop *without* fastmath (vectorizing a gather over
  rows of a few non-zeros is slower), with unsigned positions and indices so
  that no negative-index wraparound test sits in the loop, and two
  accumulators; on one thread it runs 1.6 to 1.75x faster than scipy's CSR
  loop on Graph500 rows (scales 11 to 14).

Iso-valued sparse parts
-----------------------
When every stored sparse value is the same, bit for bit (an unweighted graph's
adjacency matrix: Graph500's are all 1.0), the kernels are handed that one
value instead of the ``data`` array (:meth:`Layout.product_arrays
<asafe.compression.layout.Layout.product_arrays>`) and never read ``data``: a
product reads 2 or 4 bytes of column index per non-zero instead of 10 or 12, as
SuiteSparse:GraphBLAS does with its iso-valued matrices. The arithmetic is
unchanged (``value * x[col]`` per non-zero, in the same order), so the result
is the same to the last bit. The two forms are one kernel source compiled for
two argument types (:func:`_value` is overloaded on the type of ``data``).
Whether a layout is iso is found by the builders while they copy the values
(from a dense array or a CSR matrix: one comparison per value, no extra pass),
else once per layout by :func:`~asafe.compression.csr.is_iso`, a pass that stops at the first value
that differs.

Accumulation is always float64, also for float32 values; ``x`` and ``y`` are
float64 (the :class:`~asafe.compression.TiledMatrix` methods convert).

Checked entry points
--------------------
numba does no bounds checks: a vector of the wrong length would be read or
written out of bounds. The public :func:`matvec` and :func:`rmatvec` (and
:func:`~asafe.compression.csr.csr_matvec` for one block) check lengths,
dtypes, contiguity, writability and overlap of their arguments (O(1), about
1 us) before they call the ``@njit`` kernels;
:class:`~asafe.compression.TiledMatrix`, which checks user input itself, calls
:func:`matvec_unchecked` and :func:`rmatvec_unchecked` behind them.

Concurrent callers
------------------
Only one thread of a process runs a parallel kernel at a time; a product
called while another one is running in parallel (Dask's threaded scheduler runs
several tasks at once) takes the serial kernel instead of waiting. The tasks
are then the parallelism: the cores are not oversubscribed, and numba's
``workqueue`` layer, which must not be entered from two threads at once, never
is. ``parallel=True`` or ``False`` passed to :func:`matvec` forces a path
(``True`` still falls back to serial while the slot is taken).

Serial or parallel
------------------
A problem whose estimated work is below ``serial_work`` runs the serial kernel
and pays no thread wake-up. Above it, each matrix keeps a :class:`PathChooser`
that times both kernels on its first calls and then runs the faster, probing
the other one now and then (every 16 calls at first, every 1024 once the
choice is stable): on a quiet machine the parallel kernel wins, while on a
shared one whose other processes keep the cores busy every parallel region
waits for a descheduled worker and the serial kernel is faster -- measured
here, 0.15 ms against 0.02 ms for the same product. The choice follows the
machine rather than a constant.

Settings are read once, on first use, from
``dask.config`` (``asafe.compression.threads``: chunks per call, default
numba's thread count; ``asafe.compression.serial-work``) and can be changed
with :func:`configure`. The default threshold, 100,000 work units (about 25 us
of serial work: 100,000 dense elements or 40,000 sparse non-zeros), is where an
even split over 2 threads saves more than the wake-up of a passive OpenMP team,
measured at 9 us per parallel region on the development machine (an empty
``prange`` region, 2,000 calls). ``python -m benchmarks kernels --section
crossover`` measures serial against parallel kernels on growing problems and
suggests a value for the machine it runs on.

The BLAS spin hazard
--------------------
OpenBLAS worker threads busy-wait for a while after every BLAS call, and GNU
OpenMP threads (numba's ``omp`` threading layer, the one installed here) spin
at the end of every parallel region by default. With as many threads as cores,
a parallel numba kernel right after numpy's multithreaded ``D @ x`` shares its
cores with spinning BLAS threads; a spinning OpenMP team in turn starves the
next BLAS call and every other process on the machine. Measured on the 2
shared cores of the development machine while other processes kept them busy
(``python -m benchmarks kernels --section hazard``: scale 10 and 11, dense
fraction 0.25, parallel kernel forced): with GNU OpenMP's default policy the
tiled product took 10 to 16 ms back to back, with ``ACTIVE`` 12 to 18 ms, and
with ``PASSIVE`` 0.06 to 0.37 ms. With ``PASSIVE``, the product right after
``D @ x`` took 2.5 to 3x its back-to-back time -- about as much as right after
``D.sum()``, which reads the same 32 MB without BLAS threads: what remains is
``D`` evicting the tiled data from the caches, not spinning.

Mitigation, applied at import by every module of the tile engine that defines
numba kernels (they import ``asafe.compression._openmp`` first):
``OMP_WAIT_POLICY=PASSIVE`` is set in the environment unless the user set it
(numba loads its OpenMP layer on the first parallel call, after these modules
are imported, so the setting reaches it; when another library loaded an OpenMP runtime earlier in the process, set
the variable before starting Python instead). Child processes (Dask's
``processes`` scheduler, distributed workers) inherit it. Idle OpenMP threads
then sleep on a futex instead of spinning: a woken thread gets a core at once,
even from a spinning BLAS thread, and our team never steals cycles from BLAS or
from other processes. The residual cost, a futex wake-up per parallel region
(9 us here), is kept off small problems by the serial path and off contended
machines by the measured choice of path above. Code that alternates BLAS and
these kernels in a tight loop can also limit BLAS to one thread with
:func:`threadpoolctl.threadpool_limits` (a matrix-vector product is memory
bound: one BLAS thread loses little); the hazard section measures that too.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from . import _openmp  # noqa: F401  (the OpenMP wait policy, before numba starts: see above)

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, prange, types  # noqa: E402
from numba.extending import overload  # noqa: E402

from .csr import check_output, check_vector  # noqa: E402
from .layout import Layout  # noqa: E402

# Names that lived here before the one-block kernels moved to .csr and the work
# units to .layout: importable here still, documented there.
from .csr import count_nonzero_rows, csr_matvec, csr_to_dense, dense_to_csr, index_dtype, is_iso  # noqa: E402,F401
from .layout import W_DENSE, W_NONZERO, W_ROW  # noqa: E402,F401

__all__ = [
    "Settings",
    "settings",
    "configure",
    "matvec",
    "rmatvec",
    "matvec_unchecked",
    "rmatvec_unchecked",
    "PathChooser",
    "parallel_runs",
    "work_estimate",
]

_FASTMATH = {"reassoc", "contract"}
_JIT = dict(nogil=True, cache=True)
_JIT_FAST = dict(nogil=True, cache=True, fastmath=_FASTMATH)
_ONE = np.uint64(1)
_TWO = np.uint64(2)

# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """Kernel settings, read once (see :func:`settings` and :func:`configure`).

    Attributes
    ----------
    threads : int
        Number of parallel chunks a product is cut into (numba's thread count
        by default).
    serial_work : float
        Problems with less estimated work (see :func:`work_estimate`) run the
        serial kernel.

    Examples
    --------
    >>> Settings(threads=2, serial_work=1000.0).threads
    2
    """

    threads: int
    serial_work: float


DEFAULT_SERIAL_WORK = 100_000.0
_settings: Settings | None = None
_settings_lock = threading.Lock()


def _read_settings() -> Settings:
    import dask.config

    threads = dask.config.get("asafe.compression.threads", default=None)
    serial = dask.config.get("asafe.compression.serial-work", default=None)
    threads = int(threads) if threads else numba.get_num_threads()
    serial = float(serial) if serial is not None else DEFAULT_SERIAL_WORK
    return Settings(threads=max(1, threads), serial_work=serial)


def settings() -> Settings:
    """The kernel settings, read from ``dask.config`` on first use.

    Examples
    --------
    >>> settings().threads >= 1
    True
    """
    global _settings
    if _settings is None:
        with _settings_lock:
            if _settings is None:
                _settings = _read_settings()
    return _settings


def configure(threads: int | None = None, serial_work: float | None = None) -> Settings:
    """Change the kernel settings; ``None`` keeps a setting. Returns the old ones.

    Parameters
    ----------
    threads : int, optional
        Number of parallel chunks per product (1 makes every call serial).
    serial_work : float, optional
        Work below which the serial kernel runs (0: always parallel).

    Examples
    --------
    >>> old = configure(serial_work=0)
    >>> settings().serial_work
    0.0
    >>> _ = configure(threads=old.threads, serial_work=old.serial_work)
    """
    global _settings
    old = settings()
    if threads is not None and (isinstance(threads, bool) or int(threads) < 1):
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    if serial_work is not None and float(serial_work) < 0:
        raise ValueError(f"serial_work must be >= 0, got {serial_work!r}")
    with _settings_lock:
        _settings = Settings(
            threads=old.threads if threads is None else int(threads),
            serial_work=old.serial_work if serial_work is None else float(serial_work),
        )
    return old


def work_estimate(layout) -> float:
    """Estimated work of one product with ``layout``, in dense-element units.

    A dense element counts ``W_DENSE`` (1), a sparse non-zero ``W_NONZERO``
    (2.5) and a matrix row ``W_ROW`` (4).

    Examples
    --------
    >>> from asafe.compression import TiledMatrix
    >>> work_estimate(TiledMatrix.from_dense(np.ones((4, 4)), 2).layout)
    32.0
    """
    return float(layout.row_work().sum())


# ---------------------------------------------------------------------------
# matvec and rmatvec kernels
# ---------------------------------------------------------------------------


def _value(data, k):
    """The ``k``-th stored sparse value as float64: ``data[k]``, or ``data`` itself when iso-valued.

    Inside the kernels the choice is made at compile time, by the type of
    ``data`` (an array, or one float): the iso form loads no value per non-zero.
    """
    return np.float64(data[k] if np.ndim(data) else data)


@overload(_value, inline="always")
def _value_typed(data, k):
    if isinstance(data, types.Array):
        return lambda data, k: np.float64(data[k])
    if isinstance(data, types.Float):
        return lambda data, k: np.float64(data)
    return None


@njit(**_JIT)
def _sparse_rows(g0, g1, x, acc, row_ptr, col, data):
    """acc[i] = (sparse part of row g0 + i) @ x, for rows g0:g1.

    Two accumulators (even and odd positions) halve the chain of dependent
    additions: 1.5x faster than one on Graph500 rows. ``data`` is the values
    array, or the one value of an iso-valued part (see :func:`_value`).
    """
    for g in range(g0, g1):
        k = np.uint64(row_ptr[g])
        end = np.uint64(row_ptr[g + 1])
        s0 = 0.0
        s1 = 0.0
        while k + _ONE < end:
            s0 += _value(data, k) * x[col[k]]
            s1 += _value(data, k + _ONE) * x[col[k + _ONE]]
            k += _TWO
        if k < end:
            s0 += _value(data, k) * x[col[k]]
        acc[g - g0] = s0 + s1


@njit(**_JIT_FAST)
def _dense_rows(lo, hi, n, tile, x, acc, t0, t1, dense_col, dense_off, dense_values):
    """acc[r - lo] += rows lo:hi of dense tiles t0:t1 (one tile row) @ x."""
    for t in range(t0, t1):
        c0 = dense_col[t] * tile
        w = min(tile, n - c0)
        xs = x[c0:c0 + w]
        base = dense_off[t]
        for r in range(lo, hi):
            a = dense_values[base + r * w:base + r * w + w]
            s = 0.0
            for c in range(w):
                s += np.float64(a[c]) * xs[c]
            acc[r - lo] += s


@njit(**_JIT)
def _segment(row, lo, hi, n, tile, x, y,
             dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data):
    """y[rows lo:hi of tile row ``row``] = those rows @ x."""
    r0 = row * tile
    acc = y[r0 + lo:r0 + hi]
    _sparse_rows(r0 + lo, r0 + hi, x, acc, row_ptr, col, data)
    _dense_rows(lo, hi, n, tile, x, acc, dense_ptr[row], dense_ptr[row + 1],
                dense_col, dense_off, dense_values)


@njit(parallel=True, **_JIT)
def _matvec_parallel(chunk_ptr, seg_row, seg_lo, seg_hi, n, tile, x, y,
                     dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data):
    for c in prange(chunk_ptr.size - 1):
        for s in range(chunk_ptr[c], chunk_ptr[c + 1]):
            _segment(seg_row[s], seg_lo[s], seg_hi[s], n, tile, x, y,
                     dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data)


@njit(**_JIT)
def _matvec_serial(m, n, tile, x, y,
                   dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data):
    for row in range(dense_ptr.size - 1):
        _segment(row, 0, min(tile, m - row * tile), n, tile, x, y,
                 dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data)


@njit(**_JIT)
def _rsparse_rows(g0, g1, x, y, row_ptr, col, data):
    """y += (sparse part of rows g0:g1).T @ x[g0:g1]."""
    for g in range(g0, g1):
        xg = np.float64(x[g])
        k = np.uint64(row_ptr[g])
        end = np.uint64(row_ptr[g + 1])
        while k < end:
            y[col[k]] += _value(data, k) * xg
            k += _ONE


@njit(**_JIT_FAST)
def _rdense_rows(lo, hi, r0, n, tile, x, y, t0, t1, dense_col, dense_off, dense_values):
    """y += (rows lo:hi of dense tiles t0:t1).T @ x[those rows]."""
    for t in range(t0, t1):
        c0 = dense_col[t] * tile
        w = min(tile, n - c0)
        ys = y[c0:c0 + w]
        base = dense_off[t]
        for r in range(lo, hi):
            a = dense_values[base + r * w:base + r * w + w]
            xr = np.float64(x[r0 + r])
            for c in range(w):
                ys[c] += np.float64(a[c]) * xr


@njit(**_JIT)
def _rsegment(row, lo, hi, n, tile, x, y,
              dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data):
    r0 = row * tile
    _rsparse_rows(r0 + lo, r0 + hi, x, y, row_ptr, col, data)
    _rdense_rows(lo, hi, r0, n, tile, x, y, dense_ptr[row], dense_ptr[row + 1],
                 dense_col, dense_off, dense_values)


@njit(parallel=True, **_JIT)
def _rmatvec_parallel(chunk_ptr, seg_row, seg_lo, seg_hi, n, tile, x, partial,
                      dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data):
    for c in prange(chunk_ptr.size - 1):
        y = partial[c]
        y[:] = 0.0
        for s in range(chunk_ptr[c], chunk_ptr[c + 1]):
            _rsegment(seg_row[s], seg_lo[s], seg_hi[s], n, tile, x, y,
                      dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data)


@njit(**_JIT)
def _rmatvec_serial(m, n, tile, x, y,
                    dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data):
    y[:] = 0.0
    for row in range(dense_ptr.size - 1):
        _rsegment(row, 0, min(tile, m - row * tile), n, tile, x, y,
                  dense_ptr, dense_col, dense_off, dense_values, row_ptr, col, data)


# One parallel product at a time per process (see "Concurrent callers" above).
_parallel_slot = threading.Lock()
_parallel_runs = 0  # products that ran a parallel kernel; changed only while the slot is held


class PathChooser:
    """Picks the serial or the parallel kernel for one matrix from measured times.

    Keeps the last ``keep`` times of each path and runs the one with the lower
    median; until each path has ``warm`` times it alternates. Every ``period``
    calls it runs the other path once (a probe), so a change of conditions (a
    core taken by another process, BLAS threads spinning) is noticed; the
    period doubles while probes confirm the choice, up to ``max_period``, and
    falls back to ``min_period`` when one changes it.

    Examples
    --------
    >>> chooser = PathChooser()
    >>> chooser.choose()                        # no times yet: parallel first
    True
    >>> chooser.record(True, 2e-3); chooser.choose()   # then serial
    False
    >>> for _ in range(3):
    ...     chooser.record(True, 2e-3); chooser.record(False, 1e-3)
    >>> chooser.choose()                        # serial measured faster
    False
    """

    __slots__ = ("times", "calls", "period", "next_probe", "last_best")

    warm = 3
    keep = 5
    min_period = 16
    max_period = 1024

    def __init__(self) -> None:
        self.times: tuple[list[float], list[float]] = ([], [])  # serial, parallel
        self.calls = 0
        self.period = self.min_period
        self.next_probe = self.min_period
        self.last_best: bool | None = None

    def median(self, parallel: bool) -> float:
        """The median of the kept times of a path (``True``: the parallel one); it must have one."""
        times = sorted(self.times[parallel])
        return times[len(times) // 2]

    def choose(self) -> bool:
        """True: run the parallel kernel."""
        self.calls += 1
        serial, parallel = self.times
        if len(parallel) < self.warm or len(serial) < self.warm:
            return len(parallel) <= len(serial)
        best = self.median(True) < self.median(False)
        if best != self.last_best:
            if self.last_best is not None:
                self.period = self.min_period
            self.last_best = best
        if self.calls >= self.next_probe:
            self.next_probe = self.calls + self.period
            self.period = min(2 * self.period, self.max_period)
            return not best
        return best

    def record(self, parallel: bool, seconds: float) -> None:
        """Add the time of one call of a path."""
        times = self.times[parallel]
        times.append(seconds)
        if len(times) > self.keep:
            del times[0]


def _chooser(layout, key: str) -> PathChooser:
    chooser = layout.cache.get(key)
    if chooser is None:
        chooser = layout.cache[key] = PathChooser()
    return chooser


def _pick(layout, parallel, key: str, cfg: Settings):
    """``(parallel, chooser)``: the path to run, and the chooser to tell its time (or None)."""
    if parallel is not None:
        return bool(parallel), None
    if cfg.threads == 1 or layout.work() < cfg.serial_work:
        return False, None
    chooser = _chooser(layout, key)
    return chooser.choose(), chooser


def _matvec_parallel_call(layout, x, y, threads) -> None:
    m, n = layout.shape
    _matvec_parallel(*layout.chunks(threads), n, layout.tile, x, y, *layout.product_arrays())


def _rmatvec_parallel_call(layout, x, y, threads) -> None:
    m, n = layout.shape
    chunks = layout.chunks(threads)
    partial = np.empty((chunks[0].size - 1, n), np.float64)
    _rmatvec_parallel(*chunks, n, layout.tile, x, partial, *layout.product_arrays())
    np.sum(partial, axis=0, out=y)


def _run(layout, x, y, parallel, key, serial_kernel, parallel_call) -> None:
    cfg = settings()
    parallel, chooser = _pick(layout, parallel, key, cfg)
    if not parallel and chooser is None:  # the common small case: no timing, no lock
        m, n = layout.shape
        serial_kernel(m, n, layout.tile, x, y, *layout.product_arrays())
        return
    start = time.perf_counter()
    ran_parallel = False
    if parallel and _parallel_slot.acquire(blocking=False):
        global _parallel_runs
        try:
            _parallel_runs += 1
            parallel_call(layout, x, y, cfg.threads)
            ran_parallel = True
        finally:
            _parallel_slot.release()
    else:
        m, n = layout.shape
        serial_kernel(m, n, layout.tile, x, y, *layout.product_arrays())
    if chooser is not None:
        chooser.record(ran_parallel, time.perf_counter() - start)


def _check_product(layout, x, y, parallel, transpose: bool) -> None:
    """The O(1) checks of :func:`matvec` and :func:`rmatvec`."""
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a Layout (TiledMatrix.layout), got {type(layout).__name__}")
    m, n = layout.shape
    if transpose:
        m, n = n, m
    check_vector(x, "x", n, f"the number of {'rows' if transpose else 'columns'} of the matrix")
    check_output(y, x, m, f"the number of {'columns' if transpose else 'rows'} of the matrix")
    if parallel is not None and not isinstance(parallel, (bool, np.bool_)):
        raise TypeError(f"parallel must be None, True or False, got {parallel!r}")


def parallel_runs() -> int:
    """Products (:func:`matvec` and :func:`rmatvec`) that ran a parallel kernel in this process.

    Benchmarks read it before and after a measurement to see which path the
    products took.

    Examples
    --------
    >>> from asafe.compression import TiledMatrix
    >>> A = TiledMatrix.from_dense(np.eye(3), tile=2)
    >>> before = parallel_runs()
    >>> _ = matvec(A.layout, np.ones(3), np.empty(3), parallel=True)
    >>> parallel_runs() - before
    1
    """
    return _parallel_runs


def matvec_unchecked(layout, x, y, parallel=None) -> np.ndarray:
    """:func:`matvec` without its checks, for callers that checked ``x`` and ``y`` already.

    :class:`~asafe.compression.TiledMatrix` checks and converts user input
    itself and calls this. A wrong length or dtype here reads or writes out of
    bounds.

    Examples
    --------
    >>> from asafe.compression import TiledMatrix
    >>> matvec_unchecked(TiledMatrix.from_dense(np.eye(2), tile=1).layout, np.ones(2), np.empty(2))
    array([1., 1.])
    """
    _run(layout, x, y, parallel, "path", _matvec_serial, _matvec_parallel_call)
    return y


def rmatvec_unchecked(layout, x, y, parallel=None) -> np.ndarray:
    """:func:`rmatvec` without its checks (see :func:`matvec_unchecked`).

    Examples
    --------
    >>> from asafe.compression import TiledMatrix
    >>> rmatvec_unchecked(TiledMatrix.from_dense(np.eye(2), tile=1).layout, np.ones(2), np.empty(2))
    array([1., 1.])
    """
    if layout.shape[1] == 0:
        return y
    _run(layout, x, y, parallel, "rpath", _rmatvec_serial, _rmatvec_parallel_call)
    return y


def matvec(layout, x: np.ndarray, y: np.ndarray, parallel: bool | None = None) -> np.ndarray:
    """``y[:] = A @ x`` for the matrix flattened in ``layout``.

    The typed entry point of the kernels: ``x`` must be a C-contiguous float64
    vector of length ``n`` and ``y`` a writable C-contiguous float64 vector of
    length ``m`` that does not overlap ``x``. These O(1) checks raise
    ``TypeError`` (type, dtype) or ``ValueError`` (shape, contiguity, overlap):
    numba does no bounds checks, and a wrong length would read or write out of
    bounds. The :class:`~asafe.compression.TiledMatrix` methods convert user
    input first. ``parallel=None`` runs the serial kernel below
    ``settings().serial_work`` and above it the path a :class:`PathChooser`
    measured faster for this matrix; ``True`` or ``False`` force a path.

    Examples
    --------
    >>> from asafe.compression import TiledMatrix
    >>> A = TiledMatrix.from_dense(np.eye(3), tile=2)
    >>> matvec(A.layout, np.arange(3.0), np.empty(3))
    array([0., 1., 2.])
    >>> matvec(A.layout, np.arange(2.0), np.empty(3))
    Traceback (most recent call last):
    ...
    ValueError: x must have shape (3,) (the number of columns of the matrix), got (2,)
    """
    _check_product(layout, x, y, parallel, False)
    return matvec_unchecked(layout, x, y, parallel)


def rmatvec(layout, x: np.ndarray, y: np.ndarray, parallel: bool | None = None) -> np.ndarray:
    """``y[:] = A.T @ x`` for the matrix flattened in ``layout``.

    Same contract and checks as :func:`matvec`, with ``x`` of length ``m``
    and ``y`` of length ``n``; the parallel kernel gives each chunk a private
    float64 output and sums them.

    Examples
    --------
    >>> from asafe.compression import TiledMatrix
    >>> A = TiledMatrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]), tile=1)
    >>> rmatvec(A.layout, np.array([1.0, 1.0]), np.empty(2))
    array([1., 5.])
    """
    _check_product(layout, x, y, parallel, True)
    return rmatvec_unchecked(layout, x, y, parallel)
