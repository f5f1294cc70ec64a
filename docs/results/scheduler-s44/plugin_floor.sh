#!/bin/bash
# What a scheduler plugin that does nothing costs, beside asafe (session 44): plugin_floor.py on three graphs.
# usage: bash plugin_floor.sh   (from anywhere; TREE= the asafe tree to import, default this checkout)
here=$(cd "$(dirname "$0")" && pwd)
clean() { grep -v "INFO\|UserWarning\|Perhaps\|Hosting\|warnings.warn"; }
echo "## $(date -u +%T) $(git -C "$here" rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg)"
for job in "fan-in 12" "map-one-prefix 8" "many-small 8"; do
  set -- $job
  echo "## TASKS=${TASKS:-4000} GRAPHS=${GRAPHS:-100} python plugin_floor.py $job   $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  TASKS=${TASKS:-4000} GRAPHS=${GRAPHS:-100} python "$here/plugin_floor.py" "$@" 2>&1 | clean
done
echo "## end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
