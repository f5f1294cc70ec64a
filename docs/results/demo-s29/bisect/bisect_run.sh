#!/usr/bin/env bash
c=$(git rev-parse --short HEAD)
/work/venv/bin/python setup.py -q build_ext --inplace >/dev/null 2>&1
d=/work/scratch/s29/probe-$c-1gbit; mkdir -p $d
(cd $d && DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg PYTHONPATH=/work/wt/bisect timeout 900 /work/venv/bin/python -m benchmarks demo --quick --link 1gbit --variants adaptive,static-on,static-off --json $d/d.json --plot $d/d.png > $d/demo.log 2>&1)
line=$(grep -o 'transitions per phase.*' $d/demo.log)
echo "$c: $line" >> /work/scratch/s29/bisect.log
[ -z "$line" ] && exit 125
echo "$line" | grep -q -- "-- met" && exit 0
exit 1
