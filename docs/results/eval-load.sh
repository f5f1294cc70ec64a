#!/bin/bash
# Phases that change under load (issue 18), and the current code on the issue-14 runs; fixed before it runs
# (measuring the commit that adds this script). Nothing is tuned: thresholds, window, blend, dwell, the reuse
# threshold and the hybrid's margin as committed. Variants in every run, interleaved:
# adaptive, per-task, hybrid, static-on, static-off (oracle: the better static setting per phase, after the fact).
# 1. The loaded set (asafe.app.workload.LOADED_PHASES: each graph quiet, then beside a competing job -- a bulk
#    flow on the link or a memory stream on one core, asafe.app.load), on loopback, 10 Gbit/s and 1 Gbit/s.
#    Seen before this plan: one 2-round smoke run on loopback (adaptive,per-task,static-on,static-off),
#    before one phase's scale was changed from 12 to 11; nothing in asafe was changed after it.
# 2. The full demo on 1 Gbit/s, 10 Gbit/s and loopback: the issue-14 targets on the current code (the engine
#    changes of issue 17 came after the last evaluation of record, eval-wave.sh).
# 3. heldout2 then heldout on loopback, 10 Gbit/s, 1 Gbit/s (both seen before: reported as such).
set -x
OUT=/tmp/evalload
rm -rf $OUT; mkdir -p $OUT
cd "$(dirname "$0")/../.."
. .venv/bin/activate  # the checkout's own venv (pip install -e '.[bench]'): the commit measured is the one run
V=adaptive,per-task,hybrid,static-on,static-off
uptime
git rev-parse HEAD; git status --short | head
for L in loopback 10gbit 1gbit; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  python -m benchmarks phased $LINK --section phases --phases loaded --variants $V --out $OUT/loaded-$L > $OUT/loaded-$L.log 2>&1
  uptime
done
for L in 1gbit 10gbit loopback; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  mkdir -p $OUT/demo-$L
  asafe demo $LINK --variants $V --json $OUT/demo-$L/asafe-demo.json --plot $OUT/demo-$L/asafe-demo.png > $OUT/demo-$L/demo.log 2>&1
  uptime
done
for SET in heldout2 heldout; do
  for L in loopback 10gbit 1gbit; do
    if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
    python -m benchmarks phased $LINK --section phases --phases $SET --variants $V --out $OUT/$SET-$L > $OUT/$SET-$L.log 2>&1
    uptime
  done
done
echo DONE
