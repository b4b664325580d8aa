#!/usr/bin/env bash
# Whole-process decode CPU of `afinfo --decode` against `mpg123 -t` (the same libmpg123), side by
# side in one run: a 180 s MP3 (128 kbps CBR, LAME header; music from the shared corpus looped,
# or a synthetic chord with noise when the corpus is absent), each command launched alternately
# N times; CPU seconds (user + system, wait4) per launch; medians and the ratio to mpg123.
#
# usage: Scripts/bench-decode.sh [--runs N] [--seconds S] [--afinfo PATH[=LABEL]]... [--perf]
#   --afinfo PATH[=LABEL]  an afinfo binary (repeatable; default .build/release/afinfo)
#   --seconds S            length of the MP3 (default 180)
#   --perf                 also record `perf record -g` of the first afinfo and print its top
#                          symbols (needs linux-perf: apt-get install linux-perf)
# Build first: swift build -c release --product afinfo
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs=11
seconds=180
profile=0
afinfos=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --afinfo) afinfos+=("$2"); shift ;;
    --perf) profile=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench-decode: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ ${#afinfos[@]} -gt 0 ] || afinfos=("$root/.build/release/afinfo=afinfo")
for p in ffmpeg mpg123 python3; do
  command -v "$p" >/dev/null || { echo "bench-decode: needs $p (apt-get install ${p/python3/python3-minimal})" >&2; exit 2; }
done
if [ "$profile" -eq 1 ] && ! command -v perf >/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends linux-perf >/dev/null
fi

work=$(mktemp -d /tmp/oat-decode-XXXXXX)
trap 'rm -rf "$work"' EXIT
music="../shared/corpus/flac-test-files/subset/01 - blocksize 4096.flac"
if [ -f "$music" ]; then
  ffmpeg -hide_banner -loglevel error -nostdin -stream_loop -1 -i "$music" -t "$seconds" -ar 44100 -ac 2 \
    -c:a libmp3lame -b:a 128k "$work/input.mp3"
else
  ffmpeg -hide_banner -loglevel error -nostdin -f lavfi \
    -i "aevalsrc=0.2*sin(2*PI*220*t)+0.1*sin(2*PI*277*t)+0.1*sin(2*PI*330*t)+0.05*(random(0)-0.5)|0.2*sin(2*PI*165*t)+0.1*sin(2*PI*440*t)+0.05*(random(1)-0.5):s=44100:d=$seconds" \
    -c:a libmp3lame -b:a 128k "$work/input.mp3"
fi

labels=(); commands=()
for spec in "${afinfos[@]}"; do
  path="${spec%%=*}"; label="${spec#*=}"; [ "$label" != "$spec" ] || label=$(basename "$path")
  [ -x "$path" ] || { echo "bench-decode: no afinfo at $path (build it: swift build -c release --product afinfo)" >&2; exit 2; }
  labels+=("$label"); commands+=("$path --decode $work/input.mp3")
done
labels+=("mpg123 -t"); commands+=("mpg123 -q -t $work/input.mp3")
labels+=("mpg123 -t -e f32"); commands+=("mpg123 -q -t -e f32 $work/input.mp3")

python3 - "$runs" "$seconds" "${#labels[@]}" "${labels[@]}" "${commands[@]}" <<'PY'
import os, shlex, statistics, subprocess, sys
runs, seconds, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
labels, commands = sys.argv[4:4 + n], sys.argv[4 + n:4 + 2 * n]
cpu = {l: [] for l in labels}
for c in commands:  # warm the page cache and the binaries once
    subprocess.run(shlex.split(c), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for r in range(runs):
    order = list(range(n)) if r % 2 == 0 else list(reversed(range(n)))
    for i in order:
        p = subprocess.Popen(shlex.split(commands[i]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        if status != 0: print(f"bench-decode: {labels[i]} exited with {status}", file=sys.stderr)
        cpu[labels[i]].append(ru.ru_utime + ru.ru_stime)
base = statistics.median(cpu["mpg123 -t"])
print(f"| command | CPU s, median of {runs} | min-max | x realtime | mpg123 -t CPU / this |")
print("|---|---|---|---|---|")
for l in labels:
    m = statistics.median(cpu[l])
    print(f"| {l} | {m:.4f} | {min(cpu[l]):.4f}-{max(cpu[l]):.4f} | {seconds / m:.0f} | {base / m:.2f} |")
PY
echo
echo "Machine: $(uname -srm), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg). mpg123 $(mpg123 --version | awk '{print $2; exit}'), input ${seconds} s MP3 128 kbps."

if [ "$profile" -eq 1 ]; then
  first="${commands[0]}"
  # shellcheck disable=SC2086
  perf record -q -F 20000 -g -o "$work/perf.data" -- $first >/dev/null 2>&1
  perf report -i "$work/perf.data" --no-children --percent-limit 0.7 --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -40
fi
