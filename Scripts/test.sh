#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/env.sh
Scripts/setup.sh
if [ ! -d ../shared/corpus ] && [ -z "${OAT_CORPUS:-}" ]; then
  if [ "${CI:-}" = true ]; then
    echo "test: ../shared/corpus is absent in CI: the corpus tests will fail" >&2
  else
    echo "test: ../shared/corpus is absent; corpus tests will be skipped (each skip is listed by swift test)"
  fi
fi
# The generated signature checks and coverage page must come from the committed tables.
python3 Scripts/gen-signature-tests.py --check
python3 Scripts/gen-avf-signature-tests.py --check
python3 Scripts/gen-api-coverage.py --check
python3 Scripts/check-name-collisions.py
swift build --build-tests -Xswiftc -warnings-as-errors
# Everything but the real-time playback tests, in parallel; then the tests that play through
# PulseAudio/ALSA in real time, alone, so CPU-heavy corpus tests cannot starve them.
swift test --skip-build --skip 'PlaybackTests|OATDevicesTests|\.Playback'
# Real-time groups one after another, so PulseAudio, Icecast and several encoders are never all
# competing for the two cores at once.
# A real-time group that fails is run once more, saying so loudly: these tests depend on the
# machine keeping up in real time (a dropped period under load fails an alignment), and a second
# failure fails the run. The retries are counted in the log ("test: RETRY").
status=0
# Inside a group the tests run one at a time (--no-parallel): many of them wait for child
# processes (afplay, ffmpeg, Icecast, PulseAudio) with blocking calls, and two such waits on a
# 2-core machine hold the whole cooperative thread pool, starving a player test's own task for
# seconds (a seek that should come at 0.5 s came after the file had ended).
retried=()
realtime() {
  swift test --skip-build --no-parallel "$@" && return 0
  echo "test: RETRY: real-time tests failed once ($*); running them again" >&2
  retried+=("$*")
  swift test --skip-build --no-parallel "$@"
}
# The final summary names every real-time group that needed its retry (passed or not): a retry
# is a failure seen, to be investigated, not a pass.
retry_summary() {
  if [ "${#retried[@]}" -eq 0 ]; then
    echo "test: summary: no real-time group needed a retry"
  else
    echo "test: summary: ${#retried[@]} real-time group(s) needed a retry:" >&2
    for g in "${retried[@]}"; do echo "test: summary:   RETRIED $g" >&2; done
  fi
}
trap retry_summary EXIT
for group in '^PlaybackTests\.' '^OATDevicesTests\.' '^OATStreamingTests\.Playback' '^OATUnitsTests\.Playback' '^CompatTests\.Playback'; do
  realtime --filter "$group" --skip 'PlaybackRecordingTests|PlaybackSoakTests' || status=1
done
# Real-time suites of the other test targets (a suite whose name has Playback in it).
realtime --filter '\.Playback' --skip '^PlaybackTests\.|^OATDevicesTests\.|^OATStreamingTests\.|^OATUnitsTests\.|^CompatTests\.|PlaybackRecordingTests|PlaybackSoakTests' || status=1
# The soak checks this process's memory: alone (docs/reliability.md).
realtime --filter 'PlaybackSoakTests' || status=1
# Recording runs several afrecord processes and encoders at once: alone, so it cannot starve
# (or be starved by) the playback tests.
realtime --filter 'PlaybackRecordingTests' || status=1
[ "$status" -eq 0 ] || { echo "test: real-time tests failed" >&2; exit 1; }
if [ -x Fuzz/regress.sh ]; then
  Fuzz/regress.sh
fi
# What users of a release meet (docs/shipping.md): the man pages and completions against each
# tool's --help; the DocC archives without warnings; a package that depends on this repository by
# URL at the release's tag, plays the demo and compiles every Swift block of the docs; the .deb
# installed with apt and used from PATH without Swift (needs root: CI runs as root).
python3 Scripts/check-tool-docs.py .build/debug
Scripts/docs.sh
Scripts/check-consumer.sh
if [ "$(id -u)" = 0 ]; then
  Scripts/check-deb.sh
elif [ -n "${CI:-}" ]; then
  echo "test: check-deb.sh needs root, and CI runs as root" >&2; exit 1
else
  echo "test: SKIPPED check-deb.sh (installs a package: needs root)"
fi
# Sanitizers (docs/reliability.md), in their own build directories: AddressSanitizer over the
# parsers and the fuzz regressions, ThreadSanitizer over the concurrency stress tests and the
# streaming player (with
# -DOAT_TSAN: Mutex becomes a pthread mutex TSan can see). Any report fails the run. They cost
# two more builds (about 2 x 5 minutes on 2 cores); OAT_SANITIZERS=0 skips them.
if [ "${OAT_SANITIZERS:-1}" != 0 ]; then
  swift build --build-tests --sanitize=address --build-path .build-asan -Xswiftc -warnings-as-errors
  asan='GraphHazardTests|DisposeTwiceCompatTests|FuzzRegressionTests|AudioFileStreamTests|MPEGAudioTests|PCMContainerTests|FLACOggTests|MP4ParserTests|ICYTests|PlaylistTests|MPEGTSTests|StreamFormatDetectorTests'
  # OAT_SANITIZERS=full adds every corpus file, whole and split (about 7 more minutes).
  if [ "${OAT_SANITIZERS:-1}" = full ]; then asan="$asan|CorpusSplitTests|CorpusProbeTests"; fi
  LSAN_OPTIONS="suppressions=$PWD/Scripts/lsan.supp" \
    swift test --skip-build --sanitize=address --build-path .build-asan --filter "$asan"
  swift build --build-tests --sanitize=thread -Xswiftc -DOAT_TSAN --build-path .build-tsan -Xswiftc -warnings-as-errors
  TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=0 exitcode=66}" \
    swift test --skip-build --sanitize=thread --build-path .build-tsan \
    --filter 'ConcurrencyStressTests|StreamingPlayerStressTests|OATStreamingTests\.StreamingPlayerTests|OATStreamingTests\.StreamingPlayerHTTPTests'
fi
