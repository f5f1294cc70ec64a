#!/bin/bash
# The per-task evaluation, fixed before it runs: the demo on loopback, 10 and 1 Gbit/s, then the held-out
# phases on each, every variant interleaved. Thresholds as committed (not re-tuned).
set -x
OUT=/tmp/eval2
rm -rf $OUT; mkdir -p $OUT
cd /work/main
. .venv/bin/activate
V=adaptive,per-task,hybrid,static-on,static-off
uptime
for L in loopback 10gbit 1gbit; do
  mkdir -p $OUT/demo-$L
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  asafe demo $LINK --variants $V --json $OUT/demo-$L/asafe-demo.json --plot $OUT/demo-$L/asafe-demo.png > $OUT/demo-$L/demo.log 2>&1
  uptime
done
for L in loopback 10gbit 1gbit; do
  if [ $L = loopback ]; then LINK=""; else LINK="--link $L"; fi
  python -m benchmarks phased $LINK --section phases --phases heldout --variants $V --out $OUT/ho-$L > $OUT/ho-$L.log 2>&1
  uptime
done
echo DONE
