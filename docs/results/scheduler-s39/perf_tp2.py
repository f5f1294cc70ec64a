import sys, collections
def parse(path):
    samples = []; cur = []
    for line in open(path):
        line = line.strip()
        if not line:
            if cur: samples.append(cur); cur = []
            continue
        parts = line.split(None, 1)
        if len(parts) == 2:
            addr, rest = parts
            name = rest.split(" ")[0].split("+")[0]
            dso = rest[rest.rfind("(")+1:-1] if rest.endswith(")") else ""
            cur.append([addr, name, dso])
    if cur: samples.append(cur)
    for s in samples:   # inlined frames take the dso of the following frame at the same address
        for i in range(len(s) - 2, -1, -1):
            if s[i][2] == "inlined" and s[i+1][0] == s[i][0]: s[i][2] = s[i+1][2]
    return samples
samples = parse(sys.argv[1]); n = len(samples)
istp = lambda f: "_taskpath" in f[2]
excl = collections.Counter(); incl = collections.Counter(); tot = 0
for s in samples:
    idx = [i for i, f in enumerate(s) if istp(f)]
    if not idx: continue
    tot += 1
    inner = idx[0]
    callee = s[inner-1][1] if inner > 0 else "(self)"
    pyabove = any(f[1] == "_PyEval_EvalFrameDefault" for f in s[:inner])
    excl[(s[inner][1], "PYTHON" if pyabove else callee)] += 1
    for name in {s[i][1] for i in idx}: incl[name] += 1
print(f"taskpath inclusive {tot/n:.2%} of {n}")
print("-- inclusive by taskpath function"); [print(f"{c/n:6.2%} {k}") for k, c in incl.most_common(30)]
print("-- innermost taskpath function -> callee"); [print(f"{c/n:6.2%} {k}") for k, c in excl.most_common(45)]
