#!/usr/bin/env bash
# Soak: streams N minutes of audio from the loopback server with injected faults (disconnects,
# stalls, 503s, dropped connections, outages, a lost output device), rendered faster than real
# time to the null device; samples RSS every 0.1 s into a CSV and checks memory flat, every
# fault recovered and no drift (PlaybackSoakTests in Tests/OATStreamingTests).
#   Scripts/soak.sh [--minutes N] [--csv PATH]     (default 60 minutes, soak.csv in .build/)
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/env.sh
minutes=60
csv="$PWD/.build/soak.csv"
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --csv) csv="$2"; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "soak: unknown argument $1" >&2; exit 2 ;;
  esac
done
swift build --build-tests -j 1 >/dev/null
export OAT_SOAK_MINUTES="$minutes" OAT_SOAK_CSV="$csv"
status=0
swift test --skip-build --filter 'PlaybackSoakTests' 2>&1 | tee "${csv%.csv}.log" | grep -E '^soak:|✘|✔ Test' || true
grep -q '✔ Test soakWithInjectedFaults' "${csv%.csv}.log" || status=1
# RSS curve summary: min, max and the mean of each quarter of the run.
awk -F, 'BEGIN { n = 0 } NR > 1 { t[n] = $1; r[n] = $2; n++ }
  END {
    if (n == 0) exit
    q = int((n + 3) / 4)
    printf "soak: RSS (MiB) by quarter of the run:"
    for (k = 0; k < 4; k++) { s = 0; m = 0; lo = 1e12; c = 0
      for (i = k * q; i < (k + 1) * q && i < n; i++) { s += r[i]; c++; if (r[i] > m) m = r[i]; if (r[i] < lo) lo = r[i] }
      if (c) printf " [%.0f s-%.0f s: min %.1f mean %.1f max %.1f]", t[k*q], t[(k+1)*q-1 < n ? (k+1)*q-1 : n-1], lo/1024, s/c/1024, m/1024 }
    printf "\n" }' "$csv"
echo "soak: CSV $csv, log ${csv%.csv}.log"
exit $status
