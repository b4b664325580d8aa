import OATCore
@testable import OATFiles
import Testing

// Small FLAC and Ogg inputs built in code (headers, pages and CRCs computed here).

/// Feeds `bytes` in chunks of `chunk` (0: whole) and returns the events, or the error.
private func events(_ bytes: [UInt8], chunk: Int = 0) -> (events: [AudioFileStreamEvent], error: AudioError?, stream: AudioFileStream) {
    let s = AudioFileStream()
    var all: [AudioFileStreamEvent] = []
    do {
        if chunk == 0 { try s.parse(bytes) { all.append($0) } } else {
            var i = 0
            while i < bytes.count {
                try s.parse(Array(bytes[i..<min(bytes.count, i + chunk)])) { all.append($0) }
                i += chunk
            }
        }
        try s.finish { all.append($0) }
    } catch { return (all, error, s) }
    return (all, nil, s)
}

/// The packets of `events`: bytes, frames and file offset each.
private func packets(_ events: [AudioFileStreamEvent]) -> [(bytes: [UInt8], frames: UInt32, offset: Int64)] {
    var out: [([UInt8], UInt32, Int64)] = []
    for case .packets(let b) in events {
        for (i, d) in b.packetDescriptions.enumerated() {
            let start = Int(d.startOffset)
            out.append((Array(b.data[start..<start + Int(d.dataByteSize)]), d.variableFramesInPacket, b.packetFileOffsets[i]))
        }
    }
    return out
}

private func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

private func vorbisComment(_ fields: [String]) -> [UInt8] {
    var b = le32(3) + Array("abc".utf8) + le32(UInt32(fields.count))
    for f in fields { b += le32(UInt32(f.utf8.count)) + Array(f.utf8) }
    return b
}

// MARK: FLAC builders

private func streamInfo(minBlock: UInt16 = 4096, maxBlock: UInt16 = 4096, maxFrame: UInt32 = 0,
                        rate: UInt32 = 44100, channels: UInt32 = 2, bits: UInt32 = 16, total: UInt64 = 0) -> [UInt8] {
    var b: [UInt8] = [UInt8(minBlock >> 8), UInt8(minBlock & 0xFF), UInt8(maxBlock >> 8), UInt8(maxBlock & 0xFF), 0, 0, 0]
    b += [UInt8(maxFrame >> 16 & 0xFF), UInt8(maxFrame >> 8 & 0xFF), UInt8(maxFrame & 0xFF)]
    let packed = UInt64(rate) << 44 | UInt64(channels - 1) << 41 | UInt64(bits - 1) << 36 | total
    b += (0..<8).map { UInt8(truncatingIfNeeded: packed >> (56 - 8 * UInt64($0))) }
    return b + [UInt8](repeating: 0xAB, count: 16)
}

private func block(_ type: UInt8, last: Bool, _ body: [UInt8]) -> [UInt8] {
    [type | (last ? 0x80 : 0), UInt8(body.count >> 16 & 0xFF), UInt8(body.count >> 8 & 0xFF), UInt8(body.count & 0xFF)] + body
}

/// A frame: header for `blockSize` (4096 by code, else 8-bit explicit), stereo 16-bit, frame
/// number `number`, a payload, and the CRC-16.
private func flacFrame(number: UInt8, blockSize: Int = 4096, payload: [UInt8]) -> [UInt8] {
    var h: [UInt8] = [0xFF, 0xF8, blockSize == 4096 ? 0xC9 : 0x69, 0x18, number]
    if blockSize != 4096 { h.append(UInt8(blockSize - 1)) }
    h.append(h.withUnsafeBytes { flacCRC8($0) })
    let body = h + payload
    let crc = body.withUnsafeBytes { flacCRC16($0) }
    return body + [UInt8(crc >> 8), UInt8(crc & 0xFF)]
}

@Suite struct FLACParserTests {
    static let frames = [flacFrame(number: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8]),
                         flacFrame(number: 1, payload: [9, 10, 11, 12]),
                         flacFrame(number: 2, blockSize: 100, payload: [13, 14])]

    static func file(seekTable: [UInt8] = []) -> [UInt8] {
        var b: [UInt8] = Array("fLaC".utf8)
        b += block(0, last: false, streamInfo(maxFrame: 64, total: 8292))
        if !seekTable.isEmpty { b += block(3, last: false, seekTable) }
        b += block(4, last: false, vorbisComment(["TITLE=Song", "artist=Band", "DATE=1999", "TITLE=Other"]))
        b += block(6, last: false, [UInt8](repeating: 0xEE, count: 300)) // picture, skipped
        b += block(1, last: true, [0, 0, 0, 0])
        return b + frames.joined()
    }

    @Test func formatPacketsAndTags() throws {
        let bytes = Self.file()
        let (ev, error, s) = events(bytes)
        #expect(error == nil)
        let f = try #require(s.dataFormat)
        #expect(f.formatID == .flac && f.sampleRate == 44100 && f.channelsPerFrame == 2)
        // A fixed block size (STREAMINFO 4096...4096): that many frames per packet, as Apple reports.
        #expect(f.formatFlags == .alacSourceBitDepth16 && f.framesPerPacket == 4096 && f.bytesPerPacket == 0 && f.bitsPerChannel == 0)
        #expect(s.magicCookie?.count == 34)
        #expect(s.infoDictionary[InfoKey.title] == "Song" && s.infoDictionary[InfoKey.artist] == "Band" && s.infoDictionary[InfoKey.year] == "1999")
        #expect(s.packetTableInfo == AudioFilePacketTableInfo(numberValidFrames: 8292, primingFrames: 0, remainderFrames: 0))
        let dataOffset = Int64(bytes.count - Self.frames.joined().count)
        #expect(s.dataOffset == dataOffset)
        let p = packets(ev)
        #expect(p.map(\.bytes) == Self.frames)
        #expect(p.map(\.frames) == [4096, 4096, 100])
        #expect(p.map(\.offset) == [dataOffset, dataOffset + Int64(Self.frames[0].count), dataOffset + Int64(Self.frames[0].count + Self.frames[1].count)])
        #expect(s.frame(forPacket: 2) == 8192)
        // Every split gives the same events.
        for chunk in [1, 3, 7] {
            let other = packets(events(bytes, chunk: chunk).events)
            #expect(other.map(\.bytes) == Self.frames && other.map(\.offset) == p.map(\.offset))
        }
    }

    @Test func crcCheckValuesAndSliceBy8() {
        // Standard check values: CRC-8/SMBUS and CRC-16/UMTS of "123456789".
        let check = Array("123456789".utf8)
        #expect(check.withUnsafeBytes { flacCRC8($0) } == 0xF4)
        #expect(check.withUnsafeBytes { flacCRC16($0) } == 0xFEE8)
        #expect(check.withUnsafeBytes { flacCRC16Bytewise($0) } == 0xFEE8)
        // The 8-bytes-per-step CRC-16 equals the byte-by-byte one for every length, start value
        // and alignment (pseudo-random bytes from an LCG).
        var x: UInt32 = 12345
        let data: [UInt8] = (0..<300).map { _ in x = x &* 1_664_525 &+ 1_013_904_223; return UInt8(x >> 24) }
        var mismatches = 0
        data.withUnsafeBytes { all in
            for start: UInt16 in [0, 1, 0x8005, 0xFFFF, 0x1234] {
                for from in 0..<9 {
                    for length in 0...(all.count - from) where length < 40 || length % 7 == 0 {
                        let bytes = UnsafeRawBufferPointer(rebasing: all[from..<from + length])
                        if flacCRC16(bytes, start) != flacCRC16Bytewise(bytes, start) { mismatches += 1 }
                    }
                }
            }
        }
        #expect(mismatches == 0)
        // A frame followed by its CRC-16 checks to 0 both ways.
        let frame = flacFrame(number: 3, payload: Array(data[0..<123]))
        #expect(frame.withUnsafeBytes { flacCRC16($0) } == 0)
    }

    @Test func falseSyncInsideAFrameIsRejected() {
        // Frame 0's payload holds a complete valid header: its CRC-8 checks, but the CRC-16 of
        // the bytes before it does not, so the frame does not end there.
        let fake = Array(flacFrame(number: 7, payload: []).prefix(6))
        let frames = [flacFrame(number: 0, payload: [1, 2] + fake + [3, 4]), flacFrame(number: 1, payload: [5])]
        var b: [UInt8] = Array("fLaC".utf8) + block(0, last: true, streamInfo())
        b += frames.joined()
        #expect(packets(events(b).events).map(\.bytes) == frames)
        #expect(packets(events(b, chunk: 1).events).map(\.bytes) == frames)
    }

    @Test func seekTableGivesExactOffsets() throws {
        var table: [UInt8] = []
        func point(_ sample: UInt64, _ offset: UInt64) -> [UInt8] {
            (0..<8).map { UInt8(truncatingIfNeeded: sample >> (56 - 8 * UInt64($0))) }
                + (0..<8).map { UInt8(truncatingIfNeeded: offset >> (56 - 8 * UInt64($0))) } + [0x10, 0]
        }
        table += point(0, 0) + point(8192, 500) + point(UInt64.max, 0)
        let bytes = Self.file(seekTable: table)
        let header = Array(bytes.prefix(bytes.count - Self.frames.joined().count))
        let s = AudioFileStream()
        _ = try s.parse(header)
        let far = try s.seek(toPacket: 3)
        #expect(far.byteOffset == s.dataOffset! + 500 && !far.isEstimated && far.packetIndex == 2)
        let (_, _, whole) = events(bytes)
        let near = try whole.seek(toPacket: 1)
        #expect(near.byteOffset == whole.dataOffset! + Int64(Self.frames[0].count) && !near.isEstimated && near.packetIndex == 1)
    }

    @Test func badMetadataGivesClearErrors() {
        let noInfo: [UInt8] = Array("fLaC".utf8) + block(4, last: true, vorbisComment([]))
        #expect(events(noInfo).error?.offset == 4)
        let shortInfo: [UInt8] = Array("fLaC".utf8) + block(0, last: true, Array(streamInfo().prefix(20)))
        #expect(events(shortInfo).error?.message.contains("STREAMINFO length 20") == true)
        let cut = Array(Self.file().prefix(30))
        #expect(events(cut).error != nil)
        let zeroBlocks: [UInt8] = Array("fLaC".utf8) + block(0, last: true, streamInfo(minBlock: 0, maxBlock: 0))
        #expect(events(zeroBlocks).error?.message.contains("block sizes") == true)
    }
}

// MARK: Ogg builders

private func oggPage(_ type: UInt8, granule: Int64, serial: UInt32 = 7, sequence: UInt32, lacing: [UInt8], body: [UInt8]) -> [UInt8] {
    var p: [UInt8] = Array("OggS".utf8) + [0, type]
    p += (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: granule) >> (8 * UInt64($0))) }
    p += le32(serial) + le32(sequence) + [0, 0, 0, 0, UInt8(lacing.count)] + lacing + body
    let crc = p.withUnsafeBytes { oggCRC32($0) }
    p[22..<26] = le32(crc)[...]
    return p
}

/// One page holding whole packets.
private func page(_ type: UInt8, granule: Int64, serial: UInt32 = 7, sequence: UInt32, _ packets: [[UInt8]]) -> [UInt8] {
    var lacing: [UInt8] = []
    for p in packets {
        var n = p.count
        while n >= 255 { lacing.append(255); n -= 255 }
        lacing.append(UInt8(n))
    }
    return oggPage(type, granule: granule, serial: serial, sequence: sequence, lacing: lacing, body: Array(packets.joined()))
}

private let opusHead: [UInt8] = Array("OpusHead".utf8) + [1, 2, 0x38, 0x01] + le32(48000) + [0, 0, 0]
private let opusTags: [UInt8] = Array("OpusTags".utf8) + vorbisComment(["TITLE=Opus song"])

@Suite struct OggParserTests {
    /// Opus: 4 packets of 20 ms (TOC 0xFC: CELT 20 ms, one frame), pre-skip 312.
    static func opusFile(serial: UInt32 = 7, corruptSecondAudioPage: Bool = false) -> [UInt8] {
        let audio: [[UInt8]] = (0..<4).map { [0xFC, UInt8($0), 1, 2, 3] }
        var b = page(2, granule: 0, serial: serial, sequence: 0, [opusHead])
        b += page(0, granule: 0, serial: serial, sequence: 1, [opusTags])
        b += page(0, granule: 1920, serial: serial, sequence: 2, Array(audio[0..<2]))
        var second = page(4, granule: 3500, serial: serial, sequence: 3, Array(audio[2..<4]))
        if corruptSecondAudioPage { second[second.count - 1] ^= 0xFF }
        return b + second
    }

    @Test func opusFormatFramesAndTrimming() throws {
        let bytes = Self.opusFile()
        let (ev, error, s) = events(bytes)
        #expect(error == nil)
        let f = try #require(s.dataFormat)
        #expect(f.formatID == .opus && f.sampleRate == 48000 && f.channelsPerFrame == 2 && f.framesPerPacket == 0)
        #expect(s.magicCookie == opusHead)
        #expect(s.infoDictionary[InfoKey.title] == "Opus song")
        let p = packets(ev)
        #expect(p.count == 4 && p.allSatisfy { $0.frames == 960 })
        // 3840 frames: 312 priming, valid to granule 3500, 340 remainder.
        #expect(s.packetTableInfo == AudioFilePacketTableInfo(numberValidFrames: 3500 - 312, primingFrames: 312, remainderFrames: 340))
        for chunk in [1, 5] { #expect(packets(events(bytes, chunk: chunk).events).map(\.bytes) == p.map(\.bytes)) }
    }

    @Test func badCRCPageIsSkipped() {
        let (ev, _, _) = events(Self.opusFile(corruptSecondAudioPage: true))
        #expect(packets(ev).count == 2)
    }

    @Test func packetSpanningPagesHasNoFileOffset() {
        let big = [UInt8](repeating: 0x11, count: 300)
        var b = page(2, granule: 0, sequence: 0, [opusHead]) + page(0, granule: 0, sequence: 1, [opusTags])
        // 255 bytes on one page (lacing 255 = continues), 45 on the next (continued flag).
        b += oggPage(0, granule: -1, sequence: 2, lacing: [255], body: [0xFC] + Array(big[1..<255]))
        b += oggPage(5, granule: 960, sequence: 3, lacing: [45], body: Array(big[255...]))
        let p = packets(events(b).events)
        #expect(p.count == 1 && p[0].offset == -1 && p[0].bytes == [0xFC] + big[1...])
    }

    /// Vorbis headers: block sizes 256/2048, two modes (short, long).
    static func vorbisHeaders() -> [[UInt8]] {
        let id: [UInt8] = [1] + Array("vorbis".utf8) + le32(0) + [2] + le32(44100) + le32(0) + le32(128000) + le32(0) + [0xB8, 1]
        let comment: [UInt8] = [3] + Array("vorbis".utf8) + vorbisComment(["ARTIST=V"]) + [1]
        var bits: [Bool] = Array(repeating: true, count: 16) // stands for codebooks etc.
        func put(_ v: Int, _ n: Int) { for k in 0..<n { bits.append(v >> k & 1 != 0) } }
        put(1, 6) // two modes
        for flag in [0, 1] { put(flag, 1); put(0, 16); put(0, 16); put(0, 8) }
        put(1, 1) // framing
        var setup: [UInt8] = [5] + Array("vorbis".utf8)
        for i in stride(from: 0, to: bits.count, by: 8) {
            var byte: UInt8 = 0
            for k in 0..<8 where i + k < bits.count && bits[i + k] { byte |= 1 << UInt8(k) }
            setup.append(byte)
        }
        return [id, comment, setup]
    }

    @Test func vorbisFramesFromModes() throws {
        let h = Self.vorbisHeaders()
        var b = page(2, granule: 0, sequence: 0, [h[0]]) + page(0, granule: 0, sequence: 1, [h[1], h[2]])
        // short, long, long, short: 0, 64+512, 1024, 512+64 frames.
        b += page(0, granule: 576, sequence: 2, [[0x00, 9], [0x02, 9]])
        b += page(4, granule: 2000, sequence: 3, [[0x02, 9], [0x00, 9]])
        let (ev, error, s) = events(b)
        #expect(error == nil)
        #expect(s.dataFormat?.formatID == .vorbis && s.dataFormat?.sampleRate == 44100)
        #expect(packets(ev).map(\.frames) == [0, 576, 1024, 576])
        #expect(s.packetTableInfo == AudioFilePacketTableInfo(numberValidFrames: 2000, primingFrames: 0, remainderFrames: 176))
        #expect(s.magicCookie == [2, UInt8(h[0].count), UInt8(h[1].count)] + h[0] + h[1] + h[2])
        #expect(s.infoDictionary[InfoKey.artist] == "V")
        // The page index makes seeks to seen packets exact.
        let seek = try s.seek(toPacket: 3)
        #expect(!seek.isEstimated && seek.packetIndex == 2)
    }

    @Test func chainedStreamReportsTheNewFormat() {
        let h = Self.vorbisHeaders()
        var b = Self.opusFile(serial: 1)
        b += page(2, granule: 0, serial: 2, sequence: 0, [h[0]]) + page(0, granule: 0, serial: 2, sequence: 1, [h[1], h[2]])
        b += page(4, granule: 576, serial: 2, sequence: 2, [[0x00, 9], [0x02, 9]])
        let (ev, error, s) = events(b)
        #expect(error == nil)
        #expect(packets(ev).count == 6)
        #expect(s.dataFormat?.formatID == .vorbis)
        let formatEvents = ev.filter { $0 == .propertyChanged(.dataFormat) }.count
        #expect(formatEvents == 2)
    }

    /// Two Opus links with the same setup: the second is reported all the same (a magic cookie
    /// event per link), and each link's priming is its OpusHead pre-skip.
    @Test func chainedLinksWithTheSameSetupAreEachReported() {
        let b = Self.opusFile(serial: 1) + Self.opusFile(serial: 2)
        let (ev, error, s) = events(b)
        #expect(error == nil)
        #expect(packets(ev).count == 8)
        #expect(ev.filter { $0 == .propertyChanged(.magicCookieData) }.count == 2)
        guard let format = s.dataFormat else {
            Issue.record("no data format")
            return
        }
        let preSkip = Int(UInt16(opusHead[10]) | UInt16(opusHead[11]) << 8)
        #expect(preSkip > 0)
        #expect(AudioFileStream.primingFrames(ofOggLink: format, magicCookie: s.magicCookie) == preSkip)
        #expect(AudioFileStream.primingFrames(ofOggLink: format, magicCookie: nil) == 0)
    }

    @Test func brokenInputsFailClearly() {
        #expect(events([]).error != nil)
        #expect(events(Array("OggS".utf8)).error != nil)
        let cut = Array(Self.opusFile().prefix(40))
        #expect(events(cut).error != nil)
        var badHead = page(2, granule: 0, sequence: 0, [Array("OpusHead".utf8) + [1]])
        badHead += page(0, granule: 0, sequence: 1, [opusTags])
        #expect(events(badHead).error?.message.contains("OpusHead") == true)
    }
}
