import OATCore
import OATFiles

/// A split-independent record of everything an ``AudioFileStream`` reported for an input:
/// property changes with their values (in order, with the packet count at which each came),
/// every packet's size, frames and file offset, a hash of the packet bytes, and the error.
/// Two digests are equal when the stream reported the same things.
public struct StreamDigest: Equatable, Sendable, CustomStringConvertible {
    /// `"N:Property=value"` per property change, N = packets delivered before it.
    public var properties: [String] = []
    /// Sizes of variable-size packets in order.
    public var packetSizes: [UInt32] = []
    /// Frames of variable-frame packets in order.
    public var packetFrames: [UInt32] = []
    /// File offsets of packets (variable-size) in order.
    public var packetOffsets: [Int64] = []
    /// Packets in constant-size batches.
    public var constantPackets: Int = 0
    /// Total packets.
    public var packetCount: Int = 0
    /// FNV-1a hash of all packet bytes in order.
    public var dataHash: UInt64 = 0xcbf2_9ce4_8422_2325
    /// Total packet bytes.
    public var dataBytes: Int = 0
    /// The error that ended parsing, if any.
    public var error: String?

    /// Short account for failure messages.
    public var description: String {
        "\(properties.count) property events, \(packetCount) packets (\(constantPackets) constant), \(dataBytes) bytes, hash \(String(dataHash, radix: 16)), error: \(error ?? "none")\n  " + properties.joined(separator: "\n  ")
    }

    /// Where the first difference from `other` lies, for failure messages.
    public func firstDifference(from other: StreamDigest) -> String {
        for (i, (a, b)) in zip(properties, other.properties).enumerated() where a != b { return "property event \(i): \(a) vs \(b)" }
        if properties.count != other.properties.count { return "property event counts \(properties.count) vs \(other.properties.count): \(properties.suffix(2)) vs \(other.properties.suffix(2))" }
        if packetCount != other.packetCount { return "packet counts \(packetCount) vs \(other.packetCount)" }
        for (i, (a, b)) in zip(packetSizes, other.packetSizes).enumerated() where a != b { return "packet \(i) size \(a) vs \(b)" }
        for (i, (a, b)) in zip(packetOffsets, other.packetOffsets).enumerated() where a != b { return "packet \(i) offset \(a) vs \(b)" }
        for (i, (a, b)) in zip(packetFrames, other.packetFrames).enumerated() where a != b { return "packet \(i) frames \(a) vs \(b)" }
        if dataHash != other.dataHash { return "packet data differs" }
        if error != other.error { return "error \(error ?? "none") vs \(other.error ?? "none")" }
        return "no difference"
    }

    /// How to cut the input into parse calls.
    public enum Split: Sendable, CustomStringConvertible {
        /// One call with everything.
        case whole
        /// Calls of `n` bytes.
        case chunks(Int)
        /// Calls of pseudo-random sizes from 1 to `maxChunk`, from `seed`.
        case random(seed: UInt64, maxChunk: Int)

        public var description: String {
            switch self {
            case .whole: "whole"
            case .chunks(let n): "\(n)-byte chunks"
            case .random(let seed, let max): "random splits (seed \(seed), up to \(max))"
            }
        }
    }

    /// Feeds `bytes` to a new stream split as `split` and records what it reports.
    public static func of(_ bytes: [UInt8], split: Split, hint: AudioFileType? = nil) -> StreamDigest {
        var digest = StreamDigest()
        let stream = AudioFileStream(fileTypeHint: hint)
        let handler: (AudioFileStreamEvent) -> Void = { event in
            switch event {
            case .propertyChanged(let p):
                digest.properties.append("\(digest.packetCount):\(p)=\(value(of: p, in: stream))")
            case .packets(let batch):
                digest.add(batch)
            }
        }
        do {
            try bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws in
                var at = 0
                var rng = SplitMix(seed: 0)
                if case .random(let seed, _) = split { rng = SplitMix(seed: seed) }
                while at < raw.count {
                    let n: Int
                    switch split {
                    case .whole: n = raw.count
                    case .chunks(let size): n = size
                    case .random(_, let maxChunk): n = 1 + Int(rng.next() % UInt64(max(1, maxChunk)))
                    }
                    let end = min(raw.count, at + n)
                    try stream.parse(UnsafeRawBufferPointer(rebasing: raw[at..<end]), handler)
                    at = end
                }
            }
            try stream.finish(handler)
        } catch {
            digest.error = "\(error)"
        }
        return digest
    }

    mutating func add(_ batch: AudioPacketBatch) {
        packetCount += batch.packetCount
        dataBytes += batch.data.count
        for b in batch.data { dataHash = (dataHash ^ UInt64(b)) &* 0x100_0000_01b3 }
        if batch.packetDescriptions.isEmpty {
            constantPackets += batch.packetCount
        } else {
            for (i, d) in batch.packetDescriptions.enumerated() {
                packetSizes.append(d.dataByteSize)
                packetFrames.append(d.variableFramesInPacket)
                packetOffsets.append(i < batch.packetFileOffsets.count ? batch.packetFileOffsets[i] : -2)
            }
        }
    }

    /// The value of a property as text.
    public static func value(of p: AudioFileStreamProperty, in s: AudioFileStream) -> String {
        switch p {
        case .readyToProducePackets: "\(s.isReadyToProducePackets)"
        case .fileFormat: "\(s.fileFormat.map(\.description) ?? "nil")"
        case .dataFormat: "\(s.dataFormat.map(\.description) ?? "nil")"
        case .formatList: "\(s.formatList.map { "\($0.format)" })"
        case .magicCookieData: "\(s.magicCookie ?? [])"
        case .audioDataByteCount: "\(s.audioDataByteCount.map(String.init) ?? "nil")"
        case .audioDataPacketCount: "\(s.audioDataPacketCount.map(String.init) ?? "nil")"
        case .maximumPacketSize: "\(s.maximumPacketSize)"
        case .dataOffset: "\(s.dataOffset.map(String.init) ?? "nil")"
        case .channelLayout: "\(s.channelLayout.map(\.description) ?? "nil")"
        case .packetTableInfo: "\(s.packetTableInfo.map { "\($0.numberValidFrames)+\($0.primingFrames)+\($0.remainderFrames)" } ?? "nil")"
        case .packetSizeUpperBound: "\(s.packetSizeUpperBound)"
        case .averageBytesPerPacket: "\(s.averageBytesPerPacket)"
        case .bitRate: "\(s.bitRate)"
        case .infoDictionary: "\(s.infoDictionary.sorted { $0.key < $1.key })"
        default: ""
        }
    }
}

/// A small deterministic random generator (SplitMix64) for reproducible splits and fuzzing.
public struct SplitMix: Sendable {
    private var state: UInt64
    /// Creates a generator from a seed.
    public init(seed: UInt64) { state = seed }
    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
