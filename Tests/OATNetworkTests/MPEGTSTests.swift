import OATCore
import OATFiles
import OATNetwork
import OATTestSupport
import Testing

@Suite struct MPEGTSTests {
    /// ffmpeg-made TS: the fixture signal encoded with `codec`, plus a timed-ID3 stream with titles
    /// at 0, 1.5 and 3 s. Returns the TS bytes, the source WAV path (in `dir`).
    func makeTS(_ dir: ScratchDirectory, codec: [String], name: String) throws -> [UInt8] {
        let wav = dir.path + "/source.wav"
        if fileBytes(wav).isEmpty { #expect(HLSFixtures.source(wav, seconds: 4)) }
        let id3 = dir.path + "/id3.ts"
        #expect(writeFile(id3, HLSFixtures.id3OnlyTransportStream([(0, "First"), (1.5, "Second"), (3, "Third")])))
        let out = dir.path + "/" + name
        #expect(runFFmpeg(["-i", wav, "-i", id3, "-map", "0:a", "-map", "1:d"] + codec + ["-c:d", "copy", "-f", "mpegts", out]))
        let bytes = fileBytes(out)
        try #require(bytes.count > 10_000)
        return bytes
    }

    func demux(_ bytes: [UInt8], chunks: [Int]) -> (MPEGTSOutput, MPEGTSDemuxer) {
        let d = MPEGTSDemuxer()
        var out = MPEGTSOutput()
        var at = 0
        var i = 0
        bytes.withUnsafeBytes { raw in
            while at < raw.count {
                let n = chunks.isEmpty ? raw.count : max(1, min(chunks[i % chunks.count], raw.count - at))
                d.parse(UnsafeRawBufferPointer(rebasing: raw[at..<(at + n)]), into: &out)
                at += n
                i += 1
            }
        }
        d.finish(into: &out)
        return (out, d)
    }

    func checkTS(codec: [String], expected: MPEGTSAudioCodec, hint: AudioFileType, minimumSNR: Double) throws {
        let dir = try ScratchDirectory("mpegts")
        defer { dir.remove() }
        let ts = try makeTS(dir, codec: codec, name: "a.ts")
        let (whole, demuxer) = demux(ts, chunks: [])
        #expect(demuxer.audioCodec == expected)
        #expect(demuxer.continuityErrors == 0)
        #expect(demuxer.id3PID != nil)
        // ffmpeg's own extraction of the elementary stream is the byte reference for ADTS.
        if expected == .aacADTS {
            let ref = dir.path + "/ref.aac"
            #expect(runFFmpeg(["-i", dir.path + "/a.ts", "-map", "0:a", "-c", "copy", "-f", "adts", ref]))
            let refBytes = fileBytes(ref)
            #expect(refBytes.count == whole.audio.count, "ffmpeg extracted \(refBytes.count) bytes, we \(whole.audio.count)")
            #expect(refBytes == whole.audio)
        }
        // The titles, in order, at audio positions near their times.
        let titles = whole.id3.compactMap { tag in tag.bytes.withUnsafeBytes { TimedID3.parse($0)?.title } }
        #expect(titles == ["First", "Second", "Third"])
        // Every split gives the same output: chunk sizes 1, 7, 188, 189, 1000 and random.
        var rng = SplitMix(seed: UInt64(ts.count))
        let randomChunks = (0..<64).map { _ in Int(rng.next() % 3000) + 1 }
        for chunks in [[1], [7], [188], [189], [1000], [187, 1, 376, 2], randomChunks] {
            let (split, _) = demux(ts, chunks: chunks)
            #expect(split == whole, "split \(chunks.prefix(4)) differs")
        }
        // Every two-piece split of a 12 KiB prefix (every cut in the first 1 KiB, then every 7th).
        let prefix = Array(ts[..<12_288])
        let (wholePrefix, _) = demux(prefix, chunks: [])
        for cut in Array(1..<1024) + Array(stride(from: 1024, to: 12_288, by: 7)) {
            let d = MPEGTSDemuxer()
            var out = MPEGTSOutput()
            prefix.withUnsafeBytes { raw in
                d.parse(UnsafeRawBufferPointer(rebasing: raw[..<cut]), into: &out)
                d.parse(UnsafeRawBufferPointer(rebasing: raw[cut...]), into: &out)
            }
            d.finish(into: &out)
            if out != wholePrefix { Issue.record("two-piece split at \(cut) differs"); break }
        }
        // Decoded audio matches the source.
        let decoded = try decodeElementary(whole.audio, hint: hint)
        let source = try decodeWithToolbox(dir.path + "/source.wav")
        #expect(decoded.channels == 2)
        let (s, lag) = alignedSNR(reference: source.samples, test: decoded.samples, channels: 2)
        #expect(s > minimumSNR, "SNR \(s) dB at lag \(lag)")
        print("TS figure: \(expected): SNR \(dB(s)) at lag \(lag), \(decoded.samples.count / 2) frames, \(whole.audio.count) audio bytes from \(ts.count) TS bytes")
        let frames = decoded.samples.count / 2
        #expect(abs(frames - source.samples.count / 2) <= 2 * 1152 + 1024, "\(frames) frames vs \(source.samples.count / 2)")
        // Title positions: the frame the tag's byte offset falls in, as a time.
        for (tag, seconds) in zip(whole.id3, [0.0, 1.5, 3.0]) {
            let offset = whole.audioOffset(for: tag, codec: expected)
            let prefix = try decodeElementary(Array(whole.audio[..<Int(offset)]), hint: hint)
            let t = Double(prefix.samples.count / 2) / 44_100
            // Frame-exact: within one frame of the time, plus the decoder's priming.
            #expect(abs(t - seconds) < 0.08, "tag at \(t) s, expected \(seconds)")
            print("TS figure: \(expected) tag at \(t) s, expected \(seconds) s")
        }
    }

    @Test func aacADTSWithTimedID3() throws {
        try checkTS(codec: ["-c:a", "aac", "-b:a", "160k"], expected: .aacADTS, hint: .aacADTS, minimumSNR: 12)
    }

    @Test func mp3WithTimedID3() throws {
        try checkTS(codec: ["-c:a", "libmp3lame", "-b:a", "192k"], expected: .mpegAudio, hint: .mp3, minimumSNR: 12)
    }

    @Test func damagedInputNeverTrapsAndResyncs() throws {
        let dir = try ScratchDirectory("mpegts")
        defer { dir.remove() }
        let ts = try makeTS(dir, codec: ["-c:a", "aac", "-b:a", "96k"], name: "d.ts")
        let (whole, _) = demux(ts, chunks: [])
        // Garbage before, a lost packet in the middle, a cut packet at the end.
        var damaged: [UInt8] = [1, 2, 3, 0x47, 9, 9] + ts[..<(188 * 20)]
        damaged += ts[(188 * 21)...].dropLast(100)
        let (out, d) = demux(damaged, chunks: [])
        #expect(d.bytesSkipped >= 6)
        #expect(d.continuityErrors >= 1)
        #expect(out.audio.count > whole.audio.count / 2)
        let (split, _) = demux(damaged, chunks: [13])
        #expect(split == out)
        // Random byte flips: no trap, output bounded by input.
        var rng = SplitMix(seed: 7)
        for _ in 0..<20 {
            var b = ts
            for _ in 0..<50 { b[Int(rng.next() % UInt64(b.count))] = UInt8(truncatingIfNeeded: rng.next()) }
            let (o, _) = demux(b, chunks: [Int(rng.next() % 500) + 1])
            #expect(o.audio.count <= b.count)
        }
    }

    @Test func timedID3Reader() {
        let tag = HLSFixtures.id3(title: "Ünïcode title", timestamp: 0x1_2345_6789)
        let parsed = tag.withUnsafeBytes { TimedID3.parse($0) }
        #expect(parsed?.title == "Ünïcode title")
        #expect(parsed?.transportStreamTimestamp == 0x1_2345_6789)
        #expect(tag.withUnsafeBytes { TimedID3.tagLength($0) } == tag.count)
        #expect([UInt8]([0x49, 0x44, 0x33, 4, 0, 0, 0x80, 0, 0, 0]).withUnsafeBytes { TimedID3.parse($0) } == nil)
        // A frame claiming more than the tag holds stops the walk instead of reading past it.
        var broken = tag
        broken[14] = 0x7F
        #expect(broken.withUnsafeBytes { TimedID3.parse($0) }?.title == nil)
    }
}
