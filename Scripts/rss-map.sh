#!/usr/bin/env bash
# Where a running process's resident pages are: /proc/PID/smaps summed per mapping (file name,
# [heap], [stack], anonymous), largest first, with the process's VmHWM/VmRSS and thread count.
# Anonymous mappings are split into thread stacks (the 8 MiB-class mappings with a guard page
# below them), glibc malloc arenas (64 MiB-aligned heaps of other threads) and the rest.
#
# usage: Scripts/rss-map.sh PID [--top N]
set -euo pipefail
pid="${1:?usage: Scripts/rss-map.sh PID [--top N]}"
top=25
[ "${2:-}" = "--top" ] && top="${3:-25}"
[ -r "/proc/$pid/smaps" ] || { echo "rss-map: no process $pid" >&2; exit 2; }
grep -E '^(VmHWM|VmRSS|Threads)' "/proc/$pid/status" | tr -s ' \t' ' '
python3 - "$pid" "$top" <<'PY'
import re, sys
pid, top = sys.argv[1], int(sys.argv[2])
lines = open(f"/proc/{pid}/smaps").read().splitlines()
maps = []  # (start, end, perms, name, rss_kb)
cur = None
for line in lines:
    m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
    if m:
        cur = [int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4).strip(), 0]
        maps.append(cur)
    elif line.startswith("Rss:") and cur is not None:
        cur[4] = int(line.split()[1])
# Anonymous mappings: a stack is an rw mapping directly above a ---p guard page; a malloc arena
# heap is 64 MiB aligned (its reserved tail is ---p).
sums = {}
for i, (start, end, perms, name, rss) in enumerate(maps):
    key = name
    if not name:
        below = maps[i - 1] if i > 0 else None
        if perms.startswith("rw") and below and below[1] == start and below[2] == "---p" and not below[3]:
            key = "[anon: thread stack]" if (end - start) < (64 << 20) and start % (64 << 20) != 0 else "[anon: malloc arena]"
        elif start % (64 << 20) == 0 and perms.startswith("rw"):
            key = "[anon: malloc arena]"
        else:
            key = "[anon: other]"
    elif name.startswith("/"):
        key = name.rsplit("/", 1)[-1]
    sums[key] = sums.get(key, 0) + rss
total = sum(sums.values())
for k, v in sorted(sums.items(), key=lambda kv: -kv[1])[:top]:
    print(f"{v / 1024:8.2f} MB  {k}")
print(f"{total / 1024:8.2f} MB  total")
PY
