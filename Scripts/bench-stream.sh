#!/usr/bin/env bash
# Streaming CPU and start-up of afplay against mpg123 (docs/PERFORMANCE.md, "Streaming CPU"):
# one private PulseAudio (null sink, norewinds=1) and one private Icecast2 fed by ffmpeg with a
# 128 kbps MP3, as in Scripts/bench-peers.sh; the players are launched alternately against the
# same stream: per player, the time from launch to the first non-silent sample at the sink
# (median of N launches) and CPU seconds per minute of playback (median of M plays of S seconds).
# A cut-down Scripts/bench-peers.sh (stream input only) for comparing afplay builds.
#
# usage: Scripts/bench-stream.sh [--runs N] [--plays M] [--seconds S] [--afplay PATH[=LABEL]]...
#                                [--probe PATH] [--serve]
#   --afplay PATH[=LABEL]  an afplay binary to run (repeatable; default .build/release/afplay)
#   --probe PATH           peer-probe (default Benchmarks/.build/release/peer-probe)
#   --serve                start the services, print the stream URL and PULSE_SERVER, and wait
#                          (for profiling by hand: perf record, pidstat); Ctrl-C stops them
# Build them first: swift build -c release --product afplay
#                   swift build -c release --package-path Benchmarks --product peer-probe
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs=5
plays=2
seconds=30
serve=0
afplays=()
probe="$root/Benchmarks/.build/release/peer-probe"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --plays) plays="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --afplay) afplays+=("$2"); shift ;;
    --probe) probe="$2"; shift ;;
    --serve) serve=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bench-stream: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ ${#afplays[@]} -gt 0 ] || afplays=("$root/.build/release/afplay=afplay")
[ "$serve" -eq 1 ] || [ -x "$probe" ] || { echo "bench-stream: no peer-probe at $probe (build it: swift build -c release --package-path Benchmarks --product peer-probe)" >&2; exit 2; }
[ "$serve" -eq 1 ] || command -v mpg123 >/dev/null || { echo "bench-stream: needs mpg123, the player afplay is compared with (apt-get install mpg123)" >&2; exit 2; }

work=$(mktemp -d /tmp/oat-stream-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  local port
  for port in $(shuf -i 20000-60000 -n 50); do
    if ! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then echo "$port"; return; fi
  done
  echo "bench-stream: no free port" >&2; exit 2
}

# The input: a two-tone 128 kbps CBR MP3 with no leading silence, looped by the source client.
ffmpeg -hide_banner -loglevel error -nostdin -f lavfi \
  -i "aevalsrc=0.25*sin(2*PI*440*t)+0.1*sin(2*PI*1234*t)|0.25*sin(2*PI*550*t)+0.1*sin(2*PI*987*t):s=44100:d=65" \
  -c:a libmp3lame -b:a 128k "$work/signal.mp3"

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
pactl info >/dev/null || { echo "bench-stream: the private PulseAudio did not start" >&2; cat "$work/pa/log" >&2; exit 2; }

port=$(free_port)
mkdir -p "$work/icecast/log"
owner=""
if [ "$(id -u)" -eq 0 ]; then
  user=$(getent passwd icecast2 >/dev/null && echo icecast2 || echo nobody)
  group=$(id -gn "$user")
  chown -R "$user:$group" "$work/icecast"
  chmod 755 "$work"
  owner="<changeowner><user>$user</user><group>$group</group></changeowner>"
fi
cat > "$work/icecast/icecast.xml" <<XML
<icecast>
  <location>loopback</location><admin>bench@localhost</admin>
  <limits><clients>20</clients><sources>2</sources><queue-size>524288</queue-size>
    <client-timeout>30</client-timeout><header-timeout>15</header-timeout><source-timeout>10</source-timeout>
    <burst-on-connect>1</burst-on-connect><burst-size>65535</burst-size></limits>
  <authentication><source-password>benchsource</source-password><relay-password>benchrelay</relay-password>
    <admin-user>admin</admin-user><admin-password>benchadmin</admin-password></authentication>
  <hostname>127.0.0.1</hostname>
  <listen-socket><port>$port</port><bind-address>127.0.0.1</bind-address></listen-socket>
  <fileserve>1</fileserve>
  <paths><basedir>/usr/share/icecast2</basedir><logdir>$work/icecast/log</logdir>
    <webroot>/usr/share/icecast2/web</webroot><adminroot>/usr/share/icecast2/admin</adminroot></paths>
  <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog><loglevel>2</loglevel></logging>
  <security><chroot>0</chroot>$owner</security>
</icecast>
XML
icecast2 -c "$work/icecast/icecast.xml" >"$work/icecast/stdout" 2>&1 &
pids+=($!)
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
ffmpeg -hide_banner -loglevel error -nostdin -re -stream_loop -1 -i "$work/signal.mp3" -c:a copy \
  -content_type audio/mpeg -f mp3 "icecast://source:benchsource@127.0.0.1:$port/bench.mp3" >"$work/icecast/source.log" 2>&1 &
pids+=($!)
stream="http://127.0.0.1:$port/bench.mp3"
# A live stream never ends: curl stops after 0.5 s; the status tells whether the mount is up.
for _ in $(seq 50); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 0.5 "$stream" || true)" = 200 ] && break
  sleep 0.1
done
sleep 2   # let the server's burst buffer fill, as it would for a station that has been on air

if [ "$serve" -eq 1 ]; then
  echo "stream: $stream"
  echo "export PULSE_SERVER=$PULSE_SERVER"
  echo "monitor: peers.monitor; Ctrl-C (or kill $$) stops the services"
  while true; do sleep 3600; done
fi

# Players: label -> command.
labels=()
commands=()
for spec in "${afplays[@]}"; do
  path="${spec%%=*}"; label="${spec#*=}"; [ "$label" != "$spec" ] || label=$(basename "$path")
  [ -x "$path" ] || { echo "bench-stream: no afplay at $path (build it: swift build -c release --product afplay)" >&2; exit 2; }
  labels+=("$label"); commands+=("$path --no-ui --output pulse $stream")
done
labels+=(mpg123); commands+=("mpg123 -q -o pulse $stream")

results="$work/results.jsonl"
: > "$results"
for r in $(seq "$runs"); do
  for i in "${!labels[@]}"; do
    # shellcheck disable=SC2086
    "$probe" --source peers.monitor --label "${labels[$i]}/ttfa" --duration 1.5 -- ${commands[$i]} >>"$results" || true
  done
done
for r in $(seq "$plays"); do
  for i in "${!labels[@]}"; do
    echo "bench-stream: ${labels[$i]}: ${seconds} s play $r of $plays" >&2
    # shellcheck disable=SC2086
    "$probe" --source peers.monitor --label "${labels[$i]}/play" --duration "$seconds" -- ${commands[$i]} >>"$results" || true
  done
done

mkdir -p "$root/.build" && cp "$results" "$root/.build/bench-stream-results.jsonl"
echo "Machine: $(uname -srm), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg). mpg123 $(mpg123 --version 2>/dev/null | awk '{print $2; exit}'), Icecast $(dpkg-query -W -f='${Version}' icecast2)."
echo
awk -v runs="$runs" -v plays="$plays" '
  function field(line, name,   m) {
    if (match(line, "\"" name "\":(\"[^\"]*\"|[-0-9.a-z]+)")) { m = substr(line, RSTART, RLENGTH); sub(/^[^:]*:/, "", m); gsub(/"/, "", m); return m }
    return "null"
  }
  function median(list,   n, i, j, t, a) {
    n = split(list, a, " "); if (n == 0) return "null"
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    label = field($0, "label"); n = split(label, p, "/"); key = p[1]
    if (!(key in seen)) { seen[key] = 1; order[++count] = key }
    if (p[2] == "ttfa") { t = field($0, "ttfa_ms"); if (t != "null") { ttfa[key] = ttfa[key] " " t; all[key] = all[key] (all[key] == "" ? "" : "/") sprintf("%.0f", t) } }
    else {
      cpu = field($0, "cpu_s"); played = field($0, "played_s"); wall = field($0, "wall_s")
      span = (played + 0 > 0) ? played : wall
      if (span > 0) { c = cpu * 60 / span; cpm[key] = cpm[key] " " c; callv[key] = callv[key] (callv[key] == "" ? "" : "/") sprintf("%.3f", c) }
      drop[key] += field($0, "dropouts")
    }
  }
  END {
    print "| player | first audio at sink, ms: median of " runs " (all) | CPU s per min: median of " plays " (all) | x mpg123 | dropouts |"
    print "|---|---|---|---|---|"
    base = median(cpm["mpg123"])
    for (i = 1; i <= count; i++) {
      k = order[i]; m = median(ttfa[k]); c = median(cpm[k])
      printf "| %s | %s (%s) | %s (%s) | %s | %d |\n", k, (m == "null" ? "-" : sprintf("%.0f", m)), all[k],
        (c == "null" ? "-" : sprintf("%.3f", c)), callv[k], ((c != "null" && base != "null" && base > 0) ? sprintf("%.2f", c / base) : "-"), drop[k]
    }
  }' "$results"
