#!/usr/bin/env bash
# Whole-process comparison of afplay with the players users would pick instead (mpg123, mpv,
# GStreamer's playbin, ffplay; paplay of a WAV as the floor), on the same inputs, one after the
# other, in one run on this machine:
#   - time from launch to the first non-silent sample at the sink (from the sink's monitor),
#   - CPU seconds per minute of playback and peak RSS (wait4 of the player process),
#   - dropouts (silences of 10 ms or more inside the played audio).
# Inputs: a 128 kbps MP3 file (local path) and the same MP3 as a live Icecast2 stream on
# loopback, fed by ffmpeg as the source client. Everything runs against a private PulseAudio
# daemon (null sink, norewinds=1) started here and stopped at exit, by PID.
#
# usage: Scripts/bench-peers.sh [--quick] [--runs N] [--seconds S] [--no-write] [--afplay PATH=LABEL]...
#   --runs N     launches per player and input for the time to first audio (median; default 5)
#   --seconds S  length of the CPU/RSS play (default 60; --quick: 15, and 3 runs)
#   --no-write   print the table only; by default it also replaces the table in docs/PERFORMANCE.md
#   --afplay PATH=LABEL  an afplay binary to run instead of this tree's (repeatable, e.g. a build
#                of main as LABEL afplay-before and this tree's as afplay-after: before and
#                after in one run); LABEL starts with "afplay" and has no "/"
# Installs what is missing (Debian packages), builds afplay and peer-probe in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

runs=5
seconds=60
write=1
afplays=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) runs=3; seconds=15 ;;
    --runs) runs="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --no-write) write=0 ;;
    --afplay) afplays+=("$2"); shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "bench-peers: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

packages=(ffmpeg mpg123 mpv gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
          gstreamer1.0-pulseaudio icecast2 pulseaudio pulseaudio-utils libpulse-dev curl procps)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench-peers: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
source Scripts/env.sh
Scripts/setup.sh >&2

echo "bench-peers: building afplay and peer-probe (release)" >&2
swift build -c release --product afplay >&2
swift build -c release --package-path Benchmarks --product peer-probe >&2
afplay="$root/.build/release/afplay"
[ ${#afplays[@]} -gt 0 ] || afplays=("$afplay=afplay")
afplay_labels=(); afplay_paths=()
for spec in "${afplays[@]}"; do
  path="${spec%%=*}"; label="${spec#*=}"
  [ "$label" != "$spec" ] || label=afplay
  case "$label" in afplay*) ;; *) echo "bench-peers: --afplay label $label must start with afplay" >&2; exit 2 ;; esac
  case "$label" in */*) echo "bench-peers: --afplay label $label has a /" >&2; exit 2 ;; esac
  [ -x "$path" ] || { echo "bench-peers: no afplay at $path" >&2; exit 2; }
  afplay_labels+=("$label")
  afplay_paths+=("$path")
done
probe="$root/Benchmarks/.build/release/peer-probe"

work=$(mktemp -d /tmp/oat-peers-XXXXXX)
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
  echo "bench-peers: no free port" >&2; exit 2
}

# Inputs: a two-tone signal with no leading silence, as 128 kbps MP3 (CBR, with a LAME header so
# every player trims the encoder delay) and as WAV for paplay.
length=$(( seconds > 65 ? seconds + 5 : 65 ))
ffmpeg -hide_banner -loglevel error -nostdin -f lavfi \
  -i "aevalsrc=0.25*sin(2*PI*440*t)+0.1*sin(2*PI*1234*t)|0.25*sin(2*PI*550*t)+0.1*sin(2*PI*987*t):s=44100:d=$length" \
  -c:a libmp3lame -b:a 128k "$work/signal.mp3"
ffmpeg -hide_banner -loglevel error -nostdin -i "$work/signal.mp3" -t "$seconds" -c:a pcm_s16le "$work/signal.wav"

# A private PulseAudio daemon with a null sink at the file's rate.
mkdir -p "$work/pa/runtime" "$work/pa/state" "$work/pa/home"
cat > "$work/pa/daemon.pa" <<EOF
load-module module-native-protocol-unix auth-anonymous=1 socket=$work/pa/native
load-module module-null-sink sink_name=peers format=float32le rate=44100 channels=2 norewinds=1
set-default-sink peers
EOF
export HOME="$work/pa/home" XDG_RUNTIME_DIR="$work/pa/runtime" PULSE_RUNTIME_PATH="$work/pa/runtime" \
       PULSE_STATE_PATH="$work/pa/state" PULSE_SERVER="unix:$work/pa/native" DBUS_SESSION_BUS_ADDRESS=disabled:
pulseaudio -n --daemonize=no --system=false --exit-idle-time=-1 --use-pid-file=false --disable-shm=true \
  --log-target=stderr -F "$work/pa/daemon.pa" >"$work/pa/log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/pa/native" ] && pactl info >/dev/null 2>&1 && break; sleep 0.05; done
pactl info >/dev/null || { echo "bench-peers: the private PulseAudio did not start" >&2; cat "$work/pa/log" >&2; exit 2; }

# Icecast2 on loopback, fed by ffmpeg as a real source client.
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
cat > "$work/icecast/icecast.xml" <<EOF
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
EOF
icecast2 -c "$work/icecast/icecast.xml" >"$work/icecast/stdout" 2>&1 &
pids+=($!)
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
ffmpeg -hide_banner -loglevel error -nostdin -re -stream_loop -1 -i "$work/signal.mp3" -c:a copy \
  -content_type audio/mpeg -f mp3 "icecast://source:benchsource@127.0.0.1:$port/bench.mp3" >"$work/icecast/source.log" 2>&1 &
pids+=($!)
stream="http://127.0.0.1:$port/bench.mp3"
# A live stream never ends (curl stops at --max-time with an error): the status says the mount is up.
for _ in $(seq 50); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 0.5 "$stream" || true)" = 200 ] && break
  sleep 0.1
done
sleep 2   # let the server's burst buffer fill, as it would for a station that has been on air

# player name -> command for an input (file or url); empty when the player cannot play it.
command_for() {
  local player="$1" input="$2" kind="$3"
  case "$player" in
    afplay*)
      local i bin=""
      for i in "${!afplay_labels[@]}"; do
        [ "${afplay_labels[$i]}" = "$player" ] && bin="${afplay_paths[$i]}"
      done
      if [ "$kind" = url ] && ! "$bin" --help 2>&1 | grep -qi "url"; then return 0; fi
      echo "$bin --no-ui --output pulse $input" ;;
    mpg123) echo "mpg123 -q -o pulse $input" ;;
    mpv) echo "mpv --no-config --no-video --no-terminal --ao=pulse $input" ;;
    gstreamer)
      local uri="$input"; [ "$kind" = file ] && uri="file://$input"
      echo "gst-launch-1.0 -q playbin uri=$uri audio-sink=pulsesink video-sink=fakesink" ;;
    ffplay) echo "env SDL_AUDIODRIVER=pulseaudio ffplay -nodisp -autoexit -loglevel quiet $input" ;;
    paplay) [ "$kind" = file ] && echo "paplay $work/signal.wav" ;;
  esac
  return 0
}

results="$work/results.jsonl"
: > "$results"
players=("${afplay_labels[@]}" mpg123 mpv gstreamer ffplay paplay)
for kind in file url; do
  input="$work/signal.mp3"; [ "$kind" = url ] && input="$stream"
  for player in "${players[@]}"; do
    cmd=$(command_for "$player" "$input" "$kind")
    [ -n "$cmd" ] || continue
    echo "bench-peers: $player ($kind): $runs launches for time to first audio, one ${seconds} s play" >&2
    for r in $(seq "$runs"); do
      # shellcheck disable=SC2086
      "$probe" --source peers.monitor --label "$player/$kind/ttfa" --duration 1.5 -- $cmd >>"$results" || true
    done
    # shellcheck disable=SC2086
    "$probe" --source peers.monitor --label "$player/$kind/play" --duration "$seconds" -- $cmd >>"$results" || true
  done
done

# Table: medians of the launches; CPU per minute and RSS from the long play; ratios to the best peer
# (the best of mpg123, mpv, gstreamer and ffplay for that input; paplay is the floor, not a peer).
table=$(awk -v runs="$runs" '
  function field(line, name,   m) {
    if (match(line, "\"" name "\":(\"[^\"]*\"|[-0-9.a-z]+)")) { m = substr(line, RSTART, RLENGTH); sub(/^[^:]*:/, "", m); gsub(/"/, "", m); return m }
    return "null"
  }
  function median(list, n,   i, j, t, a) {
    n = split(list, a, " "); if (n == 0) return "null"
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    label = field($0, "label"); gsub(/"/, "", label)
    split(label, p, "/"); key = p[1] "/" p[2]
    if (!(key in seen)) { seen[key] = 1; order[++count] = key }
    if (p[3] == "ttfa") { t = field($0, "ttfa_ms"); if (t != "null") ttfa[key] = ttfa[key] " " t }
    else {
      cpu = field($0, "cpu_s"); played = field($0, "played_s"); wall = field($0, "wall_s")
      span = (played + 0 > 0) ? played : wall
      cpm[key] = (span > 0) ? cpu * 60 / span : "null"
      rss[key] = field($0, "maxrss_kb") / 1024
      drop[key] = field($0, "dropouts"); played_s[key] = played
    }
  }
  END {
    for (i = 1; i <= count; i++) {
      k = order[i]; split(k, p, "/"); med[k] = median(ttfa[k])
      if (p[1] !~ /^afplay/ && p[1] != "paplay") {
        if (med[k] != "null" && (!(p[2] in bt) || med[k] + 0 < bt[p[2]])) bt[p[2]] = med[k] + 0
        if (cpm[k] != "null" && (!(p[2] in bc) || cpm[k] + 0 < bc[p[2]])) bc[p[2]] = cpm[k] + 0
        if (!(p[2] in br) || rss[k] + 0 < br[p[2]]) br[p[2]] = rss[k] + 0
      }
    }
    print "| input | player | first audio at sink, ms (median of " runs ") | x best peer | CPU s per min | x best peer | peak RSS, MB | x best peer | dropouts | played, s |"
    print "|---|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= count; i++) {
      k = order[i]; split(k, p, "/")
      rt = (med[k] != "null" && bt[p[2]] > 0) ? sprintf("%.2f", med[k] / bt[p[2]]) : "-"
      rc = (cpm[k] != "null" && bc[p[2]] > 0) ? sprintf("%.2f", cpm[k] / bc[p[2]]) : "-"
      rr = (br[p[2]] > 0) ? sprintf("%.2f", rss[k] / br[p[2]]) : "-"
      printf "| %s | %s | %s | %s | %s | %s | %.1f | %s | %s | %s |\n", (p[2] == "url" ? "Icecast MP3 stream" : "local MP3 file"), p[1],
        (med[k] == "null" ? "-" : sprintf("%.0f", med[k])), rt, (cpm[k] == "null" ? "-" : sprintf("%.3f", cpm[k])), rc, rss[k], rr, drop[k], played_s[k]
    }
  }' "$results")

# Keep the raw results next to the build (not in git), so a table can be checked afterwards.
mkdir -p "$root/.build" && cp "$results" "$root/.build/bench-peers-results.jsonl"
machine="$(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
versions="afplay $(git rev-parse --short HEAD)$( [ ${#afplays[@]} -gt 1 ] && printf ' (binaries: %s)' "${afplays[*]}"), mpg123 $(mpg123 --version 2>/dev/null | awk '{print $2; exit}'), mpv $(mpv --version 2>/dev/null | awk '{print $2; exit}'), GStreamer $(gst-launch-1.0 --version 2>/dev/null | awk '/GStreamer/ {print $2; exit}'), ffplay $(ffplay -version 2>/dev/null | awk '{print $3; exit}'), PulseAudio $(pulseaudio --version | awk '{print $2}'), Icecast $(dpkg-query -W -f='${Version}' icecast2)"
report="### Whole-process comparison ($(date -u '+%Y-%m-%d %H:%M') UTC)

Command: \`Scripts/bench-peers.sh$( [ "$runs" != 5 ] || [ "$seconds" != 60 ] && echo " --runs $runs --seconds $seconds")$(for a in ${afplays[@]+"${afplays[@]}"}; do [ "$a" = "$afplay=afplay" ] || printf ' --afplay %s' "$a"; done)\`.
Machine: $machine. Versions: $versions.

$table"
echo "$report"
if [ "$write" -eq 1 ]; then
  doc=docs/PERFORMANCE.md
  [ -f "$doc" ] || printf '# Performance\n\n<!-- bench-peers:begin -->\n<!-- bench-peers:end -->\n' > "$doc"
  printf '%s\n' "$report" > "$work/report"
  awk -v body="$work/report" '
    /<!-- bench-peers:begin -->/ { print; while ((getline line < body) > 0) print line; skip = 1; next }
    /<!-- bench-peers:end -->/ { skip = 0 }
    !skip { print }' "$doc" > "$work/doc" && cp "$work/doc" "$doc"
  echo "bench-peers: wrote the table to $doc" >&2
fi
