#!/usr/bin/env python3
"""Which pages of a running program's own binary are resident, and what is on them.

Reads /proc/PID/maps and /proc/PID/pagemap (root: the present bit per page), maps each resident
page of the executable's file mappings to its ELF section (readelf -SW) and to the symbols on it
(nm -S), and prints the resident KB per section and per owner: the Swift module of a mangled
symbol ($s<len><Module>...), or the C/C++ library a symbol name belongs to (swift runtime, dispatch,
libc++abi ...). A page shared by symbols of several owners is split between them by bytes.

usage: Scripts/rss-pages.py PID [--top N]
See docs/PERFORMANCE.md ("Issue 18").
"""
import bisect, os, re, struct, subprocess, sys

if len(sys.argv) < 2 or not sys.argv[1].isdigit():
    sys.exit("usage: Scripts/rss-pages.py PID [--top N]  (PID: a running process; root reads its pagemap)")
pid = int(sys.argv[1])
top = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--top" else 25
exe = os.readlink(f"/proc/{pid}/exe")
PAGE = os.sysconf("SC_PAGE_SIZE")

# ELF sections: name, file offset, size, address.
sections = []
for line in subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
    if m and m.group(1) != "NULL":
        name, addr, off, size = m.group(1), int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)
        if addr and size:
            sections.append((addr, addr + size, name))
sections.sort()

# Symbols by address (virtual addresses of the ELF, before the load bias).
syms = []
out = subprocess.run(["nm", "-S", "--defined-only", exe], capture_output=True, text=True).stdout
for line in out.splitlines():
    parts = line.split()
    if len(parts) == 4:
        addr, size, _, name = int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]
        if size:
            syms.append((addr, size, name))
syms.sort()
sym_addrs = [s[0] for s in syms]


def owner(name):
    m = re.match(r"^_?\$s(\d+)([A-Za-z_][A-Za-z0-9_]*)", name)
    if m:
        n = int(m.group(1))
        mod = m.group(2)[:n]
        return {"s": "Swift stdlib"}.get(mod, mod)
    if name.startswith("$s") or name.startswith("_$s"):
        return "Swift stdlib"  # $ss..., $sS<substitution>...: the standard library's types
    if name.startswith("swift_") or name.startswith("_swift_") or "swift" in name[:12].lower():
        return "Swift runtime (C++)"
    if "dispatch" in name[:20] or name.startswith("_dispatch"):
        return "libdispatch"
    if name.startswith("_ZN5swift") or name.startswith("_ZNK5swift") or name.startswith("_ZL"):
        return "Swift runtime (C++)"
    if name.startswith("_Z"):
        return "C++ (other)"
    if name.startswith("oat_") or name.startswith("OAT"):
        return "our C shims"
    return "C (other)"


# The load bias: the first mapping of the executable at file offset 0 against the lowest PT_LOAD.
maps = []
for line in open(f"/proc/{pid}/maps"):
    f = line.split()
    if len(f) >= 6 and f[5] == exe:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        maps.append((lo, hi, int(f[2], 16), f[1]))
phdrs = subprocess.run(["readelf", "-lW", exe], capture_output=True, text=True).stdout
loads = [(int(m.group(1), 16), int(m.group(2), 16)) for m in
         re.finditer(r"LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", phdrs)]
first_off, first_vaddr = loads[0]
bias = min(lo - off for lo, hi, off, _ in maps) - (first_vaddr - first_off)

pm = open(f"/proc/{pid}/pagemap", "rb")
resident = []
for lo, hi, off, perms in maps:
    pm.seek((lo // PAGE) * 8)
    data = pm.read(((hi - lo) // PAGE) * 8)
    for i in range(len(data) // 8):
        (v,) = struct.unpack_from("<Q", data, i * 8)
        if v >> 63 & 1:
            resident.append(lo + i * PAGE - bias)

by_section, by_owner = {}, {}
sec_starts = [s[0] for s in sections]
for page in resident:
    j = bisect.bisect_right(sec_starts, page) - 1
    covered = 0
    # sections overlapping the page
    k = max(j, 0)
    while k < len(sections) and sections[k][0] < page + PAGE:
        a, b, name = sections[k]
        ov = min(b, page + PAGE) - max(a, page)
        if ov > 0:
            by_section[name] = by_section.get(name, 0) + ov
            covered += ov
        k += 1
    if covered < PAGE:
        by_section["(between sections)"] = by_section.get("(between sections)", 0) + PAGE - covered
    # symbols overlapping the page
    i = max(bisect.bisect_right(sym_addrs, page) - 1, 0)
    while i > 0 and syms[i - 1][0] + syms[i - 1][1] > page:
        i -= 1
    shares, total = {}, 0
    while i < len(syms) and syms[i][0] < page + PAGE:
        a, size, name = syms[i]
        ov = min(a + size, page + PAGE) - max(a, page)
        if ov > 0:
            o = owner(name)
            shares[o] = shares.get(o, 0) + ov
            total += ov
        i += 1
    if total == 0:
        by_owner["(no symbol)"] = by_owner.get("(no symbol)", 0) + PAGE
    else:
        for o, v in shares.items():
            by_owner[o] = by_owner.get(o, 0) + PAGE * v / total

print(f"{exe}: {len(resident) * PAGE / 1024:.0f} KB resident in {len(resident)} pages")
print("by section:")
for k, v in sorted(by_section.items(), key=lambda kv: -kv[1])[:top]:
    print(f"  {v / 1024:8.0f} KB  {k}")
print("by owner (symbols on the resident pages):")
for k, v in sorted(by_owner.items(), key=lambda kv: -kv[1])[:top]:
    print(f"  {v / 1024:8.0f} KB  {k}")
