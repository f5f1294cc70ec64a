#!/bin/bash
# base tree, then new tree, then base, then new: the scheduler suite's dask-vs-asafe ratios from each tree
set -x
for t in base3 new3 base4 new4; do
  case $t in base*) tree="$BEFORE";; new*) tree="$AFTER";; esac
  (cd $tree && uptime && PYTHONPATH=$tree /work/venv/bin/python -m benchmarks scheduler --graph fan-in --graph many-small --tasks 4000 --fan-in 2000 --graphs 300 --min-rounds 6 --max-rounds 6 --rel-ci 0.001 --tracemalloc-rounds 0 --out out/$t 2>&1 | grep -v "^Extension\|resource_tracker" )
done
uptime
