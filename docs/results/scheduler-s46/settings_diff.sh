#!/bin/bash
# The misaligned difference (its compression comes on during the run, not at its arrival) behind 1 Gbit/s with
# asafe's defaults and with evaluate-interval 200ms, 15 rounds each, twice in turn (session 46). As root, alone.
set -euo pipefail
out=docs/results/scheduler-s46/settings-wire
for pass in 1 2; do
    for setting in default evaluate-interval-200ms; do
        case $setting in
            default) env=() ;;
            evaluate-interval-200ms) env=(DASK_ASAFE__DISTRIBUTED__EVALUATE_INTERVAL=200ms) ;;
        esac
        echo "== diff $setting pass $pass $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
        env "${env[@]}" python -m benchmarks workloads --link 1gbit --workloads diff --data zeros \
            --variants dask,asafe --rounds 15 --out "$out/diff-$setting-$pass" 2>&1 | grep -v "distributed\." \
            > "$out/diff-$setting-$pass.txt"
        grep -E "^diff" "$out/diff-$setting-$pass.txt"
    done
done
