"""The machine and software a result was measured on: :func:`environment`.

Every result of ``asafe demo`` and of the benchmark suites records where it was
measured -- the CPU and its usable cores, memory, the operating system, Python,
the versions of the packages that do the work, the thread settings of every
thread pool, the load average of a shared machine, the git commit of the code
that ran and whether its tree was dirty, and the link the run went over
(:mod:`asafe.app.link`) -- so that a number can be read with its conditions.
The statistics those results are made of are :mod:`asafe.app.stats`.

Examples
--------
>>> env = environment(scheduler="threads")
>>> env["scheduler"], sorted(env["cpu"])
('threads', ['logical_cores', 'machine', 'model', 'physical_cores', 'usable_cores'])
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["cpu_model", "git_state", "environment"]


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


_PACKAGES = ("numpy", "scipy", "numba", "dask", "distributed", "asafe", "psutil", "matplotlib", "threadpoolctl",
             "rich")
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                     "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER", "OMP_WAIT_POLICY",
                     "MALLOC_TRIM_THRESHOLD_")


def _package_versions() -> dict[str, str | None]:
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _numba_threads() -> dict[str, Any]:
    info: dict[str, Any] = {"imported": "numba" in sys.modules}
    if not info["imported"]:  # importing numba only to describe it would take seconds
        return info
    numba = sys.modules["numba"]
    try:
        info["NUMBA_NUM_THREADS"] = int(numba.config.NUMBA_NUM_THREADS)
        info["num_threads"] = int(numba.get_num_threads())
    except Exception:  # a description must not fail the run it describes
        pass
    try:
        info["threading_layer"] = numba.threading_layer()
    except Exception:  # ValueError until a parallel kernel has run
        info["threading_layer"] = None
    return info


def _threadpools() -> list[dict[str, Any]]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keys = ("user_api", "internal_api", "num_threads", "version", "threading_layer", "architecture")
    return [{k: pool.get(k) for k in keys if k in pool} for pool in threadpool_info()]


def git_state(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The commit of the git tree holding ``path`` (default: the imported asafe) and whether it is dirty.

    ``{"commit": None}`` where that code is not in a git tree (a plain ``pip
    install``): the result then cannot name its commit, and says so.
    """
    root = Path(path) if path is not None else Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}
    return {"commit": commit, "dirty": bool(dirty)}


def _link() -> dict[str, Any]:
    from .hosts import describe as hosts
    from .link import describe

    return hosts() or describe()  # a multi-host topology's links, or the loopback's


def environment(**extra: Any) -> dict[str, Any]:
    """Describe the machine and software a result was measured on.

    Parameters
    ----------
    **extra
        Run settings to record with it, e.g. ``scheduler="threads", workers=2``.
        They must not reuse a built-in key.

    Returns
    -------
    dict
        ``cpu`` (model, physical/logical/usable cores), ``memory`` (total and
        available bytes), ``os``, ``python``, ``packages`` (versions of numpy, scipy,
        numba, dask, distributed, asafe, ...), ``asafe_path`` (which copy is
        imported), ``threads`` (thread environment variables, threadpoolctl pools,
        numba's threads and threading layer if numba is imported), ``load_average``
        (1, 5, 15 min: these machines are shared), ``git`` (commit and dirty flag
        of the imported asafe's tree), ``link`` (the loopback as it is, the shaped
        link of :mod:`asafe.app.link` with its measured check, or the hosts and links of a
        multi-host topology, :mod:`asafe.app.hosts`), ``time`` (UTC), then
        ``extra``. Plain data, ready for JSON.
    """
    import psutil

    memory = psutil.virtual_memory()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    asafe_module = sys.modules.get("asafe")
    info: dict[str, Any] = {
        "cpu": {"model": cpu_model(), "physical_cores": psutil.cpu_count(logical=False),
                "logical_cores": psutil.cpu_count(logical=True), "usable_cores": usable,
                "machine": platform.machine()},
        "memory": {"total_bytes": int(memory.total), "total_gib": round(memory.total / 2**30, 2),
                   "available_bytes": int(memory.available)},
        "os": {"platform": platform.platform(), "system": platform.system(), "release": platform.release()},
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "packages": _package_versions(),
        "asafe_path": getattr(asafe_module, "__file__", None),
        "threads": {"env": {k: os.environ.get(k) for k in _THREAD_VARIABLES},
                    "threadpoolctl": _threadpools(), "numba": _numba_threads()},
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "git": git_state(),
        "link": _link(),
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    clash = sorted(set(extra) & set(info))
    if clash:
        raise ValueError(f"environment(): extra keys {clash} would overwrite built-in ones")
    info.update(extra)
    return info
