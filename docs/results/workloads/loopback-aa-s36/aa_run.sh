#!/bin/bash
cd "$TREE"
export PYTHONPATH="$TREE"
( while true; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; sleep 30; done ) > load.log &
LP=$!
/work/venv/bin/python -m benchmarks workloads --variants dask,dask-control,asafe --rounds 9 --rel-ci 0.001 --out out > console.txt 2>&1
echo "rc=$?" >> console.txt
kill $LP
