#!/usr/bin/env bash
# issue 31 on a quiet 16-core machine: state push at 64 in-process workers; scheduler cpu per task with 2 worker processes
export PYTHONUNBUFFERED=1 DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg
start=$(date +%s); budget=${BUDGET:-530}
left() { echo $(( budget - ($(date +%s) - start) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
python3 setup.py -q build_ext --inplace > $OUT/build.log 2>&1; echo "build rc=$?"
python3 - <<'PY' | tee $OUT/env.txt
import os, platform, numpy, dask, distributed, psutil
print("python", platform.python_version(), "cpus", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)))
print("numpy", numpy.__version__, "dask", dask.__version__, "distributed", distributed.__version__)
for m in ("asafe.schedulers._hotpath", "asafe.schedulers._zeros"):
    try:
        __import__(m); print(m, "compiled")
    except Exception as e:
        print(m, "MISSING", e)
print("load", os.getloadavg(), "mem GiB", round(psutil.virtual_memory().total / 2**30))
PY
git rev-parse HEAD 2>/dev/null | tee -a $OUT/env.txt; date -u | tee -a $OUT/env.txt
echo "== push64 $(left) s left"; date -u
timeout $(( $(left) < 150 ? $(left) : 150 )) python3 -m benchmarks scheduler --push-only --in-process --workers 64 --pushes 200 --out $OUT/r 2>&1 | grep -v "distributed\.\|INFO" | tee $OUT/push64.txt
echo "== 2w $(left) s left"; date -u
timeout $(( $(left) - 15 )) python3 -m benchmarks scheduler --workers 2 --graph map-one-prefix --graph array-reduction --tasks 10000 --min-rounds 9 --max-rounds 9 --tracemalloc-rounds 0 --pushes 20 --max-seconds 170 --out $OUT/r 2>&1 | grep -v "distributed\.\|INFO" | tee $OUT/w2.txt
echo "== done $(left) s left"; date -u; cat /proc/loadavg
