#!/bin/bash
# What the two cheaper settings cost where asafe helps (session 46): the workloads suite's transfer-bound rows
# on half-zero floats behind a 1 Gbit/s link, plain Dask against asafe with its defaults and with each setting.
# Run from the repository root as root (the link is a shaped loopback in a private network namespace), alone.
set -euo pipefail
out=docs/results/scheduler-s46/settings-wire
mkdir -p "$out"
for setting in default expected-transfers-false evaluate-interval-200ms; do
    case $setting in
        default) env=() ;;
        expected-transfers-false) env=(DASK_ASAFE__DISTRIBUTED__EXPECTED_TRANSFERS=false) ;;
        evaluate-interval-200ms) env=(DASK_ASAFE__DISTRIBUTED__EVALUATE_INTERVAL=200ms) ;;
    esac
    echo "== $setting $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
    env "${env[@]}" python -m benchmarks workloads --link 1gbit --workloads rechunk-tasks,diff,rechunk-p2p \
        --data zeros --variants dask,asafe --rounds 6 --out "$out/$setting" 2>&1 | grep -v "distributed\." \
        > "$out/$setting.txt"
    grep -E "asafe/dask|speedup|x \[" "$out/$setting.txt" | tail -6
done
