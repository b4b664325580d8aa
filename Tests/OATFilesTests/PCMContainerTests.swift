import OATCore
import OATTestSupport
import Testing
@testable import OATFiles

// Hand-made WAV, AIFF and CAF inputs for the chunked-container parsers.

// MARK: Builders

private func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
private func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }
private func le64(_ v: Int) -> [UInt8] { (0..<8).map { UInt8(v >> (8 * $0) & 0xFF) } }
private func be16(_ v: Int) -> [UInt8] { le16(v).reversed() }
private func be32(_ v: Int) -> [UInt8] { le32(v).reversed() }
private func be64(_ v: Int) -> [UInt8] { le64(v).reversed() }
private func cc(_ s: String) -> [UInt8] { Array(s.utf8) }

private func riffChunk(_ id: String, _ body: [UInt8], big: Bool = false) -> [UInt8] {
    cc(id) + (big ? be32(body.count) : le32(body.count)) + body + (body.count & 1 == 1 ? [0] : [])
}

private func wav(_ chunks: [UInt8], magic: String = "RIFF", big: Bool = false) -> [UInt8] {
    cc(magic) + (big ? be32(chunks.count + 4) : le32(chunks.count + 4)) + cc("WAVE") + chunks
}

private func fmtPCM(tag: Int = 1, channels: Int, rate: Int, blockAlign: Int, bits: Int, big: Bool = false, ext: [UInt8]? = nil) -> [UInt8] {
    let w16 = big ? be16 : le16, w32 = big ? be32 : le32
    var b = w16(tag) + w16(channels) + w32(rate) + w32(rate * blockAlign) + w16(blockAlign) + w16(bits)
    if let ext { b += w16(ext.count) + ext }
    return riffChunk("fmt ", b, big: big)
}

private let pcmGUIDSuffix: [UInt8] = [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]

private func extensible(validBits: Int, mask: Int, subformat: Int = 1) -> [UInt8] {
    le16(validBits) + le32(mask) + le32(subformat) + pcmGUIDSuffix
}

/// 80-bit extended encoding of a positive integer sample rate.
private func float80(_ rate: Int) -> [UInt8] {
    let e = Int.bitWidth - 1 - rate.leadingZeroBitCount
    let mantissa = UInt64(rate) << UInt64(63 - e)
    return be16(16383 + e) + (0..<8).map { UInt8(truncatingIfNeeded: mantissa >> (56 - 8 * UInt64($0))) }
}

private func iffChunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
    cc(id) + be32(body.count) + body + (body.count & 1 == 1 ? [0] : [])
}

private func aiff(_ chunks: [UInt8], aifc: Bool = false) -> [UInt8] {
    cc("FORM") + be32(chunks.count + 4) + cc(aifc ? "AIFC" : "AIFF") + chunks
}

private func comm(channels: Int, frames: Int, bits: Int, rate: Int, compression: String? = nil) -> [UInt8] {
    var b = be16(channels) + be32(frames) + be16(bits) + float80(rate)
    if let compression { b += cc(compression) + [0] }
    return iffChunk("COMM", b)
}

private func ssnd(_ samples: [UInt8], offset: Int = 0) -> [UInt8] {
    iffChunk("SSND", be32(offset) + be32(0) + [UInt8](repeating: 0xEE, count: offset) + samples)
}

private func cafChunk(_ type: String, _ body: [UInt8], size: Int? = nil) -> [UInt8] {
    cc(type) + be64(size ?? body.count) + body
}

private func desc(rate: Double, format: String, flags: Int = 0, bytesPerPacket: Int, framesPerPacket: Int, channels: Int, bits: Int) -> [UInt8] {
    cafChunk("desc", be64(Int(rate.bitPattern)) + cc(format) + be32(flags) + be32(bytesPerPacket) + be32(framesPerPacket) + be32(channels) + be32(bits))
}

private func caf(_ chunks: [UInt8]) -> [UInt8] { cc("caff") + be16(1) + be16(0) + chunks }

private func pakt(packets: Int, valid: Int, priming: Int, remainder: Int, entries: [UInt8]) -> [UInt8] {
    cafChunk("pakt", be64(packets) + be64(valid) + be32(priming) + be32(remainder) + entries)
}

/// One MPEG-1 Layer III frame header (128 kbit/s, 44.1 kHz, stereo): 417 bytes.
private func mp3Frame(fill: UInt8) -> [UInt8] { [0xFF, 0xFB, 0x90, 0x64] + [UInt8](repeating: fill, count: 413) }

// MARK: Running

private struct Run {
    let stream: AudioFileStream
    var properties: [AudioFileStreamProperty] = []
    var batches: [AudioPacketBatch] = []
    var error: AudioError?
    var packetCount: Int { batches.reduce(0) { $0 + $1.packetCount } }
    var data: [UInt8] { batches.flatMap(\.data) }
    var sizes: [UInt32] { batches.flatMap { $0.packetDescriptions.map(\.dataByteSize) } }
    var offsets: [Int64] { batches.flatMap(\.packetFileOffsets) }
}

private func run(_ bytes: [UInt8], finish: Bool = true) -> Run {
    var r = Run(stream: AudioFileStream())
    var props: [AudioFileStreamProperty] = [], batches: [AudioPacketBatch] = []
    let handler: (AudioFileStreamEvent) -> Void = { e in
        switch e {
        case .propertyChanged(let p): props.append(p)
        case .packets(let b): batches.append(b)
        }
    }
    do {
        try r.stream.parse(bytes, handler)
        if finish { try r.stream.finish(handler) }
    } catch { r.error = error }
    r.properties = props
    r.batches = batches
    return r
}

/// The same events for whole, 1-byte and 3-byte feeding.
private func expectSplitInvariant(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
    let whole = StreamDigest.of(bytes, split: .whole)
    for split in [StreamDigest.Split.chunks(1), .chunks(3), .random(seed: 9, maxChunk: 17)] {
        let other = StreamDigest.of(bytes, split: split)
        #expect(other == whole, "\(split): \(whole.firstDifference(from: other))", sourceLocation: sourceLocation)
    }
}

// MARK: WAV

@Suite struct WAVParserTests {
    @Test func pcm16StereoWithInfoListAfterData() throws {
        let samples = [UInt8](0..<40)
        let list = riffChunk("LIST", cc("INFO") + riffChunk("INAM", cc("Song\0")) + riffChunk("IART", cc("Me\0")) + riffChunk("ITRK", cc("7\0")))
        let file = wav(fmtPCM(channels: 2, rate: 44100, blockAlign: 4, bits: 16) + riffChunk("data", samples) + list)
        let r = run(file)
        #expect(r.error == nil)
        let f = try #require(r.stream.dataFormat)
        #expect(f == .linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 16))
        #expect(f.formatFlags == [.isSignedInteger, .isPacked])
        #expect(r.stream.fileFormat == .wave)
        #expect(r.stream.dataOffset == 44)
        #expect(r.stream.audioDataByteCount == 40)
        #expect(r.stream.audioDataPacketCount == 10)
        #expect(r.packetCount == 10)
        #expect(r.data == samples) // the LIST chunk is not audio
        #expect(r.stream.infoDictionary == [InfoKey.title: "Song", InfoKey.artist: "Me", InfoKey.trackNumber: "7"])
        #expect(Array(r.properties.prefix(2)) == [.fileFormat, .dataFormat])
        #expect(r.properties.contains(.readyToProducePackets))
        expectSplitInvariant(file)
    }

    @Test func rifxBigEndian24Bit() throws {
        let file = wav(fmtPCM(channels: 3, rate: 8000, blockAlign: 9, bits: 24, big: true) + riffChunk("data", [UInt8](repeating: 1, count: 45), big: true), magic: "RIFX", big: true)
        let r = run(file)
        let f = try #require(r.stream.dataFormat)
        #expect(f.formatFlags == [.isSignedInteger, .isPacked, .isBigEndian])
        #expect(f.bytesPerPacket == 9 && f.bitsPerChannel == 24)
        #expect(r.packetCount == 5)
        #expect(r.stream.dataOffset == 44)
        expectSplitInvariant(file)
    }

    @Test func rf64TakesDataSizeFromDS64() throws {
        let ds64 = riffChunk("ds64", le64(0) + le64(8) + le64(4) + le32(0))
        let file = cc("RF64") + le32(-1 & 0xFFFF_FFFF) + cc("WAVE") + ds64 + fmtPCM(channels: 1, rate: 8000, blockAlign: 2, bits: 16)
            + cc("data") + le32(0xFFFF_FFFF) + [1, 2, 3, 4, 5, 6, 7, 8] + riffChunk("junk", [9, 9])
        let r = run(file)
        #expect(r.error == nil)
        #expect(r.stream.fileFormat == .rf64)
        #expect(r.stream.audioDataByteCount == 8)
        #expect(r.packetCount == 4)
        #expect(r.data == [1, 2, 3, 4, 5, 6, 7, 8])
        expectSplitInvariant(file)
    }

    @Test func extensibleTwentyBitsInThreeBytesWithLayout() throws {
        let fmt = fmtPCM(tag: 0xFFFE, channels: 6, rate: 48000, blockAlign: 18, bits: 24, ext: extensible(validBits: 20, mask: 0x60F))
        let file = wav(fmt + riffChunk("data", [UInt8](repeating: 0, count: 36)))
        let r = run(file)
        let f = try #require(r.stream.dataFormat)
        #expect(f.bitsPerChannel == 20 && f.bytesPerFrame == 18)
        #expect(f.formatFlags == [.isSignedInteger, .isAlignedHigh])
        #expect(r.stream.channelLayout == ChannelLayout(tag: .mpeg_5_1_A))
        #expect(r.packetCount == 2)
    }

    @Test func channelMasks() {
        #expect(channelLayout(fromMask: 0x4, channels: 1) == ChannelLayout(tag: .mono))
        #expect(channelLayout(fromMask: 0x3, channels: 2) == ChannelLayout(tag: .stereo))
        #expect(channelLayout(fromMask: 0x3F, channels: 6) == ChannelLayout(tag: .mpeg_5_1_A))
        #expect(channelLayout(fromMask: 0x103, channels: 3) == ChannelLayout(tag: .useChannelBitmap, bitmap: AudioChannelBitmap(rawValue: 0x103)))
        #expect(channelLayout(fromMask: 0x3, channels: 3) == nil)
        #expect(channelLayout(fromMask: 0, channels: 2) == nil)
    }

    @Test func extensibleFloat64AndUnsigned8() throws {
        let f64 = wav(fmtPCM(tag: 0xFFFE, channels: 2, rate: 48000, blockAlign: 16, bits: 64, ext: extensible(validBits: 64, mask: 3, subformat: 3)) + riffChunk("data", [UInt8](repeating: 0, count: 32)))
        let r = run(f64)
        #expect(r.stream.dataFormat?.formatFlags == [.isFloat, .isPacked])
        #expect(r.stream.dataFormat?.bitsPerChannel == 64)
        let u8 = wav(fmtPCM(channels: 1, rate: 8000, blockAlign: 1, bits: 8) + riffChunk("data", [0x80, 0x81, 0x7F]))
        let r8 = run(u8)
        #expect(r8.stream.dataFormat?.formatFlags == [.isPacked])
        #expect(r8.packetCount == 3)
        // The odd data chunk's pad byte is not audio.
        #expect(r8.data == [0x80, 0x81, 0x7F])
    }

    @Test func imaAndMSADPCM() throws {
        let ima = wav(fmtPCM(tag: 0x11, channels: 2, rate: 44100, blockAlign: 1024, bits: 4, ext: le16(1017)) + riffChunk("data", [UInt8](repeating: 0, count: 2048 + 100)))
        let r = run(ima)
        let f = try #require(r.stream.dataFormat)
        #expect(f.formatID == .dviIntelIMA)
        #expect(f.bytesPerPacket == 1024 && f.framesPerPacket == 1017 && f.bytesPerFrame == 0 && f.bitsPerChannel == 0)
        #expect(r.packetCount == 2) // the 100-byte fragment is not a packet
        let msExt = le16(1012) + le16(7) + [UInt8](repeating: 3, count: 28)
        let ms = wav(fmtPCM(tag: 2, channels: 2, rate: 44100, blockAlign: 1024, bits: 4, ext: msExt) + riffChunk("data", [UInt8](repeating: 0, count: 1024)))
        let rm = run(ms)
        #expect(rm.stream.dataFormat?.formatID == .microsoftADPCM)
        #expect(rm.stream.dataFormat?.framesPerPacket == 1012)
        #expect(rm.stream.magicCookie == msExt)
        #expect(rm.packetCount == 1)
    }

    @Test func mpegLayer3FramesAreSplit() throws {
        let frames = mp3Frame(fill: 1) + mp3Frame(fill: 2) + mp3Frame(fill: 3)
        let ext = le16(1) + le32(2) + le16(417) + le16(1) + le16(0)
        let file = wav(fmtPCM(tag: 0x55, channels: 2, rate: 44100, blockAlign: 1, bits: 0, ext: ext) + riffChunk("data", frames + [0xFF, 0xFB]) + riffChunk("LIST", cc("INFO")))
        let r = run(file)
        #expect(r.error == nil)
        #expect(r.stream.dataFormat?.formatID == .mpegLayer3)
        #expect(r.stream.dataFormat?.framesPerPacket == 1152)
        #expect(r.sizes == [417, 417, 417])
        #expect(r.offsets == [58, 475, 892])
        expectSplitInvariant(file)
    }

    @Test func oddChunkPaddingAndZeroSizeStreamingData() throws {
        // An odd-sized unknown chunk before fmt; data size 0 with nothing after: until the end.
        let file = wav(riffChunk("junk", [1, 2, 3]) + fmtPCM(channels: 1, rate: 8000, blockAlign: 2, bits: 16)) + cc("data") + le32(0) + [1, 2, 3, 4, 5, 6]
        let r = run(file)
        #expect(r.error == nil)
        #expect(r.stream.dataOffset == 56)
        #expect(r.stream.audioDataByteCount == nil)
        #expect(r.packetCount == 3)
        expectSplitInvariant(file)
        // Size 0 followed by another chunk: empty data.
        let empty = wav(fmtPCM(channels: 1, rate: 8000, blockAlign: 2, bits: 16) + riffChunk("data", []) + riffChunk("LIST", cc("INFO")))
        let e = run(empty)
        #expect(e.stream.audioDataByteCount == 0)
        #expect(e.packetCount == 0)
    }

    @Test func truncatedDataKeepsWholePackets() throws {
        var file = wav(fmtPCM(channels: 1, rate: 8000, blockAlign: 4, bits: 32) + riffChunk("data", [UInt8](repeating: 7, count: 400)))
        file.removeLast(390)
        let r = run(file)
        #expect(r.error == nil)
        #expect(r.stream.audioDataByteCount == 400)
        #expect(r.packetCount == 2)
    }

    @Test func errorsNameTheProblemAndOffset() throws {
        let noFmt = run(wav(riffChunk("data", [0, 0])))
        #expect(noFmt.error?.code == .invalidData)
        #expect(noFmt.error?.offset == 12)
        #expect(noFmt.error?.message.contains("before the fmt") == true)

        let badTag = run(wav(fmtPCM(tag: 0x1234, channels: 1, rate: 8000, blockAlign: 2, bits: 16) + riffChunk("data", [0, 0])))
        #expect(badTag.error?.code == .unsupportedFormat)

        let noChannels = run(wav(fmtPCM(channels: 0, rate: 8000, blockAlign: 2, bits: 16)))
        #expect(noChannels.error?.code == .invalidData)
        #expect(noChannels.error?.offset == 22)

        let cut = run(Array(wav(fmtPCM(channels: 1, rate: 8000, blockAlign: 2, bits: 16)).prefix(14)))
        #expect(cut.error?.code == .invalidData)
        #expect(cut.error?.message.contains("ends inside a chunk") == true)

        let header = run(Array(cc("RIFF") + le32(4) + cc("WAVE")))
        #expect(header.error?.message.contains("before a data chunk") == true)
    }

    @Test func seekIsExactForPCM() throws {
        let file = wav(fmtPCM(channels: 2, rate: 44100, blockAlign: 4, bits: 16) + riffChunk("data", [UInt8](repeating: 0, count: 400)))
        let r = run(file)
        let s = try r.stream.seek(toPacket: 10)
        #expect(s.byteOffset == 84 && s.dataByteOffset == 40 && !s.isEstimated && s.packetIndex == 10)
        var batches: [AudioPacketBatch] = []
        try r.stream.parse(Array(file[84...]), flags: .discontinuity) { if case .packets(let b) = $0 { batches.append(b) } }
        #expect(batches.first?.firstPacketIndex == 10)
        #expect(batches.first?.isDiscontinuous == true)
        #expect(batches.reduce(0) { $0 + $1.packetCount } == 90)
    }
}

// MARK: AIFF

@Suite struct AIFFParserTests {
    @Test func aiff16WithTextChunksAndOddPadding() throws {
        let samples = [UInt8](0..<16)
        let file = aiff(comm(channels: 2, frames: 4, bits: 16, rate: 44100) + iffChunk("NAME", cc("Pluck")) + iffChunk("AUTH", cc("Someone")) + ssnd(samples, offset: 2) + iffChunk("ANNO", cc("note")))
        let r = run(file)
        #expect(r.error == nil)
        let f = try #require(r.stream.dataFormat)
        #expect(f == .linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 16, isBigEndian: true))
        #expect(r.stream.fileFormat == .aiff)
        #expect(r.stream.audioDataPacketCount == 4)
        #expect(r.stream.dataOffset == Int64(86))
        #expect(r.data == samples)
        #expect(r.stream.infoDictionary == [InfoKey.title: "Pluck", InfoKey.artist: "Someone", InfoKey.comments: "note"])
        expectSplitInvariant(file)
    }

    @Test func aiff8BitIsSigned() throws {
        let r = run(aiff(comm(channels: 1, frames: 3, bits: 8, rate: 8000) + ssnd([1, 2, 3])))
        #expect(r.stream.dataFormat?.formatFlags == [.isSignedInteger, .isPacked])
        #expect(r.packetCount == 3)
    }

    @Test func aifcCompressionTypes() throws {
        func format(_ c: String, bits: Int = 16) -> AudioStreamBasicDescription? {
            run(aiff(comm(channels: 2, frames: 1, bits: bits, rate: 8000, compression: c) + ssnd([UInt8](repeating: 0, count: 68)), aifc: true)).stream.dataFormat
        }
        #expect(format("sowt")?.formatFlags == [.isSignedInteger, .isPacked])
        #expect(format("fl32")?.formatFlags == [.isFloat, .isPacked, .isBigEndian])
        #expect(format("FL64")?.bitsPerChannel == 64)
        #expect(format("ulaw")?.formatID == .ulaw)
        #expect(format("alaw")?.bytesPerPacket == 2)
        #expect(format("raw ", bits: 8)?.formatFlags == [.isPacked])
        let ima = format("ima4")
        #expect(ima?.formatID == .appleIMA4 && ima?.bytesPerPacket == 68 && ima?.framesPerPacket == 64)
        let bad = run(aiff(comm(channels: 2, frames: 1, bits: 16, rate: 8000, compression: "GSM ") + ssnd([]), aifc: true))
        #expect(bad.error?.code == .unsupportedFormat)
    }

    @Test func chanChunkGivesLayout() throws {
        let chan = iffChunk("CHAN", be32(Int(ChannelLayoutTag.mpeg_5_1_C.rawValue)) + be32(0) + be32(0))
        let r = run(aiff(chan + comm(channels: 6, frames: 1, bits: 16, rate: 44100) + ssnd([UInt8](repeating: 0, count: 12))))
        #expect(r.stream.channelLayout == ChannelLayout(tag: .mpeg_5_1_C))
    }

    @Test func ssndBeforeCommIsReachedBySeeking() throws {
        let samples = [UInt8](0..<8)
        let file = aiff(ssnd(samples) + comm(channels: 1, frames: 4, bits: 16, rate: 8000))
        let r = run(file)
        #expect(r.error == nil)
        #expect(r.packetCount == 0)
        #expect(r.stream.isNotOptimized)
        #expect(r.stream.audioDataPacketCount == 4)
        let s = try r.stream.seek(toPacket: 0)
        #expect(s.byteOffset == 28 && !s.isEstimated)
        var data: [UInt8] = []
        try r.stream.parse(Array(file[28...]), flags: .discontinuity) { if case .packets(let b) = $0 { data += b.data } }
        #expect(data == samples)
    }

    @Test func errors() throws {
        let noComm = run(aiff([]))
        #expect(noComm.error?.code == .invalidData)
        let badRate = run(aiff(iffChunk("COMM", be16(1) + be32(1) + be16(16) + [0x7F, 0xFF] + [UInt8](repeating: 0, count: 8)) + ssnd([0, 0])))
        #expect(badRate.error?.code == .invalidData)
        #expect(badRate.error?.offset == 28)
        let form = run(cc("FORM") + be32(4) + cc("ILBM"))
        #expect(form.error?.code == .unsupportedFormat)
    }
}

// MARK: CAF

@Suite struct CAFParserTests {
    @Test func lpcmStreamingDataSizeMinusOne() throws {
        let file = caf(desc(rate: 44100, format: "lpcm", flags: 0, bytesPerPacket: 4, framesPerPacket: 1, channels: 2, bits: 16)
                       + cafChunk("data", be32(0) + [UInt8](0..<10), size: -1))
        let r = run(file)
        #expect(r.error == nil)
        let f = try #require(r.stream.dataFormat)
        #expect(f == .linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 16, isBigEndian: true))
        #expect(r.stream.dataOffset == Int64(68))
        #expect(r.stream.audioDataByteCount == nil)
        #expect(r.packetCount == 2)
        expectSplitInvariant(file)
    }

    @Test func lpcmLittleEndianFloat() throws {
        let r = run(caf(desc(rate: 48000, format: "lpcm", flags: 3, bytesPerPacket: 8, framesPerPacket: 1, channels: 1, bits: 64) + cafChunk("data", be32(0) + [UInt8](repeating: 0, count: 16))))
        #expect(r.stream.dataFormat?.formatFlags == [.isFloat, .isPacked])
        #expect(r.stream.audioDataPacketCount == 2)
    }

    /// An ALAC-like stream: 3 packets of 5, 200 and 7 bytes (sizes as varints).
    private func vbrFile(paktFirst: Bool) -> [UInt8] {
        let d = desc(rate: 44100, format: "alac", flags: 1, bytesPerPacket: 0, framesPerPacket: 4096, channels: 2, bits: 0)
        let config = [UInt8](repeating: 0x11, count: 24)
        let kuki = cafChunk("kuki", [0, 0, 0, 0x0C] + cc("frma") + cc("alac") + [0, 0, 0, 0x24] + cc("alac") + [0, 0, 0, 0] + config + [0, 0, 0, 8, 0, 0, 0, 0])
        let table = pakt(packets: 3, valid: 10000, priming: 0, remainder: 2288, entries: [5, 0x81, 0x48, 7])
        let audio = [UInt8](repeating: 1, count: 5) + [UInt8](repeating: 2, count: 200) + [UInt8](repeating: 3, count: 7)
        let data = cafChunk("data", be32(1) + audio)
        let info = cafChunk("info", be32(1) + cc("title\0A Title\0"))
        return caf(d + kuki + (paktFirst ? table + data : data + table) + info)
    }

    @Test func vbrWithPacketTableFirst() throws {
        let file = vbrFile(paktFirst: true)
        let r = run(file)
        #expect(r.error == nil)
        #expect(r.sizes == [5, 200, 7])
        let dataOffset = try #require(r.stream.dataOffset)
        #expect(r.offsets == [dataOffset, dataOffset + 5, dataOffset + 205])
        #expect(r.stream.audioDataPacketCount == 3)
        #expect(r.stream.packetTableInfo == AudioFilePacketTableInfo(numberValidFrames: 10000, primingFrames: 0, remainderFrames: 2288))
        #expect(r.stream.magicCookie == [0, 0, 0, 0x24] + cc("alac") + [0, 0, 0, 0] + [UInt8](repeating: 0x11, count: 24))
        #expect(r.stream.infoDictionary == [InfoKey.title: "A Title"])
        #expect(!r.stream.isNotOptimized)
        let s = try r.stream.seek(toPacket: 2)
        #expect(s.byteOffset == dataOffset + 205 && s.dataByteOffset == 205 && !s.isEstimated && s.packetIndex == 2)
        var sizes: [UInt32] = []
        var first: Int64 = -1
        try r.stream.parse(Array(file[Int(s.byteOffset)...]), flags: .discontinuity) {
            if case .packets(let b) = $0 { sizes += b.packetDescriptions.map(\.dataByteSize); if first < 0 { first = b.firstPacketIndex } }
        }
        #expect(sizes == [7])
        #expect(first == 2)
        expectSplitInvariant(file)
    }

    @Test func vbrWithPacketTableAfterData() throws {
        let file = vbrFile(paktFirst: false)
        let r = run(file)
        #expect(r.error == nil)
        #expect(r.packetCount == 0)
        #expect(r.stream.isNotOptimized)
        #expect(r.stream.isReadyToProducePackets)
        #expect(r.stream.audioDataPacketCount == 3)
        #expect(r.stream.infoDictionary == [InfoKey.title: "A Title"])
        let s = try r.stream.seek(toPacket: 0)
        let dataOffset = try #require(r.stream.dataOffset)
        #expect(s.byteOffset == dataOffset && !s.isEstimated)
        var sizes: [UInt32] = []
        try r.stream.parse(Array(file[Int(s.byteOffset)...]), flags: .discontinuity) {
            if case .packets(let b) = $0 { sizes += b.packetDescriptions.map(\.dataByteSize) }
        }
        #expect(sizes == [5, 200, 7])
        expectSplitInvariant(file)
    }

    @Test func variableFramesAndSizes() throws {
        let d = desc(rate: 48000, format: "opus", bytesPerPacket: 0, framesPerPacket: 0, channels: 2, bits: 0)
        let table = pakt(packets: 2, valid: 1000, priming: 312, remainder: 8, entries: [3, 0x87, 0x40, 2, 0x83, 0x40])
        let file = caf(d + table + cafChunk("data", be32(0) + [9, 9, 9, 8, 8]))
        let r = run(file)
        #expect(r.error == nil)
        #expect(r.sizes == [3, 2])
        #expect(r.batches.flatMap { $0.packetDescriptions.map(\.variableFramesInPacket) } == [960, 448])
        #expect(r.stream.frame(forPacket: 1) == 960)
        #expect(r.stream.packetTableInfo?.primingFrames == 312)
    }

    @Test func aacCookieIsTheAudioSpecificConfig() throws {
        let asc: [UInt8] = [0x12, 0x10]
        let esds: [UInt8] = [0x03, 0x19, 0x00, 0x00, 0x00, 0x04, 0x11, 0x40, 0x15, 0x00, 0x00, 0x00, 0x00, 0x01, 0xF4, 0x00, 0x00, 0x01, 0xF4, 0x00, 0x05, 0x02] + asc + [0x06, 0x01, 0x02]
        #expect(audioSpecificConfig(fromESDS: esds) == asc)
        let d = desc(rate: 44100, format: "aac ", flags: 2, bytesPerPacket: 0, framesPerPacket: 1024, channels: 2, bits: 0)
        let r = run(caf(d + cafChunk("kuki", esds) + pakt(packets: 1, valid: 1024, priming: 0, remainder: 0, entries: [4]) + cafChunk("data", be32(0) + [1, 2, 3, 4])))
        #expect(r.stream.magicCookie == asc)
        #expect(r.sizes == [4])
        #expect(normalizedALACCookie([UInt8](repeating: 5, count: 24)).count == 36)
    }

    @Test func chanDescriptionsAndBitmap() throws {
        let descriptions = be32(0) + be32(0) + be32(2) + be32(1) + be32(0) + [UInt8](repeating: 0, count: 12) + be32(2) + be32(0) + [UInt8](repeating: 0, count: 12)
        #expect(descriptions.withUnsafeBytes { decodeChannelLayout($0) } == ChannelLayout(tag: .useChannelDescriptions, channelLabels: [.left, .right]))
        let bitmap = be32(0x10000) + be32(0x3) + be32(0)
        #expect(bitmap.withUnsafeBytes { decodeChannelLayout($0) } == ChannelLayout(tag: .useChannelBitmap, bitmap: [AudioChannelBitmap(rawValue: 3)]))
    }

    @Test func errors() throws {
        let d = desc(rate: 44100, format: "alac", bytesPerPacket: 0, framesPerPacket: 4096, channels: 2, bits: 0)
        let shortTable = run(caf(d + pakt(packets: 5, valid: 0, priming: 0, remainder: 0, entries: [1, 2]) + cafChunk("data", be32(0) + [0, 0, 0])))
        #expect(shortTable.error?.code == .invalidData)
        #expect(shortTable.error?.message.contains("pakt") == true)
        let noDesc = run(caf(cafChunk("data", be32(0) + [0, 0])))
        #expect(noDesc.error?.offset == 8)
        let unknownVBR = run(caf(d + cafChunk("data", be32(0) + [0, 0], size: -1)))
        #expect(unknownVBR.error?.code == .unsupportedFormat)
        let badPCM = run(caf(desc(rate: 44100, format: "lpcm", bytesPerPacket: 3, framesPerPacket: 1, channels: 2, bits: 16) + cafChunk("data", be32(0))))
        #expect(badPCM.error?.code == .invalidData)
        let negative = run(caf(cafChunk("free", [], size: -5)))
        #expect(negative.error?.code == .invalidData)
        let tooBig = run(caf(d + cc("pakt") + be64(1 << 40)))
        #expect(tooBig.error?.code == .limitExceeded)
    }
}

// MARK: Robustness

@Suite struct PCMContainerRobustnessTests {
    /// Every prefix and many single-byte corruptions of small files parse without trapping.
    @Test func truncatedAndCorruptedInputsDoNotTrap() {
        let samples: [[UInt8]] = [
            wav(fmtPCM(tag: 0xFFFE, channels: 2, rate: 8000, blockAlign: 4, bits: 16, ext: extensible(validBits: 16, mask: 3)) + riffChunk("data", [UInt8](repeating: 1, count: 16)) + riffChunk("LIST", cc("INFO") + riffChunk("INAM", cc("x")))),
            aiff(comm(channels: 1, frames: 4, bits: 16, rate: 8000, compression: "sowt") + ssnd([UInt8](repeating: 2, count: 8)), aifc: true),
            caf(desc(rate: 44100, format: "alac", bytesPerPacket: 0, framesPerPacket: 0, channels: 2, bits: 0)
                + pakt(packets: 2, valid: 10, priming: 1, remainder: 2, entries: [3, 5, 2, 6]) + cafChunk("data", be32(0) + [1, 2, 3, 4, 5])),
        ]
        var rng = SplitMix(seed: 42)
        for file in samples {
            for n in 0...file.count { _ = StreamDigest.of(Array(file.prefix(n)), split: .whole) }
            for _ in 0..<300 {
                var bad = file
                let i = Int(rng.next() % UInt64(bad.count))
                bad[i] = UInt8(truncatingIfNeeded: rng.next())
                let whole = StreamDigest.of(bad, split: .whole)
                let bytes = StreamDigest.of(bad, split: .chunks(1))
                #expect(whole == bytes)
            }
        }
    }
}
