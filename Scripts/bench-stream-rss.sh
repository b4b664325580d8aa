#!/usr/bin/env bash
# Peak RSS of players on the same live MP3 stream (docs/PERFORMANCE.md, "Issue 18"): the services
# of Scripts/bench-stream.sh --serve (private PulseAudio null sink, private Icecast2 fed by
# ffmpeg), then each player launched in turn, PLAYS times, for S seconds; VmHWM read from
# /proc/PID/status just before it is stopped (by PID); medians per player; the last play of each
# is also mapped with Scripts/rss-map.sh (where the pages are).
#
# usage: Scripts/bench-stream-rss.sh [--plays N] [--seconds S] [--top N] LABEL=COMMAND...
#   COMMAND is run with the stream URL appended, e.g.
#     afplay-before='/tmp/before/afplay --no-ui --output pulse'
#     afplay-after='.build/release/afplay --no-ui --output pulse'
#     mpg123='mpg123 -q -o pulse'
set -euo pipefail
cd "$(dirname "$0")/.."
plays=3
seconds=12
top=12
specs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --plays) plays="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --top) top="$2"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) specs+=("$1") ;;
  esac
  shift
done
[ ${#specs[@]} -gt 0 ] || { echo "bench-stream-rss: no players (LABEL=COMMAND)" >&2; exit 2; }

log=$(mktemp /tmp/oat-rss-serve-XXXXXX)
Scripts/bench-stream.sh --serve >"$log" 2>&1 &
serve=$!
stop_serve() { kill "$serve" 2>/dev/null || true; wait "$serve" 2>/dev/null || true; rm -f "$log"; }
trap stop_serve EXIT
for _ in $(seq 600); do grep -q '^monitor:' "$log" && break; sleep 0.1; done
stream=$(sed -n 's/^stream: //p' "$log")
pulse=$(sed -n 's/^export PULSE_SERVER=//p' "$log")
[ -n "$stream" ] || { echo "bench-stream-rss: the services did not come up:" >&2; cat "$log" >&2; exit 1; }
export PULSE_SERVER="$pulse"
echo "stream $stream, $plays plays of $seconds s each, players in turn"

results=$(mktemp /tmp/oat-rss-results-XXXXXX)
maps=$(mktemp -d /tmp/oat-rss-maps-XXXXXX)
for run in $(seq "$plays"); do
  for spec in "${specs[@]}"; do
    label="${spec%%=*}"; cmd="${spec#*=}"
    # shellcheck disable=SC2086
    $cmd "$stream" >/dev/null 2>&1 &
    pid=$!
    sleep "$seconds"
    if [ -r "/proc/$pid/status" ]; then
      hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
      [ "$run" -eq "$plays" ] && Scripts/rss-map.sh "$pid" --top "$top" >"$maps/$label" 2>&1 || true
      echo "$label $hwm" >>"$results"
    else
      echo "bench-stream-rss: $label exited early" >&2
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
done
echo
echo "| player | peak RSS (VmHWM) MB, median of $plays | each |"
echo "|---|---|---|"
for spec in "${specs[@]}"; do
  label="${spec%%=*}"
  awk -v l="$label" '$1 == l {print $2}' "$results" | sort -n | awk -v l="$label" '
    { v[NR] = $1; all = all sprintf("%s%.1f", NR > 1 ? " " : "", $1 / 1024) }
    END { if (NR == 0) { print "| " l " | - | - |"; exit }
          m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "| %s | %.1f | %s |\n", l, m / 1024, all }'
done
for spec in "${specs[@]}"; do
  label="${spec%%=*}"
  echo
  echo "rss-map of the last $label play:"
  cat "$maps/$label" 2>/dev/null || echo "(none)"
done
rm -rf "$results" "$maps"
