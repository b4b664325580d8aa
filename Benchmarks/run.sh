#!/usr/bin/env bash
# Runs every OpenAudioToolbox benchmark and prints its tables (Markdown) to stdout:
#   parse-bench         AudioFileStream parse throughput vs FFmpeg's demuxer
#   decode-bench        ExtendedAudioFile decode throughput vs ffmpeg and mpg123
#   render-alloc-bench  allocations on the render thread of every output device (must be 0)
#   timepitch-bench     time-pitch and voice processing cost per quantum, allocations (must be 0)
#   streams-bench       concurrent 128 kbps MP3 streams decoded and mixed in real time on one core
#   graph-bench         OATUnits graph render cost per quantum and render-thread allocations (must be 0)
#   play-bench          afplay CPU time and peak RSS vs mpg123 and mpv playing the same MP3
# Installs the Debian packages it needs when missing (ffmpeg, mpg123, mpv, pulseaudio), builds
# afplay and the benchmarks in release mode. Options: --quick (10 s of playback per player and
# fewer runs: about 2 minutes instead of about 6). Exit status: that of render-alloc-bench
# (1 when an allocation was found on a render path), or 2 on set-up errors.
set -uo pipefail
cd "$(dirname "$0")"

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

packages=(ffmpeg mpg123 mpv pulseaudio pulseaudio-utils libpulse-dev libasound2-dev libavcodec-dev libavutil-dev libswresample-dev pkg-config librubberband-dev libspeexdsp-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run.sh: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { echo "run.sh: could not install ${missing[*]}" >&2; exit 2; }
fi
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH=/opt/swift/usr/bin:$PATH; fi
command -v swift >/dev/null 2>&1 || { echo "run.sh: no Swift toolchain on PATH" >&2; exit 2; }

echo "run.sh: building afplay and the benchmarks (release)" >&2
swift build -c release --package-path .. --product afplay >&2 || exit 2
swift build -c release >&2 || exit 2
bin=.build/release

echo "# OpenAudioToolbox benchmarks ($(date -u +%Y-%m-%d), $(uname -m), $(nproc) cores)"
echo
echo "## Parse throughput (parse-bench)"
echo
if [ $quick -eq 1 ]; then "$bin/parse-bench" --runs 3 --peer-runs 1; else "$bin/parse-bench"; fi
echo
echo "## Decode throughput (decode-bench)"
echo
if [ $quick -eq 1 ]; then "$bin/decode-bench" --runs 3; else "$bin/decode-bench"; fi
echo
echo "## Allocations on the render path (render-alloc-bench)"
echo
if [ $quick -eq 1 ]; then "$bin/render-alloc-bench" --seconds 1; else "$bin/render-alloc-bench"; fi
alloc_status=$?
echo
echo "## Time-pitch and voice processing per quantum (timepitch-bench)"
echo
if [ $quick -eq 1 ]; then "$bin/timepitch-bench" --quanta 300; else "$bin/timepitch-bench"; fi
[ $? -eq 0 ] || alloc_status=1
echo
echo "## Concurrent MP3 streams decoded and mixed on one core (streams-bench)"
echo
if [ $quick -eq 1 ]; then "$bin/streams-bench" --streams 500 --seconds 5; else "$bin/streams-bench" --streams 500 --seconds 20; fi
echo "## OATUnits graph render cost (graph-bench)"
echo
if [ $quick -eq 1 ]; then "$bin/graph-bench" --quanta 5000; else "$bin/graph-bench"; fi
graph_status=$?
[ $alloc_status -eq 0 ] && alloc_status=$graph_status
echo
echo "## Playback CPU and memory (play-bench)"
echo
if [ $quick -eq 1 ]; then "$bin/play-bench" --quick; else "$bin/play-bench"; fi
exit $alloc_status
