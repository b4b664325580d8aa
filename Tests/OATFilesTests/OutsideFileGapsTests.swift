import OATCore
@testable import OATFiles
import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Parser gaps seen on files from other projects (issue 19 section 4), with files made here:
/// QuickTime PCM sample entries, audiobooks whose chapter track this parser cannot read, FLAC
/// files whose STREAMINFO or metadata block lengths are wrong.
@Suite struct OutsideFileGapsTests {
    static func temporary(_ name: String) -> String {
        "/tmp/oat-gaps-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(name)"
    }

    /// `ffprobe`'s value of `entry` for the first audio stream (or the format with `format: true`).
    static func ffprobe(_ path: String, _ entry: String) -> String? {
        let out = temporary("probe.txt")
        defer { unlink(out) }
        let cmd = "ffprobe -v error -select_streams a:0 -show_entries stream=\(entry) -of default=nw=1:nk=1 '\(path)' > '\(out)' 2>/dev/null"
        guard system(cmd) == 0, let bytes = Corpus.read(out) else { return nil }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init)
    }

    /// Packets and frames of a file fed through ``AudioFileStream`` in `chunk`-byte pieces.
    static func streamCounts(_ bytes: [UInt8], chunk: Int) throws -> (packets: Int64, format: AudioStreamBasicDescription?) {
        let stream = AudioFileStream()
        var packets: Int64 = 0
        var i = 0
        let handler: (AudioFileStreamEvent) -> Void = { if case .packets(let b) = $0 { packets += Int64(b.packetCount) } }
        while i < bytes.count {
            try stream.parse(Array(bytes[i..<min(bytes.count, i + chunk)]), handler)
            i += chunk
        }
        try stream.finish(handler)
        return (packets, stream.dataFormat)
    }

    // MARK: QuickTime PCM

    struct PCMCase: CustomTestStringConvertible, Sendable {
        var codec: String
        var rate: Int = 44100
        /// The sample entry FFmpeg writes for it.
        var entry: String
        var formatID: AudioFormatCode = .linearPCM
        var bits: UInt32
        var float = false
        var bigEndian = false
        var signed = true
        var testDescription: String { "\(codec) (\(entry)) \(rate) Hz" }
    }

    static let pcmCases: [PCMCase] = [
        PCMCase(codec: "pcm_s16le", entry: "sowt", bits: 16),
        PCMCase(codec: "pcm_s16be", entry: "twos", bits: 16, bigEndian: true),
        PCMCase(codec: "pcm_s8", entry: "sowt", bits: 8), // FFmpeg writes signed 8-bit as 'sowt'
        PCMCase(codec: "pcm_u8", entry: "raw ", bits: 8, signed: false),
        PCMCase(codec: "pcm_s24be", entry: "in24", bits: 24, bigEndian: true),
        PCMCase(codec: "pcm_s24le", entry: "in24", bits: 24), // with an 'enda' box
        PCMCase(codec: "pcm_s32be", entry: "in32", bits: 32, bigEndian: true),
        PCMCase(codec: "pcm_s32le", entry: "in32", bits: 32),
        PCMCase(codec: "pcm_f32be", entry: "fl32", bits: 32, float: true, bigEndian: true),
        PCMCase(codec: "pcm_f32le", entry: "fl32", bits: 32, float: true),
        PCMCase(codec: "pcm_f64be", entry: "fl64", bits: 64, float: true, bigEndian: true),
        PCMCase(codec: "pcm_f64le", entry: "fl64", bits: 64, float: true),
        PCMCase(codec: "pcm_mulaw", entry: "ulaw", formatID: .ulaw, bits: 8),
        PCMCase(codec: "pcm_alaw", entry: "alaw", formatID: .alaw, bits: 8),
        // Above 65535 Hz FFmpeg writes a version 2 sound description: 'lpcm' with Core Audio flags.
        PCMCase(codec: "pcm_s24le", rate: 96000, entry: "lpcm", bits: 24),
        PCMCase(codec: "pcm_s16be", rate: 96000, entry: "lpcm", bits: 16, bigEndian: true),
        PCMCase(codec: "pcm_f32le", rate: 96000, entry: "lpcm", bits: 32, float: true),
    ]

    /// FFmpeg-made .mov files with each QuickTime PCM sample entry: the format is Apple's ASBD for
    /// it, the frame count is ffprobe's, and the decode is bit-exact against FFmpeg's.
    @Test(arguments: pcmCases)
    func quickTimePCM(_ c: PCMCase) throws {
        let path = Self.temporary("\(c.codec)-\(c.rate).mov")
        defer { unlink(path) }
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(fixtureSignalExpression(channels: 2, seconds: 0.5)):s=\(c.rate):d=0.5",
                                "-c:a", c.codec, path]), "ffmpeg could not write \(c.codec) to .mov")
        let bytes = try #require(Corpus.read(path))
        // The sample entry is the one this case is about.
        let entryType = FourCC(c.entry).bytes
        #expect(bytes.indices.dropLast(4).contains { Array(bytes[$0..<($0 + 4)]) == entryType }, "no '\(c.entry)' entry in the file")

        let file = try AudioFile(path: path)
        let f = file.dataFormat
        #expect(f.formatID == c.formatID)
        #expect(f.sampleRate == Double(c.rate))
        #expect(f.channelsPerFrame == 2)
        #expect(f.bitsPerChannel == c.bits)
        #expect(f.framesPerPacket == 1)
        #expect(f.bytesPerFrame == c.bits / 8 * 2 && f.bytesPerPacket == f.bytesPerFrame)
        if c.formatID == .linearPCM {
            #expect(f.isFloat == c.float)
            #expect(f.isBigEndian == (c.bigEndian && c.bits > 8))
            #expect(f.formatFlags.contains(.isSignedInteger) == (c.signed && !c.float))
            #expect(f.formatFlags.contains(.isPacked))
        }
        let frames = Int64(c.rate / 2)
        #expect(file.packetCount == frames)
        #expect(Self.ffprobe(path, "duration_ts") == "\(frames)")
        #expect(Self.ffprobe(path, "channels") == "2")
        #expect(Self.ffprobe(path, "sample_rate") == "\(c.rate)")

        // Bit-exact against FFmpeg's decode.
        let ours = try decodeWithToolbox(path)
        let theirs = try #require(decodeWithFFmpeg(path))
        #expect(ours.samples.count == theirs.count)
        var differing = 0
        for i in 0..<min(ours.samples.count, theirs.count) where ours.samples[i] != theirs[i] { differing += 1 }
        #expect(differing == 0, "\(differing) samples differ from FFmpeg's decode")

        // The same file with its 'moov' first, streamed in small pieces: the same packets.
        let fast = Self.temporary("\(c.codec)-\(c.rate)-fast.mov")
        defer { unlink(fast) }
        try #require(runFFmpeg(["-i", path, "-c", "copy", "-movflags", "+faststart", fast]))
        let streamed = try Self.streamCounts(try #require(Corpus.read(fast)), chunk: 7)
        #expect(streamed.packets == frames)
        #expect(streamed.format == f)
    }

    // MARK: Audiobooks with a chapter track

    /// An .m4b made by FFmpeg (AAC + chapters), rewritten so that its chapter (text) track comes
    /// first, has an empty `stsz` and a sample description whose entry runs past its `stsd`
    /// (as in audiobooks from other tools): the text track is skipped, the audio plays.
    @Test func audiobookWithUnreadableChapterTrack() throws {
        let audio = Self.temporary("book-audio.m4a"), chapters = Self.temporary("chapters.txt"), book = Self.temporary("book.m4b")
        defer { unlink(audio); unlink(chapters); unlink(book) }
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(fixtureSignalExpression(channels: 1, seconds: 3)):s=44100:d=3",
                                "-c:a", "aac", "-b:a", "64k", audio]))
        let meta = ";FFMETADATA1\ntitle=Book\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=One\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=1000\nEND=3000\ntitle=Two\n"
        #expect(writeFile(chapters, Array(meta.utf8)))
        try #require(runFFmpeg(["-i", audio, "-i", chapters, "-map", "0", "-map_metadata", "1", "-map_chapters", "1", "-c", "copy", book]))
        let original = try #require(Corpus.read(book))
        let rewritten = try #require(Self.chapterTrackFirstAndBroken(original), "the .m4b has no text track to rewrite")
        #expect(writeFile(book, rewritten))
        // ffprobe still finds the audio (it warns about the text track).
        #expect(Self.ffprobe(book, "codec_name") == "aac")
        let file = try AudioFile(path: book)
        #expect(file.dataFormat.formatID == .mpeg4AAC)
        #expect(file.dataFormat.channelsPerFrame == 1)
        #expect(String(file.packetCount) == Self.ffprobe(book, "nb_frames"))
        #expect(file.infoDictionary[InfoKey.title] == "Book")
        let decoded = try decodeWithToolbox(book)
        #expect(decoded.samples.count == 3 * 44100)
    }

    /// Moves the `text` track before the sound track, empties its `stsz` (an 8-byte box) and makes
    /// its sample entry claim more bytes than its `stsd` holds.
    static func chapterTrackFirstAndBroken(_ file: [UInt8]) -> [UInt8]? {
        func u32(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        func be(_ v: Int) -> [UInt8] { [UInt8((v >> 24) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        func boxes(_ b: [UInt8], _ start: Int, _ end: Int) -> [(type: String, range: Range<Int>)] {
            var out: [(String, Range<Int>)] = []
            var i = start
            while i + 8 <= end {
                let size = u32(b, i)
                guard size >= 8, i + size <= end else { return out }
                out.append((String(decoding: b[(i + 4)..<(i + 8)], as: UTF8.self), i..<(i + size)))
                i += size
            }
            return out
        }
        guard let moov = boxes(file, 0, file.count).first(where: { $0.type == "moov" }) else { return nil }
        let kids = boxes(file, moov.range.lowerBound + 8, moov.range.upperBound)
        let traks = kids.filter { $0.type == "trak" }
        guard let text = traks.first(where: { Array(file[$0.range]).containsSequence(Array("text".utf8)) && !Array(file[$0.range]).containsSequence(Array("mp4a".utf8)) }) else { return nil }
        // Rebuild the text track with the changes, as a flat byte edit inside its stbl.
        var t = Array(file[text.range])
        guard let sz = t.firstIndex(ofSequence: Array("stsz".utf8)), let sd = t.firstIndex(ofSequence: Array("stsd".utf8)) else { return nil }
        // stsz (size at sz-4) becomes an 8-byte box; the freed bytes become a 'free' box.
        let stszSize = u32(t, sz - 4)
        guard stszSize >= 16 else { return nil }
        t.replaceSubrange((sz - 4)..<(sz - 4 + stszSize), with: be(8) + Array("stsz".utf8) + be(stszSize - 8) + Array("free".utf8) + [UInt8](repeating: 0, count: stszSize - 16))
        // The sample entry (after stsd's 8 bytes of version/flags/count) claims 64 more bytes.
        let entry = sd + 4 + 8
        t.replaceSubrange(entry..<(entry + 4), with: be(u32(t, entry) + 64))
        var body: [UInt8] = []
        for k in kids where k.type == "mvhd" { body += file[k.range] }
        body += t
        for k in kids where k.type != "mvhd" && k.range != text.range { body += file[k.range] }
        return Array(file[..<moov.range.lowerBound]) + be(body.count + 8) + Array("moov".utf8) + body + Array(file[moov.range.upperBound...])
    }

    // MARK: FLAC

    /// Encodes a mono FLAC with FFmpeg and returns its bytes and where its audio frames start.
    static func monoFLAC() throws -> (bytes: [UInt8], path: String) {
        let path = temporary("mono.flac")
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(fixtureSignalExpression(channels: 1, seconds: 2)):s=44100:d=2",
                                "-metadata", "title=Gaps", "-c:a", "flac", path]))
        defer { unlink(path) }
        return (try #require(Corpus.read(path)), path)
    }

    /// The metadata blocks of a FLAC file: (type, offset of the block header, body length).
    static func flacBlocks(_ b: [UInt8]) -> [(type: UInt8, offset: Int, length: Int)] {
        var out: [(UInt8, Int, Int)] = []
        var pos = 4
        while pos + 4 <= b.count {
            let length = Int(b[pos + 1]) << 16 | Int(b[pos + 2]) << 8 | Int(b[pos + 3])
            out.append((b[pos] & 0x7F, pos, length))
            if b[pos] & 0x80 != 0 { break }
            pos += 4 + length
        }
        return out
    }

    /// STREAMINFO says 5 channels, every frame header says 1: FFmpeg trusts the frames (1 channel,
    /// 88 200 frames), and so does the parser; the decode matches FFmpeg's.
    @Test func flacStreamInfoChannelsDisagreeWithFrames() throws {
        var (bytes, _) = try Self.monoFLAC()
        // STREAMINFO body starts at 8; byte 12 holds (channels - 1) in bits 3...1.
        bytes[8 + 12] = (bytes[8 + 12] & 0xF1) | (4 << 1)
        let path = Self.temporary("ch5.flac")
        defer { unlink(path) }
        #expect(writeFile(path, bytes))
        #expect(Self.ffprobe(path, "channels") == "1")
        let file = try AudioFile(path: path)
        #expect(file.dataFormat.channelsPerFrame == 1)
        #expect(file.magicCookie.map { ($0[12] >> 1) & 7 } == 0)
        #expect(file.totalFrames == 88200)
        let ours = try decodeWithToolbox(path)
        let theirs = try #require(decodeWithFFmpeg(path))
        #expect(ours.channels == 1)
        #expect(ours.samples.count == theirs.count)
        #expect(snr(theirs, ours.samples) > 120)
        let streamed = try Self.streamCounts(bytes, chunk: 7)
        #expect(streamed.format?.channelsPerFrame == 1)
    }

    struct FLACBlockCase: CustomTestStringConvertible, Sendable {
        var name: String
        /// The last block is replaced by a SEEKTABLE of 2 points whose header states this length
        /// (nil: a block of the reserved type 127 with the right length).
        var statedLength: Int?
        /// FFmpeg's decoded frame count (the frames from the first sync code found).
        var ffmpegFrames: Int
        var testDescription: String { name }
    }

    /// A metadata block length that is wrong (a SEEKTABLE stated 6 bytes short or 4 bytes long)
    /// or a reserved block type: FFmpeg reads the file and finds the frames by their sync code
    /// (losing the first frame when the length reaches into it); so does the parser.
    @Test(arguments: [
        FLACBlockCase(name: "SEEKTABLE length 6 bytes short", statedLength: 30, ffmpegFrames: 88200),
        FLACBlockCase(name: "SEEKTABLE length 4 bytes long", statedLength: 40, ffmpegFrames: 88200 - 4608),
        FLACBlockCase(name: "reserved block type 127", statedLength: nil, ffmpegFrames: 88200),
    ])
    func flacWrongMetadataBlockLength(_ c: FLACBlockCase) throws {
        let (original, _) = try Self.monoFLAC()
        let blocks = Self.flacBlocks(original)
        let last = try #require(blocks.last)
        let audio = last.offset + 4 + last.length
        var table: [UInt8] = []
        for (sample, offset) in [(0, 0), (4608 * 5, 1000)] as [(UInt64, UInt64)] {
            for s in stride(from: 56, through: 0, by: -8) { table.append(UInt8((sample >> UInt64(s)) & 0xFF)) }
            for s in stride(from: 56, through: 0, by: -8) { table.append(UInt8((offset >> UInt64(s)) & 0xFF)) }
            table += [0x12, 0x00]
        }
        let stated = c.statedLength ?? table.count
        let header: [UInt8] = [0x80 | (c.statedLength == nil ? 127 : 3), UInt8(stated >> 16), UInt8((stated >> 8) & 0xFF), UInt8(stated & 0xFF)]
        let bytes = Array(original[..<last.offset]) + header + table + Array(original[audio...])
        let path = Self.temporary("block.flac")
        defer { unlink(path) }
        #expect(writeFile(path, bytes))
        let theirs = try #require(decodeWithFFmpeg(path))
        #expect(theirs.count == c.ffmpegFrames)
        let file = try AudioFile(path: path)
        #expect(file.dataFormat.channelsPerFrame == 1)
        #expect(file.totalFrames == Int64(c.ffmpegFrames))
        let ours = try decodeWithToolbox(path, trim: false)
        #expect(ours.samples.count == theirs.count)
        #expect(snr(theirs, ours.samples) > 120)
    }
}

extension Array where Element == UInt8 {
    func firstIndex(ofSequence s: [UInt8]) -> Int? {
        guard s.count <= count else { return nil }
        for i in 0...(count - s.count) where self[i] == s[0] && Array(self[i..<(i + s.count)]) == s { return i }
        return nil
    }

    func containsSequence(_ s: [UInt8]) -> Bool { firstIndex(ofSequence: s) != nil }
}
