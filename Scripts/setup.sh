#!/usr/bin/env bash
# Installs what OpenAudioToolbox needs on Debian 12, only what is missing; safe to run again.
set -euo pipefail

# Debian packages the build needs (`setup.sh --build`: only these, for Scripts/install.sh), and
# those the tests, the demo and the peers they are measured against use as well (lintian
# for Scripts/check-deb.sh).
build_packages=(pkg-config libavcodec-dev libavutil-dev libswresample-dev libpulse-dev libasound2-dev libcurl4-openssl-dev librubberband-dev libspeexdsp-dev libmpg123-dev libfluidsynth-dev libmysofa-dev)
packages=("${build_packages[@]}" timgm6mb-soundfont ffmpeg pulseaudio pulseaudio-utils libasound2-plugins alsa-utils openssl icecast2 man-db zsh lintian)
if [ "${1:-}" = --build ]; then packages=("${build_packages[@]}"); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Swift toolchain: on PATH, or at /opt/swift.
if ! command -v swift >/dev/null 2>&1; then
  if [ -x /opt/swift/usr/bin/swift ]; then
    echo "setup: add /opt/swift/usr/bin to PATH (export PATH=/opt/swift/usr/bin:\$PATH)" >&2
  else
    echo "setup: no Swift toolchain found; install Swift 6.x from swift.org and put it on PATH" >&2
    exit 1
  fi
fi
