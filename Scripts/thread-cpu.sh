#!/usr/bin/env bash
# Per-thread CPU and wake-ups of a running player in steady state: starts COMMAND, skips the
# first 5 s (start-up), then prints each thread's CPU time (/proc/PID/task/TID/schedstat) and
# voluntary context switches per second over the next SECONDS, and the total as CPU s per
# minute. Used for docs/PERFORMANCE.md ("Streaming CPU"); pair it with Scripts/bench-stream.sh
# --serve for a private PulseAudio and Icecast.
#
# usage: Scripts/thread-cpu.sh SECONDS COMMAND ARGS...
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0"; exit 2; }
secs=$1; shift
"$@" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 5
snap() {
  for t in /proc/$pid/task/*; do
    echo "$(basename "$t") $(tr ' ' _ < "$t/comm") $(cut -d' ' -f1 "$t/schedstat") $(awk '/^voluntary/ {print $2}' "$t/status")"
  done | sort
}
first=$(snap)
sleep "$secs"
join <(echo "$first") <(snap) | awk -v s="$secs" '
  { ms = ($6 - $3) / 1e6; tot += ms; w += ($7 - $4); if (ms > 0) printf "%-8s %-18s %8.1f ms  %6.1f wake-ups/s\n", $1, $2, ms, ($7 - $4) / s }
  END { printf "total %.1f ms in %d s = %.3f CPU s per minute, %.0f wake-ups/s\n", tot, s, tot / 1000 * 60 / s, w / s }'
