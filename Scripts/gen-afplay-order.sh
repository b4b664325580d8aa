#!/usr/bin/env bash
# Regenerates Sources/afplay/Link/afplay.order, the symbol ordering file afplay is linked with
# (Package.swift; docs/PERFORMANCE.md, "The stream's footprint: the binary's pages").
#
# The kernel maps a program's code in 64 KB windows around each page it touches (fault-around),
# so the functions a run executes, scattered over the 7 MB of code, made nearly all of it
# resident. The ordering file lists the functions that afplay executes while it plays a live
# MP3 stream and a local MP3 file; lld places their sections first, together.
#
# How: the services of Scripts/bench-stream.sh --serve (private PulseAudio and Icecast2), then
# a copy of the release afplay without debug info (valgrind cannot read Swift's) run under
# valgrind's callgrind on the stream for S seconds and on the served MP3 file for S seconds;
# every function of the afplay binary that ran is written, sorted, to the ordering file.
# Names the next build no longer has are ignored by the linker (--no-warn-symbol-ordering);
# rerun this after larger changes to the player's path.
#
# usage: Scripts/gen-afplay-order.sh [--seconds S] [--afplay PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=20
afplay=.build/release/afplay
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift ;;
    --afplay) afplay="$2"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "gen-afplay-order: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
command -v valgrind >/dev/null || { echo "gen-afplay-order: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
if [ "$afplay" = .build/release/afplay ]; then
  source Scripts/env.sh
  swift build -c release --product afplay >&2
fi

work=$(mktemp -d /tmp/oat-order-XXXXXX)
Scripts/bench-stream.sh --serve >"$work/serve.log" 2>&1 &
serve=$!
cleanup() { kill "$serve" 2>/dev/null || true; wait "$serve" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 600); do grep -q '^monitor:' "$work/serve.log" && break; sleep 0.1; done
stream=$(sed -n 's/^stream: //p' "$work/serve.log")
pulse=$(sed -n 's/^export PULSE_SERVER=//p' "$work/serve.log")
[ -n "$stream" ] || { echo "gen-afplay-order: the services did not come up:" >&2; cat "$work/serve.log" >&2; exit 1; }
export PULSE_SERVER="$pulse"
file="$(dirname "$(dirname "${pulse#unix:}")")/signal.mp3"   # the MP3 the stream is made of

cp "$afplay" "$work/afplay"
strip --strip-debug "$work/afplay"
profile() {  # name, arguments...
  local name="$1"; shift
  valgrind --tool=callgrind --demangle=no --dump-instr=no --callgrind-out-file="$work/$name.cg" \
    "$work/afplay" --no-ui --output pulse "$@" >"$work/$name.log" 2>&1 &
  local pid=$!
  sleep "$seconds"
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [ -s "$work/$name.cg" ] || { echo "gen-afplay-order: callgrind wrote nothing for $name:" >&2; tail "$work/$name.log" >&2; exit 1; }
}
profile stream "$stream"
profile file "$file"

python3 - "$work/stream.cg" "$work/file.cg" >"$work/order" <<'PY'
import re, sys
# callgrind compresses names: "fn=(12) name" defines id 12, a later "fn=(12)" reuses it; the
# same for objects (ob=, cob=) and callees (cfn=). Keep the functions whose costs ("fn=" under
# an "ob=" of the afplay binary) were recorded.
names = set()
for path in sys.argv[1:]:
    objects, functions, current = {}, {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, ident, name = m.groups()
        if kind in ("ob", "cob"):
            if name:
                objects[ident] = name
            if kind == "ob":
                current = objects.get(ident, "")
        else:
            if name:
                functions[ident] = name
            if kind == "fn" and current and current.endswith("/afplay"):
                names.add(functions[ident])
for n in sorted(names):
    if not n.startswith("0x") and not n.startswith("("):
        print(n)
PY
mkdir -p Sources/afplay/Link
mv "$work/order" Sources/afplay/Link/afplay.order
echo "gen-afplay-order: $(wc -l <Sources/afplay/Link/afplay.order) functions in Sources/afplay/Link/afplay.order" >&2
