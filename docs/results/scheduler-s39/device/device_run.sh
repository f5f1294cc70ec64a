#!/bin/bash
# Device run, session 39: the scheduler suite (issue 31) after the forecast's small-output floor.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
python3 setup.py build_ext --inplace -q > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
python3 -c "import asafe.schedulers._taskpath, asafe.core._typewalk, dask, distributed; print('ok', dask.__version__)" || exit 1
nproc; uptime | tee $OUT/load.txt
git log --oneline -1 > $OUT/tree.txt; git status --short >> $OUT/tree.txt
run() { name=$1; budget=$2; shift 2; echo "== $name $(date -u +%T) $(cat /proc/loadavg)" | tee -a $OUT/load.txt
  timeout $budget python3 -m benchmarks scheduler --workers 2 --tracemalloc-rounds 0 --pushes 10 --out $OUT/$name "$@" > $OUT/$name.txt 2>&1
  echo "rc=$?" >> $OUT/$name.txt; grep -E "x \[|per task|throughput|cpu" $OUT/$name.txt | tail -8; }
run fanin 300 --graph fan-in --tasks 10000 --fan-in 2000 --min-rounds 9 --max-rounds 9 --max-seconds 270
run small 130 --graph many-small --graphs 300 --min-rounds 6 --max-rounds 9 --max-seconds 110
run array 110 --graph array-reduction --tasks 10000 --min-rounds 6 --max-rounds 9 --max-seconds 95
echo "== end $(date -u +%T) $(cat /proc/loadavg)" | tee -a $OUT/load.txt
