#!/bin/bash
# The calibration set again with the shape of a frame's rows in its kind (2ecbc7e's code; min-gain 0.1).
# usage: bash rows.sh OUTDIR   (from the repository's root)
OUT=$1
( while true; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; sleep 30; done ) > $OUT/load-rows.log &
LP=$!
python -m benchmarks workloads --link 1gbit --seed 1 --mib 64 \
  --workloads matmul,rechunk-tasks,transpose,diff,futures,rechunk-p2p,anomaly --data smooth,ints,zeros \
  --variants dask,asafe --rounds 7 --rel-ci 0.001 --out $OUT/rows > $OUT/console-rows.txt 2>&1
echo "rc=$?" >> $OUT/console-rows.txt
kill $LP
