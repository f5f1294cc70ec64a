#!/bin/bash
# The fourteenth run behind 1 Gbit/s with an A/A control: plain Dask, plain Dask again, asafe (38b0cc1).
cd "$(dirname "$0")/../../../../.."
O=${O:-docs/results/workloads/1gbit-s41/fourteenth-run-aa}
uptime > $O/load.log
date -u +%FT%TZ >> $O/load.log
python -m benchmarks workloads --link 1gbit --data zeros,ints,smooth --variants dask,dask-control,asafe --rounds 9 --rel-ci 0.001 --out $O/compressible > $O/compressible-console.txt 2>&1
echo "rc=$?" >> $O/compressible-console.txt
uptime >> $O/load.log
python -m benchmarks workloads --link 1gbit --data random --variants dask,dask-control,asafe --rounds 9 --rel-ci 0.001 --out $O/random > $O/random-console.txt 2>&1
echo "rc=$?" >> $O/random-console.txt
uptime >> $O/load.log
date -u +%FT%TZ >> $O/load.log
