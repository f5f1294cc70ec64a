#!/bin/bash
# adaptive-sampling (the global mode first; the per-task rule decides the panels the mode leaves uncompressed
# while the scheduled producers declare >= 2 reads -- benchmarks.phased.per_task_rule on the committed
# calibration-reuse data), fixed before it runs (measuring the commit that adds this script). Nothing else is
# tuned: thresholds, window, blend, dwell, the reuse threshold as committed. Variants in every run,
# interleaved: adaptive, adaptive-sampling, per-task, static-on, static-off (oracle: after the fact).
# 1. heldout3 (fixed in the same commit, before adaptive-sampling first ran): loopback, 10 Gbit/s, 1 Gbit/s.
# 2. The full demo on 1 Gbit/s, 10 Gbit/s and loopback (its local-dense phase declares 2 reads: the
#    sampling's cost shows there).
# 3. Sets seen before, on loopback, reported as such: heldout2, heldout, loaded (the last runs its
#    competing jobs).
set -x
OUT=/tmp/evalsampling
rm -rf $OUT; mkdir -p $OUT
cd "$(dirname "$0")/../.."
. .venv/bin/activate  # the checkout's own venv (pip install -e '.[bench]'): the commit measured is the one run
V=adaptive,adaptive-sampling,per-task,static-on,static-off
uptime
git rev-parse HEAD; git status --short | head
for L in loopback 10gbit 1gbit; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  python -m benchmarks phased $LINK --section phases --phases heldout3 --variants $V --out $OUT/heldout3-$L > $OUT/heldout3-$L.log 2>&1
  uptime
done
for L in 1gbit 10gbit loopback; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  mkdir -p $OUT/demo-$L
  asafe demo $LINK --variants $V --json $OUT/demo-$L/asafe-demo.json --plot $OUT/demo-$L/asafe-demo.png > $OUT/demo-$L/demo.log 2>&1
  uptime
done
for SET in heldout2 heldout loaded; do
  python -m benchmarks phased --section phases --phases $SET --variants $V --out $OUT/$SET-loopback > $OUT/$SET-loopback.log 2>&1
  uptime
done
echo DONE
