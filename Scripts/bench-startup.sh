#!/usr/bin/env bash
# Start-up and footprint of afplay against mpg123 (docs/PERFORMANCE.md, "Start-up and
# footprint"): on a private PulseAudio null sink, the time from launch to the first non-silent
# sample at the sink (median of N launches), and CPU seconds per minute and peak RSS of one play.
# A cut-down Scripts/bench-peers.sh (file input only, two players) for iterating on start-up.
# paplay of the same signal as a 16-bit WAV is the floor (no decoding, libpulse only).
#
# usage: Scripts/bench-startup.sh [--runs N] [--seconds S] [--afplay PATH] [--probe PATH]
#   --afplay PATH  the afplay binary (default .build/release/afplay)
#   --probe PATH   peer-probe (default Benchmarks/.build/release/peer-probe)
#   --also PATH    another afplay build to run as well (e.g. one built from an older commit)
# Build them first: swift build -c release --product afplay
#                   swift build -c release --package-path Benchmarks --product peer-probe
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs=5
seconds=30
also=""
afplay="$root/.build/release/afplay"
probe="$root/Benchmarks/.build/release/peer-probe"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --afplay) afplay="$2"; shift ;;
    --probe) probe="$2"; shift ;;
    --also) also="$2"; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "bench-startup: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$afplay" ] || { echo "bench-startup: no afplay at $afplay (build it: swift build -c release --product afplay)" >&2; exit 2; }
[ -x "$probe" ] || { echo "bench-startup: no peer-probe at $probe (build it: swift build -c release --package-path Benchmarks --product peer-probe)" >&2; exit 2; }
command -v mpg123 >/dev/null || { echo "bench-startup: needs mpg123, the player afplay is compared with (apt-get install mpg123)" >&2; exit 2; }

work=$(mktemp -d /tmp/oat-startup-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The input: a two-tone 128 kbps CBR MP3 with a LAME header and no leading silence.
ffmpeg -hide_banner -loglevel error -nostdin -f lavfi \
  -i "aevalsrc=0.25*sin(2*PI*440*t)+0.1*sin(2*PI*1234*t)|0.25*sin(2*PI*550*t)+0.1*sin(2*PI*987*t):s=44100:d=$((seconds + 5))" \
  -c:a libmp3lame -b:a 128k "$work/signal.mp3"
ffmpeg -hide_banner -loglevel error -nostdin -i "$work/signal.mp3" -c:a pcm_s16le "$work/signal.wav"

mkdir -p "$work/pa/runtime" "$work/pa/state" "$work/pa/home"
cat > "$work/pa/daemon.pa" <<PA
load-module module-native-protocol-unix auth-anonymous=1 socket=$work/pa/native
load-module module-null-sink sink_name=peers format=float32le rate=44100 channels=2 norewinds=1
set-default-sink peers
PA
export HOME="$work/pa/home" XDG_RUNTIME_DIR="$work/pa/runtime" PULSE_RUNTIME_PATH="$work/pa/runtime" \
       PULSE_STATE_PATH="$work/pa/state" PULSE_SERVER="unix:$work/pa/native" DBUS_SESSION_BUS_ADDRESS=disabled:
pulseaudio -n --daemonize=no --system=false --exit-idle-time=-1 --use-pid-file=false --disable-shm=true \
  --log-target=stderr -F "$work/pa/daemon.pa" >"$work/pa/log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/pa/native" ] && pactl info >/dev/null 2>&1 && break; sleep 0.05; done
pactl info >/dev/null || { echo "bench-startup: the private PulseAudio did not start" >&2; cat "$work/pa/log" >&2; exit 2; }

field() { sed -n "s/.*\"$2\":\([-0-9.a-z]*\).*/\1/p" <<<"$1"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

printf '%-8s %-28s %10s %12s %10s %8s\n' player "ttfa ms (runs)" "median" "cpu s/min" "rss MB" dropouts
players=(afplay mpg123 paplay)
[ -n "$also" ] && players=(afplay afplay-also mpg123 paplay)
for player in "${players[@]}"; do
  case "$player" in
    afplay) cmd=("$afplay" --no-ui --output pulse "$work/signal.mp3") ;;
    afplay-also) cmd=("$also" --no-ui --output pulse "$work/signal.mp3") ;;
    mpg123) cmd=(mpg123 -q -o pulse "$work/signal.mp3") ;;
    paplay) cmd=(paplay "$work/signal.wav") ;;
  esac
  ttfas=""
  for _ in $(seq "$runs"); do
    line=$("$probe" --source peers.monitor --label "$player/ttfa" --duration 1.5 -- "${cmd[@]}" || true)
    ttfas="$ttfas $(field "$line" ttfa_ms)"
  done
  line=$("$probe" --source peers.monitor --label "$player/play" --duration "$seconds" -- "${cmd[@]}" || true)
  cpu=$(field "$line" cpu_s); played=$(field "$line" played_s); rss=$(field "$line" maxrss_kb); drops=$(field "$line" dropouts)
  cpm=$(awk -v c="$cpu" -v p="$played" 'BEGIN { if (p > 0) printf "%.3f", c * 60 / p; else print "-" }')
  rssmb=$(awk -v r="$rss" 'BEGIN { printf "%.1f", r / 1024 }')
  printf '%-8s %-28s %10s %12s %10s %8s\n' "$player" "$(echo $ttfas | tr ' ' ',')" "$(echo "$ttfas" | median)" "$cpm" "$rssmb" "$drops"
done
