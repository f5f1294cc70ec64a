#!/bin/bash
# Phases under load on the current default (arrivals-skip-dwell on, chosen by eval-arrivals2.sh), fixed before
# it runs: the loaded set (seen in load-eval/ and sampling-eval/, reported as seen) behind 1 Gbit/s and on
# loopback, interleaved in balanced orders: adaptive, adaptive-dwell, per-task, static-on, static-off. The
# question: does the default change adaptive against the per-task rule where phases change under load? (Its
# phases are 3-5 steps long, so the rule is expected not to fire there; the run says whether it did.)
set -x
OUT=/tmp/evalarrivals4
rm -rf $OUT; mkdir -p $OUT
cd "$(dirname "$0")/../.."
. .venv/bin/activate
V=adaptive,adaptive-dwell,per-task,static-on,static-off
uptime
git rev-parse HEAD; git status --short | head
for L in 1gbit loopback; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  python -m benchmarks phased $LINK --section phases --phases loaded --variants $V --out $OUT/loaded-$L > $OUT/loaded-$L.log 2>&1
  uptime
done
echo DONE
