#!/bin/bash
# The wire-compression evaluation, fixed before it runs (thresholds as committed, not re-tuned):
# the rechunk suite on 1 Gbit/s, 10 Gbit/s and the loopback, smooth and random data, and 1 Gbit/s with two
# cpu-spinning processes outside the run; every variant interleaved within a run.
set -x
OUT=/tmp/evalwire
rm -rf $OUT; mkdir -p $OUT
cd /work/main
. .venv/bin/activate
uptime
python -m benchmarks wire --link 1gbit --variants dask,adaptive,always,host-cpu --out $OUT > $OUT/1gbit-smooth.log 2>&1; uptime
python -m benchmarks wire --variants dask,adaptive,always,host-cpu --out $OUT > $OUT/loopback-smooth.log 2>&1; uptime
python -m benchmarks wire --link 10gbit --variants dask,adaptive,always --out $OUT > $OUT/10gbit-smooth.log 2>&1; uptime
python -m benchmarks wire --link 1gbit --data random --variants dask,adaptive,always --out $OUT > $OUT/1gbit-random.log 2>&1; uptime
python -m benchmarks wire --data random --variants dask,adaptive,always --out $OUT > $OUT/loopback-random.log 2>&1; uptime
python -m benchmarks wire --link 1gbit --burn 2 --rounds 5 --variants dask,adaptive,always --out $OUT > $OUT/1gbit-smooth-burn2.log 2>&1; uptime
echo DONE
