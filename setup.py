"""Packaging for asafe.

``compression/`` is a top-level folder of the repository but is installed as the
subpackage ``asafe.compression``: since Python 3.14 the standard library owns the
top-level name ``compression``, so a top-level package of that name would be shadowed.

``asafe.schedulers._hotpath`` (``asafe/schedulers/_hotpath.c``) is the compiled per-task hook of Dask's
local schedulers. It is optional: where no C compiler is found the build goes on
without it and ``asafe.schedulers.local`` uses its pure-Python hooks (the same events, a
higher cost per task).

``asafe.core._typewalk`` (``asafe/core/_typewalk.c``) is the walk that finds a task's typed callable, which
the distributed scheduler makes for every task it counts. Optional in the same way: without it
:func:`asafe.core.types.resolve_type` walks in Python (the same result, 2.5-3x the time a task).

``asafe.schedulers._taskpath`` (``asafe/schedulers/_taskpath.c``) is the distributed scheduler plugin's
per-task path (its ``transition`` hook and the parts it feeds for every task), compiled. Optional in the
same way: without it the hook runs ``scheduler_plugin.py``'s Python methods (the same counts, up to about a
quarter more of the hooks' thread cpu on graphs of many tasks).

``asafe.schedulers._zeros`` (``asafe/schedulers/_zeros.c``) is the wire codec's zero elision,
compiled. Optional in the same way: without it :mod:`asafe.schedulers.wire` elides with numpy
(the same frames, 1.1-2x slower on fresh memory, about 1.5x on reused memory).
"""
from setuptools import Extension, setup

install_requires = [
    "numpy>=1.24",
    "scipy>=1.10",
    "numba>=0.58",
    # The plugins read private parts of distributed (a worker's transfer log, the
    # startstops and metadata of task transitions, the scheduler's stream comms and
    # bandwidth estimate); a release may change them without notice. The upper
    # bound is the first release not tested: Dask and distributed release together
    # about monthly (calendar versions, same number), and the suite has run on
    # 2026.8.0. Raise it after the suite passes on a newer release. Where an
    # internal is missing anyway, the plugins log it once and count it in
    # ``handle.fallbacks`` (docs/reliability.rst).
    "dask>=2025.1.0,<2026.9.0",
    "distributed>=2025.1.0,<2026.9.0",
    "psutil>=5.9",
    # the ``asafe`` console script, as Dask's own CLI
    "click>=8.0",
    # asafe.yaml, the dask.config defaults shipped with the package
    "pyyaml>=6.0",
    # limiting BLAS threads around numba kernels (see asafe.compression.kernels)
    "threadpoolctl>=3.1",
    # wire-compression (asafe.schedulers.wire): blosc2's byte shuffle + LZ4 compresses
    # float arrays 1.5-800x at 0.4-5 GB/s per core here, where plain lz4/zstd
    # (cramjam, lz4) barely shrink smooth float64 data (1.0-1.1x)
    "blosc2>=2.0",
]

#: What ``asafe demo`` draws and prints with: its PNG figure (matplotlib) and its progress bars and tables
#: (rich). Workers never draw: without them the demo runs, prints plain text and says the figure needs them.
DEMO = ["matplotlib>=3.7", "rich>=13.0"]

extras_require = {
    "demo": DEMO,
    # the tests run the demo with its figure and console (tests/test_demo.py); bokeh and
    # prometheus_client: Dask's dashboard and /metrics, where the tests fetch asafe's page and metrics from
    # a LocalCluster (distributed does not require either); pandas and pyarrow: dask.dataframe, which the
    # workloads suite's test runs (tests/test_bench_workloads.py)
    "test": ["pytest>=7.4", "hypothesis>=6.80", "pytest-timeout>=2.1", "cryptography>=41", *DEMO, "bokeh>=3.1",
             "prometheus_client>=0.17", "pandas>=2.0", "pyarrow>=16.0"],
    # the Concepts page's figures are drawn at build time
    "docs": ["sphinx>=7.0", "pydata-sphinx-theme>=0.15", "numpydoc>=1.6", "matplotlib>=3.7"],
    # the suites' strong baselines (each is skipped, with the reason printed, where it cannot be
    # installed or loaded): SuiteSparse:GraphBLAS and Intel MKL sparse (kernels), pydata/sparse
    # (darray: dask.array of sparse.COO chunks); pandas and pyarrow for dask.dataframe (the workloads suite's
    # shuffle, groupby and merge; the versions dask[dataframe] asks for); yappi for the costs suite's profile
    "bench": ["matplotlib>=3.7", "python-graphblas>=2024.2", "sparse_dot_mkl>=0.9", "mkl>=2024.0", "sparse>=0.15",
              "pandas>=2.0", "pyarrow>=16.0", "yappi>=1.6"],
}

setup(
    name="asafe",
    version="0.1.0",
    description="Scheduler-driven adaptive optimizations for Dask (after ASAFESSS)",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    python_requires=">=3.10",
    packages=["asafe", "asafe.core", "asafe.schedulers", "asafe.app", "asafe.compression", "asafe.testing"],
    package_dir={"asafe": "asafe", "asafe.compression": "compression"},
    package_data={"asafe": ["asafe.yaml"]},
    ext_modules=[Extension("asafe.schedulers._hotpath", ["asafe/schedulers/_hotpath.c"], optional=True),
                 Extension("asafe.schedulers._zeros", ["asafe/schedulers/_zeros.c"], optional=True),
                 Extension("asafe.core._typewalk", ["asafe/core/_typewalk.c"], optional=True),
                 Extension("asafe.schedulers._taskpath", ["asafe/schedulers/_taskpath.c"], optional=True)],
    install_requires=install_requires,
    extras_require=extras_require,
    # the asafe command, and `dask asafe ...` through Dask's CLI (dask/cli.py loads the dask_cli group)
    entry_points={"console_scripts": ["asafe=asafe.app.cli:main"], "dask_cli": ["asafe=asafe.app.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Framework :: Dask",
    ],
)
