#!/bin/bash
# The hooks' thread cpu per graph on random data and int ids, before (56e08c2) and after (ba87dd3), alternating
B=/work/scratch/s34/base; N=/work/scratch/s34/new
for kind in random ints; do
  for i in 1 2; do
    for T in $B $N; do
      echo "== $kind $T $(date -u +%H:%M:%S) $(uptime | sed 's/.*load average/load/')"
      (cd $T && PYTHONHASHSEED=0 PYTHONPATH=$T /work/venv/bin/python /work/main/docs/results/taskpath-s33/hooks_by.py diff,stencil,futures $kind 6 2>&1 | grep "hooks ms")
    done
  done
done
echo "== end $(date -u +%H:%M:%S) $(uptime | sed 's/.*load average/load/')"
