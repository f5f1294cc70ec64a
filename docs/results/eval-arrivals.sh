#!/bin/bash
# arrivals_skip_dwell (a toggle decided when a graph arrives is not held by the dwell where the scheduled
# view alone makes it too), fixed before it runs (measuring the commit that adds this script). Nothing is
# tuned: thresholds, window, blend, dwell (0.2 s / 16 tasks) and reuse as committed. Variants in every run,
# interleaved: adaptive (the rule on), adaptive-dwell (the rule off: the design before), per-task,
# static-on, static-off (oracle: after the fact).
# 1. The calibration set, loopback and 1 Gbit/s: the rule stays on by default if adaptive vs adaptive-dwell
#    is >= 0.98x (the paired ratio's point estimate) on both; else the default goes back to off and the
#    held-out runs below report the rule as an option.
# 2. heldout4 (fixed in the same commit, before the rule first ran): loopback, 10 Gbit/s, 1 Gbit/s.
# 3. The full demo on 1 Gbit/s, 10 Gbit/s and loopback.
# 4. heldout (seen: its 1 Gbit/s run, 0.938x against static-on in load-eval/, is what the rule answers),
#    on 1 Gbit/s, 10 Gbit/s and loopback, reported as seen.
set -x
OUT=/tmp/evalarrivals
rm -rf $OUT; mkdir -p $OUT
cd "$(dirname "$0")/../.."
. .venv/bin/activate  # the checkout's own venv (pip install -e '.[bench]'): the commit measured is the one run
V=adaptive,adaptive-dwell,per-task,static-on,static-off
uptime
git rev-parse HEAD; git status --short | head
for L in loopback 1gbit; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  python -m benchmarks phased $LINK --section phases --phases calibration --variants $V --out $OUT/calibration-$L > $OUT/calibration-$L.log 2>&1
  uptime
done
for L in loopback 10gbit 1gbit; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  python -m benchmarks phased $LINK --section phases --phases heldout4 --variants $V --out $OUT/heldout4-$L > $OUT/heldout4-$L.log 2>&1
  uptime
done
for L in 1gbit 10gbit loopback; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  mkdir -p $OUT/demo-$L
  asafe demo $LINK --variants $V --json $OUT/demo-$L/asafe-demo.json --plot $OUT/demo-$L/asafe-demo.png > $OUT/demo-$L/demo.log 2>&1
  uptime
done
for L in 1gbit 10gbit loopback; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  python -m benchmarks phased $LINK --section phases --phases heldout --variants $V --out $OUT/heldout-$L > $OUT/heldout-$L.log 2>&1
  uptime
done
echo DONE
