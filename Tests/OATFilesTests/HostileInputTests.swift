import OATCore
@testable import OATFiles
import OATTestSupport
import Testing

/// Issue 16 §2-3 and issue 19 §3: boundary values in size, count, channel and rate fields give a
/// clear `AudioError` naming the field (never a trap, an abort on a huge allocation or
/// super-linear work), the same for every split of the input.
@Suite struct HostileInputTests {
    /// Parses `bytes` whole; returns the error (nil when accepted) and the packets delivered.
    static func parse(_ bytes: [UInt8], hint: AudioFileType? = nil) -> (error: AudioError?, packets: Int, stream: AudioFileStream) {
        let stream = AudioFileStream(fileTypeHint: hint)
        var packets = 0
        let handler: (AudioFileStreamEvent) -> Void = { if case .packets(let b) = $0 { packets += b.packetCount } }
        do {
            try stream.parse(bytes, handler)
            try stream.finish(handler)
            return (nil, packets, stream)
        } catch {
            return (error, packets, stream)
        }
    }

    @Test(arguments: HostileFiles.all)
    func craftedFileIsRefusedWithAClearErrorAtEverySplit(_ c: HostileFiles.Case) {
        let r = Self.parse(c.bytes)
        if let message = c.message {
            let error = r.error
            #expect(error != nil, "\(c.name) was accepted")
            #expect(error?.description.contains(message) == true, "\(c.name): \(error.map { "\($0)" } ?? "no error")")
            #expect(error?.offset != nil, "\(c.name): the error names no offset")
        }
        let whole = StreamDigest.of(c.bytes, split: .whole)
        for split: StreamDigest.Split in [.chunks(1), .chunks(7), .random(seed: 5, maxChunk: 600)] {
            let other = StreamDigest.of(c.bytes, split: split)
            #expect(other == whole, "\(c.name): \(split): \(whole.firstDifference(from: other))")
        }
    }

    /// RF64 `ds64` data size 2^63-16 trapped at WAV.swift:147 (start + size + pad).
    @Test func rf64DataSizeNearInt64MaxIsRefused() throws {
        let r = Self.parse(HostileFiles.rf64(dataSize: (1 << 63) - 16))
        let e = try #require(r.error)
        #expect(e.code == .invalidData)
        #expect(e.component == "WAV parser")
        #expect(e.message.contains("end of the data chunk"))
        // A ds64 size that fits stays accepted.
        #expect(Self.parse(HostileFiles.rf64(dataSize: 4000)).error == nil)
    }

    /// MP4 `stts` entry (2^32-1, 2^32-1) trapped at MP4SampleTable.swift:104; runs whose
    /// counts add past 2^32-1 trapped in the merge.
    @Test func sttsOverflowIsRefusedAndLongRunsSplit() throws {
        let e = try #require(Self.parse(HostileFiles.mp4(stts: [(0xFFFF_FFFF, 0xFFFF_FFFF)])).error)
        #expect(e.component == "MP4 parser")
        #expect(e.message.contains("duration"))
        let r = Self.parse(HostileFiles.mp4(stts: [(0xFFFF_FFFF, 1), (0xFFFF_FFFF, 1), (0xFFFF_FFFF, 1)]))
        #expect(r.error == nil, "\(String(describing: r.error))")
        #expect(r.packets == 4)
    }

    /// CAF with 2^32-1 channels: `afinfo --decode` aborted on a 32 GB allocation.
    @Test(arguments: ["lpcm", "alac", "aac "])
    func cafChannelCountIsBoundedBeforeAnyAllocation(_ format: String) throws {
        let e = try #require(Self.parse(HostileFiles.caf(format: format, channels: 0xFFFF_FFFF)).error)
        #expect(e.code == .invalidData)
        #expect(e.message.contains("4294967295 channels (at most 64"))
        #expect(e.offset == 8)
    }

    /// A 1 s WAV claiming 65535 channels decoded into 4.2 GB.
    @Test func wavWith65535ChannelsIsRefused() throws {
        let r = Self.parse(HostileFiles.wav(channels: 65535))
        let e = try #require(r.error)
        #expect(e.message.contains("65535 channels"))
        #expect(r.stream.dataFormat == nil, "the refused format is not kept")
        // 64 channels (the limit) and 8 (tested elsewhere) are fine.
        #expect(Self.parse(HostileFiles.wav(channels: 64, dataBytes: 64 * 2 * 10)).error == nil)
    }

    /// Issue 19 §3: a constant-size `stsz` with 64 Mi - 1 entries is no longer expanded into a
    /// 256 MiB array when a fragment follows; the sizes stay one value.
    @Test func constantSampleSizesAreNotExpandedByAFragment() throws {
        let count = (64 << 20) - 1
        var parser = MP4Parser()
        var out = ParseOutput(limits: .default)
        let bytes = HostileFiles.mp4ConstantSizesThenFragment(count: UInt64(count))
        var position = 0
        do {
            while position < bytes.count {
                let status = try bytes.withUnsafeBytes { raw in
                    try parser.parse(UnsafeRawBufferPointer(rebasing: raw[position...]), at: Int64(position), isEOF: true, &out)
                }
                switch status {
                case .consumed(let n): position += n
                case .skip(let n): position += Int(n)
                case .finished: position = bytes.count
                case .needMore: Issue.record("needs more at \(position)"); return
                }
            }
        } catch let error as AudioError {
            // The table claims more samples than the first mdat holds: the stream stops at the
            // second mdat, after the fragment was added to the table.
            #expect(position >= 600, "\(error)")
        }
        #expect(parser.table.sampleCount == count + 1)
        #expect(parser.table.constantCount == count, "the constant sizes stay one value")
        // Only the fragment's own (explicit, 4 bytes in its trun) size is stored per sample.
        #expect(parser.table.sizes == [6], "\(parser.table.sizes.count) sizes stored")
        #expect(parser.table.size(count) == 6)
    }

    @Test func sizeRunsMixConstantAndExplicitSizes() throws {
        var t = MP4SampleTable()
        let c = InputArithmetic("test")
        try t.appendRun(offset: 0, sizes: .constant(6, count: 3), durations: [], defaultDuration: 1024, c)
        try t.appendRun(offset: 100, sizes: .explicit([7, 8]), durations: [], defaultDuration: 1024, c)
        try t.appendRun(offset: 200, sizes: .constant(9, count: 2), durations: [], defaultDuration: 1024, c)
        #expect((0..<7).map { t.size($0) } == [6, 6, 6, 7, 8, 9, 9])
        #expect(t.totalBytes == 18 + 15 + 18)
        #expect(t.offset(ofSample: 2) == 12)
        #expect(t.offset(ofSample: 4) == 107)
        #expect(t.totalDuration == 7 * 1024)
    }

    /// 256 KiB of `FF FB 00 00` took 48-53 s in `afinfo --decode` and made 1152 frames per 16
    /// bytes: bare headers closer together than the side information are no frames.
    @Test func runsOfBareMPEGHeadersAreNotFrames() {
        let r = Self.parse(HostileFiles.mpegBareHeaders(bytes: 64 << 10), hint: .mp3)
        #expect(r.packets == 0, "\(r.packets) empty frames delivered")
        #expect(r.error != nil)
    }
}
