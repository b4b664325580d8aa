#!/usr/bin/env bash
# The start of a stream, step by step, for one or more afplay builds: launches each build N
# times (alternately) against URL with OAT_STREAM_DEBUG=1 and strace (seccomp filter: only
# execve, connect and the socket reads are stopped at), and prints per build the medians, in ms
# from execve, of: libcurl opened, TCP connect, response head, first body bytes, output device
# connect (PulseAudio socket), format detected (decoder made), queue started, first audio
# played by the device (its played-frame count > 0, seen by the decoder thread's 2 ms ticks);
# and "after bytes" = first audio played - first body bytes (what the player adds to the
# server's own delay).
#
# usage: Scripts/stream-start-timeline.sh URL [--runs N] AFPLAY[=LABEL]...
# Needs strace; run against a private Icecast and PulseAudio, e.g. from
# `Scripts/bench-stream.sh --serve` (export the PULSE_SERVER it prints).
set -euo pipefail
url="${1:?usage: Scripts/stream-start-timeline.sh URL [--runs N] AFPLAY[=LABEL]...}"; shift
runs=7
if [ "${1:-}" = "--runs" ]; then runs="$2"; shift 2; fi
[ $# -gt 0 ] || { echo "stream-start-timeline: name at least one afplay" >&2; exit 2; }
command -v strace >/dev/null || { echo "stream-start-timeline: needs strace (apt-get install strace)" >&2; exit 2; }
work=$(mktemp -d /tmp/oat-timeline-XXXXXX)
trap 'rm -rf "$work"' EXIT
for r in $(seq "$runs"); do
  for spec in "$@"; do
    path="${spec%%=*}"; label="${spec#*=}"; [ "$label" != "$spec" ] || label=$(basename "$path")
    OAT_STREAM_DEBUG=1 strace -f --seccomp-bpf -ttt -e trace=execve,connect,recvfrom,openat \
      -o "$work/$label.$r.strace" "$path" --no-ui --output pulse -t 0.6 "$url" >/dev/null 2>"$work/$label.$r.debug" || true
  done
done
python3 - "$work" "$runs" "$@" <<'PY'
import re, statistics, sys
work, runs, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
steps = ["libcurl", "connect", "head", "body", "device", "format", "queue started", "first audio", "after bytes"]
print("| build | " + " | ".join(steps) + " |")
print("|---|" + "---|" * len(steps))
for spec in specs:
    path, _, label = spec.partition("=")
    label = label or path.rsplit("/", 1)[-1]
    values = {s: [] for s in steps}
    for r in range(1, runs + 1):
        lines = open(f"{work}/{label}.{r}.strace").read().splitlines()
        t0 = None; t = {}
        for line in lines:
            m = re.match(r"^\d+\s+(\d+\.\d+) (.*)$", line)
            if not m: continue
            ts, call = float(m.group(1)), m.group(2)
            if t0 is None and call.startswith("execve("): t0 = ts
            if "libcurl.so" in call and "ENOENT" not in call: t.setdefault("libcurl", ts)
            if call.startswith("connect(") and "AF_INET" in call: t.setdefault("connect", ts); sock = re.match(r"connect\((\d+)", call).group(1)
            if call.startswith("connect(") and "AF_UNIX" in call and "native" in call: t.setdefault("device", ts)
            if call.startswith("recvfrom(") and "connect" in t and call.startswith(f"recvfrom({sock},"):
                if '"HTTP/' in call or '"ICY ' in call: t.setdefault("head", ts)
                elif "head" in t and "EAGAIN" not in call: t.setdefault("body", ts)
        # Engine trace: "[stream S] ..." seconds since the engine started; anchored at "opened" = head.
        debug = open(f"{work}/{label}.{r}.debug").read().splitlines()
        e = {}
        for line in debug:
            m = re.match(r"^\[stream ([0-9.]+)\] (.*)$", line)
            if not m: continue
            s, text = float(m.group(1)), m.group(2)
            if text.startswith("opened "): e.setdefault("opened", s)
            if text.startswith("decoder for"): e.setdefault("format", s)
            if text.startswith("queue started"): e.setdefault("queue started", s)
            pm = re.search(r" played (\d+) ", text)
            if (pm and int(pm.group(1)) > 0) or text.startswith("first audio played"): e.setdefault("first audio", s)
        if t0 is None or "head" not in t or "opened" not in e: continue
        base = t["head"] - e["opened"]  # engine clock -> strace clock (the head is read just before "opened")
        for k in ("format", "queue started", "first audio"):
            if k in e: t[k] = base + e[k]
        for k in steps[:-1]:
            if k in t: values[k].append((t[k] - t0) * 1000)
        if "first audio" in t and "body" in t: values["after bytes"].append((t["first audio"] - t["body"]) * 1000)
    cells = [f"{statistics.median(v):.1f}" if v else "-" for v in (values[s] for s in steps)]
    print(f"| {label} | " + " | ".join(cells) + " |")
PY
