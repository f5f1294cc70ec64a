#!/bin/bash
# shortcost.py on the misaligned difference and the map_overlap of random data, behind 1 Gbit/s (root).
here=$(cd "$(dirname "$0")" && pwd)
shaped() { unshare --net bash -c "ip link set lo up && tc qdisc add dev lo root tbf rate 1gbit burst 512kb latency 50ms && exec python $here/shortcost.py $*"; }
for job in "diff random 20" "map-overlap random 20" "reduce random 30"; do
  echo "## VARIANTS=dask,asafe,nowire,on SETTLE=0 $job   $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  VARIANTS=dask,asafe,nowire,on SETTLE=0 shaped $job 2>&1 | grep -v "INFO\|UserWarning\|Perhaps\|Hosting\|warnings.warn"
done
