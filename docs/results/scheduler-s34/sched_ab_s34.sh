#!/bin/bash
# base tree (56e08c2), then the new one (ba87dd3), twice: the scheduler suite's asafe / plain Dask ratios from each
BEFORE=/work/scratch/s34/base; AFTER=/work/scratch/s34/new
for t in base1 new1 base2 new2; do
  case $t in base*) tree="$BEFORE";; new*) tree="$AFTER";; esac
  echo "== $t $(date -u +%H:%M:%S) $(uptime | sed 's/.*load average/load/')"
  (cd $tree && PYTHONPATH=$tree /work/venv/bin/python -m benchmarks scheduler --graph fan-in --graph many-small --tasks 4000 --fan-in 2000 --graphs 300 --min-rounds 6 --max-rounds 6 --rel-ci 0.001 --tracemalloc-rounds 0 --out /work/scratch/s34/sched/$t 2>&1 | grep -v "^Extension\|resource_tracker\|distributed.core - INFO" )
done
echo "== end $(date -u +%H:%M:%S) $(uptime | sed 's/.*load average/load/')"
