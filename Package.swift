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
    ("porting-music-player", "MusicPlayerSMF"),
]

/// Porting programs written against AVFAudio (`import AVFoundation` on Apple), built the same way.
let avfPortingPrograms: [(name: String, directory: String)] = [
    ("porting-avaudiofile-convert", "AVAudioFileConvert"),
    ("porting-avaudioengine-player", "AVAudioEnginePlayer"),
    ("porting-avaudioengine-tap-recorder", "AVAudioEngineTapRecorder"),
    ("porting-avaudioengine-demos", "AVAudioEngineDemos"),
    ("porting-avaudioengine-streamer", "AVAudioEngineStreamer"),
    ("porting-avaudiorecorder", "AVAudioRecorder"),
    ("porting-auaudiounit-streamer", "AUAudioUnitStreamer"),
    ("porting-midi-3d-demo", "MIDI3DDemo"),
]

let package = Package(
    name: "OpenAudioToolbox",
    platforms: [.macOS(.v15)],
    products: [
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
        // FFmpeg's headers only (default include path, no link lines): COATFFmpegLazy loads the
        // libraries with dlopen on first use and defines the functions the package calls.
        .systemLibrary(name: "COATFFmpeg", providers: [.apt(["libavcodec-dev", "libavutil-dev", "libswresample-dev"])]),
        .target(name: "COATFFmpegLazy"),
        // libmpg123 decodes MPEG audio (Layer I/II/III) without loading FFmpeg.
        .systemLibrary(name: "COATMPG123", pkgConfig: "libmpg123", providers: [.apt(["libmpg123-dev"])]),
        // PulseAudio's and ALSA's headers only (no link lines, no pkgConfig: their libs would link
        // them again; the headers are on the default include path): COATDeviceLazy loads libpulse
        // and libasound with dlopen on first use and defines the functions the package calls, so
        // a program that opens no device (afinfo, afconvert) does not map them and their ~25
        // dependencies at launch.
        .systemLibrary(name: "COATPulseAudio", providers: [.apt(["libpulse-dev"])]),
        .systemLibrary(name: "COATALSA", providers: [.apt(["libasound2-dev"])]),
        // The dlopen-on-first-use loader COATDeviceLazy and COATDSPLazy share (include/oat_lazy.h).
        .target(name: "COATLazy"),
        .target(name: "COATDeviceLazy", dependencies: ["COATLazy"]),
        // Rubber Band's and SpeexDSP's headers only (no link lines): COATDSPLazy loads the libraries
        // with dlopen on first use and defines the functions the package calls. No pkgConfig: its
        // libs would link them again (the headers are on the default include path).
        .systemLibrary(name: "COATRubberBand", providers: [.apt(["librubberband-dev"])]),
        .systemLibrary(name: "COATSpeexDSP", providers: [.apt(["libspeexdsp-dev"])]),
        // libmysofa's header only (SOFA HRTF sets for the spatial mixer): COATDSPLazy loads it too.
        .systemLibrary(name: "COATMySofa", providers: [.apt(["libmysofa-dev"])]),
        .target(name: "COATDSPLazy", dependencies: ["COATLazy"]),
        // FluidSynth's headers only (no link lines): COATFluidSynthLazy loads libfluidsynth with dlopen
        // on first use (the sampler and the MIDI synth) and defines the functions the package calls.
        .systemLibrary(name: "COATFluidSynth", providers: [.apt(["libfluidsynth-dev"])]),
        .target(name: "COATFluidSynthLazy", dependencies: ["COATLazy"]),
        // libcurl's headers only (no link line): COATCurl loads libcurl with dlopen on first use,
        // defines the curl functions the package calls, and wraps curl_easy_setopt/getinfo and macros.
        .systemLibrary(name: "COATCurlHeaders", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "COATCurl", dependencies: ["COATCurlHeaders"]),
        // Apple's C structs that Apple's @convention(c) callback types point at (headers only), so the
        // compat callback typealiases can be C function types as Apple's are: CoreAudioTypes.h's
        // (OATCore re-exports it) and Audio Toolbox's and the HAL's (OpenAudioToolbox re-exports it).
        .target(name: "COATCoreAudioTypes"),
        .target(name: "COATAudioToolboxTypes", dependencies: ["COATCoreAudioTypes"]),
        .target(name: "OATCore", dependencies: ["COATCoreAudioTypes"], swiftSettings: strict),
        .target(name: "OATFiles", dependencies: ["OATCore"], swiftSettings: strict),
        .target(name: "OATConversion", dependencies: ["OATCore", "COATFFmpeg", "COATFFmpegLazy", "COATMPG123"], swiftSettings: strict),
        .target(name: "OATDevices", dependencies: ["OATCore", "COATPulseAudio", "COATALSA", "COATDeviceLazy"], swiftSettings: strict),
        .target(name: "OATProcessing", dependencies: ["OATCore", "COATRubberBand", "COATSpeexDSP", "COATDSPLazy"], swiftSettings: strict),
        .target(name: "OATQueueEngine", dependencies: ["OATCore", "OATConversion", "OATDevices", "OATProcessing"], swiftSettings: strict),
        // The network layer below the player: byte sources (file, stdin, HTTP on libcurl, HLS), ICY,
        // playlists, MPEG-TS, the range cache and format detection. Usable without the player.
        .target(name: "OATNetwork", dependencies: ["OATCore", "OATFiles", "COATCurlHeaders", "COATCurl"], swiftSettings: strict),
        // The streaming player alone; re-exports OATNetwork (its API takes and reports its types).
        .target(name: "OATStreaming", dependencies: ["OATCore", "OATFiles", "OATConversion", "OATDevices", "OATQueueEngine", "OATNetwork"], swiftSettings: strict),
        .target(name: "OATUnits", dependencies: ["OATCore", "OATConversion", "OATDevices", "OATProcessing", "COATMySofa", "COATDSPLazy", "COATFluidSynth", "COATFluidSynthLazy"], swiftSettings: strict),
        // The Swift API in one module; OpenAudioToolbox adds Apple's C-style names (and Foundation's URL).
        .target(name: "AudioToolboxKit", dependencies: ["OATCore", "OATFiles", "OATConversion", "OATDevices", "OATQueueEngine", "OATNetwork", "OATStreaming", "OATUnits", "OATProcessing"], swiftSettings: strict),
        .target(name: "OpenAudioToolbox", dependencies: ["COATAudioToolboxTypes", "AudioToolboxKit", "OATCore", "OATFiles", "OATConversion", "OATDevices", "OATQueueEngine", "OATNetwork", "OATStreaming", "OATUnits", "OATProcessing"], swiftSettings: strict),
        // Apple's AVFAudio names (AVAudioFormat, AVAudioPCMBuffer, AVAudioFile, AVAudioConverter, ...)
        // over the C-style API, which it re-exports as AVFoundation re-exports AudioToolbox.
        .target(name: "OpenAVFAudio", dependencies: ["OpenAudioToolbox", "OATUnits", "OATDevices", "OATCore"], swiftSettings: strict),
        // The tools use the Swift API only, so they never load Foundation. Each tool's code is a
        // library target (OATToolAfplay, ...: `runAfplay(arguments:)`); the executables afplay,
        // afinfo, afconvert and afrecord are thin mains over them (`swift run afplay`, the tests),
        // and oat-tools is all four in one binary, picked by the name it is run by (busybox style),
        // which Scripts/install.sh and the Debian package install behind the four names: one copy
        // of the Swift runtime and of the package's code instead of four (docs/shipping.md).
        .target(name: "OATToolAfplay", dependencies: ["AudioToolboxKit"], swiftSettings: strict),
        .target(name: "OATToolAfinfo", dependencies: ["AudioToolboxKit"], swiftSettings: strict),
        .target(name: "OATToolAfconvert", dependencies: ["AudioToolboxKit"], swiftSettings: strict),
        .target(name: "OATToolAfrecord", dependencies: ["AudioToolboxKit"], swiftSettings: strict),
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
        .executableTarget(name: "afplay", dependencies: ["OATToolAfplay"], exclude: ["Link"], swiftSettings: strict,
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                                                         "-Xlinker", "--no-export-dynamic",
                                                         "-L", packageDirectory + "Sources/afplay/Link",
                                                         "-Xlinker", "--symbol-ordering-file=" + packageDirectory + "Sources/afplay/Link/afplay.order",
                                                         "-Xlinker", "--no-warn-symbol-ordering"])]),
        // afinfo is linked like afplay, static libstdc++ included (afplay's Link/libstdc++.so).
        .executableTarget(name: "afinfo", dependencies: ["OATToolAfinfo"], swiftSettings: strict,
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                                                         "-Xlinker", "--no-export-dynamic", "-Xlinker", "--as-needed",
                                                         "-L", packageDirectory + "Sources/afplay/Link"])]),
        .executableTarget(name: "afconvert", dependencies: ["OATToolAfconvert"], swiftSettings: strict),
        .executableTarget(name: "afrecord", dependencies: ["OATToolAfrecord"], swiftSettings: strict),
        // The four tools in one binary, linked as afplay is (its symbol ordering file too: the
        // functions afplay runs while it plays come first).
        .executableTarget(name: "oat-tools", dependencies: ["OATToolAfplay", "OATToolAfinfo", "OATToolAfconvert", "OATToolAfrecord"],
                          swiftSettings: strict,
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                                                         "-Xlinker", "--no-export-dynamic",
                                                         "-L", packageDirectory + "Sources/afplay/Link",
                                                         "-Xlinker", "--symbol-ordering-file=" + packageDirectory + "Sources/afplay/Link/afplay.order",
                                                         "-Xlinker", "--no-warn-symbol-ordering"])]),
        .target(name: "OATTestSupport", dependencies: ["OATCore", "OATFiles", "OATConversion", "OATDevices", "OATUnits"], swiftSettings: strict),
        .testTarget(name: "OATCoreTests", dependencies: ["OATCore"], swiftSettings: strict),
        .testTarget(name: "OATConversionTests", dependencies: ["OATConversion", "OATFiles", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "OpenAudioToolboxTests", dependencies: ["OpenAudioToolbox", "OATStreaming", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "OATDevicesTests", dependencies: ["OATDevices", "OATFiles", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "OATQueueEngineTests", dependencies: ["OATQueueEngine", "OATFiles", "OATTestSupport", "OATProcessing"], swiftSettings: strict),
        .testTarget(name: "SystemLibraryTests", dependencies: ["COATFFmpeg", "COATFFmpegLazy", "COATPulseAudio", "COATALSA", "COATDeviceLazy"], swiftSettings: strict),
        .testTarget(name: "AudioWritingTests", dependencies: ["OpenAudioToolbox", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "OATFilesTests", dependencies: ["OATFiles", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "CompatTests", dependencies: ["OpenAudioToolbox", "OATTestSupport"], swiftSettings: strict),
        // Generated from docs/api-signatures.tsv by Scripts/gen-signature-tests.py: Apple's Swift signatures, checked by the compiler.
        .testTarget(name: "CompatSignatureTests", dependencies: ["OpenAudioToolbox"], swiftSettings: strict),
        .testTarget(name: "OATNetworkTests", dependencies: ["OATNetwork", "OATFiles", "OATConversion", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "OATStreamingTests", dependencies: ["OATStreaming", "OATUnits", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "OATProcessingTests", dependencies: ["OATProcessing", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "OATUnitsTests", dependencies: ["OATUnits", "OATDevices", "OpenAudioToolbox", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "PlaybackTests", dependencies: ["OpenAudioToolbox", "OATTestSupport"], swiftSettings: strict),
        .testTarget(name: "OpenAVFAudioTests", dependencies: ["OpenAVFAudio", "AudioToolboxKit", "OATTestSupport"], swiftSettings: strict),
        // Generated from docs/api-avfaudio-signatures.tsv by Scripts/gen-avf-signature-tests.py: Apple's AVFAudio
        // declarations, checked by the compiler in Swift 5 mode as ported code builds (no Sendable inference on method references).
        .testTarget(name: "AVFAudioSignatureTests", dependencies: ["OpenAVFAudio"], swiftSettings: [.swiftLanguageMode(.v5)]),
        .testTarget(name: "PortingSuiteTests", dependencies: ["OATTestSupport"], swiftSettings: strict),
    ] + portingPrograms.map { program in
        .executableTarget(name: program.name, dependencies: ["OpenAudioToolbox"], path: "PortingSuite/\(program.directory)",
                          swiftSettings: [.swiftLanguageMode(.v5)])
    } + avfPortingPrograms.map { program in
        .executableTarget(name: program.name, dependencies: ["OpenAVFAudio"], path: "PortingSuite/\(program.directory)",
                          swiftSettings: [.swiftLanguageMode(.v5)])
    }
)
