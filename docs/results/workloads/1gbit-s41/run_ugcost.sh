#!/bin/bash
# ugcost.py for the short workloads of random data, each in a fresh namespace shaped to 1 Gbit/s (root).
here=$(cd "$(dirname "$0")" && pwd)
for wl in reduce map-overlap stencil anomaly diff; do
  unshare --net bash -c "ip link set lo up && tc qdisc add dev lo root tbf rate 1gbit burst 512kb latency 50ms && exec python $here/ugcost.py $wl random 12" 2>&1 | grep -v "INFO\|UserWarning\|Perhaps\|Hosting\|warnings.warn" | tail -1
done
