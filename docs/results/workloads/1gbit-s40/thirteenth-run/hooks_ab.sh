#!/bin/bash
# The scheduler plugin's hooks' thread cpu per run, before (bbca7b8) and after (the chain and the size of what crossed),
# alternating, PYTHONHASHSEED=0 (session 34's hooks_fanin.py; scheduler-s39/hooks_ab.txt ran the same).
B=/tmp/before40; N=/work/main  # B: git worktree add /tmp/before40 bbca7b8, C extensions built in place; N: 92416ea
for i in 1 2 3; do
  for T in $B $N; do
    for G in fan-in array-reduction; do
      echo "## $T $G pair $i $(date -u +%H:%M:%S) $(cut -d' ' -f1-3 /proc/loadavg)"
      (cd $T && PYTHONHASHSEED=0 TREE=$T PYTHONPATH=$T /work/venv/bin/python /work/main/docs/results/scheduler-s34/hooks_fanin.py $G 4 2>&1 | grep -v INFO)
    done
  done
done
