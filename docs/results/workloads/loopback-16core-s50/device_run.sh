#!/usr/bin/env bash
# Issue 29 (a) on a quiet 16-core machine: the workloads suite's reductions behind the 1 Gbit/s link, with the
# same command as session 49's 300-round run on the 2-core machine (docs/results/workloads/1gbit-s49-reduce300/),
# each data kind given half the lease (--max-seconds; both reached the 300 rounds). Run from the repository root on
# the lent machine; COMMIT names what it measures.
# Falls back to the loopback as it is (and says so) where the machine cannot shape a link.
export PYTHONUNBUFFERED=1 DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg
start=$(date +%s); budget=${BUDGET:-500}
left() { echo $(( budget - ($(date +%s) - start) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
python3 setup.py -q build_ext --inplace > $OUT/build.log 2>&1; echo "build rc=$?"
{
  echo "measuring ${COMMIT:-unknown}"; date -u
  python3 - <<'PY'
import os, platform, numpy, dask, distributed, psutil, blosc2
print("python", platform.python_version(), "cpus", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)))
print("numpy", numpy.__version__, "dask", dask.__version__, "distributed", distributed.__version__, "blosc2", blosc2.__version__)
for m in ("asafe.schedulers._hotpath", "asafe.schedulers._taskpath", "asafe.schedulers._zeros", "asafe.core._typewalk"):
    try:
        __import__(m); print(m, "compiled")
    except Exception as e:
        print(m, "MISSING", e)
print("load", os.getloadavg(), "mem GiB", round(psutil.virtual_memory().total / 2**30))
PY
  uname -r; which unshare ip tc
} 2>&1 | tee $OUT/env.txt
link=1gbit
if ! unshare --net sh -c 'ip link set lo up && tc qdisc add dev lo root tbf rate 1gbit burst 512kb latency 50ms && tc qdisc show dev lo' >> $OUT/env.txt 2>&1; then
  link=""; echo "no shaped link here: the loopback as it is" | tee -a $OUT/env.txt
fi
rounds=${ROUNDS:-300}
secs=$(( ($(left) - 40) / 2 ))
echo "== reduce, link ${link:-loopback}, $secs s a data kind, $(left) s left, load $(cut -d' ' -f1-3 /proc/loadavg)"; date -u
timeout $(( $(left) - 10 )) python3 -m benchmarks workloads ${link:+--link $link} --workloads reduce --data zeros,smooth \
  --variants dask,dask-control,asafe --rounds $rounds --rel-ci 0.001 --max-seconds $secs --out $OUT/r 2>&1 \
  | grep -v "distributed\.\|INFO" | tee $OUT/console.txt
echo "== done $(left) s left, load $(cut -d' ' -f1-3 /proc/loadavg)"; date -u
