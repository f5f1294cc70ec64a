#!/bin/bash
# asafe's scheduler hooks, thread cpu per task, old (5831118) and new (measure worktree) interleaved
cd /work/scratch
echo "start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg) new=$(git -C /work/wt/measure rev-parse --short HEAD) old=$(git -C /work/wt/old rev-parse --short HEAD)"
for r in 1 2 3 4; do
  for v in old measure; do
    echo "== $v round $r load $(cut -d' ' -f1 /proc/loadavg)"
    PYTHONPATH=/work/wt/$v timeout 600 /work/venv/bin/python hook_cost3.py 10000 map,array 2 2>&1 | grep "us/task"
  done
done
echo "end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
