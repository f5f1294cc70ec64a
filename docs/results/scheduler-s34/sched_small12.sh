#!/bin/bash
# the new tree (ba87dd3) alone: many-small, 12 interleaved rounds
T=/work/scratch/s34/new
echo "== new-ms12 $(date -u +%H:%M:%S) $(uptime | sed 's/.*load average/load/')"
(cd $T && PYTHONPATH=$T /work/venv/bin/python -m benchmarks scheduler --graph many-small --tasks 4000 --graphs 300 --min-rounds 12 --max-rounds 12 --rel-ci 0.001 --tracemalloc-rounds 0 --out /work/scratch/s34/sched/new-ms12 2>&1 | grep -v "^Extension\|resource_tracker\|distributed.core - INFO")
echo "== end $(date -u +%H:%M:%S) $(uptime | sed 's/.*load average/load/')"
