#!/bin/bash
# The scheduler's loop cpu per short graph, and asafe's hooks in it by kind of transition (loopback; session 42).
here=$(cd "$(dirname "$0")" && pwd)
clean() { grep -v "INFO\|UserWarning\|Perhaps\|Hosting\|warnings.warn"; }
echo "## $(date -u +%T) $(git -C "$here" rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## VARIANTS=dask,asafe WRAP=0 python schedcpu.py reduce ints 40"
VARIANTS=dask,asafe WRAP=0 python "$here/schedcpu.py" reduce ints 40 2>&1 | clean | tail -3
echo "## COLLECT=1 VARIANTS=dask,asafe WRAP=0 python schedcpu.py reduce ints 40   (gc.collect() after every run, both variants)"
COLLECT=1 VARIANTS=dask,asafe WRAP=0 python "$here/schedcpu.py" reduce ints 40 2>&1 | clean | tail -3
echo "## VARIANTS=dask,asafe WRAP=0 python schedcpu.py diff random 30"
VARIANTS=dask,asafe WRAP=0 python "$here/schedcpu.py" diff random 30 2>&1 | clean | tail -3
for job in "reduce ints 30" "anomaly random 20" "diff random 20" "map-overlap zeros 20"; do
  echo "## python transcost.py $job   $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  python "$here/transcost.py" $job 2>&1 | clean | tail -10
done
for job in "reduce ints 30" "diff random 20"; do
  echo "## ONCE=1 python transcost.py $job   (installed once, as a user would)   $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  ONCE=1 python "$here/transcost.py" $job 2>&1 | clean | tail -12
done
echo "## end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
