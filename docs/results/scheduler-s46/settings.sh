#!/bin/bash
# The hook's cost per graph with asafe's defaults and with the two settings that cost the scheduler less
# (session 46): session 45's transitions.py on the workloads suite's reduction, the scheduler suite's fan-in and
# its small graphs, each setting in turn. Run from the repository root, alone on the machine.
set -euo pipefail
out=docs/results/scheduler-s46/settings
mkdir -p "$out"
for graph in "reduce zeros 30" "scheduler:fan-in - 10" "scheduler:many-small - 30"; do
    name=$(echo "$graph" | cut -d' ' -f1 | sed 's/scheduler://')
    for setting in default expected-transfers-false evaluate-interval-200ms; do
        case $setting in
            default) env=() ;;
            expected-transfers-false) env=(DASK_ASAFE__DISTRIBUTED__EXPECTED_TRANSFERS=false) ;;
            evaluate-interval-200ms) env=(DASK_ASAFE__DISTRIBUTED__EVALUATE_INTERVAL=200ms) ;;
        esac
        echo "== $name $setting $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
        env "${env[@]}" PYTHONPATH=. python docs/results/scheduler-s45/transitions.py $graph 2>&1 \
            | grep -v "distributed\." > "$out/$name-$setting.txt"
        grep -E "evaluations from|every transition|processing -> memory" "$out/$name-$setting.txt"
    done
done
