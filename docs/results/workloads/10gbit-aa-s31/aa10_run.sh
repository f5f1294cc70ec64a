#!/bin/bash
cd /work/scratch/s31/wt
export PYTHONPATH=/work/scratch/s31/wt
( while true; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; sleep 30; done ) > /work/scratch/s31/aa10_load.log &
LP=$!
/work/venv/bin/python -m benchmarks workloads --link 10gbit --variants dask,dask-control,asafe --rounds 9 --rel-ci 0.001 --out /work/scratch/s31/aa10 > /work/scratch/s31/aa10_console.txt 2>&1
echo "rc=$?" >> /work/scratch/s31/aa10_console.txt
kill $LP
