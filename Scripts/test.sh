#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/env.sh
Scripts/setup.sh
if [ ! -d ../shared/corpus ] && [ -z "${OAT_CORPUS:-}" ]; then
  echo "test: ../shared/corpus is absent; corpus tests will be skipped"
fi
swift build --build-tests -Xswiftc -warnings-as-errors
# Everything but the real-time playback tests, in parallel; then the tests that play through
# PulseAudio/ALSA in real time, alone, so CPU-heavy corpus tests cannot starve them.
swift test --skip-build --skip 'PlaybackTests|AudioDevicesTests|\.Playback'
swift test --skip-build --filter 'PlaybackTests|AudioDevicesTests|\.Playback' --skip 'PlaybackRecordingTests'
# Recording runs several afrecord processes and encoders at once: alone, so it cannot starve
# (or be starved by) the playback tests.
swift test --skip-build --filter 'PlaybackRecordingTests'
if [ -x Fuzz/regress.sh ]; then
  Fuzz/regress.sh
fi
