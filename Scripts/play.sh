#!/usr/bin/env bash
# Installs what is missing, builds afplay (release) and plays the bundled demo, Resources/demo.mp3,
# through the `auto` output: PulseAudio if a server answers, else ALSA's default device, else the
# null output (afplay says so). Arguments go to afplay: `./Scripts/play.sh FILE...`, or options
# only (`./Scripts/play.sh -v 0.5 -t 3`) to play the demo with them; a URL (http, https, icy, a
# playlist or HLS) plays through the streaming player. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/env.sh
Scripts/setup.sh
if ! log=$(swift build -c release --product afplay 2>&1); then
  echo "$log" >&2
  echo "play: building afplay failed" >&2
  exit 1
fi
# The demo unless a file to play was given.
has_file=0
for arg in "$@"; do
  case "$arg" in
    http://*|https://*|icy://*|-) has_file=1 ;;
    *) if [ -f "$arg" ]; then has_file=1; fi ;;
  esac
done
if [ "$has_file" -eq 0 ]; then set -- "$@" Resources/demo.mp3; fi
exec .build/release/afplay "$@"
