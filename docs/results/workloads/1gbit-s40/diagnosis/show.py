import json,sys
for line in open(sys.argv[1]):
    if line.startswith('=='): print(line.strip()); continue
    if not line.startswith('{'): continue
    r=json.loads(line.replace('NaN','null'))
    print(r['t'], 'meas',r['measured'],'sched',r['scheduled'],'state',r['state'],'N',r.get('tasks'),'W',r.get('window_measurements'),'ratio',r['mode'].get('ratio') if isinstance(r['mode'],dict) else None)
