"""Frames compressed and skipped per run and worker, from a choices_*.txt (the counters are cumulative)."""
import re, sys
last = {}
for line in open(sys.argv[1]):
    if line.startswith("=="):
        print(line.strip(), end=": ")
        continue
    addr = line.split()[0]
    c = re.search(r"'compressed_frames': (\d+)", line); s = re.search(r"'skipped_frames': (\d+)", line)
    c, s = (int(c.group(1)), int(s.group(1))) if c else (0, 0)
    pc, ps = last.get(addr, (0, 0)); last[addr] = (c, s)
    print(f"{c - pc} compressed, {s - ps} skipped", end="; ")
    if len(last) == 2 and list(last)[-1] == addr:
        print()
