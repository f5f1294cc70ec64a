#!/bin/bash
# The next-wave evaluation, fixed before it runs (measuring the commit that adds this script).
# The scheduled view now counts waiting tasks whose every dependency is ready, running or in memory
# (asafe.distributed.next-wave). Nothing is re-tuned: thresholds, window, blend, dwell and the reuse
# threshold as committed. Side by side in every run: adaptive (with the next wave) and
# adaptive-ready (the view before it, next_wave=False), per-task, static-on, static-off, interleaved.
# 1. The calibration phases' ratios with compression pinned (loopback): what thresholds_rule makes
#    of the new view, reported, not applied.
# 2. heldout2 then heldout (both seen before: reported as such), on loopback, 10 Gbit/s, 1 Gbit/s.
# 3. The full demo behind 1 Gbit/s and on loopback.
set -x
OUT=/tmp/evalwave
rm -rf $OUT; mkdir -p $OUT
cd /work/main
. .venv/bin/activate
V=adaptive,adaptive-ready,per-task,static-on,static-off
uptime
git rev-parse HEAD; git status --short | head
python -m benchmarks phased --section ratios --out $OUT/ratios > $OUT/ratios.log 2>&1
uptime
for SET in heldout2 heldout; do
  for L in loopback 10gbit 1gbit; do
    if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
    python -m benchmarks phased $LINK --section phases --phases $SET --variants $V --out $OUT/$SET-$L > $OUT/$SET-$L.log 2>&1
    uptime
  done
done
for L in 1gbit loopback; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  mkdir -p $OUT/demo-$L
  asafe demo $LINK --variants $V --json $OUT/demo-$L/asafe-demo.json --plot $OUT/demo-$L/asafe-demo.png > $OUT/demo-$L/demo.log 2>&1
  uptime
done
echo DONE
