// swift-tools-version: 6.1
import PackageDescription

// Parse-throughput benchmarks for OpenAudioToolbox, kept out of the main package.
// Run: swift run -c release --package-path Benchmarks parse-bench [--json] [--help]
let strict: [SwiftSetting] = [.swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "OpenAudioToolboxBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "OpenAudioToolbox", path: ".."),
    ],
    targets: [
        .target(name: "MallocCounter"),
        .target(name: "BenchSupport", swiftSettings: strict),
        .executableTarget(
            name: "render-alloc-bench",
            dependencies: [
                "MallocCounter", "BenchSupport",
                .product(name: "AudioToolboxKit", package: "OpenAudioToolbox"),
                .product(name: "OpenAVFAudio", package: "OpenAudioToolbox"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "decode-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "AudioToolboxKit", package: "OpenAudioToolbox"),
                .product(name: "OpenAudioToolbox", package: "OpenAudioToolbox"),
            ],
            swiftSettings: strict
        ),
        .systemLibrary(name: "CPulseSimple", providers: [.apt(["libpulse-dev"])]),
        .executableTarget(name: "peer-probe", dependencies: ["CPulseSimple"], swiftSettings: strict),
        .executableTarget(
            name: "streams-bench",
            dependencies: [
                .product(name: "AudioToolboxKit", package: "OpenAudioToolbox"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "timepitch-bench",
            dependencies: [
                "MallocCounter", "BenchSupport",
                .product(name: "AudioToolboxKit", package: "OpenAudioToolbox"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "graph-bench",
            dependencies: [
                "MallocCounter", "BenchSupport",
                .product(name: "AudioToolboxKit", package: "OpenAudioToolbox"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "play-bench", dependencies: ["BenchSupport"], swiftSettings: strict),
        .executableTarget(
            name: "parse-bench",
            dependencies: [
                .product(name: "AudioToolboxKit", package: "OpenAudioToolbox"),
            ],
            swiftSettings: strict
        ),
    ]
)
