#!/bin/bash
# The scheduler suite's small graphs (10 tasks each) with coalesce-arrivals 1 (the default) and 10, alternated
# twice: session 45's transitions.py, 30 rounds of ten graphs, asafe installed before each ten (session 47).
# Run from the repository root, alone on the machine.
set -euo pipefail
out=docs/results/scheduler-s47/many-small
i=0
for c in 1 10 1 10; do
    i=$((i + 1))
    echo "== coalesce-arrivals $c $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
    DASK_ASAFE__DISTRIBUTED__COALESCE_ARRIVALS=$c PYTHONPATH=. python docs/results/scheduler-s45/transitions.py \
        scheduler:many-small - 30 2>&1 | grep -v "distributed\." > "$out/coalesce-$c-run$i.txt"
    grep -E "evaluations from|every transition|processing -> memory" "$out/coalesce-$c-run$i.txt"
done
