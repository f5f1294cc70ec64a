#!/bin/bash
# The arrival's cost after an idle gap, the tree before (BEFORE=path, the C extensions copied in) and this tree
# alternating, plain Dask beside them; 30 reduction graphs of int ids, 0.6 s apart, three runs each (session 43).
here=$(cd "$(dirname "$0")" && pwd); tree=$(cd "$here/../../.." && pwd)
clean() { grep -v "INFO\|UserWarning\|Perhaps\|Hosting\|warnings.warn"; }
echo "## $(date -u +%T) after: $(git -C "$tree" rev-parse --short HEAD) (+ working tree), before: $(git -C "$BEFORE" rev-parse --short HEAD); load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in 1 2 3; do
  for t in "$BEFORE" "$tree" dask; do
    if [ "$t" = dask ]; then VARIANT=dask TREE="$tree" python "$here/arrival.py" ${JOB:-reduce ints 30 0.6} 2>&1 | clean
    else TREE="$t" python "$here/arrival.py" ${JOB:-reduce ints 30 0.6} 2>&1 | clean; fi
  done
  echo "## $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
done
