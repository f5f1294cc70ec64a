#!/bin/bash
# heldout5 (fixed with calibration2, before either ran): the check of the arrivals-skip-dwell default that
# eval-arrivals2.sh chose, fixed before eval-arrivals2.sh ran (measuring the commit that sets the default).
# Interleaved: adaptive (the default as committed), adaptive-arrivals and adaptive-dwell (the rule on and
# off, whatever the default: one of them is the same configuration as adaptive), per-task, static-on,
# static-off; loopback, 10 Gbit/s and 1 Gbit/s.
set -x
OUT=/tmp/evalarrivals3
rm -rf $OUT; mkdir -p $OUT
cd "$(dirname "$0")/../.."
. .venv/bin/activate
V=adaptive,adaptive-arrivals,adaptive-dwell,per-task,static-on,static-off
uptime
git rev-parse HEAD; git status --short | head
python -c "import asafe; print('arrivals_skip_dwell', asafe.AdaptiveRuntime(signals=False).arrivals_skip_dwell)"
for L in loopback 10gbit 1gbit; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  python -m benchmarks phased $LINK --section phases --phases heldout5 --variants $V --out $OUT/heldout5-$L > $OUT/heldout5-$L.log 2>&1
  uptime
done
echo DONE
