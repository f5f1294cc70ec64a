#!/bin/bash
# The first graph after each installation (the workloads suite's pattern): the tree before (BEFORE=path, the C
# extensions copied in) and this tree alternating, plain Dask beside them; 30 rounds each, three runs (session 43).
here=$(cd "$(dirname "$0")" && pwd); tree=$(cd "$here/../../.." && pwd)
clean() { grep -v "INFO\|UserWarning\|Perhaps\|Hosting\|warnings.warn"; }
echo "## $(date -u +%T) after: $(git -C "$tree" rev-parse --short HEAD) (+ working tree), before: $(git -C "$BEFORE" rev-parse --short HEAD); load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in 1 2 3; do
  for t in "$BEFORE" "$tree" dask; do
    if [ "$t" = dask ]; then VARIANT=dask TREE="$tree" python "$here/first_arrival.py" ${JOB:-reduce ints 30} 2>&1 | clean
    else TREE="$t" python "$here/first_arrival.py" ${JOB:-reduce ints 30} 2>&1 | clean; fi
  done
  echo "## $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
done
