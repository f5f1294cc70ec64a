#!/bin/bash
# The fifteenth run behind 1 Gbit/s (session 42): the report set, every variant on the compressible kinds, plain
# Dask and asafe on random data; the working tree at $TREE.
# usage: TREE=/path/to/tree bash run.sh OUTDIR   (OUTDIR/compressible, OUTDIR/random: the JSONs; consoles and load.log beside)
cd "$TREE"; export PYTHONPATH="$TREE"
OUT=$1
( while true; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; sleep 30; done ) > $OUT/load.log &
LP=$!
/work/venv/bin/python -m benchmarks workloads --link 1gbit --data zeros,ints,smooth --rounds 9 --rel-ci 0.001 --out $OUT/compressible > $OUT/compressible-console.txt 2>&1
echo "rc=$?" >> $OUT/compressible-console.txt
/work/venv/bin/python -m benchmarks workloads --link 1gbit --data random --variants dask,asafe --rounds 9 --rel-ci 0.001 --out $OUT/random > $OUT/random-console.txt 2>&1
echo "rc=$?" >> $OUT/random-console.txt
kill $LP
