import OATCore
@testable import OATFiles
import Testing

/// Hand-made MPEG audio and ADTS streams through ``AudioFileStream``.
@Suite struct MPEGAudioTests {
    /// MPEG-1 Layer III, 128 kb/s, 44.1 kHz, mono, no CRC: 417 bytes (418 padded).
    static func l3Frame(padding: Bool = false, fill: UInt8 = 0) -> [UInt8] {
        var f = [UInt8](repeating: fill, count: padding ? 418 : 417)
        f[0] = 0xFF; f[1] = 0xFB; f[2] = 0x90 | (padding ? 2 : 0); f[3] = 0xC0
        return f
    }

    /// An `Info` frame (mono MPEG-1: the tag at 4 + 17) with frames, bytes, TOC, quality and a
    /// LAME extension with delay 576 and padding 756.
    static func infoFrame(frames: UInt32, bytes: UInt32) -> [UInt8] {
        var f = l3Frame()
        var p = 21
        func put(_ b: [UInt8]) { for x in b { f[p] = x; p += 1 } }
        func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        put(Array("Info".utf8)); put(be32(15)); put(be32(frames)); put(be32(bytes))
        put((0..<100).map { UInt8($0 * 256 / 100) }); put(be32(50))
        put(Array("LAME3.100".utf8))
        p += 12
        put([0x24, 0x02, 0xF4]) // delay 0x240 = 576, padding 0x2F4 = 756
        return f
    }

    /// An ADTS frame: AAC LC, 44.1 kHz, stereo, `payload` bytes of access unit.
    static func adtsFrame(payload: Int, blocks: Int = 1, crc: Bool = false) -> [UInt8] {
        let header = crc ? 9 : 7
        let length = header + payload
        var f = [UInt8](repeating: 0x11, count: length)
        f[0] = 0xFF
        f[1] = crc ? 0xF0 : 0xF1
        f[2] = 1 << 6 | 4 << 2 | 0 // LC, 44.1 kHz, channel configuration high bit 0
        f[3] = 2 << 6 | UInt8(length >> 11)
        f[4] = UInt8(length >> 3 & 0xFF)
        f[5] = UInt8(length & 7) << 5 | 0x1F
        f[6] = 0xFC | UInt8(blocks - 1)
        return f
    }

    struct Run {
        var stream: AudioFileStream
        var events: [AudioFileStreamEvent] = []
        var error: AudioError?
        var sizes: [UInt32] = []
        var offsets: [Int64] = []
        var properties: [AudioFileStreamProperty] {
            events.compactMap { if case .propertyChanged(let p) = $0 { p } else { nil } }
        }
    }

    static func run(_ bytes: [UInt8], chunk: Int = .max, hint: AudioFileType? = nil) -> Run {
        var r = Run(stream: AudioFileStream(fileTypeHint: hint))
        do {
            var i = 0
            while i < bytes.count {
                let n = min(chunk, bytes.count - i)
                r.events += try r.stream.parse(Array(bytes[i..<(i + n)]))
                i += n
            }
            r.events += try r.stream.finish()
        } catch {
            r.error = error
        }
        for e in r.events {
            if case .packets(let b) = e {
                r.sizes += b.packetDescriptions.map(\.dataByteSize)
                r.offsets += b.packetFileOffsets
            }
        }
        return r
    }

    @Test func cbrFramesWithLeadingJunk() {
        let frames = Self.l3Frame() + Self.l3Frame(padding: true) + Self.l3Frame()
        let r = Self.run([0, 1, 2, 3, 4] + frames)
        #expect(r.error == nil)
        #expect(r.stream.fileFormat == .mp3)
        #expect(r.stream.dataFormat == .compressed(.mpegLayer3, sampleRate: 44100, channels: 1, framesPerPacket: 1152))
        #expect(r.stream.dataOffset == 5)
        #expect(r.sizes == [417, 418, 417])
        #expect(r.offsets == [5, 422, 840])
        #expect(r.stream.packetSizeUpperBound == 1045) // 320 kb/s, padded
        #expect(r.stream.bitRate == 128000)
        #expect(r.properties.first == .fileFormat)
        #expect(r.properties.last == .readyToProducePackets)
    }

    @Test func everySplitGivesTheSameEvents() {
        // A header at 0 whose frame is not confirmed, two frames, junk, a frame confirmed by a tag.
        var bytes: [UInt8] = [0xFF, 0xFB, 0x90] + Self.l3Frame() + Self.l3Frame() + [9, 9] + Self.l3Frame()
        bytes += Array("TAG".utf8) + [UInt8](repeating: 0x20, count: 125)
        let whole = Self.run(bytes)
        for chunk in [1, 2, 3, 7, 100] {
            let r = Self.run(bytes, chunk: chunk)
            #expect(r.properties == whole.properties, "chunk \(chunk)")
            #expect(r.sizes == whole.sizes && r.offsets == whole.offsets, "chunk \(chunk)")
            #expect(r.error == whole.error)
        }
        #expect(whole.error == nil)
        #expect(whole.sizes == [417, 417, 417])
        #expect(whole.offsets == [3, 420, 839])
    }

    @Test func falseSyncIsSkipped() {
        // A valid-looking header whose frame is not followed by another header.
        var junk = Self.l3Frame()
        junk.removeLast(100)
        junk += [UInt8](repeating: 0x55, count: 200)
        let r = Self.run(junk + Self.l3Frame() + Self.l3Frame())
        #expect(r.sizes == [417, 417])
        #expect(r.offsets == [517, 934])
        #expect(r.stream.dataOffset == 517)
    }

    @Test func infoFrameGivesCountsAndGaplessInfo() throws {
        let bytes = Self.infoFrame(frames: 2, bytes: 3 * 417) + Self.l3Frame() + Self.l3Frame()
        let r = Self.run(bytes)
        #expect(r.error == nil)
        #expect(r.sizes == [417, 417]) // the Info frame is not a packet
        #expect(r.stream.dataOffset == 417)
        #expect(r.stream.audioDataPacketCount == 2)
        #expect(r.stream.audioDataByteCount == 834)
        let table = try #require(r.stream.packetTableInfo)
        #expect(table.numberValidFrames == 2 * 1152 - 576 - 756)
        #expect(table.primingFrames == 576 + 529)
        #expect(table.remainderFrames == 756 - 529)
        let order = r.properties
        let dataOffset = try #require(order.firstIndex(of: .dataOffset))
        #expect(order.firstIndex(of: .audioDataPacketCount)! < dataOffset)
        #expect(order.firstIndex(of: .packetTableInfo)! > dataOffset)
    }

    @Test func seeksAreExactForParsedPacketsAndEstimatedBeyond() throws {
        let bytes = Self.infoFrame(frames: 10, bytes: 11 * 417) + Self.l3Frame() + Self.l3Frame() + Self.l3Frame()
        let r = Self.run(bytes)
        let exact = try r.stream.seek(toPacket: 2)
        #expect(exact == AudioFileStreamSeekResult(byteOffset: 417 * 3, dataByteOffset: 417 * 2, isEstimated: false, packetIndex: 2))
        let estimated = try r.stream.seek(toPacket: 5)
        #expect(estimated.isEstimated)
        #expect(estimated.packetIndex == 5)
        // TOC: 50 % of 4587 bytes from the Info frame at 0 (entry 50 is 128 of 256).
        #expect(estimated.byteOffset == 4587 / 2)
        #expect(throws: AudioError.self) { try r.stream.seek(toPacket: -1) }
    }

    @Test func resumeResynchronisesAfterSeek() throws {
        let frames = Self.l3Frame() + Self.l3Frame() + Self.l3Frame() + Self.l3Frame()
        let stream = AudioFileStream()
        _ = try stream.parse(frames)
        let seek = try stream.seek(toPacket: 1)
        #expect(seek.byteOffset == 417 && !seek.isEstimated)
        let events = try stream.parse(Array(frames[417...]), flags: .discontinuity) + stream.finish()
        let batches = events.compactMap { if case .packets(let b) = $0 { b } else { nil } }
        #expect(batches.first?.isDiscontinuous == true)
        #expect(batches.first?.firstPacketIndex == 1)
        #expect(batches.flatMap(\.packetFileOffsets) == [417, 834, 1251])
        // An estimated seek lands mid-frame: junk is skipped up to the next confirmed header.
        let other = AudioFileStream()
        _ = try other.parse(frames)
        _ = try other.seek(toPacket: 1)
        let more = try other.parse(Array(frames[(417 + 100)...]), flags: .discontinuity) + other.finish()
        let offsets = more.compactMap { if case .packets(let b) = $0 { b } else { nil } }.flatMap(\.packetFileOffsets)
        // The stream counts these bytes from 417: real frames at 834 and 1251 appear 100 earlier.
        #expect(offsets == [734, 1151])
    }

    @Test func cutLastFrameIsDeliveredInSync() {
        let r = Self.run(Self.l3Frame() + Self.l3Frame() + Array(Self.l3Frame()[0..<50]))
        #expect(r.sizes == [417, 417, 50])
        #expect(r.error == nil)
    }

    @Test func id3v1AndAPETagsAreReadNotDelivered() {
        var ape: [UInt8] = []
        func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        let item = le32(5) + le32(0) + Array("Title".utf8) + [0] + Array("Hello".utf8)
        let size = UInt32(item.count + 32)
        ape += Array("APETAGEX".utf8) + le32(2000) + le32(size) + le32(1) + le32(0xA000_0000) + [UInt8](repeating: 0, count: 8)
        ape += item
        ape += Array("APETAGEX".utf8) + le32(2000) + le32(size) + le32(1) + le32(0x8000_0000) + [UInt8](repeating: 0, count: 8)
        var v1 = Array("TAG".utf8) + [UInt8](repeating: 0, count: 125)
        for (i, c) in "Artist".utf8.enumerated() { v1[33 + i] = c }
        v1[127] = 255
        let r = Self.run(Self.l3Frame() + ape + v1)
        #expect(r.error == nil)
        #expect(r.sizes == [417])
        #expect(r.stream.infoDictionary == [InfoKey.title: "Hello", InfoKey.artist: "Artist"])
    }

    @Test func adtsPacketsWithoutHeaders() {
        let bytes = Self.adtsFrame(payload: 10) + Self.adtsFrame(payload: 20, crc: true) + Self.adtsFrame(payload: 5)
        let r = Self.run(bytes)
        #expect(r.error == nil)
        #expect(r.stream.fileFormat == .aacADTS)
        #expect(r.stream.dataFormat == .compressed(.mpeg4AAC, sampleRate: 44100, channels: 2, framesPerPacket: 1024, flags: .mpeg4ObjectType(2)))
        #expect(r.stream.magicCookie == [0x12, 0x10])
        #expect(r.sizes == [10, 20, 5])
        #expect(r.offsets == [7, 17 + 9, 17 + 29 + 7])
        #expect(r.stream.dataOffset == 0)
        #expect(r.stream.packetSizeUpperBound == 1536)
    }

    @Test func adtsWithSeveralRawDataBlocksIsUnsupported() {
        let r = Self.run(Self.adtsFrame(payload: 10, blocks: 2) + Self.adtsFrame(payload: 10, blocks: 2))
        #expect(r.error?.code == .unsupportedFormat)
        #expect(r.error?.offset == 0)
    }

    /// The hint is only a hint, as Apple's: ADTS bytes opened with an MP3 hint are ADTS (issue 25:
    /// a streamer passing kAudioFileMP3Type for every stream played ADTS AAC silent).
    @Test func hintIsOnlyAHint() {
        let r = Self.run(Self.adtsFrame(payload: 10) + Self.adtsFrame(payload: 10), hint: .mp3)
        #expect(r.error == nil)
        #expect(r.sizes == [10, 10])
    }

    @Test func freeFormatLengthComesFromTheNextHeader() {
        func free(_ padding: Bool) -> [UInt8] {
            var f = [UInt8](repeating: 0, count: padding ? 301 : 300)
            f[0] = 0xFF; f[1] = 0xFB; f[2] = 0x00 | (padding ? 2 : 0); f[3] = 0xC0
            return f
        }
        let bytes = free(false) + free(true) + free(false) + free(false)
        let whole = Self.run(bytes)
        #expect(whole.sizes == [300, 301, 300, 300])
        #expect(Self.run(bytes, chunk: 1).events == whole.events)
    }

    @Test func garbageAndEmptyInputGiveClearErrors() {
        let garbage = Self.run([UInt8](repeating: 0x42, count: 1000))
        #expect(garbage.error?.code == .invalidData)
        #expect(garbage.error?.offset == 0)
        #expect(garbage.error?.message.contains("no MPEG audio or ADTS frame") == true)
        let empty = Self.run([])
        #expect(empty.error?.code == .invalidData)
        let one = Self.run([0xFF])
        #expect(one.error != nil)
    }

    @Test func embeddedModeOnlySplitsFrames() throws {
        var parser = MPEGAudioParser(embedded: true)
        let bytes = Self.infoFrame(frames: 1, bytes: 834) + Self.l3Frame()
        var out = ParseOutput(limits: .default)
        var offset: Int64 = 100
        var rest = bytes[...]
        while !rest.isEmpty {
            let status = try rest.withUnsafeBytes { raw in
                try parser.parse(raw, at: offset, isEOF: true, &out)
            }
            guard case .consumed(let n) = status else { break }
            rest = rest.dropFirst(n)
            offset += Int64(n)
        }
        out.flushBatch()
        let batches = out.events.compactMap { if case .packets(let b) = $0 { b } else { nil } }
        #expect(batches.flatMap(\.packetFileOffsets) == [100, 517]) // the Info frame is a packet here
        #expect(out.info.dataFormat == nil)
        #expect(out.info.fileFormat == nil)
    }
}
