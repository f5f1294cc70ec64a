#!/usr/bin/env bash
# probe.sh COMMIT [LINK]: the demo's transitions per phase at COMMIT (quick, adaptive only + statics)
c=$1; link=${2:-1gbit}
cd /work/main
[ -d /work/wt/bisect ] || git worktree add -q --detach /work/wt/bisect $c
cd /work/wt/bisect && git checkout -q --detach $c && /work/venv/bin/python setup.py -q build_ext --inplace >/dev/null 2>&1
d=/work/scratch/s29/probe-$c-$link; mkdir -p $d; cd $d
DASK_CONFIG=$(mktemp -d) MPLBACKEND=Agg PYTHONPATH=/work/wt/bisect timeout 900 /work/venv/bin/python -m benchmarks demo --quick --link $link --variants adaptive,static-on,static-off --json $d/d.json --plot $d/d.png > $d/demo.log 2>&1
echo "$c $link: $(grep -o 'transitions per phase.*' $d/demo.log)"
