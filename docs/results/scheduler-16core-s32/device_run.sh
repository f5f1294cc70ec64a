#!/usr/bin/env bash
# issue 31 on a quiet 16-core machine: the graphs not measured there before (fan-in, many-small, map-many-prefixes),
# plain Dask and asafe interleaved, 2 worker processes
export PYTHONUNBUFFERED=1 DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg
start=$(date +%s); budget=${BUDGET:-520}
left() { echo $(( budget - ($(date +%s) - start) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
python3 setup.py -q build_ext --inplace > $OUT/build.log 2>&1; echo "build rc=$?"
python3 - <<'PY' | tee $OUT/env.txt
import os, platform, numpy, dask, distributed, psutil
print("python", platform.python_version(), "cpus", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)))
print("numpy", numpy.__version__, "dask", dask.__version__, "distributed", distributed.__version__)
for m in ("asafe.schedulers._hotpath", "asafe.schedulers._zeros", "asafe.core._typewalk"):
    try:
        __import__(m); print(m, "compiled")
    except Exception as e:
        print(m, "MISSING", e)
from asafe.core import types; print("resolve_type walks with", types._walk)
print("load", os.getloadavg(), "mem GiB", round(psutil.virtual_memory().total / 2**30))
PY
date -u | tee -a $OUT/env.txt
run() {  # name, seconds budget, args...
  local name=$1 secs=$2; shift 2
  echo "== $name $(left) s left, load $(cut -d' ' -f1-3 /proc/loadavg)"; date -u
  timeout $(( $(left) < secs + 40 ? $(left) : secs + 40 )) python3 -m benchmarks scheduler --workers 2 --tracemalloc-rounds 0 \
    --pushes 10 --min-rounds 6 --max-rounds 9 --max-seconds $secs --out $OUT/r "$@" 2>&1 | grep -v "distributed\.\|INFO" | tee $OUT/$name.txt
}
run fanin 170 --graph fan-in --tasks 10000 --fan-in 2000
run small 150 --graph many-small --tasks 10000 --graphs 300
[ $(left) -gt 100 ] && run prefixes $(( $(left) - 60 )) --graph map-many-prefixes --tasks 2000 --prefixes 1000
echo "== done $(left) s left"; date -u; cat /proc/loadavg
