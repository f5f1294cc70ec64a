#!/usr/bin/env bash
# Issue 29 (a) on a quiet 16-core machine: where the reduction's cost goes, with session 48's and 49's scripts.
# deferred_ab.py: variants of one installation rotated graph by graph (the scheduler plugin's hooks as no-ops, the
# plugin out, the workers' hook off too, evaluations every 200 ms, the forecast's plans off); installs_ab.py blocks:
# plain Dask, asafe installed once a block, asafe installed before each graph (as the workloads suite does).
# Run from the repository root on the lent machine; COMMIT names what it measures.
export PYTHONUNBUFFERED=1 DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg
start=$(date +%s); budget=${BUDGET:-470}
left() { echo $(( budget - ($(date +%s) - start) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
python3 setup.py -q build_ext --inplace > $OUT/build.log 2>&1; echo "build rc=$?"
{ echo "measuring ${COMMIT:-unknown}"; date -u; nproc; cat /proc/loadavg; } | tee $OUT/env.txt
echo "== deferred_ab $(left) s left"; date -u
VARIANTS=inline,off,absent,bare,eval200,noforecast timeout ${DEFER_S:-230} \
  python3 docs/results/scheduler-s48/deferred_ab.py reduce zeros ${ROUNDS:-80} 2>&1 | grep -v "distributed\.\|INFO" \
  | tee $OUT/variants-reduce.txt
cat /proc/loadavg | tee -a $OUT/variants-reduce.txt
echo "== installs_ab $(left) s left"; date -u
timeout $(( $(left) - 5 )) python3 docs/results/scheduler-s49/installs_ab.py blocks reduce zeros ${BLOCKS:-10} 10 2>&1 \
  | grep -v "distributed\.\|INFO" | tee $OUT/blocks-reduce.txt
cat /proc/loadavg | tee -a $OUT/blocks-reduce.txt
echo "== done $(left) s left"; date -u
