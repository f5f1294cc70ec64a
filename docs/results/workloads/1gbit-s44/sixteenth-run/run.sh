#!/bin/bash
# The sixteenth run behind 1 Gbit/s (session 44): the report set as the fifteenth run's run.sh, from $TREE.
cd "$TREE"; export PYTHONPATH="$TREE"
OUT=$1
PY=${PY:-/work/main/.venv/bin/python}
( while true; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; sleep 30; done ) > $OUT/load.log &
LP=$!
$PY -m benchmarks workloads --link 1gbit --data zeros,ints,smooth --rounds 9 --rel-ci 0.001 --out $OUT/compressible > $OUT/compressible-console.txt 2>&1
echo "rc=$?" >> $OUT/compressible-console.txt
$PY -m benchmarks workloads --link 1gbit --data random --variants dask,asafe --rounds 9 --rel-ci 0.001 --out $OUT/random > $OUT/random-console.txt 2>&1
echo "rc=$?" >> $OUT/random-console.txt
kill $LP
