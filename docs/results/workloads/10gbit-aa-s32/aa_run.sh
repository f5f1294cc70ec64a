#!/bin/bash
cd /work/scratch/s32/base
export PYTHONPATH=/work/scratch/s32/base
( while true; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; sleep 30; done ) > /work/scratch/s32/aa10_load.log &
LP=$!
/work/venv/bin/python -m benchmarks workloads --variants dask,dask-control,asafe --rounds 9 --rel-ci 0.001 --link 10gbit --out /work/scratch/s32/aa10 > /work/scratch/s32/aa10_console.txt 2>&1
echo "rc=$?" >> /work/scratch/s32/aa10_console.txt
kill $LP
