#!/usr/bin/env bash
# the demo with and without the forecast-wave patch, each link, default variants and rounds
cd /work/scratch/s29
export DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg
for link in 1gbit 10gbit loopback; do
  if [ $link = 10gbit ]; then order="patch base"; else order="base patch"; fi
  for v in $order; do
    d=/work/scratch/s29/demo-$link-$v; mkdir -p $d
    wt=/work/wt/measure; [ $v = patch ] && wt=/work/wt/patch
    la=""; [ $link != loopback ] && la="--link $link"
    echo "$(date -u +%T) start $link $v load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain.log
    (cd $d && PYTHONPATH=$wt /work/venv/bin/python -m benchmarks demo $la --json $d/asafe-demo.json --plot $d/asafe-demo.png > $d/demo.log 2>&1)
    echo "$(date -u +%T) end $link $v rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> chain.log
  done
done
echo done >> chain.log
