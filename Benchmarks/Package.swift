// swift-tools-version: 6.1
import PackageDescription

// Parse-throughput benchmarks for OpenAudioToolbox, kept out of the main package.
// Run: swift run -c release --package-path Benchmarks parse-bench [--json] [--help]
let package = Package(
    name: "OpenAudioToolboxBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "OpenAudioToolbox", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "parse-bench",
            dependencies: [
                .product(name: "AudioCore", package: "OpenAudioToolbox"),
                .product(name: "AudioFiles", package: "OpenAudioToolbox"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
