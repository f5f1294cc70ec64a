#!/bin/bash
# An A/A control of the sixteenth run's lowest rows (session 44): random data behind 1 Gbit/s, the dataframes and
# the reduction, plain Dask, plain Dask again and asafe, 9 rounds; from $TREE.
cd "$TREE"; export PYTHONPATH="$TREE"
OUT=$1
PY=${PY:-/work/main/.venv/bin/python}
echo "## $(date -u +%T) $(git rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg)" > $OUT/console.txt
$PY -m benchmarks workloads --link 1gbit --data random --workloads groupby,merge,shuffle,reduce \
    --variants dask,dask-control,asafe --rounds 9 --rel-ci 0.001 --out $OUT >> $OUT/console.txt 2>&1
echo "rc=$? ## $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/console.txt
