// swift-tools-version: 6.1
import PackageDescription

/// This package's folder (the linker options below take absolute paths: SwiftPM does not say
/// from which folder it runs the linker).
let packageDirectory = String(#filePath.dropLast("Package.swift".count))

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

/// The porting suite (PortingSuite/, issue 17 §4): programs written as macOS code is, built with only
/// the import changed. Swift 5 language mode, as the code they stand for is compiled. Each is run
/// and checked by Tests/PortingSuiteTests.
let portingPrograms: [(name: String, directory: String)] = [
    ("porting-converter-decode", "ConverterDecode"),
    ("porting-extaudiofile-convert", "ExtAudioFileConvert"),
    ("porting-queue-player", "QueuePlayer"),
    ("porting-augraph-player", "AUGraphFilePlayer"),
    ("porting-tone-generator", "ToneGenerator"),
    ("porting-stream-player", "StreamPlayer"),
    ("porting-aac-recorder", "AACRecorder"),
    ("porting-device-query", "DeviceQuery"),
]

/// Porting programs written against AVFAudio (`import AVFoundation` on Apple), built the same way.
let avfPortingPrograms: [(name: String, directory: String)] = [
    ("porting-avaudiofile-convert", "AVAudioFileConvert"),
    ("porting-avaudioengine-player", "AVAudioEnginePlayer"),
    ("porting-avaudioengine-tap-recorder", "AVAudioEngineTapRecorder"),
    ("porting-avaudioengine-demos", "AVAudioEngineDemos"),
    ("porting-avaudioengine-streamer", "AVAudioEngineStreamer"),
    ("porting-avaudiorecorder", "AVAudioRecorder"),
]

let package = Package(
    name: "OpenAudioToolbox",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AudioCore", targets: ["AudioCore"]),
        .library(name: "AudioFiles", targets: ["AudioFiles"]),
        .library(name: "AudioConversion", targets: ["AudioConversion"]),
        .library(name: "AudioDevices", targets: ["AudioDevices"]),
        .library(name: "AudioProcessing", targets: ["AudioProcessing"]),
        .library(name: "AudioQueueEngine", targets: ["AudioQueueEngine"]),
        .library(name: "AudioNetwork", targets: ["AudioNetwork"]),
        .library(name: "AudioStreaming", targets: ["AudioStreaming"]),
        .library(name: "AudioUnits", targets: ["AudioUnits"]),
        .library(name: "AudioToolboxKit", targets: ["AudioToolboxKit"]),
        .library(name: "OpenAudioToolbox", targets: ["OpenAudioToolbox"]),
        .library(name: "OpenAVFAudio", targets: ["OpenAVFAudio"]),
        .executable(name: "afinfo", targets: ["afinfo"]),
        .executable(name: "afplay", targets: ["afplay"]),
        .executable(name: "afconvert", targets: ["afconvert"]),
        .executable(name: "afrecord", targets: ["afrecord"]),
    ],
    dependencies: [
        // `swift package generate-documentation` builds the DocC archives (Scripts/docs.sh); no
        // target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // C libraries from Debian's -dev packages, found through pkg-config.
        // FFmpeg's headers only (default include path, no link lines): CFFmpegLazy loads the
        // libraries with dlopen on first use and defines the functions the package calls.
        .systemLibrary(name: "CFFmpeg", providers: [.apt(["libavcodec-dev", "libavutil-dev", "libswresample-dev"])]),
        .target(name: "CFFmpegLazy"),
        // libmpg123 decodes MPEG audio (Layer I/II/III) without loading FFmpeg.
        .systemLibrary(name: "CMPG123", pkgConfig: "libmpg123", providers: [.apt(["libmpg123-dev"])]),
        // PulseAudio's and ALSA's headers only (no link lines, no pkgConfig: their libs would link
        // them again; the headers are on the default include path): COATDeviceLazy loads libpulse
        // and libasound with dlopen on first use and defines the functions the package calls, so
        // a program that opens no device (afinfo, afconvert) does not map them and their ~25
        // dependencies at launch.
        .systemLibrary(name: "CPulseAudio", providers: [.apt(["libpulse-dev"])]),
        .systemLibrary(name: "CALSA", providers: [.apt(["libasound2-dev"])]),
        // The dlopen-on-first-use loader COATDeviceLazy and COATDSPLazy share (include/oat_lazy.h).
        .target(name: "COATLazy"),
        .target(name: "COATDeviceLazy", dependencies: ["COATLazy"]),
        // Rubber Band's and SpeexDSP's headers only (no link lines): COATDSPLazy loads the libraries
        // with dlopen on first use and defines the functions the package calls. No pkgConfig: its
        // libs would link them again (the headers are on the default include path).
        .systemLibrary(name: "CRubberBand", providers: [.apt(["librubberband-dev"])]),
        .systemLibrary(name: "CSpeexDSP", providers: [.apt(["libspeexdsp-dev"])]),
        .target(name: "COATDSPLazy", dependencies: ["COATLazy"]),
        // libcurl's headers only (no link line): COATCurl loads libcurl with dlopen on first use,
        // defines the curl functions the package calls, and wraps curl_easy_setopt/getinfo and macros.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "COATCurl", dependencies: ["CCurl"]),
        // Apple's C structs that Apple's @convention(c) callback types point at (headers only), so the
        // compat callback typealiases can be C function types as Apple's are: CoreAudioTypes.h's
        // (AudioCore re-exports it) and Audio Toolbox's and the HAL's (OpenAudioToolbox re-exports it).
        .target(name: "CCoreAudioTypes"),
        .target(name: "CAudioToolboxTypes", dependencies: ["CCoreAudioTypes"]),
        .target(name: "AudioCore", dependencies: ["CCoreAudioTypes"], swiftSettings: strict),
        .target(name: "AudioFiles", dependencies: ["AudioCore"], swiftSettings: strict),
        .target(name: "AudioConversion", dependencies: ["AudioCore", "CFFmpeg", "CFFmpegLazy", "CMPG123"], swiftSettings: strict),
        .target(name: "AudioDevices", dependencies: ["AudioCore", "CPulseAudio", "CALSA", "COATDeviceLazy"], swiftSettings: strict),
        .target(name: "AudioProcessing", dependencies: ["AudioCore", "CRubberBand", "CSpeexDSP", "COATDSPLazy"], swiftSettings: strict),
        .target(name: "AudioQueueEngine", dependencies: ["AudioCore", "AudioConversion", "AudioDevices", "AudioProcessing"], swiftSettings: strict),
        // The network layer below the player: byte sources (file, stdin, HTTP on libcurl, HLS), ICY,
        // playlists, MPEG-TS, the range cache and format detection. Usable without the player.
        .target(name: "AudioNetwork", dependencies: ["AudioCore", "AudioFiles", "CCurl", "COATCurl"], swiftSettings: strict),
        // The streaming player alone; re-exports AudioNetwork (its API takes and reports its types).
        .target(name: "AudioStreaming", dependencies: ["AudioCore", "AudioFiles", "AudioConversion", "AudioDevices", "AudioQueueEngine", "AudioNetwork"], swiftSettings: strict),
        .target(name: "AudioUnits", dependencies: ["AudioCore", "AudioConversion", "AudioDevices", "AudioProcessing"], swiftSettings: strict),
        // The Swift API in one module; OpenAudioToolbox adds Apple's C-style names (and Foundation's URL).
        .target(name: "AudioToolboxKit", dependencies: ["AudioCore", "AudioFiles", "AudioConversion", "AudioDevices", "AudioQueueEngine", "AudioNetwork", "AudioStreaming", "AudioUnits", "AudioProcessing"], swiftSettings: strict),
        .target(name: "OpenAudioToolbox", dependencies: ["CAudioToolboxTypes", "AudioToolboxKit", "AudioCore", "AudioFiles", "AudioConversion", "AudioDevices", "AudioQueueEngine", "AudioNetwork", "AudioStreaming", "AudioUnits", "AudioProcessing"], swiftSettings: strict),
        // Apple's AVFAudio names (AVAudioFormat, AVAudioPCMBuffer, AVAudioFile, AVAudioConverter, ...)
        // over the C-style API, which it re-exports as AVFoundation re-exports AudioToolbox.
        .target(name: "OpenAVFAudio", dependencies: ["OpenAudioToolbox", "AudioUnits", "AudioDevices", "AudioCore"], swiftSettings: strict),
        // The tools use the Swift API only, so they never load Foundation.
        // afplay links the Swift runtime statically (about 2 MB less resident memory than
        // libswiftCore.so and friends) with lld and packed relative relocations (DT_RELR, glibc
        // >= 2.36): the PIE's 700 KB of R_X86_64_RELATIVE entries, all read and applied at launch,
        // become 6 KB, another megabyte less. --no-export-dynamic undoes the -export-dynamic of
        // -static-stdlib: 450 KB of symbol names nobody looks up (docs/PERFORMANCE.md, "Session 14").
        // Two more for the pages of a playing stream: Link/afplay.order (Scripts/gen-afplay-order.sh)
        // puts the functions a play runs next to each other (the kernel maps code in 64 KB windows
        // around each page touched: scattered, they made nearly all 7 MB of code resident), and
        // Link/libstdc++.so, a linker script, links libstdc++ statically (the part the Swift
        // runtime uses, instead of mapping all of libstdc++.so.6): 17.8 -> 14.3 MB.
        .executableTarget(name: "afplay", dependencies: ["AudioToolboxKit"], exclude: ["Link"], swiftSettings: strict,
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                                                         "-Xlinker", "--no-export-dynamic",
                                                         "-L", packageDirectory + "Sources/afplay/Link",
                                                         "-Xlinker", "--symbol-ordering-file=" + packageDirectory + "Sources/afplay/Link/afplay.order",
                                                         "-Xlinker", "--no-warn-symbol-ordering"])]),
        // afinfo is linked like afplay, static libstdc++ included (afplay's Link/libstdc++.so).
        .executableTarget(name: "afinfo", dependencies: ["AudioToolboxKit"], swiftSettings: strict,
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                                                         "-Xlinker", "--no-export-dynamic", "-Xlinker", "--as-needed",
                                                         "-L", packageDirectory + "Sources/afplay/Link"])]),
        .executableTarget(name: "afconvert", dependencies: ["AudioToolboxKit"], swiftSettings: strict),
        .executableTarget(name: "afrecord", dependencies: ["AudioToolboxKit"], swiftSettings: strict),
        .target(name: "AudioTestSupport", dependencies: ["AudioCore", "AudioFiles", "AudioConversion", "AudioDevices"], swiftSettings: strict),
        .testTarget(name: "AudioCoreTests", dependencies: ["AudioCore"], swiftSettings: strict),
        .testTarget(name: "AudioConversionTests", dependencies: ["AudioConversion", "AudioFiles", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "OpenAudioToolboxTests", dependencies: ["OpenAudioToolbox", "AudioStreaming", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "AudioDevicesTests", dependencies: ["AudioDevices", "AudioFiles", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "AudioQueueEngineTests", dependencies: ["AudioQueueEngine", "AudioFiles", "AudioTestSupport", "AudioProcessing"], swiftSettings: strict),
        .testTarget(name: "SystemLibraryTests", dependencies: ["CFFmpeg", "CFFmpegLazy", "CPulseAudio", "CALSA", "COATDeviceLazy"], swiftSettings: strict),
        .testTarget(name: "AudioWritingTests", dependencies: ["OpenAudioToolbox", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "AudioFilesTests", dependencies: ["AudioFiles", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "CompatTests", dependencies: ["OpenAudioToolbox", "AudioTestSupport"], swiftSettings: strict),
        // Generated from docs/api-signatures.tsv by Scripts/gen-signature-tests.py: Apple's Swift signatures, checked by the compiler.
        .testTarget(name: "CompatSignatureTests", dependencies: ["OpenAudioToolbox"], swiftSettings: strict),
        .testTarget(name: "AudioNetworkTests", dependencies: ["AudioNetwork", "AudioFiles", "AudioConversion", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "AudioStreamingTests", dependencies: ["AudioStreaming", "AudioUnits", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "AudioProcessingTests", dependencies: ["AudioProcessing", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "AudioUnitsTests", dependencies: ["AudioUnits", "AudioDevices", "OpenAudioToolbox", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "PlaybackTests", dependencies: ["OpenAudioToolbox", "AudioTestSupport"], swiftSettings: strict),
        .testTarget(name: "OpenAVFAudioTests", dependencies: ["OpenAVFAudio", "AudioTestSupport"], swiftSettings: strict),
        // Generated from docs/api-avfaudio-signatures.tsv by Scripts/gen-avf-signature-tests.py: Apple's AVFAudio
        // declarations, checked by the compiler in Swift 5 mode as ported code builds (no Sendable inference on method references).
        .testTarget(name: "AVFAudioSignatureTests", dependencies: ["OpenAVFAudio"], swiftSettings: [.swiftLanguageMode(.v5)]),
        .testTarget(name: "PortingSuiteTests", dependencies: ["AudioTestSupport"], swiftSettings: strict),
    ] + portingPrograms.map { program in
        .executableTarget(name: program.name, dependencies: ["OpenAudioToolbox"], path: "PortingSuite/\(program.directory)",
                          swiftSettings: [.swiftLanguageMode(.v5)])
    } + avfPortingPrograms.map { program in
        .executableTarget(name: program.name, dependencies: ["OpenAVFAudio"], path: "PortingSuite/\(program.directory)",
                          swiftSettings: [.swiftLanguageMode(.v5)])
    }
)
