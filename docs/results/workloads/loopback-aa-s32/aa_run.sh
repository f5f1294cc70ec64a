#!/bin/bash
cd /work/scratch/s32/base
export PYTHONPATH=/work/scratch/s32/base
( while true; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; sleep 30; done ) > /work/scratch/s32/aa_load.log &
LP=$!
/work/venv/bin/python -m benchmarks workloads --variants dask,dask-control,asafe --rounds 9 --rel-ci 0.001 --out /work/scratch/s32/aa > /work/scratch/s32/aa_console.txt 2>&1
echo "rc=$?" >> /work/scratch/s32/aa_console.txt
kill $LP
