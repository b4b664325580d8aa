import OATTestSupport
import OpenAudioToolbox
import Testing

@Suite struct ExtendedAudioFileTests {
    /// Reads every frame of `path` as interleaved float.
    static func readAll(_ reader: ExtendedAudioFile, limit: Int = .max) throws -> [Float] {
        let buffer = try AudioPCMBuffer(format: reader.clientFormat, frameCapacity: 1000)
        var out: [Float] = []
        let channels = Int(reader.clientFormat.channelsPerFrame)
        while out.count / channels < limit {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            out.append(contentsOf: buffer.floatChannel(0)![0..<(n * channels)])
        }
        return out
    }

    static func interleaved(_ path: String) throws -> ExtendedAudioFile {
        let file = try AudioFile(path: path)
        let format = AudioStreamBasicDescription.linearPCM(sampleRate: file.dataFormat.sampleRate, channels: file.dataFormat.channelsPerFrame, bitsPerChannel: 32, isFloat: true)
        return try ExtendedAudioFile(path: path, clientFormat: format)
    }

    /// Seeking to a frame and reading gives the same samples as reading through to it.
    /// `minimumSNR`: lossless and MP3 decode bit-exactly after a seek; AAC (noise substitution)
    /// and Opus (decoder state) only converge, so they are checked for alignment and closeness.
    static func checkSeeks(_ path: String, frames: [Int64], minimumSNR: Double = 60) throws {
        let full = try readAll(interleaved(path))
        let reader = try interleaved(path)
        let channels = Int(reader.clientFormat.channelsPerFrame)
        #expect(Int64(full.count / channels) == reader.frameCount, "\(path): read \(full.count / channels) of \(reader.frameCount) frames")
        for frame in frames where frame < reader.frameCount {
            try reader.seek(toFrame: frame)
            let part = try readAll(reader, limit: 2000)
            let expected = Array(full[(Int(frame) * channels)..<min(full.count, (Int(frame) + 2000) * channels)])
            let got = Array(part.prefix(expected.count))
            #expect(got.count == expected.count, "\(path) @\(frame): \(got.count) vs \(expected.count)")
            #expect(snr(expected, got) > minimumSNR, "\(path) @\(frame): SNR \(snr(expected, got)) dB")
        }
    }

    @Test(.requires(TestResource.corpusMissing)) func seeksAreFrameExactInPCM() throws {
        let root = try TestResource.corpusRoot()
        try Self.checkSeeks(root + "/python-stdlib-audiodata/pluck-pcm16.au", frames: [0, 1, 1000, 3306])
    }

    @Test(.requires(TestResource.corpusMissing)) func seekOutsideTheFileIsAnError() throws {
        let root = try TestResource.corpusRoot()
        let reader = try ExtendedAudioFile(path: root + "/python-stdlib-audiodata/pluck-pcm16.au")
        #expect(throws: AudioError.self) { try reader.seek(toFrame: -1) }
        #expect(throws: AudioError.self) { try reader.seek(toFrame: 1_000_000) }
    }
}

/// Frame-exact seeking in compressed files: decoding after a seek gives the samples a straight
/// decode has at that frame.
@Suite struct CompressedSeekTests {
    static let files = [
        "ffmpeg-generated/m4a/aac_faststart.m4a", "ffmpeg-generated/m4a/opus_in_mp4.mp4",
        "ffmpeg-generated/mp3/l3_vbr_q2_44k_st_xing.mp3", "ffmpeg-generated/m4a/alac_st.m4a",
        "ffmpeg-generated/m4a/flac_in_mp4.mp4", "ffmpeg-generated/adts/aac_lc_44k_st.aac",
    ]

    @Test(.requires(TestResource.corpusMissing), arguments: files)
    func seekLandsOnTheFrame(_ file: String) throws {
        let root = try TestResource.corpusRoot()
        let lossy = file.contains("aac") || file.contains("opus")
        try ExtendedAudioFileTests.checkSeeks(root + "/" + file, frames: [0, 1, 4095, 44100, 100_000, 131_000], minimumSNR: lossy ? 20 : 60)
    }
}
