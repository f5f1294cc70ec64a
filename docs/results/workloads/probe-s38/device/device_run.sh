#!/usr/bin/env bash
# session 38 on a quiet 16-core machine: issue 29 (a)'s four rows not met on the 2-core machine (behind 1 Gbit/s,
# with an A/A control), then issue 31's fan-in and many-small graphs (scheduler cpu per task), 2 worker processes
export PYTHONUNBUFFERED=1 DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg
start=$(date +%s); budget=${BUDGET:-540}
left() { echo $(( budget - ($(date +%s) - start) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
python3 setup.py -q build_ext --inplace > $OUT/build.log 2>&1; echo "build rc=$?"
if ! command -v tc >/dev/null || ! command -v ip >/dev/null; then
  echo "iproute2 missing: unpacking the carried debs into /tmp/ipr"
  for f in .whl/ipr/*.deb; do dpkg -x $f /tmp/ipr; done
  export PATH=/tmp/ipr/usr/sbin:/tmp/ipr/sbin:/tmp/ipr/bin:/tmp/ipr/usr/bin:$PATH
  export LD_LIBRARY_PATH=/tmp/ipr/usr/lib/x86_64-linux-gnu:/tmp/ipr/lib/x86_64-linux-gnu
fi
python3 - <<'PY' | tee $OUT/env.txt
import os, platform, numpy, dask, distributed, psutil, pandas, pyarrow, shutil
print("python", platform.python_version(), "cpus", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)), "kernel", platform.release())
print("numpy", numpy.__version__, "dask", dask.__version__, "distributed", distributed.__version__, "pandas", pandas.__version__, "pyarrow", pyarrow.__version__)
for m in ("asafe.schedulers._hotpath", "asafe.schedulers._taskpath", "asafe.schedulers._zeros", "asafe.core._typewalk", "blosc2"):
    try:
        mod = __import__(m); print(m, "ok", getattr(mod, "__version__", ""))
    except Exception as e:
        print(m, "MISSING", e)
print("tools", {t: shutil.which(t) for t in ("unshare", "ip", "tc")})
from asafe.app import link
try:
    print("shaped link:", link.check_available())
except Exception as e:
    print("shaped link UNAVAILABLE:", e)
print("load", os.getloadavg(), "mem GiB", round(psutil.virtual_memory().total / 2**30))
PY
date -u | tee -a $OUT/env.txt
wl() {  # name, seconds, args...
  local name=$1 secs=$2; shift 2
  echo "== $name $(left) s left, load $(cut -d' ' -f1-3 /proc/loadavg)"; date -u
  timeout $(( $(left) < secs ? $(left) : secs )) python3 -m benchmarks workloads --link 1gbit --rounds 9 --rel-ci 0.001 \
    --variants dask,asafe,dask-control --out $OUT/w "$@" 2>&1 | grep -v "distributed\.\|INFO\|Warning\|warn" | tee $OUT/$name.txt
}
sch() {  # name, seconds, args...
  local name=$1 secs=$2; shift 2
  echo "== $name $(left) s left, load $(cut -d' ' -f1-3 /proc/loadavg)"; date -u
  timeout $(( $(left) < secs + 40 ? $(left) : secs + 40 )) python3 -m benchmarks scheduler --workers 2 --tracemalloc-rounds 0 \
    --pushes 10 --min-rounds 6 --max-rounds 9 --max-seconds $secs --out $OUT/s "$@" 2>&1 | grep -v "distributed\.\|INFO" | tee $OUT/$name.txt
}
wl random ${WL1:-170} --data random --workloads reduce,map-overlap,futures,stencil
wl zeros ${WL2:-70} --data zeros --workloads stencil
sch fanin ${S1:-110} --graph fan-in --tasks 10000 --fan-in 2000
sch small ${S2:-110} --graph many-small --tasks 10000 --graphs 300
echo "== done $(left) s left"; date -u; cat /proc/loadavg
