// The shared body of every fuzz target. Compiled into one module together with the OATCore
// and OATFiles sources (see Fuzz/build.sh), so it can reach internal API.
//
// For one input it:
//  1. feeds the bytes whole to a new AudioFileStream, then calls finish;
//  2. feeds the same bytes to a second stream split at points derived from a hash of the bytes;
//  3. traps when the two runs reported different things (split-invariance);
//  4. once the format is known, seeks both streams to a packet derived from the hash, feeds a
//     few bytes from the returned offset with the discontinuity flag (whole to one stream,
//     split to the other) and compares again.
// AudioError is the normal way to reject bad input; anything else (trap, sanitizer report,
// hang, leak, huge allocation) is a finding.

/// The container families, one fuzz target each.
enum FuzzFamily: String {
    case mpeg, wav, aiff, caf, au, flac, ogg, mp4, any

    /// The file type hint given to the stream. MPEG audio has no magic number, so its target
    /// picks one of the four MPEG hints from the input hash.
    func hint(hash: UInt64) -> AudioFileType? {
        switch self {
        case .mpeg:
            let hints: [AudioFileType] = [.mp3, .mp2, .mp1, .aacADTS]
            return hints[Int(hash % UInt64(hints.count))]
        case .wav: return .wave
        case .aiff: return .aiff
        case .caf: return .caf
        case .au: return .next
        case .flac: return .flac
        case .ogg: return .ogg
        case .mp4: return .m4a
        case .any: return nil
        }
    }
}

/// Deterministic 64-bit generator (splitmix-style) seeded from the input hash.
struct FuzzRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var x = state
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        return x ^ (x >> 31)
    }

    /// A chunk size: mostly tiny (to cut every header field), sometimes medium or large.
    mutating func chunkSize() -> Int {
        let r = next()
        switch r & 7 {
        case 0, 1: return 1
        case 2, 3: return 1 + Int((r >> 8) % 16)
        case 4, 5: return 1 + Int((r >> 8) % 600)
        default: return 1 + Int((r >> 8) % 9000)
        }
    }
}

/// FNV-1a over bytes.
func fuzzHash(_ bytes: UnsafeRawBufferPointer, _ start: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
    var h = start
    for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
    return h
}

/// Everything a stream reported, in a form that does not depend on how the input was split
/// (batch boundaries are not recorded; packets are).
struct FuzzDigest: Equatable {
    /// `"packetsBefore:Property=value"` per property change, and markers for packet-index jumps
    /// and non-contiguous constant-size runs.
    var records: [String] = []
    var packetSizes: [UInt32] = []
    var packetFrames: [UInt32] = []
    var packetOffsets: [Int64] = []
    var packetCount: Int64 = 0
    var dataBytes = 0
    var dataHash: UInt64 = 0xcbf2_9ce4_8422_2325
    var error: String?

    private var nextIndex: Int64?
    private var nextConstantOffset: Int64?
    private var sawFirstBatch = false
    /// Set when the first batch after a seek must start at this packet.
    var expectSeekStart: Int64?

    static func == (a: FuzzDigest, b: FuzzDigest) -> Bool {
        a.records == b.records && a.packetSizes == b.packetSizes && a.packetFrames == b.packetFrames
            && a.packetOffsets == b.packetOffsets && a.packetCount == b.packetCount
            && a.dataBytes == b.dataBytes && a.dataHash == b.dataHash && a.error == b.error
    }

    mutating func property(_ p: AudioFileStreamProperty, _ stream: AudioFileStream) {
        records.append("\(packetCount):\(p)=\(fuzzValue(of: p, in: stream))")
    }

    mutating func packets(_ batch: AudioPacketBatch, _ stream: AudioFileStream) {
        checkBatch(batch, stream)
        if !sawFirstBatch, let start = expectSeekStart {
            if !batch.isDiscontinuous || batch.firstPacketIndex != start {
                fuzzFail("first batch after seek: discontinuous \(batch.isDiscontinuous), first packet \(batch.firstPacketIndex), seek said \(start)")
            }
        }
        sawFirstBatch = true
        if let expected = nextIndex, batch.firstPacketIndex != expected {
            records.append("\(packetCount):index jump \(expected)->\(batch.firstPacketIndex)")
        }
        nextIndex = batch.firstPacketIndex + Int64(batch.packetCount)
        packetCount += Int64(batch.packetCount)
        dataBytes += batch.data.count
        batch.data.withUnsafeBytes { dataHash = fuzzHash($0, dataHash) }
        if batch.packetDescriptions.isEmpty {
            if nextConstantOffset != batch.fileOffset {
                records.append("\(packetCount - Int64(batch.packetCount)):constant run at \(batch.fileOffset)")
            }
            nextConstantOffset = batch.fileOffset + Int64(batch.data.count)
        } else {
            nextConstantOffset = nil
            for (i, d) in batch.packetDescriptions.enumerated() {
                packetSizes.append(d.dataByteSize)
                packetFrames.append(d.variableFramesInPacket)
                packetOffsets.append(batch.packetFileOffsets[i])
            }
        }
    }

    /// Invariants of one batch (the public API promises them, whatever the input).
    private func checkBatch(_ b: AudioPacketBatch, _ stream: AudioFileStream) {
        guard b.packetCount > 0 else { fuzzFail("empty packet batch delivered") }
        guard b.firstPacketIndex >= 0 else { fuzzFail("negative packet index \(b.firstPacketIndex)") }
        if b.packetDescriptions.isEmpty {
            guard b.data.count % b.packetCount == 0 else {
                fuzzFail("constant-size batch of \(b.packetCount) packets holds \(b.data.count) bytes")
            }
            if let bpp = stream.dataFormat?.bytesPerPacket, bpp > 0, b.data.count != b.packetCount * Int(bpp) {
                fuzzFail("constant-size batch: \(b.packetCount) packets of \(bpp) bytes but \(b.data.count) bytes")
            }
            guard b.fileOffset >= 0 else { fuzzFail("constant-size batch at file offset \(b.fileOffset)") }
        } else {
            guard b.packetDescriptions.count == b.packetCount, b.packetFileOffsets.count == b.packetCount else {
                fuzzFail("batch of \(b.packetCount) packets has \(b.packetDescriptions.count) descriptions, \(b.packetFileOffsets.count) offsets")
            }
            var end: Int64 = 0
            for d in b.packetDescriptions {
                guard d.startOffset == end else { fuzzFail("packet description starts at \(d.startOffset), expected \(end)") }
                end += Int64(d.dataByteSize)
            }
            guard end == Int64(b.data.count) else { fuzzFail("packet descriptions cover \(end) of \(b.data.count) bytes") }
            for o in b.packetFileOffsets where o < -1 { fuzzFail("packet file offset \(o)") }
        }
    }

    func firstDifference(from o: FuzzDigest) -> String {
        for (i, (a, b)) in zip(records, o.records).enumerated() where a != b { return "record \(i): \(a) | \(b)" }
        if records.count != o.records.count { return "record counts \(records.count) | \(o.records.count); tails \(records.suffix(2)) | \(o.records.suffix(2))" }
        if packetCount != o.packetCount { return "packet counts \(packetCount) | \(o.packetCount)" }
        for (i, (a, b)) in zip(packetSizes, o.packetSizes).enumerated() where a != b { return "packet \(i) size \(a) | \(b)" }
        for (i, (a, b)) in zip(packetOffsets, o.packetOffsets).enumerated() where a != b { return "packet \(i) offset \(a) | \(b)" }
        for (i, (a, b)) in zip(packetFrames, o.packetFrames).enumerated() where a != b { return "packet \(i) frames \(a) | \(b)" }
        if dataBytes != o.dataBytes || dataHash != o.dataHash { return "packet data differs (\(dataBytes) | \(o.dataBytes) bytes)" }
        if error != o.error { return "error \(error ?? "none") | \(o.error ?? "none")" }
        return "no difference"
    }
}

/// A property's current value as text.
func fuzzValue(of p: AudioFileStreamProperty, in s: AudioFileStream) -> String {
    switch p {
    case .readyToProducePackets: return "\(s.isReadyToProducePackets)"
    case .fileFormat: return String(describing: s.fileFormat)
    case .dataFormat: return String(describing: s.dataFormat)
    case .formatList: return String(describing: s.formatList)
    case .magicCookieData: return String(describing: s.magicCookie)
    case .audioDataByteCount: return String(describing: s.audioDataByteCount)
    case .audioDataPacketCount: return String(describing: s.audioDataPacketCount)
    case .maximumPacketSize: return "\(s.maximumPacketSize)"
    case .dataOffset: return String(describing: s.dataOffset)
    case .channelLayout: return String(describing: s.channelLayout)
    case .packetTableInfo: return String(describing: s.packetTableInfo)
    case .packetSizeUpperBound: return "\(s.packetSizeUpperBound)"
    case .averageBytesPerPacket: return "\(s.averageBytesPerPacket)"
    case .bitRate: return "\(s.bitRate)"
    case .infoDictionary: return "\(s.infoDictionary.sorted { $0.key < $1.key })"
    case .packetToFrame, .frameToPacket, .packetToByte, .byteToPacket: return ""
    }
}

/// Stops the fuzzer with a message (libFuzzer saves the input as a crash).
func fuzzFail(_ message: String) -> Never {
    fatalError("fuzz invariant: \(message)")
}

/// A stream with the digest of what it reported.
final class FuzzRun {
    let stream: AudioFileStream
    var digest = FuzzDigest()

    init(hint: AudioFileType?) { stream = AudioFileStream(fileTypeHint: hint) }

    private func handle(_ e: AudioFileStreamEvent) {
        switch e {
        case .propertyChanged(let p): digest.property(p, stream)
        case .packets(let b): digest.packets(b, stream)
        }
    }

    /// Feeds `bytes` in chunks (nil: whole), the first with `flags`, then finishes.
    func feed(_ bytes: UnsafeRawBufferPointer, split: inout FuzzRandom?, flags: AudioFileStreamParseFlags = []) {
        do throws(AudioError) {
            var at = 0
            var first = true
            repeat {
                let n = split?.chunkSize() ?? bytes.count
                let end = min(bytes.count, at + n)
                try stream.parse(UnsafeRawBufferPointer(rebasing: bytes[at..<end]), flags: first ? flags : []) { handle($0) }
                first = false
                at = end
            } while at < bytes.count
            try stream.finish { handle($0) }
        } catch {
            digest.error = error.description
        }
    }
}

enum FuzzHarness {
    static func run(_ data: UnsafeRawBufferPointer, family: FuzzFamily) {
        let hash = fuzzHash(data)
        let hint = family.hint(hash: hash)

        let whole = FuzzRun(hint: hint)
        var noSplit: FuzzRandom? = nil
        whole.feed(data, split: &noSplit)

        let split = FuzzRun(hint: hint)
        var rng: FuzzRandom? = FuzzRandom(seed: hash)
        split.feed(data, split: &rng)

        if whole.digest != split.digest {
            fuzzFail("split run differs from whole run (\(family), hint \(hint.map(\.description) ?? "none")): \(whole.digest.firstDifference(from: split.digest))")
        }
        queries(whole.stream, hash: hash)

        // Seek: only once the stream knows its format and has not failed.
        guard whole.digest.error == nil, whole.stream.dataFormat != nil else { return }
        var r = FuzzRandom(seed: hash ^ 0x5EE_C0FF_EE)
        let known = whole.stream.audioDataPacketCount ?? whole.digest.packetCount
        let target: Int64
        switch r.next() % 8 {
        case 0: target = known + Int64(r.next() % 4)                  // at or just past the end
        case 1: target = 0
        default: target = Int64(r.next() % UInt64(max(1, known) + 1))
        }
        let a = seek(whole, to: target)
        let b = seek(split, to: target)
        guard a == b else { fuzzFail("seek to packet \(target) differs between runs: \(String(describing: a)) | \(String(describing: b))") }
        guard let result = a else { return }
        if result.byteOffset < 0 || result.packetIndex < 0 || result.packetIndex > target {
            fuzzFail("seek to packet \(target) returned \(result)")
        }
        // A few bytes after the seek point, with the discontinuity flag.
        let start = Int(clamping: result.byteOffset)
        let tail: UnsafeRawBufferPointer
        if start <= data.count {
            let length = 1 + Int(r.next() % 8192)
            tail = UnsafeRawBufferPointer(rebasing: data[start..<min(data.count, start + length)])
        } else {
            tail = UnsafeRawBufferPointer(start: nil, count: 0)
        }
        whole.digest = FuzzDigest()
        whole.digest.expectSeekStart = result.packetIndex
        split.digest = FuzzDigest()
        split.digest.expectSeekStart = result.packetIndex
        whole.feed(tail, split: &noSplit, flags: .discontinuity)
        var rng2: FuzzRandom? = FuzzRandom(seed: hash &+ 1)
        split.feed(tail, split: &rng2, flags: .discontinuity)
        if whole.digest != split.digest {
            fuzzFail("after seek to packet \(target) (byte \(result.byteOffset)), split run differs: \(whole.digest.firstDifference(from: split.digest))")
        }
    }

    private static func seek(_ run: FuzzRun, to packet: Int64) -> AudioFileStreamSeekResult? {
        do { return try run.stream.seek(toPacket: packet) } catch { return nil }
    }

    /// The packet/frame/byte conversions with in-range arguments (must not trap).
    private static func queries(_ s: AudioFileStream, hash: UInt64) {
        guard s.dataFormat != nil else { return }
        let count = max(0, s.audioDataPacketCount ?? 0) // a file may state up to 2^63-1 packets
        let limit = count > (Int64.max - 16) / 2 ? Int64.max : count * 2 + 16
        let packet = Int64(hash % UInt64(limit))
        _ = s.frame(forPacket: packet)
        _ = s.packet(forFrame: packet &* 7)
        _ = s.byteOffset(forPacket: packet)
        _ = s.packet(forByteOffset: packet &* 13)
        _ = s.bitRate
        _ = s.averageBytesPerPacket
        _ = s.packetSizeUpperBound
        _ = s.formatList
    }
}
