// swift-tools-version: 6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "OpenAudioToolbox",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AudioCore", targets: ["AudioCore"]),
        .library(name: "AudioFiles", targets: ["AudioFiles"]),
        .library(name: "OpenAudioToolbox", targets: ["OpenAudioToolbox"]),
        .executable(name: "afinfo", targets: ["afinfo"]),
    ],
    targets: [
        .target(name: "AudioCore", swiftSettings: strict),
        .target(name: "AudioFiles", dependencies: ["AudioCore"], swiftSettings: strict),
        .target(name: "OpenAudioToolbox", dependencies: ["AudioCore", "AudioFiles"], swiftSettings: strict),
        .executableTarget(name: "afinfo", dependencies: ["AudioFiles"], swiftSettings: strict),
        .target(name: "AudioTestSupport", dependencies: ["AudioCore", "AudioFiles"], swiftSettings: strict),
        .testTarget(name: "AudioCoreTests", dependencies: ["AudioCore"], swiftSettings: strict),
        .testTarget(name: "AudioFilesTests", dependencies: ["AudioFiles", "AudioTestSupport"], swiftSettings: strict),
    ]
)
