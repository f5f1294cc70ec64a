#!/bin/bash
# A check behind 1 Gbit/s that compression still switches at a graph's arrival with the signals sampled between
# events (session 43): four workloads on half-zero floats and the smooth field, plain Dask and asafe, 6 rounds.
# usage: bash run.sh OUTDIR   (from the repository root)
OUT=$1
echo "## $(date -u +%T) $(git rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg)"
python -m benchmarks workloads --link 1gbit --workloads rechunk-tasks,diff,futures,reduce --data zeros,smooth \
    --variants dask,asafe --rounds 6 --rel-ci 0.001 --out "$OUT" 2>&1 | grep -v "INFO\|Warn\|warn\|Perhaps\|Hosting"
echo "## $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
