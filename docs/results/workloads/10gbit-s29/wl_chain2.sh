#!/usr/bin/env bash
cd /work/scratch/s29/wl
export DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg PYTHONPATH=/work/wt/measure
echo "$(date -u +%T) start 10gbit dask,asafe load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain2.log
/work/venv/bin/python -m benchmarks workloads --link 10gbit --variants dask,asafe --rounds 9 --rel-ci 0.001 --out /work/scratch/s29/wl/10gbit-s29 > 10gbit.console 2>&1
echo "$(date -u +%T) end rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain2.log
echo "$(date -u +%T) start loopback dask,asafe load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain2.log
/work/venv/bin/python -m benchmarks workloads --variants dask,asafe --rounds 9 --rel-ci 0.001 --out /work/scratch/s29/wl/loopback-s29 > loopback.console 2>&1
echo "$(date -u +%T) end rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain2.log
echo done >> chain2.log
