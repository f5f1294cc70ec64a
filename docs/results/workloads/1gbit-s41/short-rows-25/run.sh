#!/bin/bash
# The short rows again with 25 rounds: plain Dask, plain Dask again, asafe; random data and half-zero floats.
cd "$(dirname "$0")/../../../../.."
O=${O:-docs/results/workloads/1gbit-s41/short-rows-25}
echo "$(date -u +%FT%TZ) $(git log --oneline -1 | cut -c1-7) load $(cut -d' ' -f1-3 /proc/loadavg)" > $O/load.log
python -m benchmarks workloads --link 1gbit --workloads reduce,map-overlap,stencil,anomaly,diff --data random,zeros \
    --variants dask,dask-control,asafe --rounds 25 --rel-ci 0.001 --out $O > $O/console.txt 2>&1
echo "rc=$?" >> $O/console.txt
echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/load.log
