#!/usr/bin/env bash
# issue 29 target (a) on a quiet 16-core machine: the workloads suite on the loopback, plain Dask and asafe
export PYTHONUNBUFFERED=1 DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
python3 setup.py -q build_ext --inplace > $OUT/build.log 2>&1; echo "build rc=$?"
python3 - <<'PY' | tee $OUT/env.txt
import os, platform, numpy, dask, distributed, psutil, pandas, pyarrow
print("python", platform.python_version(), "cpus", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)))
print("numpy", numpy.__version__, "dask", dask.__version__, "distributed", distributed.__version__, "pandas", pandas.__version__, "pyarrow", pyarrow.__version__)
for m in ("asafe.schedulers._hotpath", "asafe.schedulers._zeros", "blosc2"):
    try:
        mod = __import__(m); print(m, "ok", getattr(mod, "__version__", ""))
    except Exception as e:
        print(m, "MISSING", e)
print("load", os.getloadavg(), "mem GiB", round(psutil.virtual_memory().total / 2**30))
PY
git rev-parse HEAD 2>/dev/null | tee -a $OUT/env.txt; date -u | tee -a $OUT/env.txt
timeout ${BUDGET:-500} python3 -m benchmarks workloads --variants dask,asafe --rounds 9 --rel-ci 0.001 --out $OUT/r 2>&1 | grep -v "distributed\.\|INFO\|Warning\|warn" | tee $OUT/console.txt
echo "rc=${PIPESTATUS[0]}"; date -u | tee -a $OUT/env.txt; cat /proc/loadavg | tee -a $OUT/env.txt
