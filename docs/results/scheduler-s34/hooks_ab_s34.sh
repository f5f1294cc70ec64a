#!/bin/bash
# The hooks' thread cpu, before (56e08c2) and after (b78abd1), alternating, PYTHONHASHSEED=0:
# the scheduler suite's fan-in and many-small graphs (hooks_fanin.py), then four workloads (hooks_by.py of session 33).
B=/work/scratch/s34/base; N=/work/scratch/s34/new
for i in 1 2; do
  for T in $B $N; do
    echo "== $T $(date -u +%H:%M:%S) $(uptime | sed 's/.*load average/load/')"
    for G in fan-in many-small; do
      R=4; [ $G = many-small ] && R=3
      (cd $T && PYTHONHASHSEED=0 TREE=$T GRAPHS=100 PYTHONPATH=$T /work/venv/bin/python /work/scratch/s34/hooks_fanin.py $G $R 2>&1 | grep -v INFO)
    done
    (cd $T && PYTHONHASHSEED=0 PYTHONPATH=$T /work/venv/bin/python /work/main/docs/results/taskpath-s33/hooks_by.py diff,stencil,rechunk-tasks,futures smooth 6 2>&1 | grep -v "INFO\|^#")
  done
done
echo "== end $(date -u +%H:%M:%S) $(uptime | sed 's/.*load average/load/')"
