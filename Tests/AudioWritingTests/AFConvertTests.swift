import OATCore
import OATTestSupport
import OpenAudioToolbox
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One output of the matrix: container, data format, what FFmpeg calls the codec.
struct OutputCase: CustomStringConvertible, Sendable {
    var type: String
    var data: String
    var ext: String
    var codec: String
    var formatID: OATCore.AudioFormatCode
    /// True when ffmpeg's decoder output applies the file's gapless info (so its frame count
    /// must equal ours).
    var ffmpegTrims: Bool
    var description: String { "\(type) \(data)" }
}

let outputCases: [OutputCase] = [
    OutputCase(type: "WAVE", data: "LEI16", ext: "wav", codec: "pcm_s16le", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "WAVE", data: "LEI24", ext: "wav", codec: "pcm_s24le", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "WAVE", data: "LEF32", ext: "wav", codec: "pcm_f32le", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "RF64", data: "LEI24", ext: "wav", codec: "pcm_s24le", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "WAVE", data: "UI8", ext: "wav", codec: "pcm_u8", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "WAVE", data: "ulaw", ext: "wav", codec: "pcm_mulaw", formatID: .ulaw, ffmpegTrims: true),
    OutputCase(type: "WAVE", data: "alaw", ext: "wav", codec: "pcm_alaw", formatID: .alaw, ffmpegTrims: true),
    OutputCase(type: "AIFF", data: "BEI16", ext: "aiff", codec: "pcm_s16be", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "AIFF", data: "BEI24", ext: "aiff", codec: "pcm_s24be", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "AIFC", data: "LEI16", ext: "aifc", codec: "pcm_s16le", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "AIFC", data: "BEF32", ext: "aifc", codec: "pcm_f32be", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "AIFC", data: "ulaw", ext: "aifc", codec: "pcm_mulaw", formatID: .ulaw, ffmpegTrims: true),
    OutputCase(type: "caff", data: "LEI16", ext: "caf", codec: "pcm_s16le", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "caff", data: "BEI24", ext: "caf", codec: "pcm_s24be", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "caff", data: "LEF32", ext: "caf", codec: "pcm_f32le", formatID: .linearPCM, ffmpegTrims: true),
    OutputCase(type: "caff", data: "alaw", ext: "caf", codec: "pcm_alaw", formatID: .alaw, ffmpegTrims: true),
    OutputCase(type: "caff", data: "aac", ext: "caf", codec: "aac", formatID: .mpeg4AAC, ffmpegTrims: false),
    OutputCase(type: "caff", data: "alac", ext: "caf", codec: "alac", formatID: .appleLossless, ffmpegTrims: true),
    OutputCase(type: "caff", data: ".mp3", ext: "caf", codec: "mp3", formatID: .mpegLayer3, ffmpegTrims: false),
    OutputCase(type: "m4af", data: "aac", ext: "m4a", codec: "aac", formatID: .mpeg4AAC, ffmpegTrims: false),
    OutputCase(type: "m4af", data: "alac", ext: "m4a", codec: "alac", formatID: .appleLossless, ffmpegTrims: true),
    OutputCase(type: "flac", data: "flac", ext: "flac", codec: "flac", formatID: .flac, ffmpegTrims: true),
    OutputCase(type: "Ogg", data: "opus", ext: "opus", codec: "opus", formatID: .opus, ffmpegTrims: true),
    OutputCase(type: "adts", data: "aac", ext: "aac", codec: "aac", formatID: .mpeg4AAC, ffmpegTrims: false),
    OutputCase(type: "MPG3", data: ".mp3", ext: "mp3", codec: "mp3", formatID: .mpegLayer3, ffmpegTrims: true),
]

@Suite struct AFConvertMatrixTests {
    /// Every container x data format afconvert writes: our AudioFile and ffprobe agree on the
    /// format, and the frame count is the input's (ours always; ffmpeg's where it trims).
    @Test(.requires(TestResource.ffmpegMissing), arguments: outputCases)
    func writesReadableFiles(_ c: OutputCase) throws {
        let s = Scratch("matrix")
        defer { s.cleanup() }
        let frames = 66_151 // 1.5 s and a bit: not a multiple of any packet size
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: frames)
        let output = s.path("out.\(c.ext)")
        var settings = AudioFileConversionSettings()
        settings.fileType = AudioFileConversion.fileType(named: c.type)
        settings.dataFormat = AudioFileConversion.dataFormat(named: c.data)
        settings.writerOptions.tags = [InfoKey.title: "Test Tone", InfoKey.artist: "OpenAudioToolbox"]
        let result = try AudioFileConversion.convert(input: input, output: output, settings: settings)
        let rate = c.formatID == .opus ? 48000.0 : 44100
        var expected = Int64((Double(frames) * rate / 44100).rounded())
        if c.type == "adts" {
            // ADTS has no place for priming and remainder: every decoded frame counts.
            let info = result.packetTableInfo
            expected = info.numberValidFrames + Int64(info.primingFrames) + Int64(info.remainderFrames)
            #expect(info.numberValidFrames == Int64(frames))
        }

        let file = try AudioFile(path: output)
        #expect(file.dataFormat.formatID == c.formatID)
        if c.type == "RF64" {
            #expect(file.fileFormat == .rf64)
            #expect(Corpus.read(output).map { Array($0.prefix(4)) } == Array("RF64".utf8), "-f RF64 did not write RF64")
        }
        #expect(file.dataFormat.sampleRate == rate)
        #expect(file.dataFormat.channelsPerFrame == 2)
        #expect(file.warning == nil, "\(file.warning.map { "\($0)" } ?? "")")
        #expect(abs(file.validFrames - expected) <= (c.formatID == .opus ? 1 : 0), "valid frames \(file.validFrames), expected \(expected)")
        #expect(file.packetCount == result.packetCount)
        let decoded = try decodeFloat(output)
        #expect(abs(Int64(decoded.count / 2) - expected) <= (c.formatID == .opus ? 1 : 0), "our decoder gave \(decoded.count / 2) frames")
        // Tags where the container has them (ADTS has none).
        if c.type != "adts" { #expect(file.infoDictionary[InfoKey.title] == "Test Tone", "tags: \(file.infoDictionary)") }

        try TestResource.require(TestResource.ffmpegMissing)
        let probe = try #require(ffprobe(output), "ffprobe cannot read \(output)")
        #expect(probe.codec == c.codec)
        #expect(probe.sampleRate == Int(rate))
        #expect(probe.channels == 2)
        if file.dataFormat.bytesPerPacket == 0 { #expect(Int64(probe.packets) == file.packetCount) }
        if c.ffmpegTrims {
            let n = try #require(ffmpegFrameCount(output, channels: 2))
            #expect(abs(Int64(n) - expected) <= (c.formatID == .opus ? 1 : 0), "ffmpeg decoded \(n) frames, expected \(expected)")
        } else if c.type == "m4af" {
            #expect(probe.durationTS.map { Int64($0) } == expected, "ffprobe duration_ts \(probe.durationTS ?? -1)")
        }
    }
}

@Suite struct LosslessRoundTripTests {
    /// PCM, FLAC and ALAC outputs decode to exactly the input samples, at 16 and 24 bits.
    @Test(arguments: [("WAVE", "LEI16", "wav", 16), ("AIFF", "BEI16", "aiff", 16), ("AIFC", "LEI16", "aifc", 16), ("caff", "LEI16", "caf", 16),
                      ("WAVE", "LEI24", "wav", 24), ("AIFF", "BEI24", "aiff", 24), ("caff", "BEI24", "caf", 24), ("WAVE", "LEF32", "wav", 24),
                      ("flac", "flac", "flac", 16), ("flac", "flac", "flac", 24), ("m4af", "alac", "m4a", 16), ("m4af", "alac", "m4a", 24),
                      ("caff", "alac", "caf", 16), ("caff", "alac", "caf", 24)])
    func bitExact(_ type: String, _ data: String, _ ext: String, _ bits: Int) throws {
        let s = Scratch("lossless")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 50_001, bits: UInt32(bits))
        let output = s.path("out.\(ext)")
        var settings = AudioFileConversionSettings()
        settings.fileType = AudioFileConversion.fileType(named: type)
        settings.dataFormat = AudioFileConversion.dataFormat(named: data)
        try AudioFileConversion.convert(input: input, output: output, settings: settings)
        let original = try decodeInt32(input)
        let copy = try decodeInt32(output)
        #expect(original.count == 100_002)
        #expect(copy.count == original.count)
        let differing = zip(original, copy).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) samples differ")
        if haveFFmpeg, data == "flac" || data == "alac" {
            // ffmpeg decodes the same samples.
            let ours = try decodeFloat(output)
            let theirs = try #require(decodeWithFFmpeg(output))
            #expect(theirs.count == ours.count)
            #expect(zip(ours, theirs).allSatisfy { $0 == $1 })
        }
    }
}

@Suite struct GaplessTests {
    /// Lossy outputs decode to exactly the input frame count, aligned with the input (a wrong
    /// priming would shift the chirp and wreck the SNR).
    @Test(arguments: [("m4af", "aac", "m4a"), ("MPG3", ".mp3", "mp3"), ("Ogg", "opus", "opus"), ("caff", "aac", "caf")])
    func exactLengthAndAligned(_ type: String, _ data: String, _ ext: String) throws {
        let s = Scratch("gapless")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        let frames = 48_000 + 37
        try writeTestSignal(input, frames: frames, rate: 48000)
        let output = s.path("out.\(ext)")
        var settings = AudioFileConversionSettings()
        settings.fileType = AudioFileConversion.fileType(named: type)
        settings.dataFormat = AudioFileConversion.dataFormat(named: data)
        settings.encoder.bitRate = 160_000
        let result = try AudioFileConversion.convert(input: input, output: output, settings: settings)
        #expect(result.validFrames == Int64(frames))
        let reference = try decodeFloat(input)
        let ours = try decodeFloat(output)
        #expect(ours.count == reference.count, "decoded \(ours.count / 2) frames of \(frames)")
        let quality = snr(reference, ours)
        #expect(quality > 12, "SNR \(quality) dB: the output is not aligned with the input")
        if haveFFmpeg && (data == ".mp3" || data == "opus") {
            let theirs = try #require(decodeWithFFmpeg(output))
            #expect(theirs.count == reference.count, "ffmpeg decoded \(theirs.count / 2) frames of \(frames)")
            #expect(snr(reference, theirs) > 12)
        }
        let file = try AudioFile(path: output)
        let info = try #require(file.packetTableInfo)
        #expect(info.numberValidFrames == Int64(frames))
        #expect(Int64(info.primingFrames) > 0)
    }
}
