"""Every adaptive run's compression toggles in the demo's JSON files given: when, after its phase's start.

    python docs/results/scheduler-s47/demo-1gbit/transitions.py docs/results/scheduler-s47/demo-1gbit/c*.json
"""
import json
import sys

for path in sys.argv[1:]:
    report = json.load(open(path))
    toggles = [f'{t["repetition"]}:{t["phase"]}+{t["since_phase_start_s"] * 1e3:.0f}ms->{"on" if t["to"] else "off"}'
               for t in report["transitions"]]
    print(f"{path}: per run {report['transitions_per_run']}; " + " ".join(toggles))
