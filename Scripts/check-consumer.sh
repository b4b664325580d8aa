#!/usr/bin/env bash
# What a Swift developer who depends on OpenAudioToolbox meets, checked from outside the package:
# 1. a clone of this repository tagged with the release in Sources/AudioToolboxKit/Version.swift;
# 2. a consumer package that depends on it by URL (the clone's file URL) with `from: "VERSION"`,
#    exactly as the README shows, and plays Resources/demo.mp3 through `import OpenAudioToolbox`
#    (StreamingPlayer to a WAV output, as fast as it decodes); the WAV must hold the demo's frames;
# 3. every ```swift block of README.md, docs/ and the DocC catalogs compiled in that package
#    (Scripts/extract-doc-snippets.py), with no warning but "never used" ones;
# 4. no name of ours collides with a user's: the consumer has targets named like every module the
#    project once had (AudioCore, AudioUnits, CFFmpeg, ...) and depends on a second local package
#    named AudioStreaming with a target AudioStreaming (as dimitris-c/AudioStreaming is); SwiftPM
#    refuses a graph where two packages declare a target of the same name.
# Usage: Scripts/check-consumer.sh [WORKDIR]  (default: a temporary directory, removed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source Scripts/env.sh
version=$(sed -n 's/.*public static let string = "\(.*\)".*/\1/p' Sources/AudioToolboxKit/Version.swift)
work=${1:-}
if [ -z "$work" ]; then work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
rm -rf "$work/oat" "$work/consumer"
# The clone carries the working tree's state as one commit on top of HEAD, so uncommitted edits are
# checked too; the tag is made there, never in this repository.
git clone -q --no-hardlinks "$repo" "$work/oat"
git -C "$repo" diff HEAD --binary > "$work/changes.patch"
git -C "$repo" ls-files --others --exclude-standard -z | xargs -0 -r -I{} cp --parents "{}" "$work/oat/"
if [ -s "$work/changes.patch" ]; then git -C "$work/oat" apply "$work/changes.patch"; fi
git -C "$work/oat" add -A
git -C "$work/oat" -c user.name=ci -c user.email=ci@localhost commit -qm "check-consumer: working tree" --allow-empty
# The clone has the repository's tags: once the release is tagged, the tag moves to this commit.
git -C "$work/oat" tag -f "$version" >/dev/null

mkdir -p "$work/consumer/Sources/PlayDemo" "$work/consumer/Sources/DocSnippets"
# Names the project's own modules had before the OAT prefix (0.1.x): users' packages may use them.
old_names="AudioCore AudioFiles AudioConversion AudioDevices AudioProcessing AudioQueueEngine AudioNetwork
  AudioUnits AudioTestSupport CFFmpeg CFFmpegLazy CMPG123 CPulseAudio CALSA CRubberBand CSpeexDSP CCurl
  CCoreAudioTypes CAudioToolboxTypes"
old_targets=""
old_deps=""
for name in $old_names; do
  mkdir -p "$work/consumer/Sources/$name"
  echo "/// A module of the consumer's own named $name." > "$work/consumer/Sources/$name/$name.swift"
  echo "public let ${name}Name = \"$name\"" >> "$work/consumer/Sources/$name/$name.swift"
  old_targets+="        .target(name: \"$name\"),"$'\n'
  old_deps+="\"$name\", "
done
rm -rf "$work/AudioStreaming"
mkdir -p "$work/AudioStreaming/Sources/AudioStreaming"
cat > "$work/AudioStreaming/Package.swift" <<'PKG'
// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "AudioStreaming",
    products: [.library(name: "AudioStreaming", targets: ["AudioStreaming"])],
    targets: [.target(name: "AudioStreaming")]
)
PKG
echo 'public let audioStreamingName = "AudioStreaming"' > "$work/AudioStreaming/Sources/AudioStreaming/AudioStreaming.swift"
cat > "$work/consumer/Package.swift" <<PKG
// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Consumer",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "file://$work/oat", from: "$version"),
        .package(path: "$work/AudioStreaming"),
    ],
    targets: [
$old_targets        .executableTarget(name: "PlayDemo", dependencies: [.product(name: "OpenAudioToolbox", package: "oat"),
                                                           .product(name: "AudioStreaming", package: "AudioStreaming"),
                                                           $old_deps],
                          swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-warnings-as-errors"])]),
        .target(name: "DocSnippets", dependencies: [.product(name: "OpenAudioToolbox", package: "oat"),
                                                    .product(name: "OpenAVFAudio", package: "oat"),
                                                    .product(name: "AudioToolboxKit", package: "oat")],
                swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
PKG
cat > "$work/consumer/Sources/PlayDemo/main.swift" <<'SWIFT'
// Plays a file (or URL) through the streaming player of OpenAudioToolbox into a WAV file.
import OpenAudioToolbox
import AudioStreaming
import AudioCore
import CFFmpeg

// The user's own modules of the names our modules once had sit beside ours.
print("PlayDemo: with \(audioStreamingName), \(AudioCoreName) and \(CFFmpegName) of the user's own")
let arguments = CommandLine.arguments
guard arguments.count == 3 else { fatalError("usage: PlayDemo INPUT OUTPUT.wav") }
let wavPath = arguments[2]
let player = StreamingPlayer(output: { format throws(AudioError) in
    try AudioOutput.open(.wav(path: wavPath, realTime: false), format: format).device
})
await player.play(arguments[1])
for await event in player.events {
    if case .state(.stopped(let reason)) = event {
        print("PlayDemo: stopped (\(reason))")
        break
    }
}
SWIFT
python3 Scripts/extract-doc-snippets.py "$work/consumer/Sources/DocSnippets"
cd "$work/consumer"
if ! log=$(swift build 2>&1); then
  echo "$log" | tail -n 60 >&2
  echo "check-consumer: the consumer package does not build" >&2
  exit 1
fi
# Warnings in the doc snippets: only "never used" (a snippet shows a value without using it).
bad=$(echo "$log" | grep -E '(warning|error):' | grep 'DocSnippets' | grep -vE 'never used|never mutated' || true)
if [ -n "$bad" ]; then
  echo "$bad" >&2
  echo "check-consumer: the doc snippets above warn" >&2
  exit 1
fi
.build/debug/PlayDemo "$repo/Resources/demo.mp3" "$work/demo.wav"
# afinfo counts the frames: the repository's debug build (Scripts/test.sh makes it), built here
# when this script runs alone.
if [ ! -x "$repo/.build/debug/afinfo" ]; then
  echo "check-consumer: building afinfo (swift build --product afinfo) to count the frames" >&2
  (cd "$repo" && swift build --product afinfo >&2) || { echo "check-consumer: building afinfo failed" >&2; exit 1; }
fi
frames=$("$repo/.build/debug/afinfo" --json --decode "$work/demo.wav" | python3 -c 'import json,sys; print(json.load(sys.stdin)["decoded_frames"])')
want=$("$repo/.build/debug/afinfo" --json --decode "$repo/Resources/demo.mp3" | python3 -c 'import json,sys; print(json.load(sys.stdin)["decoded_frames"])')
if [ "$frames" != "$want" ]; then
  echo "check-consumer: the consumer played $frames frames of the demo's $want" >&2
  exit 1
fi
echo "check-consumer: a package depending on OpenAudioToolbox $version by URL builds beside $(echo $old_names | wc -w) targets named like our old modules and a package AudioStreaming, plays the demo ($frames frames, exact), and $(ls Sources/DocSnippets | wc -l) doc snippets compile"
