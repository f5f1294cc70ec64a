#!/bin/bash
# Calibration of asafe.wire.min-gain (session 42; run on 7a64e09 with the setting added, before the row shape
# joined the kind): seed 1 and 64 MiB inputs (the report set is seed 0, 96 MiB), behind 1 Gbit/s, plain Dask
# and asafe, three values of the margin. usage: bash min_gain.sh OUTDIR   (from the repository's root)
OUT=$1
( while true; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; sleep 30; done ) > $OUT/load-min-gain.log &
LP=$!
for g in 0.1 0.05 0; do
  DASK_ASAFE__WIRE__MIN_GAIN=$g python -m benchmarks workloads --link 1gbit --seed 1 --mib 64 \
    --workloads matmul,rechunk-tasks,transpose,diff,futures,rechunk-p2p,anomaly --data smooth,ints,zeros \
    --variants dask,asafe --rounds 7 --rel-ci 0.001 --out $OUT/g$g > $OUT/console-g$g.txt 2>&1
  echo "rc=$?" >> $OUT/console-g$g.txt
done
kill $LP
