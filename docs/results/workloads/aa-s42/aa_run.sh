#!/bin/bash
# A/A run on the loopback, then at 10 Gbit/s, of the tree at $TREE (session 42)
# usage: TREE=/path/to/tree bash aa_run.sh OUTDIR   (OUTDIR/loopback, OUTDIR/10gbit: the JSONs; consoles and load.log beside)
cd "$TREE"; export PYTHONPATH="$TREE"
OUT=$1
( while true; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; sleep 30; done ) > $OUT/load.log &
LP=$!
/work/venv/bin/python -m benchmarks workloads --variants dask,dask-control,asafe --rounds 9 --rel-ci 0.001 --out $OUT/loopback > $OUT/console-loopback.txt 2>&1
echo "rc=$?" >> $OUT/console-loopback.txt
/work/venv/bin/python -m benchmarks workloads --variants dask,dask-control,asafe --rounds 9 --rel-ci 0.001 --link 10gbit --out $OUT/10gbit > $OUT/console-10gbit.txt 2>&1
echo "rc=$?" >> $OUT/console-10gbit.txt
kill $LP
