#!/usr/bin/env bash
cd /work/scratch/s29/wl
export DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg PYTHONPATH=/work/wt/measure
echo "$(date -u +%T) start 1gbit zeros,ints,smooth load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain.log
/work/venv/bin/python -m benchmarks workloads --link 1gbit --data zeros,ints,smooth --rounds 9 --rel-ci 0.001 --out /work/scratch/s29/wl/1gbit-s29 > 1gbit.console 2>&1
echo "$(date -u +%T) end rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain.log
echo "$(date -u +%T) start 1gbit random dask,asafe load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain.log
/work/venv/bin/python -m benchmarks workloads --link 1gbit --data random --variants dask,asafe --rounds 9 --rel-ci 0.001 --out /work/scratch/s29/wl/1gbit-s29 > 1gbit-random.console 2>&1
echo "$(date -u +%T) end rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain.log
echo done >> chain.log
