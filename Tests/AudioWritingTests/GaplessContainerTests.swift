import OATTestSupport
import OpenAudioToolbox
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Gapless information in the files we write, checked in the bytes and by what FFmpeg makes of
/// it: an M4A's edit list and `iTunSMPB`, an MP3's LAME tag; ADTS has no place for it.
@Suite(.requires(TestResource.ffmpegMissing)) struct GaplessContainerTests {
    static let frames = 88_200

    /// Converts a 2 s stereo test signal at 44.1 kHz into `ext` with `data`; returns its path.
    func convert(_ s: Scratch, data: String, ext: String) throws -> (input: String, output: String) {
        let input = s.path("in.wav")
        if access(input, F_OK) != 0 { try writeTestSignal(input, frames: Self.frames, rate: 44100) }
        let output = s.path("ours.\(ext)")
        var settings = AudioFileConversionSettings()
        settings.fileType = AudioFileConversion.fileType(forExtension: output)
        settings.dataFormat = AudioFileConversion.dataFormat(named: data)
        let result = try AudioFileConversion.convert(input: input, output: output, settings: settings)
        #expect(result.validFrames == Int64(Self.frames))
        return (input, output)
    }

    /// The body of the first box of `type` anywhere in `bytes` (a plain byte search: the types
    /// looked for occur once in our files), or nil.
    func box(_ type: String, in bytes: [UInt8]) -> ArraySlice<UInt8>? {
        let t = Array(type.utf8)
        guard bytes.count >= 8 else { return nil }
        for i in 4..<(bytes.count - 4) where bytes[i] == t[0] && bytes[i + 1] == t[1] && bytes[i + 2] == t[2] && bytes[i + 3] == t[3] {
            let size = Int(bytes[i - 4]) << 24 | Int(bytes[i - 3]) << 16 | Int(bytes[i - 2]) << 8 | Int(bytes[i - 1])
            guard size >= 8, i - 4 + size <= bytes.count else { continue }
            return bytes[(i + 4)..<(i - 4 + size)]
        }
        return nil
    }

    func be(_ b: ArraySlice<UInt8>, _ at: Int, _ count: Int) -> UInt64 {
        var v: UInt64 = 0
        for k in 0..<count { v = v << 8 | UInt64(b[b.startIndex + at + k]) }
        return v
    }

    /// Durations of the packets ffprobe reads, summed, and the stream's duration_ts.
    func probedDurations(_ path: String) -> (packets: Int, durationTS: Int?) {
        let r = shell("ffprobe -v error -select_streams a:0 -show_entries packet=duration -of csv=p=0 '\(path)' 2>/dev/null")
        let sum = r.output.split(separator: "\n").compactMap { Int(String($0.filter(\.isNumber))) }.reduce(0, +)
        return (sum, ffprobe(path)?.durationTS)
    }

    /// M4A (AAC): one edit list entry (media time = the 1024 priming frames, duration = the
    /// valid frames), `iTunSMPB` with priming, remainder and valid count, and FFmpeg trimming
    /// the priming from the edit list. FFmpeg 5.1's MP4 demuxer does not cut the last packet at
    /// the edit's end (it shortens the packet's duration, which its decoder ignores), so ffmpeg
    /// decodes the valid frames plus the remainder: exactly what it decodes from an M4A its own
    /// muxer wrote from the same input. Our reader decodes exactly the input frame count.
    @Test func m4aEditListAndITunSMPB() throws {
        let s = Scratch("gapless-m4a")
        defer { s.cleanup() }
        let (input, output) = try convert(s, data: "aac", ext: "m4a")
        let bytes = try #require(Corpus.read(output))
        let elst = try #require(box("elst", in: bytes), "no edit list")
        let version = elst[elst.startIndex]
        #expect(be(elst, 4, 4) == 1, "one edit")
        let (duration, mediaTime) = version == 1 ? (be(elst, 8, 8), be(elst, 16, 8)) : (be(elst, 8, 4), be(elst, 12, 4))
        #expect(mediaTime == 1024 && duration == UInt64(Self.frames), "elst media time \(mediaTime), duration \(duration)")
        let file = try AudioFile(path: output)
        let info = try #require(file.packetTableInfo)
        #expect(info.primingFrames == 1024 && info.numberValidFrames == Int64(Self.frames))
        let smpbAt = try #require(box("----", in: bytes), "no iTunes freeform item")
        let text = String(decoding: smpbAt, as: UTF8.self)
        let hex = { (v: Int, digits: Int) -> String in
            let h = String(v, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, digits - h.count)) + h
        }
        let expected = " 00000000 \(hex(1024, 8)) \(hex(Int(info.remainderFrames), 8)) \(hex(Self.frames, 16))"
        #expect(text.contains("iTunSMPB") && text.contains(expected), "iTunSMPB: \(text)")
        #expect(try decodeWithToolbox(output).samples.count / 2 == Self.frames)

        let probed = probedDurations(output)
        #expect(probed.durationTS == Self.frames, "ffprobe duration_ts \(String(describing: probed.durationTS))")
        // The priming packet keeps its 1024 (FFmpeg skips those samples), the last is cut to the edit.
        #expect(probed.packets == Self.frames + 1024, "ffprobe packet durations add up to \(probed.packets)")
        let ffmpegOurs = try #require(ffmpegFrameCount(output, channels: 2))
        #expect(ffmpegOurs == Self.frames + Int(info.remainderFrames), "ffmpeg decodes \(ffmpegOurs) frames")
        let theirs = s.path("ffmpeg.m4a")
        #expect(shell("ffmpeg -v error -nostdin -y -i '\(input)' -c:a aac '\(theirs)' 2>/dev/null").status == 0)
        let ffmpegTheirs = try #require(ffmpegFrameCount(theirs, channels: 2))
        #expect(ffmpegOurs == ffmpegTheirs, "ffmpeg decodes \(ffmpegOurs) frames from ours, \(ffmpegTheirs) from its own M4A")
        print("M4A gapless: elst media time \(mediaTime), duration \(duration); ffprobe duration_ts \(probed.durationTS ?? -1); ffmpeg decodes \(ffmpegOurs) (its own M4A: \(ffmpegTheirs)), we decode \(Self.frames)")
    }

    /// MP3: the Info frame's LAME tag states the encoder delay (576) and the padding, and
    /// ffmpeg decodes exactly the input frame count, as do we.
    @Test func mp3LAMETag() throws {
        let s = Scratch("gapless-mp3")
        defer { s.cleanup() }
        let (_, output) = try convert(s, data: ".mp3", ext: "mp3")
        let bytes = try #require(Corpus.read(output))
        let lame = try #require((0..<(bytes.count - 9)).first { Array(bytes[$0..<($0 + 4)]) == Array("LAME".utf8) }, "no LAME tag")
        let info = (0..<lame).first { Array(bytes[$0..<($0 + 4)]) == Array("Info".utf8) || Array(bytes[$0..<($0 + 4)]) == Array("Xing".utf8) }
        #expect(info != nil, "no Info/Xing header before the LAME tag")
        let d = lame + 21
        let delay = Int(bytes[d]) << 4 | Int(bytes[d + 1]) >> 4
        let padding = Int(bytes[d + 1] & 0xF) << 8 | Int(bytes[d + 2])
        let file = try AudioFile(path: output)
        let packets = Int(file.packetCount)
        #expect(delay == 576, "LAME delay \(delay)")
        #expect(packets * 1152 == delay + Self.frames + padding, "\(packets) packets, delay \(delay), padding \(padding)")
        #expect(file.validFrames == Int64(Self.frames))
        #expect(try decodeWithToolbox(output).samples.count / 2 == Self.frames)
        let ffmpeg = try #require(ffmpegFrameCount(output, channels: 2))
        #expect(ffmpeg == Self.frames, "ffmpeg decodes \(ffmpeg) frames")
        print("MP3 gapless: LAME delay \(delay), padding \(padding), \(packets) packets; ffmpeg decodes \(ffmpeg), we decode \(Self.frames)")
    }

    /// ADTS has no field for priming or padding: every reader decodes whole packets, the
    /// priming included (a container limit, documented in docs/recording.md).
    @Test func adtsCarriesNoGaplessInfo() throws {
        let s = Scratch("gapless-adts")
        defer { s.cleanup() }
        let (_, output) = try convert(s, data: "aac", ext: "aac")
        let file = try AudioFile(path: output)
        let packets = Int(file.packetCount)
        #expect(packets == (Self.frames + 1024 + 1023) / 1024)
        let ffmpeg = try #require(ffmpegFrameCount(output, channels: 2))
        #expect(ffmpeg == packets * 1024, "ffmpeg decodes \(ffmpeg) frames of \(packets) packets")
    }
}
