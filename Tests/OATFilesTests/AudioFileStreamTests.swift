import OATCore
import OATTestSupport
import Testing
@testable import OATFiles

/// Behaviour of the stream driver itself, checked through the small AU container.
@Suite struct AudioFileStreamTests {
    /// A big-endian AU file: 16-bit stereo at 8 kHz with `frames` frames and an annotation.
    static func au(frames: Int, annotation: String = "hello", dataSize: UInt32? = nil) -> [UInt8] {
        var b: [UInt8] = Array(".snd".utf8)
        let ann = Array(annotation.utf8) + [UInt8](repeating: 0, count: (8 - annotation.utf8.count % 8))
        func be32(_ v: UInt32) { b += [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        be32(UInt32(24 + ann.count))
        be32(dataSize ?? UInt32(frames * 4))
        be32(3)
        be32(8000)
        be32(2)
        b += ann
        for i in 0..<frames * 2 { b += [UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF)] }
        return b
    }

    @Test func reportsPropertiesInOrderThenPackets() throws {
        let stream = AudioFileStream()
        var events = try stream.parse(Self.au(frames: 100))
        events += try stream.finish()
        let properties = events.compactMap { if case .propertyChanged(let p) = $0 { p } else { nil } }
        #expect(properties == [.fileFormat, .dataFormat, .audioDataByteCount, .audioDataPacketCount, .dataOffset, .infoDictionary, .readyToProducePackets])
        #expect(stream.fileFormat == .next)
        #expect(stream.dataFormat == .linearPCM(sampleRate: 8000, channels: 2, bitsPerChannel: 16, isBigEndian: true))
        #expect(stream.dataOffset == 32)
        #expect(stream.infoDictionary[InfoKey.comments] == "hello")
        let packets = events.reduce(0) { if case .packets(let b) = $1 { $0 + b.packetCount } else { $0 } }
        #expect(packets == 100)
        #expect(stream.bitRate == 8000 * 32)
    }

    @Test func everySplitGivesTheSameEvents() {
        let bytes = Self.au(frames: 333)
        let whole = StreamDigest.of(bytes, split: .whole)
        #expect(whole.packetCount == 333 && whole.error == nil)
        for split in [StreamDigest.Split.chunks(1), .chunks(3), .random(seed: 9, maxChunk: 50)] {
            #expect(StreamDigest.of(bytes, split: split) == whole)
        }
    }

    @Test func emptyInputIsAClearError() {
        let stream = AudioFileStream()
        #expect(throws: AudioError.self) { try stream.finish() }
        do { _ = try AudioFileStream().finish() } catch { #expect(error.description.contains("empty")) }
    }

    @Test func truncatedHeaderNamesTheOffset() throws {
        let stream = AudioFileStream()
        _ = try stream.parse(Array(Self.au(frames: 4)[0..<30]))
        do {
            _ = try stream.finish()
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .invalidData)
            #expect(error.offset == 30)
        }
    }

    /// A file that ends inside its WAV, AIFF or CAF leading header is invalid data naming the
    /// header, its size and the bytes there were, at the offset where the input ended.
    @Test(arguments: [(AudioFileType.wave, "RIFF", "RIFF header (6 of 12 bytes)"),
                      (AudioFileType.aiff, "FORM", "FORM header (6 of 12 bytes)"),
                      (AudioFileType.caf, "caff", "CAF header (6 of 8 bytes)")])
    func fileEndingInsideLeadingHeaderNamesIt(type: AudioFileType, magic: String, text: String) throws {
        let stream = AudioFileStream(fileTypeHint: type)
        _ = try stream.parse(Array(magic.utf8) + [0, 0])
        do {
            _ = try stream.finish()
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .invalidData)
            #expect(error.offset == 6)
            #expect(error.message.contains("the file ends inside the \(text)"), "\(error.message)")
        }
    }

    @Test func errorsAreStickyAndEventsBeforeThemArrive() throws {
        var bytes = Self.au(frames: 4)
        bytes[12..<16] = [0, 0, 0, 99] // encoding 99
        let stream = AudioFileStream()
        #expect(throws: AudioError.self) { try stream.parse(bytes) }
        do { _ = try stream.parse([1, 2, 3]) } catch {
            #expect(error.code == .unsupportedFormat && error.offset == 12)
        }
    }

    @Test func limitsStopOversizedStructures() {
        var limits = ParserLimits()
        limits.maximumBufferedBytes = 16
        let stream = AudioFileStream(limits: limits)
        do {
            _ = try stream.parse(Array(Self.au(frames: 1)[0..<20]))
            Issue.record("expected limit error")
        } catch {
            #expect(error.code == .limitExceeded)
        }
    }

    @Test func seekIsExactForConstantBitRateAndResumesAtThePacket() throws {
        let bytes = Self.au(frames: 1000)
        let stream = AudioFileStream()
        _ = try stream.parse(Array(bytes[0..<100]))
        let seek = try stream.seek(toPacket: 500)
        #expect(seek == AudioFileStreamSeekResult(byteOffset: 32 + 2000, dataByteOffset: 2000, isEstimated: false, packetIndex: 500))
        let events = try stream.parse(Array(bytes[Int(seek.byteOffset)...]), flags: .discontinuity)
        guard case .packets(let batch) = events.first else { Issue.record("no packets"); return }
        #expect(batch.firstPacketIndex == 500 && batch.isDiscontinuous && batch.fileOffset == 2032)
        #expect(batch.data[0..<4] == [0x03, 0xE8, 0x03, 0xE9]) // samples 1000 and 1001
        #expect(throws: AudioError.self) { try stream.seek(toPacket: 5000) }
    }

    @Test func seekBeforeTheFormatIsKnownIsAnError() {
        #expect(throws: AudioError.self) { try AudioFileStream().seek(toPacket: 1) }
    }

    @Test func leadingID3TagIsReadAndSkipped() throws {
        // ID3v2.3 with a TIT2 frame, then an AU file.
        let title = Array("Demo".utf8)
        var frame: [UInt8] = Array("TIT2".utf8) + [0, 0, 0, UInt8(title.count + 1), 0, 0, 0] + title
        frame += [UInt8](repeating: 0, count: 10) // padding
        let tag: [UInt8] = Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, UInt8(frame.count)] + frame
        let bytes = tag + Self.au(frames: 10)
        let whole = StreamDigest.of(bytes, split: .whole)
        #expect(whole.packetCount == 10 && whole.error == nil)
        #expect(StreamDigest.of(bytes, split: .chunks(1)) == whole)
        let stream = AudioFileStream()
        _ = try stream.parse(bytes)
        #expect(stream.infoDictionary[InfoKey.title] == "Demo")
        #expect(stream.infoDictionary[InfoKey.comments] == "hello")
        #expect(stream.dataOffset == Int64(tag.count + 32))
    }

    @Test func unknownSizeRunsToTheEnd() throws {
        let stream = AudioFileStream()
        var events = try stream.parse(Self.au(frames: 50, dataSize: 0xFFFF_FFFF) + [1, 2])
        events += try stream.finish()
        #expect(stream.audioDataPacketCount == nil)
        #expect(stream.packetsDelivered == 50)
    }
}

@Suite struct AudioFileTests {
    @Test func readsPacketRangesBack() throws {
        let bytes = AudioFileStreamTests.au(frames: 64)
        let path = "/tmp/oat-audiofile-\(UInt32.random(in: 0...UInt32.max)).au"
        try #require(writeFile(path, bytes))
        defer { removeFile(path) }
        let file = try AudioFile(path: path)
        #expect(file.packetCount == 64 && file.totalFrames == 64)
        #expect(file.duration == 64.0 / 8000)
        let batch = try file.readPackets(10..<12)
        #expect(batch.packetCount == 2 && batch.data == Array(bytes[(32 + 40)..<(32 + 48)]))
        #expect(try file.readPackets(60..<100).packetCount == 4)
        let summary = AudioFileSummary(file)
        #expect(summary.json.contains("\"format_id\": \"lpcm\""))
        #expect(summary.json.contains("\"valid_frames\": 64"))
    }

    @Test func missingFileIsAnIOError() {
        do { _ = try AudioFile(path: "/nonexistent/x.wav") } catch { #expect(error.code == .io) }
    }
}
