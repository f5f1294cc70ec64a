#!/bin/bash
unshare --net bash -c "ip link set lo up && tc qdisc add dev lo root tbf rate 1gbit burst 512kb latency 50ms && exec /work/venv/bin/python /work/main/docs/results/workloads/1gbit-s40/diagnosis/modes.py $*"
