#!/bin/bash
# The suite's own sample on the reduction, as session 42 ran it (40 rounds, plain Dask, plain Dask again, asafe),
# from this tree and then from a worktree of the tree before (BEFORE=path, its C extensions copied in); session 43.
# usage: BEFORE=/path bash run.sh OUTDIR
here=$(cd "$(dirname "$0")" && pwd); tree=$(cd "$here/../../../.." && pwd); OUT=$1
clean() { grep -v "INFO\|Warn\|warn\|Perhaps\|Hosting\|  round\|  warm-up"; }
for t in "$tree" "$BEFORE"; do
  name=$([ "$t" = "$tree" ] && echo after || echo before)
  echo "## $(date -u +%T) $name: $(git -C "$t" rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd "$t" && python -m benchmarks workloads --workloads reduce --data ints,zeros --variants dask,dask-control,asafe \
      --rounds 40 --rel-ci 0.001 --out "$OUT/$name") 2>&1 | clean
done
echo "## $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
